//! Material constants derived from the model's `[material]` and `[discretization]` tables.

use super::laws::Softening;
use crate::model::{
    BreakTiming, DamageLaw, Dimension, Influence, Material, MaterialModel, Model, PartialVolume,
};
use std::f64::consts::PI;

/// The bond law of a material, with the constants its kernels need.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Law {
    /// Bond-based PMB: pairwise force density `c s mu y/|y|` (nonlinear) or `c s mu n`
    /// with `s = n . eta / x` (linearized).
    Pmb { c: f64, linearized: bool },
    /// Ordinary state-based: bulk-like modulus `kd` (`K_d` of theory section 3), shear
    /// modulus `g`, the influence function, and the kinematics: `linearized` (LPS, model
    /// `lps`) the extension `n . eta` along `xi`, else (`lps-nonlinear`) the extension
    /// `|y| - x` along the deformed bond `y / |y|` (`docs/materials.md`).
    Lps {
        kd: f64,
        g: f64,
        influence: Influence,
        linearized: bool,
    },
}

/// Everything the backends need to know about the material, in SI units.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaterialConstants {
    pub law: Law,
    pub dimension: Dimension,
    pub youngs_modulus: f64,
    /// Poisson ratio (the fixed value for PMB).
    pub poisson_ratio: f64,
    pub density: f64,
    /// Horizon, m.
    pub delta: f64,
    /// Critical stretch, or `None` when bonds never break.
    pub critical_stretch: Option<f64>,
    /// Volume-method surface correction of `c` (PMB).
    pub surface_correction: bool,
    /// `alpha` of `s0 = s00 - alpha s_min` (0: the critical stretch is `s00`).
    pub critical_stretch_alpha: f64,
    /// When a step's bonds break relative to its force evaluation.
    pub break_timing: BreakTiming,
    /// The softening damage law (`bilinear`, `trilinear`), or `None` for the brittle law (a
    /// bond breaks at the critical stretch). Its `s0` is `critical_stretch`.
    pub softening: Option<Softening>,
}

impl MaterialConstants {
    /// The dilatational (P) wave speed, m/s: `sqrt(E (1 - nu) / (rho (1 + nu) (1 - 2 nu)))`
    /// in 3D and plane strain, `sqrt(E / (rho (1 - nu^2)))` in plane stress.
    pub fn dilatational_wave_speed(&self) -> f64 {
        let (e, nu, rho) = (self.youngs_modulus, self.poisson_ratio, self.density);
        match self.dimension {
            Dimension::PlaneStress => (e / (rho * (1.0 - nu * nu))).sqrt(),
            _ => (e * (1.0 - nu) / (rho * (1.0 + nu) * (1.0 - 2.0 * nu))).sqrt(),
        }
    }

    /// Constants of a validated model with horizon `delta` and 2D thickness `thickness`.
    pub fn new(model: &Model, delta: f64, thickness: f64) -> Self {
        Self::of(
            &model.material,
            model.discretization.dimension,
            delta,
            thickness,
        )
    }

    /// Constants of the validated material `m` in `dimension` (one of several materials).
    pub fn of(m: &Material, dimension: Dimension, delta: f64, thickness: f64) -> Self {
        // (a micromodulus given directly implies the modulus: `pmb_youngs_modulus`)
        let e = match (m.youngs_modulus, m.micromodulus) {
            (Some(e), _) => e,
            (None, Some(c)) => pmb_youngs_modulus(dimension, c, delta, thickness),
            (None, None) => f64::NAN,
        };
        let law = match m.model {
            MaterialModel::Pmb | MaterialModel::PmbLinear => Law::Pmb {
                c: m.micromodulus
                    .unwrap_or_else(|| pmb_micromodulus(dimension, e, delta, thickness)),
                linearized: m.model == MaterialModel::PmbLinear,
            },
            MaterialModel::Lps | MaterialModel::LpsNonlinear => {
                let nu = m.poisson_ratio.unwrap_or(0.25);
                Law::Lps {
                    kd: lps_kd(dimension, e, nu),
                    g: e / (2.0 * (1.0 + nu)),
                    influence: m.influence,
                    linearized: m.model == MaterialModel::Lps,
                }
            }
        };
        let poisson_ratio = match law {
            Law::Pmb { .. } => pmb_poisson_ratio(dimension),
            Law::Lps { .. } => m.poisson_ratio.unwrap_or(0.25),
        };
        let mut constants = MaterialConstants {
            law,
            dimension,
            youngs_modulus: e,
            poisson_ratio,
            density: m.density,
            delta,
            critical_stretch: None,
            surface_correction: m.surface_correction,
            critical_stretch_alpha: m.critical_stretch_alpha.unwrap_or(0.0),
            break_timing: m.break_timing.unwrap_or_default(),
            softening: None,
        };
        // (the brittle law's stretch from the fracture energy; a softening law spends the
        // same work, `s_b^2 / 2` per unit c and length, along its envelope)
        let brittle = m
            .fracture_energy
            .map(|g0| constants.critical_stretch_from(g0));
        constants.softening = softening_of(m, brittle.map(|s| s * s));
        constants.critical_stretch = match constants.softening {
            Some(law) => Some(law.s0),
            None => m.critical_stretch.or(brittle),
        };
        constants
    }

