//! The n-linear softening damage laws of a PMB bond (`docs/materials.md`; seed 004's
//! "n-linear microelastic damage", Gerstle et al.'s bilinear and Yang et al.'s trilinear
//! laws): the bond force per unit micromodulus on the law's envelope, linear elastic `s` up
//! to the critical stretch `s0`, then linear softening through a kink `(sk, beta s0)` to zero
//! at the final stretch `sc` (bilinear: the kink is the final point, `beta = 0`).
//!
//! Damage is irreversible per bond: `d = max over the history of D(s)`, with
//! `D(s) = 1 - f_env(s) / (c s)` past `s0` (0 below, 1 from `sc` on), so a bond on the
//! envelope carries `(1 - d) c s = f_env(s)`, and one unloading goes back along the secant
//! `(1 - d) c s` to the origin (compression too, as a broken bond carries none). `D` grows
//! strictly with `s`, so the max of `D` is `D` of the largest stretch reached.
//!
//! Units: stretches dimensionless; the works here are per unit micromodulus and bond length
//! (`int f/c ds`), so a bond of micromodulus `c` and length `x` takes `c x W` J/m^6 to fail.

use crate::Real;

/// A softening law's points: the envelope is `s` up to `s0`, then straight lines through
/// `(s0, s0)`, `(kink_stretch, kink_ratio s0)` and `(final_stretch, 0)` (force over `c`).
/// Also the law's parameters as the bond kernels receive them (`LawParams::softening`; its
/// CUDA twin `SofteningParams` in `kernels/law_softening.cuh`, the size asserted on both
/// sides; all zero where the law is brittle).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Softening {
    /// Critical stretch `s0`: the end of the elastic branch, peak force `c s0`.
    pub s0: f64,
    /// The kink's stretch (bilinear: `final_stretch`).
    pub kink_stretch: f64,
    /// The force at the kink over the peak force (bilinear: 0).
    pub kink_ratio: f64,
    /// The stretch at which the force is zero and the bond breaks.
    pub final_stretch: f64,
}

/// Bytes of [`Softening`] (the kernels' `SofteningParams`).
pub const SOFTENING_BYTES: usize = 32;
const _: () = assert!(std::mem::size_of::<Softening>() == SOFTENING_BYTES);

impl Softening {
    /// Linear softening from `(s0, c s0)` to zero at `s1`.
    pub fn bilinear(s0: f64, s1: f64) -> Self {
        Softening {
            s0,
            kink_stretch: s1,
            kink_ratio: 0.0,
            final_stretch: s1,
        }
    }

    /// Softening from `(s0, c s0)` to `(sk, beta c s0)`, then to zero at `sc`.
    pub fn trilinear(s0: f64, sk: f64, beta: f64, sc: f64) -> Self {
        Softening {
            s0,
            kink_stretch: sk,
            kink_ratio: beta,
            final_stretch: sc,
        }
    }

    /// The bilinear law whose work to failure is `b / 2` (`b = s_brittle^2`, the squared
    /// critical stretch the brittle law takes from the fracture energy): given one of `s0`,
    /// `s1`, the other is `b / s0` (or `b / s1`).
    pub fn bilinear_from_work(b: f64, s0: Option<f64>, s1: Option<f64>) -> Self {
        match (s0, s1) {
            (Some(s0), _) => Softening::bilinear(s0, b / s0),
            (None, Some(s1)) => Softening::bilinear(b / s1, s1),
            (None, None) => Softening::bilinear(b.sqrt(), b.sqrt()),
        }
    }

    /// The trilinear law of `s0`, `sk`, `beta` whose work to failure is `b / 2`: its final
    /// stretch `sc = s0 + (b / s0 - sk) / beta` (from [`Softening::work`]).
    pub fn trilinear_from_work(b: f64, s0: f64, sk: f64, beta: f64) -> Self {
        Softening::trilinear(s0, sk, beta, s0 + (b / s0 - sk) / beta)
    }

    /// Whether the points are ordered: `0 < s0 < kink <= final`, `0 <= ratio <= 1`, the
    /// kink strictly inside for a trilinear law (ratio > 0). `None` if so, else what is wrong.
    pub fn disorder(&self) -> Option<String> {
        let (s0, sk, beta, sc) = (
            self.s0,
            self.kink_stretch,
            self.kink_ratio,
            self.final_stretch,
        );
        let finite = [s0, sk, beta, sc].iter().all(|v| v.is_finite());
        if !finite || s0 <= 0.0 || sc <= s0 {
            return Some(format!(
                "the final stretch {sc} must be a finite number above the critical stretch {s0} > 0"
            ));
        }
        if beta > 0.0 && !(sk > s0 && sk < sc && beta <= 1.0) {
            return Some(format!(
                "the kink stretch {sk} must lie between the critical stretch {s0} and the \
                 final stretch {sc}, with kink_force_ratio {beta} in (0, 1]"
            ));
        }
        None
    }

    /// The bond force over `c` on the envelope at stretch `s >= s0` (past `sc`: 0).
    #[inline(always)]
    fn softened<T: Real>(&self, s: T) -> T {
        let (s0, sk, beta, sc) = (
            T::of(self.s0),
            T::of(self.kink_stretch),
            T::of(self.kink_ratio),
            T::of(self.final_stretch),
        );
        let f = if s < sk {
            T::one() + (beta - T::one()) * (s - s0) / (sk - s0)
        } else {
            beta * (sc - s) / (sc - sk)
        };
        s0 * f
    }

