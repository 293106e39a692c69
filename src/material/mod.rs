//! Materials: the constants of the bond-based PMB model and of linearized state-based LPS
//! (`theory.md` sections 2 and 3), partial-volume factors, influence functions, critical
//! stretches, stable time steps, and the lattice sums that give the effective elastic constants
//! of a regular lattice (`lattice_sum.rs`).
//!
//! Units: moduli in Pa, densities in kg/m^3, lengths in m, the PMB micromodulus `c` in N/m^6
//! (3D) or N/m^6 per unit thickness (2D: it carries `1/h`), fracture energy in J/m^2.

pub mod bonds;
pub mod constants;
pub mod history;
pub mod lattice_sum;
pub mod laws;
pub mod several;
pub mod stiffness_bound;

pub use bonds::BondData;
pub use constants::{family_radius, partial_volume, Law, MaterialConstants};
pub use history::FailureHistory;
pub use lattice_sum::{lattice_constants, LatticeConstants};
pub use several::MaterialMap;