    /// Whether bond breaking needs each node's history (`docs/materials.md`): a critical
    /// stretch with `alpha != 0`, or bonds breaking after the force evaluation. Without, a
    /// bond breaks past `s00` before the force, as the fused passes of every backend do.
    pub fn history_breaking(&self) -> bool {
        self.critical_stretch.is_some()
            && (self.critical_stretch_alpha != 0.0 || self.break_timing == BreakTiming::AfterForce)
    }

    /// Spatial dimension `d`.
    pub fn d(&self) -> usize {
        self.dimension.d()
    }

    /// Critical stretch from the fracture energy `g0` (J/m^2), `theory.md` sections 2 and 3.
    pub fn critical_stretch_from(&self, g0: f64) -> f64 {
        let (e, delta) = (self.youngs_modulus, self.delta);
        match (self.law, self.dimension) {
            (Law::Pmb { .. }, Dimension::ThreeD) => (5.0 * g0 / (6.0 * e * delta)).sqrt(),
            (Law::Pmb { .. }, Dimension::PlaneStress) => (4.0 * PI * g0 / (9.0 * e * delta)).sqrt(),
            (Law::Pmb { .. }, Dimension::PlaneStrain) => {
                (5.0 * PI * g0 / (12.0 * e * delta)).sqrt()
            }
            (Law::Lps { kd, g, .. }, Dimension::ThreeD) => {
                (g0 / ((3.0 * g + 0.75f64.powi(4) * (kd - 5.0 * g / 3.0)) * delta)).sqrt()
            }
            (Law::Lps { kd, g, .. }, _) => {
                (g0 / ((6.0 * g / PI + 16.0 / (9.0 * PI * PI) * (kd - 2.0 * g)) * delta)).sqrt()
            }
        }
    }

    /// Influence function `omega(x)` (1 for PMB, whose micromodulus is constant).
    #[inline]
    pub fn omega(&self, x: f64) -> f64 {
        match self.law {
            Law::Lps {
                influence: Influence::DeltaOverX,
                ..
            } => self.delta / x,
            _ => 1.0,
        }
    }

    /// Short name for summaries.
    pub fn name(&self) -> &'static str {
        match self.law {
            Law::Pmb {
                linearized: false, ..
            } => "pmb",
            Law::Pmb {
                linearized: true, ..
            } => "pmb-linear",
            Law::Lps {
                linearized: true, ..
            } => "lps",
            Law::Lps {
                linearized: false, ..
            } => "lps-nonlinear",
        }
    }

    /// Whether bond forces use the linearized kinematics (`pmb-linear`, `lps`): the
    /// extension `n . eta` along `xi`, the criterion stretch `n . eta / x`.
    pub fn linearized(&self) -> bool {
        match self.law {
            Law::Pmb { linearized, .. } | Law::Lps { linearized, .. } => linearized,
        }
    }
}

