//! Backends: the executions of one physics. Every backend implements [`Backend`]: evaluate the
//! internal force density for a displacement field, break bonds by critical stretch, and report
//! damage, dilatation and strain energy. The CPU loop backend (`cpu_loop.rs`) is the reference
//! the others are tested against; `cpu_matrix.rs` runs the matrix formulation on the
//! operators of `crate::operators`; `gpu_loop.rs` and `gpu_matrix.rs` are their GPU
//! counterparts (NVRTC kernels; cuSPARSE products), which share the device time loop of
//! `gpu_step.rs`.
//!
//! Units: displacement in m, force density in N/m^3 (`rho a = L + b`), energy in J.
//! Vectors are flat, node-major: component `k` of node `i` is at `d * i + k`.

pub mod blocks;
pub mod coefficients;
pub mod cpu_loop;
pub mod cpu_matrix;
mod gpu_adr;
pub mod gpu_lattice;
pub mod gpu_loop;
pub mod gpu_matrix;
mod gpu_step;
pub mod pmb_kernel;

pub use cpu_loop::CpuLoop;
pub use cpu_matrix::CpuMatrix;
pub use gpu_loop::GpuLoop;
pub use gpu_matrix::GpuMatrix;

use crate::setup::Problem;
use crate::solver::adr::Adr;
use crate::solver::explicit::{Explicit, StepTimes};
use crate::solver::loads::Loads;
use crate::solver::State;
use crate::{Precision, Real, Result};
use gpu_loop::precision_of;
use std::sync::Arc;

/// A backend as a trait object, so the trait's provided methods can hand `self` to code that
/// takes `&mut dyn Backend` (implemented for every sized backend).
pub trait AsBackend<T: Real> {
    fn as_backend(&mut self) -> &mut dyn Backend<T>;
}

impl<T: Real, B: Backend<T>> AsBackend<T> for B {
    fn as_backend(&mut self) -> &mut dyn Backend<T> {
        self
    }
}

/// One physics, several executions (CPU loop, CPU matrix, GPU loop, GPU matrix).
pub trait Backend<T: Real>: Send + AsBackend<T> {
    /// The name the CLI uses (`cpu-loop`, ...).
    fn name(&self) -> &'static str;

    /// Internal force density `L_i`, N/m^3, at displacement `u`, with the current bond status.
    fn internal_force(&mut self, u: &[T], force: &mut [T]);

    /// Break every intact bond whose stretch at `u` exceeds the critical stretch, unless an end
    /// node is in a no-fail zone. Broken bonds stay broken. Returns the number of directed
    /// bonds broken by this call.
    fn break_bonds(&mut self, u: &[T]) -> usize;

    /// [`break_bonds`](Backend::break_bonds) then [`internal_force`](Backend::internal_force)
    /// at the same `u`: what a step with damage checking does. A backend may fuse the two
    /// into one pass over the bonds (the results must be those of the two calls). Returns
    /// the number of directed bonds broken.
    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> usize {
        let broken = self.break_bonds(u);
        self.internal_force(u, force);
        broken
    }

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

    /// How a subdomain execution ran (counts, residency, traffic and timings); `None` for
    /// in-core backends.
    fn stream_report(&self) -> Option<crate::partition::StreamReport> {
        None
    }

    /// Advance the explicit leapfrog (`solver/explicit.rs`) by `steps` steps. On return
    /// `state.time` and `state.step` are current, and with `full_sync` the whole state is
    /// (without it the vectors may be stale: ask [`Backend::max_abs_displacement`]). Between
    /// calls the caller leaves `state` alone. Returns the bonds broken.
    ///
    /// The default runs [`Explicit::step`] on the host, calling this backend for forces and
    /// damage; a GPU backend keeps the state on the device and runs the loop there.
    fn advance_explicit(
        &mut self,
        integrator: &Explicit,
        loads: &Loads,
        state: &mut State<T>,
        steps: usize,
        full_sync: bool,
        times: &mut StepTimes,
    ) -> Result<usize> {
        let _ = full_sync;
        let backend = self.as_backend();
        Ok((0..steps)
            .map(|_| integrator.step(state, loads, backend, times))
            .sum())
    }

    /// One iteration of adaptive dynamic relaxation (`solver/adr.rs`) towards the load at
    /// `state.time + h`: sets `adr.residual`, advances `state.time` and `state.step`, and
    /// returns the bonds broken. The default runs [`Adr::iterate`] on the host; a GPU
    /// backend keeps the state on the device, where `state`'s vectors go stale until
    /// [`Backend::sync_state`].
    fn advance_adr(
        &mut self,
        adr: &mut Adr<T>,
        loads: &Loads,
        state: &mut State<T>,
        h: f64,
    ) -> Result<usize> {
        let backend = self.as_backend();
        Ok(adr.iterate(state, loads, backend, h))
    }

    /// Bring `state`'s vectors up to date after [`Backend::advance_adr`] where the backend
    /// holds them elsewhere (a device). The default has nothing to do.
    fn sync_state(&mut self, state: &mut State<T>) -> Result<()> {
        let _ = state;
        Ok(())
    }

    /// Largest absolute displacement of `state` for the stability check, `None` if any entry
    /// is not finite. The default reads `state.u`; a backend whose `advance_explicit` keeps
    /// the state on a device answers from there.
    fn max_abs_displacement(&mut self, state: &State<T>) -> Option<f64> {
        state.max_abs_displacement()
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

/// Create the backend `kind` for `problem`. `auto` takes the backend [`resolve_auto`] names
/// (and the CPU loop should the GPU one fail to set up); a backend this machine or build
/// cannot run is a clear error, never a panic.
pub fn create<T: Real>(kind: BackendKind, problem: Arc<Problem>) -> Result<Box<dyn Backend<T>>> {
    match kind {
        BackendKind::Auto => match resolve_auto(precision_of::<T>()).0 {
            BackendKind::GpuLoop => Ok(match GpuLoop::<T>::new(problem.clone()) {
                Ok(gpu) => Box::new(gpu),
                Err(_) => Box::new(CpuLoop::<T>::new(problem)),
            }),
            _ => Ok(Box::new(CpuLoop::<T>::new(problem))),
        },
        BackendKind::CpuLoop => Ok(Box::new(CpuLoop::<T>::new(problem))),
        // half storage: half the bond memory and about half the time of full storage, with
        // the same results to round-off (tests/agreement.rs, docs/matrix-formulation.md)
        BackendKind::CpuMatrix => Ok(Box::new(CpuMatrix::<T>::new(
            problem,
            crate::operators::Storage::Half,
        )?)),
        BackendKind::GpuLoop => Ok(Box::new(GpuLoop::<T>::new(problem)?)),
        // half storage, as cpu-matrix
        BackendKind::GpuMatrix => Ok(Box::new(GpuMatrix::<T>::new(
            problem,
            crate::operators::Storage::Half,
        )?)),
    }
}

/// What `auto` resolves to on this machine in `precision`, and why: `gpu-loop` where a CUDA
/// driver and device work and the kernels compile, else `cpu-loop` with the reason the GPU
/// was passed over.
pub fn resolve_auto(precision: Precision) -> (BackendKind, String) {
    if !crate::gpu::driver_available() {
        return (BackendKind::CpuLoop, "no CUDA driver found".into());
    }
    match crate::gpu::Gpu::get().and_then(|g| g.module(precision).map(|_| g)) {
        Ok(g) => (
            BackendKind::GpuLoop,
            format!("CUDA device {} ({})", g.name, g.arch),
        ),
        Err(e) => (BackendKind::CpuLoop, e.to_string()),
    }
}
