//! The library's error type. User mistakes become messages that name the field, the value and
//! the allowed range; shape bugs inside the engine are assertions, not errors.

use std::path::PathBuf;

/// Everything that can go wrong in the library and is worth telling a user about.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A model value is missing, malformed or out of range. `field` is the dotted path
    /// (`material.youngs_modulus`, `boundary.0.region`).
    #[error("{field}: {message}")]
    Model { field: String, message: String },

    /// The model file could not be parsed as TOML or does not match the schema.
    #[error("{path}: {message}")]
    Parse { path: String, message: String },

    /// A file could not be read or written. The OS text is shown once, in this message: the
    /// I/O error is not also given as the `source`, which error reports (`{e:#}`, anyhow's
    /// chain) would print a second time.
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },

    /// The run became unstable (NaN or blow-up). The outputs written so far are kept. `adr`:
    /// adaptive dynamic relaxation diverged (`step` is its iteration), which has no time step
    /// to lower, so the advice differs from the explicit solver's.
    #[error("{}", unstable_message(*.step, *.time, .reason, *.adr))]
    Unstable {
        step: usize,
        time: f64,
        reason: String,
        adr: bool,
    },

    /// A backend was asked for that this machine or build cannot provide.
    #[error("backend {backend}: {message}")]
    Backend { backend: String, message: String },

    /// A GPU kernel did not compile; `log` is NVRTC's compile log.
    #[error("kernel {name} did not compile for {arch}:\n{log}")]
    Kernel {
        name: String,
        arch: String,
        log: String,
    },

    /// A command-line value is out of range.
    #[error("{option}: {message}")]
    Usage { option: String, message: String },
}

/// Shorthand for results of the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A model error naming `field`.
    pub fn model(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Model {
            field: field.into(),
            message: message.into(),
        }
    }

    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            error: source,
        }
    }
}

/// The message of [`Error::Unstable`]: what went wrong and what to change.
fn unstable_message(step: usize, time: f64, reason: &str, adr: bool) -> String {
    if adr {
        format!(
            "ADR diverged at iteration {step}: {reason}; ADR has no solver.dt to lower: check \
             the loads and the material (a load the body cannot carry, a modulus or density \
             off by orders of magnitude), apply the load in more increments (more \
             solver.steps or solver.load_steps, or a ramp), or relax solver.tolerance"
        )
    } else {
        format!(
            "unstable at step {step} (t = {time:.4e} s): {reason}; try a smaller solver.dt or \
             solver.safety_factor"
        )
    }
}