/// The softening law of `[material]` (`None`: brittle), its missing stretch from the work to
/// failure `b / 2` (`b` the brittle law's squared critical stretch from the fracture energy)
/// where one is not given (`docs/materials.md`).
fn softening_of(m: &Material, b: Option<f64>) -> Option<Softening> {
    let (s0, sc) = (m.critical_stretch, m.final_stretch);
    match m.damage_law.unwrap_or_default() {
        DamageLaw::Brittle => None,
        DamageLaw::Bilinear => Some(match b {
            Some(b) => Softening::bilinear_from_work(b, s0, sc),
            None => Softening::bilinear(s0.unwrap_or(f64::NAN), sc.unwrap_or(f64::NAN)),
        }),
        DamageLaw::Trilinear => {
            let (s0, sk) = (s0.unwrap_or(f64::NAN), m.kink_stretch.unwrap_or(f64::NAN));
            let beta = m.kink_force_ratio.unwrap_or(DEFAULT_KINK_FORCE_RATIO);
            Some(match b {
                Some(b) => Softening::trilinear_from_work(b, s0, sk, beta),
                None => Softening::trilinear(s0, sk, beta, sc.unwrap_or(f64::NAN)),
            })
        }
    }
}

/// The trilinear law's force at the kink over the peak force when the model does not say
/// (Yang et al.; seed 004).
pub const DEFAULT_KINK_FORCE_RATIO: f64 = 0.25;

/// The Young's modulus a PMB micromodulus `c` implies: the inverse of [`pmb_micromodulus`].
pub fn pmb_youngs_modulus(dimension: Dimension, c: f64, delta: f64, thickness: f64) -> f64 {
    match dimension {
        Dimension::ThreeD => c * PI * delta.powi(4) / 12.0,
        Dimension::PlaneStress => c * PI * thickness * delta.powi(3) / 9.0,
        Dimension::PlaneStrain => c * 5.0 * PI * thickness * delta.powi(3) / 48.0,
    }
}

/// Default short-range constant of contact in multiples of the PMB bond constant (EMU's and
/// LAMMPS's 15; `docs/contact.md`).
pub const CONTACT_STIFFNESS_FACTOR: f64 = 15.0;

/// PMB micromodulus `c` (`theory.md` section 2; 2D values include `1/h`).

pub fn pmb_micromodulus(dimension: Dimension, e: f64, delta: f64, thickness: f64) -> f64 {
    match dimension {
        Dimension::ThreeD => 12.0 * e / (PI * delta.powi(4)),
        Dimension::PlaneStress => 9.0 * e / (PI * thickness * delta.powi(3)),
        Dimension::PlaneStrain => 48.0 * e / (5.0 * PI * thickness * delta.powi(3)),
    }
}

/// The Poisson ratio bond-based PD is fixed at.
pub fn pmb_poisson_ratio(dimension: Dimension) -> f64 {
    match dimension {
        Dimension::PlaneStress => 1.0 / 3.0,
        _ => 0.25,
    }
}

/// `K_d` of LPS (`theory.md` section 3 table).
pub fn lps_kd(dimension: Dimension, e: f64, nu: f64) -> f64 {
    match dimension {
        Dimension::ThreeD => e / (3.0 * (1.0 - 2.0 * nu)),
        Dimension::PlaneStrain => e / (2.0 * (1.0 + nu) * (1.0 - 2.0 * nu)),
        Dimension::PlaneStress => e / (2.0 * (1.0 - nu)),
    }
}

/// Partial-volume factor `beta` of a bond of length `x` (`theory.md` section 1).
#[inline]
pub fn partial_volume(kind: PartialVolume, x: f64, delta: f64, dx: f64) -> f64 {
    match kind {
        PartialVolume::None => 1.0,
        PartialVolume::Linear | PartialVolume::LinearTruncated => {
            if x <= delta - 0.5 * dx {
                1.0
            } else {
                ((delta + 0.5 * dx - x) / dx).clamp(0.0, 1.0)
            }
        }
    }
}

/// Family radius for a partial-volume choice: `delta + dx/2` for `linear`, else `delta`.
pub fn family_radius(kind: PartialVolume, delta: f64, dx: f64) -> f64 {
    match kind {
        PartialVolume::Linear => delta + 0.5 * dx,
        _ => delta,
    }
}
