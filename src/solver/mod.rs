//! Drivers: a run (`run.rs`: dt choice, stability checks, output cadence, summary) that
//! drives any backend through the time-stepping algorithms of `crate::dynamics`; the static
//! solve (`implicit.rs`, `linear.rs`, `rigid.rs`); the matrix export (`export.rs`); and the
//! output steps `run` and `solve-static` share (`outputs.rs`) with the fields a snapshot
//! may add, computed on the host (`fields.rs`: force density, energy density, virial
//! stress, broken bonds, material id); the thread that writes a run's
//! snapshots while it goes on (`snapshot_thread.rs`); the flag that cancels a run
//! (`cancel.rs`); checkpoints and restarts (`restart.rs`; a run's checkpoint of its step:
//! `checkpoint_step.rs`); the time step (`time_step.rs`);
//! a run stepped by a library caller (`session.rs`, the Python package's `Simulation`).

pub mod cancel;
mod checkpoint_step;
pub mod distributed;
pub mod export;
mod fields;
pub mod implicit;
pub mod linear;
mod outputs;
mod ranks;
pub mod restart;
pub mod rigid;
pub mod run;
pub mod session;
mod snapshot_thread;
mod system_files;
mod time_step;
mod tips;

pub use cancel::Cancel;
pub use ranks::{checkpoints_across_ranks, Ranks};
pub use run::{run, simulate, Outcome, RunOptions};
pub use session::Session;
pub use tips::excluded_nodes;
