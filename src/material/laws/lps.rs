//! The ordinary state-based bond law (LPS, `theory.md` section 3): dilatation
//! `theta_i = (d / m_i) sum_j omega beta V_j x e mu`, force state
//! `t_ij = alpha_i e + (d K_d / m_i - alpha_i / d) x theta_i`, force density
//! `L_i = sum_j (t_ij + t_ji) M omega beta V_j mu`. Linearized (model `lps`): `e = n . eta`,
//! `M = n`; nonlinear (`lps-nonlinear`, `docs/materials.md`): `e = |y| - x`, `M = y / |y|`,
//! the same constants. Its parameters ([`LpsParams`], twin of `kernels/law_lps.cuh`) and its
//! bond formulas: the kinematics of one bond, the dilatation term, the force term and the
//! strain energy.
//!
//! Units: `K_d` Pa, extension `e = n . eta` m, weight `w = omega beta V_j` m^3, force state
//! `t` N/m^6 (so `w t / x` is a force density, N/m^3), `alpha_i` and `p_i` N/m^7.

use super::{extension, stretch, Vec3};
use crate::material::{Law, MaterialConstants};
use crate::model::Influence;
use crate::Real;

/// LPS parameters as the CPU code and the kernels read them (`kernels/law_lps.cuh`: the
/// same fields in the same order; both sides assert the size).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LpsParams {
    /// `K_d`, Pa (the dilatation term of the energy).
    pub kd: f64,
    /// Influence function: 1 `omega = delta / x`, 0 `omega = 1`.
    pub omega_delta_over_x: i32,
    pub pad: i32,
}

/// Bytes of [`LpsParams`], asserted equal in `kernels/law_lps.cuh`.
pub const LPS_PARAMS_BYTES: usize = 16;
const _: () = assert!(std::mem::size_of::<LpsParams>() == LPS_PARAMS_BYTES);

impl LpsParams {
    /// The parameters of `m` (zero where its law is not LPS).
    pub fn of(m: &MaterialConstants) -> Self {
        match m.law {
            Law::Lps { kd, influence, .. } => LpsParams {
                kd,
                omega_delta_over_x: i32::from(influence == Influence::DeltaOverX),
                pad: 0,
            },
            Law::Pmb { .. } => LpsParams::default(),
        }
    }
}

/// One node's coefficients of the force state: `alpha`, `p = d K_d / m - alpha / d` and
/// its dilatation `theta`.
#[derive(Debug, Clone, Copy)]
pub struct NodeState<T> {
    pub alpha: T,
    pub p: T,
    pub theta: T,
}

/// The kinematics of one bond `i -> j` as the law reads it: the extension `e`, the stretch
/// the failure criterion compares with `s0` (`e / x`), and the force direction `dir` with
/// its length `len` (the force is `w (t_ij + t_ji) dir / len`).
#[derive(Debug, Clone, Copy)]
pub struct BondKinematics<T> {
    pub e: T,
    pub stretch: T,
    pub dir: Vec3<T>,
    pub len: T,
}

/// [`BondKinematics`] of a bond `xi` of length `x` and relative displacement `eta`:
/// linearized `e = n . eta` along `xi`; nonlinear `e = s x` with the stretch
/// `s = (|y| - x) / x` of [`stretch`] along `y = xi + eta`.
#[inline(always)]
pub fn kinematics<T: Real>(
    linearized: bool,
    xi: &Vec3<T>,
    eta: &Vec3<T>,
    x: T,
) -> BondKinematics<T> {
    if linearized {
        let e = extension(xi, eta, x);
        BondKinematics {
            e,
            stretch: e / x,
            dir: *xi,
            len: x,
        }
    } else {
        let (s, ly) = stretch(xi, eta, x);
        BondKinematics {
            e: s * x,
            stretch: s,
            dir: [xi[0] + eta[0], xi[1] + eta[1], xi[2] + eta[2]],
            len: ly,
        }
    }
}

/// The dilatation term of one intact bond of weight `w`, length `x` and extension `e`:
/// `w x e` (summed over the family and scaled by `d / m_i`).
#[inline(always)]
pub fn dilatation_term<T: Real>(w: T, x: T, e: T) -> T {
    w * x * e
}

/// The scale of the force term `scale dir` of one intact bond `i -> j` of weight `w`, length
/// `x`, extension `e` and force direction of length `len` ([`BondKinematics`]):
/// `w (t_ij + t_ji) / len`.
#[inline(always)]
pub fn force_scale<T: Real>(w: T, x: T, len: T, e: T, i: NodeState<T>, j: NodeState<T>) -> T {
    let t_ij = i.alpha * e + i.p * x * i.theta;
    let t_ji = j.alpha * e + j.p * x * j.theta;
    w * (t_ij + t_ji) / len
}

/// Strain energy density at node `i` of one intact bond, J/m^3: the deviatoric part
/// `alpha_i w (e - theta_i x / d)^2 / 2`.
#[inline(always)]
pub fn bond_energy_density(alpha: f64, w: f64, e: f64, theta: f64, x: f64, d: f64) -> f64 {
    let ed = e - theta * x / d;
    0.5 * alpha * w * ed * ed
}

/// Strain energy density of node `i`'s dilatation, J/m^3: `K_d theta^2 / 2`.
#[inline(always)]
pub fn dilatation_energy_density(kd: f64, theta: f64) -> f64 {
    0.5 * kd * theta.powi(2)
}

/// Matrix form (`theory.md` section 4, `crate::operators`): the coefficients
/// `a_ij = alpha_i omega` and `g_ij = omega x p_i` of bond row `i -> j` of length `x` and
/// influence `omega`. Returns `(a_ij, g_ij)`.
#[inline(always)]
pub fn matrix_coefficients(alpha: f64, p: f64, omega: f64, x: f64) -> (f64, f64) {
    (alpha * omega, omega * x * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Under a uniform dilatation the deviatoric energy of a bond whose extension equals
    /// its share `theta x / d` is zero, and the force state is symmetric: `i` and `j` with
    /// the same coefficients give `2 w t / x`.
    #[test]
    fn a_bond_in_uniform_dilatation_has_no_deviatoric_energy() {
        let (theta, x, d) = (0.003, 0.5, 3.0);
        let e = theta * x / d;
        assert!(bond_energy_density(2.0, 1.5, e, theta, x, d).abs() < 1e-30);
        let s = NodeState {
            alpha: 4.0,
            p: 7.0,
            theta,
        };
        let t = 4.0 * e + 7.0 * x * theta;
        let scale = force_scale(1.5, x, x, e, s, s);
        assert!((scale - 1.5 * 2.0 * t / x).abs() < 1e-15 * scale.abs());
    }

    /// A bond rotated rigidly by 90 degrees: the nonlinear extension is zero to round-off
    /// (|y| = x), while the linearized one is `-x` (the small-rotation error of `n . eta`);
    /// the nonlinear force points along the rotated bond.
    #[test]
    fn a_rigid_rotation_has_no_nonlinear_extension() {
        let (xi, eta, x): (Vec3<f64>, Vec3<f64>, f64) = ([0.5, 0.0, 0.0], [-0.5, 0.5, 0.0], 0.5);
        let nl = kinematics(false, &xi, &eta, x);
        assert!(nl.e.abs() < 1e-15 && nl.stretch.abs() < 1e-15);
        assert!((nl.len - 0.5).abs() < 1e-15 && nl.dir == [0.0, 0.5, 0.0]);
        let lin = kinematics(true, &xi, &eta, x);
        assert!((lin.e + 0.5).abs() < 1e-15 && (lin.stretch + 1.0).abs() < 1e-15);
    }
}
