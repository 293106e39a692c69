//! Solvers: explicit leapfrog (`explicit.rs`) and adaptive dynamic relaxation (`adr.rs`) over a
//! [`Backend`](crate::backend::Backend), boundary conditions in time (`loads.rs`), the run
//! driver that ties them to output (`run.rs`).

pub mod adr;
pub mod explicit;
pub mod export;
pub mod implicit;
pub mod linear;
pub mod loads;
mod outputs;
pub mod rigid;
pub mod run;
pub mod state;

pub use run::{run, simulate, Outcome, RunOptions};
pub use state::State;
