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

    /// The run became unstable (NaN or blow-up). The outputs written so far are kept.
    #[error("unstable at step {step} (t = {time:.4e} s): {reason}; try a smaller solver.dt or solver.safety_factor")]
    Unstable {
        step: usize,
        time: f64,
        reason: String,
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
