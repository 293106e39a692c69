//! The time-stepping algorithms and their state, written once for every backend: the state
//! of the body (`state.rs`), boundary conditions in time (`loads.rs`), the explicit leapfrog
//! (`explicit.rs`), contact between nodes and rigid impactors (`contact/`, explicit only) and adaptive dynamic relaxation (`adr.rs`). They reach the physics
//! through [`Forces`] (`forces.rs`), the force evaluation a backend provides; a backend that
//! keeps the loop on a device or fuses it into its bond pass runs its own "advance n steps"
//! behind `crate::backend::Backend`, with these as the host reference.
//!
//! Units: displacement m, velocity m/s, force density N/m^3, time s.

pub mod adr;
pub mod contact;
pub mod exact_sum;
pub mod explicit;
pub mod forces;
pub mod loads;
pub mod state;

pub use adr::{Adr, AdrCall, AdrHistory, AdrPart};
pub use contact::Contact;
pub use exact_sum::ExactSum;
pub use explicit::{Explicit, ExplicitCall, StepTimes};
pub use forces::{AsForces, Forces};
pub use loads::Loads;
pub use state::State;
