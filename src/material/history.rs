//! [`FailureHistory`]: what bond failure remembers beyond the bond status, which a restart
//! checkpoint carries (`output/checkpoint`) and a restarted backend starts from
//! (`Problem::restored`), so a resumed run breaks and softens its bonds as the uninterrupted
//! one does.
//!
//! Units: damage and stretches dimensionless.

use crate::Real;

/// The failure state of a run besides the bond status, in the run's precision.
#[derive(Debug, Clone, PartialEq)]
pub struct FailureHistory<T> {
    /// Damage per directed bond in CSR order, in [0, 1], of a softening damage law
    /// (`material.damage_law`); empty for the brittle law.
    pub bond_damage: Vec<T>,
    /// Each node's critical stretch `s00 - alpha s_min` for the next breaking evaluation
    /// (`material.critical_stretch_alpha`); empty without alpha or before the first.
    pub node_s0: Vec<T>,
}

impl<T> Default for FailureHistory<T> {
    fn default() -> Self {
        FailureHistory {
            bond_damage: Vec::new(),
            node_s0: Vec::new(),
        }
    }
}

impl<T: Real> FailureHistory<T> {
    /// Whether there is nothing beyond the bond status.
    pub fn is_empty(&self) -> bool {
        self.bond_damage.is_empty() && self.node_s0.is_empty()
    }

    /// The same values in another precision (exact from `f32` or `f64` to `f64` and back).
    pub fn convert<U: Real>(&self) -> FailureHistory<U> {
        let to = |v: &[T]| v.iter().map(|x| U::of(x.f64())).collect();
        FailureHistory {
            bond_damage: to(&self.bond_damage),
            node_s0: to(&self.node_s0),
        }
    }
}