    /// The law's damage `D(s)` at stretch `s`: 0 up to `s0`, 1 from the final stretch on,
    /// `1 - f_env(s) / (c s)` between.
    #[inline(always)]
    pub fn damage<T: Real>(&self, s: T) -> T {
        if s <= T::of(self.s0) {
            T::zero()
        } else if s >= T::of(self.final_stretch) {
            T::one()
        } else {
            T::one() - self.softened(s) / s
        }
    }

    /// The force over `c` of a bond with damage `d` at stretch `s`: `(1 - d) s`.
    #[inline(always)]
    pub fn force<T: Real>(d: T, s: T) -> T {
        (T::one() - d) * s
    }

    /// The envelope's force over `c` at stretch `s` (`s` up to `s0`, then softening, 0
    /// past the final stretch); f64, for reports and tests.
    pub fn envelope(&self, s: f64) -> f64 {
        if s <= self.s0 {
            s
        } else if s >= self.final_stretch {
            0.0
        } else {
            self.softened(s)
        }
    }

    /// The work over `c` along the envelope from 0 to stretch `s` (`int_0^s f_env / c`).
    pub fn work_to(&self, s: f64) -> f64 {
        if s <= self.s0 {
            return 0.5 * s * s.max(0.0);
        }
        let mut w = 0.5 * self.s0 * self.s0;
        let mut from = self.s0;
        for to in [self.kink_stretch, self.final_stretch] {
            let end = s.min(to);
            if end > from {
                w += 0.5 * (end - from) * (self.envelope(from) + self.envelope(end));
                from = end;
            }
        }
        w
    }

    /// The work over `c` to failure, `int_0^sc f_env / c ds = s0 (sk + beta (sc - s0)) / 2`
    /// (bilinear: `s0 sc / 2`; the brittle law's is `s0^2 / 2`).
    pub fn work(&self) -> f64 {
        0.5 * self.s0 * (self.kink_stretch + self.kink_ratio * (self.final_stretch - self.s0))
    }

    /// The largest stretch a bond of damage `d` has reached (`D^-1(d)`, `D` growing
    /// strictly on `(s0, sc)`): the peak stretch of its history; `s0` for `d = 0`.
    pub fn stretch_of_damage(&self, d: f64) -> f64 {
        let (s0, sk, beta, sc) = (
            self.s0,
            self.kink_stretch,
            self.kink_ratio,
            self.final_stretch,
        );
        if d <= 0.0 {
            return s0;
        }
        if d >= 1.0 {
            return sc;
        }
        // first branch: (1 - d) s = s0 (1 + k1 (s - s0)), k1 = (beta - 1) / (sk - s0)
        let k1 = (beta - 1.0) / (sk - s0);
        let s = s0 * (1.0 - s0 * k1) / ((1.0 - d) - s0 * k1);
        if s <= sk || sk >= sc {
            return s;
        }
        // second: (1 - d) s = k2 (sc - s), k2 = s0 beta / (sc - sk)
        let k2 = s0 * beta / (sc - sk);
        k2 * sc / (1.0 - d + k2)
    }

    /// The work over `c` dissipated by a bond of damage `d`: the envelope's work to its
    /// peak stretch less what unloading along the secant gives back, `(1 - d) s_max^2 / 2`.
    pub fn dissipated(&self, d: f64) -> f64 {
        if d <= 0.0 {
            return 0.0;
        }
        let s = self.stretch_of_damage(d);
        self.work_to(s) - 0.5 * (1.0 - d.min(1.0)) * s * s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The trilinear law of seed 004's Table 4 (Yang et al.: s0 1.05e-4, s1 6.9e-4, sc
    /// 5.56e-3, beta 1/4): the envelope passes through its three points, the damage inverts
    /// back to the stretch, and the closed-form work equals the work along the envelope
    /// (trapezoids are exact on straight lines), to round-off.
    #[test]
    fn the_trilinear_law_of_yang_et_al() {
        let law = Softening::trilinear(1.05e-4, 6.9e-4, 0.25, 5.56e-3);
        assert!(law.disorder().is_none());
        let tol = 1e-15;
        assert!((law.envelope(1.05e-4) - 1.05e-4).abs() < tol * 1e-4);
        assert!((law.envelope(6.9e-4) - 0.25 * 1.05e-4).abs() < tol * 1e-4);
        assert_eq!(law.envelope(5.56e-3), 0.0);
        for s in [2e-4, 6.9e-4, 1e-3, 5e-3] {
            let d: f64 = law.damage(s);
            let back = law.stretch_of_damage(d);
            assert!((back - s).abs() < 1e-12 * s, "{s}: {back}");
            assert!(((1.0 - d) * s - law.envelope(s)).abs() < 1e-13 * 1e-4);
        }
        let w = law.work_to(1.0);
        assert!((w - law.work()).abs() < 1e-14 * w, "{w} {}", law.work());
        // a broken bond has dissipated its whole work to failure
        assert!((law.dissipated(1.0) - w).abs() < 1e-14 * w);
    }
}
