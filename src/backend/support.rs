//! Which backend runs which material: the bond laws each scheme implements, checked before a
//! backend is built, so that a model a backend cannot run is an error naming the backends
//! that run it, never a silently different physics.

use crate::material::Law;
use crate::setup::Problem;
use crate::{Error, Result};

/// The scheme of a backend, as far as materials go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// A loop over each node's bonds (`cpu-loop`, `gpu-loop`, in core or in subdomains).
    Loop,
    /// The matrix form (`cpu-matrix`, `gpu-matrix`, in core or in subdomains).
    Matrix,
}

/// Whether `backend` (its CLI name), of `scheme`, runs `problem`'s material; an error naming
/// the backends that do otherwise.
pub fn check_material(problem: &Problem, backend: &str, scheme: Scheme) -> Result<()> {
    let nonlinear_lps = matches!(
        problem.material.law,
        Law::Lps {
            linearized: false,
            ..
        }
    );
    if scheme == Scheme::Matrix && nonlinear_lps {
        return Err(Error::Backend {
            backend: backend.into(),
            message: "material.model = \"lps-nonlinear\" runs on cpu-loop and gpu-loop (in \
                      core or in subdomains): the matrix form assembles the linearized law \
                      only (model = \"lps\")"
                .into(),
        });
    }
    Ok(())
}
