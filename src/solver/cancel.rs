//! Cancelling a run from outside it: a shared flag the run driver (`run.rs`) reads between
//! the calls of its time loop. Whoever holds a clone sets it (the command line from its
//! SIGINT / SIGTERM handler, `src/cli/signals.rs`; a test or an embedding program from
//! another thread); the library installs no signal handler of its own.
//!
//! A run that sees the flag finishes the step it is in (on a backend that keeps the state on
//! a device, at most one more step, brought back whole), writes that step's snapshot, probe
//! row, picture and `summary.json` with `"status": "interrupted"`, and returns normally.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A request to stop a run at the next step boundary. Clones share one flag.
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    /// A flag not set.
    pub fn new() -> Self {
        Self::default()
    }

    /// A `Cancel` over an existing flag (set it to `true` to cancel).
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        Cancel(flag)
    }

    /// The shared flag itself (for a signal handler, which may only store to it).
    pub fn flag(&self) -> &Arc<AtomicBool> {
        &self.0
    }

    /// Ask the run to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}
