//! The prototype microelastic brittle (PMB) bond law (`theory.md` section 2): the pairwise
//! force density `c lambda beta V_j s mu` along the deformed bond `y / |y|` (nonlinear) or
//! along `n = xi / x` with the linearized stretch `s = n . eta / x`. Its parameters
//! ([`PmbParams`], twin of `kernels/law_pmb.cuh`) and its bond formulas: the force term of
//! one bond from its stretch, the stretch the failure criterion reads, and the strain energy.
//!
//! Units: micromodulus `c` N/m^6 (per unit thickness in 2D), bond weight
//! `w = c lambda beta V_j` N/m^3 (`w s` is a force density), lengths m.

use super::{extension, stretch, Vec3};
use crate::material::{Law, MaterialConstants};
use crate::Real;

/// PMB parameters as the CPU code and the kernels read them (`kernels/law_pmb.cuh`: the
/// same fields in the same order; both sides assert the size).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PmbParams {
    /// Micromodulus `c`, N/m^6.
    pub micromodulus: f64,
    /// `c` rounded to f32 once (the f32 kernels convert nothing).
    pub micromodulus_f: f32,
    /// 1: the bond weight carries the surface correction `2 V_full / (V_h,i + V_h,j)`.
    pub surface_correction: i32,
}

/// Bytes of [`PmbParams`], asserted equal in `kernels/law_pmb.cuh`.
pub const PMB_PARAMS_BYTES: usize = 16;
const _: () = assert!(std::mem::size_of::<PmbParams>() == PMB_PARAMS_BYTES);

impl PmbParams {
    /// The parameters of `m` (zero where its law is not PMB). Whether the stretch is
    /// linearized is the bonds' kinematics (`BondParams::linearized`, also set for LPS).
    pub fn of(m: &MaterialConstants) -> Self {
        match m.law {
            Law::Pmb { c, .. } => PmbParams {
                micromodulus: c,
                micromodulus_f: c as f32,
                surface_correction: i32::from(m.surface_correction),
            },
            Law::Lps { .. } => PmbParams::default(),
        }
    }
}

/// Linearized bond of length `x` and weight `w` with `dot = xi . eta`: the stretch
/// `s = dot / x^2` and the scale `w s / x` of its force term `(w s / x) xi`, through one
/// division, `q = dot / x^3` (`s = q x`, scale `w q`). The stretch may differ from the
/// criterion's ([`linearized_stretch`]) in its last bits: compare it with `s0` through
/// [`Band`]. Returns `(s, scale)`.
#[inline(always)]
pub fn linearized_term<T: Real>(dot: T, x: T, w: T) -> (T, T) {
    let q = dot / (x * x * x);
    (q * x, w * q)
}

/// The linearized stretch as the failure criterion takes it: `(dot / x) / x`
/// ([`criterion_stretch`]'s arithmetic).
#[inline(always)]
pub fn linearized_stretch<T: Real>(dot: T, x: T) -> T {
    dot / x / x
}

/// Nonlinear bond of length `x` and weight `w` from `num = eta . (2 xi + eta)` and
/// `y2 = |xi + eta|^2`: the stretch `s = num / (x (|y| + x))` and the scale `w s / |y|` of
/// its force term `(w s / |y|) y`, through one division, `q = num / (x (|y| + x) |y|)`
/// (`s = q |y|`, scale `w q`). The stretch may differ from the criterion's
/// ([`super::stretch_of`]) in its last bits: compare it with `s0` through [`Band`]. Returns
/// `(s, scale)`.
#[inline(always)]
pub fn nonlinear_term<T: Real>(num: T, y2: T, x: T, w: T) -> (T, T) {
    let ly = y2.sqrt();
    let q = num / (x * (ly + x) * ly);
    (q * ly, w * q)
}

/// Where the stretch of [`linearized_term`] or [`nonlinear_term`] is too close to the
/// critical stretch `s0` to decide a break: within `16 eps |s0|` (the two forms of the
/// stretch differ by at most a few roundings, about `4 eps` relative). There the criterion's
/// own stretch ([`linearized_stretch`], [`super::stretch_of`]) decides, so a fused pass
/// breaks exactly the bonds a breaking pass of the criterion does. (`s0 = +inf`: no band.)
#[derive(Clone, Copy, Debug)]
pub struct Band<T> {
    pub lo: T,
    pub hi: T,
}

impl<T: Real> Band<T> {
    pub fn around(s0: T) -> Self {
        let m = s0.abs() * T::of(16.0) * T::epsilon();
        match s0.is_finite() {
            true => Band {
                lo: s0 - m,
                hi: s0 + m,
            },
            false => Band {
                lo: T::infinity(),
                hi: T::neg_infinity(),
            },
        }
    }

    /// Whether a stretch `s` (of the one-division terms) needs the criterion's own.
    #[inline(always)]
    pub fn holds(&self, s: T) -> bool {
        s >= self.lo && s <= self.hi
    }
}

/// The stretch the failure criterion compares with `s0`: nonlinear `s`, or `n . eta / x`.
#[inline(always)]
pub fn criterion_stretch<T: Real>(linearized: bool, xi: &Vec3<T>, eta: &Vec3<T>, x: T) -> T {
    match linearized {
        false => stretch(xi, eta, x).0,
        true => extension(xi, eta, x) / x,
    }
}

/// Strain energy density at node `i` of one intact bond of weight `w`, stretch `s` and
/// length `x`, J/m^3: half of the pair's micropotential `w s^2 x / 2`.
#[inline(always)]
pub fn energy_density(w: f64, s: f64, x: f64) -> f64 {
    0.25 * w * s * s * x
}

/// Matrix form (`theory.md` section 4, `crate::operators`): the coefficient
/// `a_ij = c lambda_ij / (2 x)` of bond row `i -> j` of length `x`, with `lambda_ij` the
/// bond's surface correction (1 without), N/m^7.
#[inline(always)]
pub fn matrix_coefficient(c: f64, correction: f64, x: f64) -> f64 {
    0.5 * c * correction / x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bond stretched by 1 % along itself: both forms give s = 0.01 and a force of
    /// `w s` along the bond, to round-off (the nonlinear stretch is exact for a pure
    /// elongation; the linearized one too, since the extension is along `n`).
    #[test]
    fn an_axial_stretch_gives_the_same_term_in_both_forms() {
        let (xi, eta, x, w) = ([2.0, 0.0, 0.0], [0.02, 0.0, 0.0], 2.0, 3.0);
        let (s_lin, scale_lin) = linearized_term(2.0 * 0.02, x, w);
        let y2: f64 = (2.02f64).powi(2);
        let num: f64 = 0.02 * (4.0 + 0.02);
        let (s_non, scale_non) = nonlinear_term(num, y2, x, w);
        assert!((s_lin - 0.01).abs() < 1e-15 && (s_non - 0.01).abs() < 1e-15);
        // force magnitudes: scale * |xi| and scale * |y|, both w s
        assert!((scale_lin * 2.0 - w * 0.01).abs() < 1e-15);
        assert!((scale_non * 2.02 - w * 0.01).abs() < 1e-15);
        assert!((criterion_stretch(true, &xi, &eta, x) - 0.01).abs() < 1e-15);
        assert!((criterion_stretch(false, &xi, &eta, x) - 0.01).abs() < 1e-15);
    }
}
