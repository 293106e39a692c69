//! [`BackendKind`], what `--backend` names, and [`resolve_auto`], what `auto` is on this
//! machine.

use crate::setup::NeighborSearch;
use crate::Precision;

/// Which execution to use (`--backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendKind {
    /// A GPU backend where a GPU exists, else CPU.
    Auto,
    /// A loop over each node's bonds on the CPU (the reference).
    CpuLoop,
    /// The matrix form (sparse products) on the CPU.
    CpuMatrix,
    /// A loop over each node's bonds on the CUDA device.
    GpuLoop,
    /// The matrix form (cuSPARSE products) on the CUDA device.
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

    /// The neighbour search for a run on this backend in `precision`: on the device for
    /// `gpu-loop` and `gpu-matrix`, on the CPU otherwise. Resolve `auto` first
    /// ([`resolve_auto`]); `auto` itself gives the CPU search.
    pub fn neighbor_search(self, precision: Precision) -> NeighborSearch {
        match self {
            BackendKind::GpuLoop | BackendKind::GpuMatrix => NeighborSearch::Device(precision),
            _ => NeighborSearch::Cpu,
        }
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
