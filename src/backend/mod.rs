//! Backends: the executions of one physics. Every backend implements [`Backend`]: evaluate the
//! internal force density for a displacement field, break bonds by critical stretch, and report
//! damage, dilatation and strain energy. The CPU loop backend (`cpu_loop.rs`) is the reference
//! the others are tested against; `cpu_matrix.rs` runs the matrix formulation on the
//! operators of `crate::operators`.
//!
//! Units: displacement in m, force density in N/m^3 (`rho a = L + b`), energy in J.
//! Vectors are flat, node-major: component `k` of node `i` is at `d * i + k`.

pub mod blocks;
pub mod cpu_loop;
pub mod cpu_matrix;

pub use cpu_loop::CpuLoop;
pub use cpu_matrix::CpuMatrix;

use crate::setup::Problem;
use crate::{Error, Real, Result};
use std::sync::Arc;

/// One physics, several executions (CPU loop, CPU matrix, GPU loop, GPU matrix).
pub trait Backend<T: Real>: Send {
    /// The name the CLI uses (`cpu-loop`, ...).
    fn name(&self) -> &'static str;

    /// Internal force density `L_i`, N/m^3, at displacement `u`, with the current bond status.
    fn internal_force(&mut self, u: &[T], force: &mut [T]);

    /// Break every intact bond whose stretch at `u` exceeds the critical stretch, unless an end
    /// node is in a no-fail zone. Broken bonds stay broken. Returns the number of directed
    /// bonds broken by this call.
    fn break_bonds(&mut self, u: &[T]) -> usize;

    /// Local damage `phi_i` in [0, 1].
    fn damage(&self, phi: &mut [T]);

    /// Dilatation `theta_i` at `u` (LPS); `false` (and `theta` untouched) for bond-based models.
    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> bool;

    /// Total strain energy at `u`, J.
    fn strain_energy(&mut self, u: &[T]) -> f64;

    /// Number of broken directed bonds, pre-cracks included.
    fn broken_bonds(&self) -> usize;

    /// Bond status per directed bond in CSR order: 1 intact, 0 broken.
    fn bond_status(&self) -> Vec<u8>;

    /// Bytes this backend holds for the model (operators, families, bond data, scratch).
    fn memory_bytes(&self) -> usize;

    /// Minimal bytes one explicit step (force evaluation with damage check) must move by this
    /// backend's own count: each input read once, each output written once (`contract.md`).
    fn bytes_per_step(&self) -> usize;

    /// Non-zeros per sparse operator (`("B", nnz)`, ...); empty for loop backends.
    fn operator_nnz(&self) -> Vec<(&'static str, usize)> {
        Vec::new()
    }
}

/// Which execution to use (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// A GPU backend where a GPU exists, else CPU.
    Auto,
    CpuLoop,
    CpuMatrix,
    GpuLoop,
    GpuMatrix,
}

impl BackendKind {
    /// The CLI name.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Auto => "auto",
            BackendKind::CpuLoop => "cpu-loop",
            BackendKind::CpuMatrix => "cpu-matrix",
            BackendKind::GpuLoop => "gpu-loop",
            BackendKind::GpuMatrix => "gpu-matrix",
        }
    }
}

/// Create the backend `kind` for `problem`. `auto` resolves to the best available one; a
/// backend this build cannot run is a clear error.
pub fn create<T: Real>(kind: BackendKind, problem: Arc<Problem>) -> Result<Box<dyn Backend<T>>> {
    match kind {
        BackendKind::Auto | BackendKind::CpuLoop => Ok(Box::new(CpuLoop::<T>::new(problem))),
        // half storage: half the bond memory and about half the time of full storage, with
        // the same results to round-off (tests/agreement.rs, docs/matrix-formulation.md)
        BackendKind::CpuMatrix => Ok(Box::new(CpuMatrix::<T>::new(
            problem,
            crate::operators::Storage::Half,
        )?)),
        other => Err(Error::Backend {
            backend: other.name().into(),
            message: "not available in this version; use --backend cpu-loop or cpu-matrix".into(),
        }),
    }
}
