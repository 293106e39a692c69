//! The GPU backends, on the driver layer of `crate::gpu`: [`GpuLoop`] (`bond_loop/`, the
//! NVRTC kernels of `kernels/` over each node's bonds; `lattice.rs` its form without a
//! neighbour list on a full box lattice) and [`GpuMatrix`] (`matrix/`, cuSPARSE products of
//! the operators and the bond-row kernels). Both run the explicit loop on the device
//! (`baked.rs` writes the stencil into the plain PMB loop's source where the lattice form runs;
//! `time_loop.rs`: trait `DeviceForces`, resident state, the leapfrog kernels) and ADR
//! (`adr.rs` over the buffers of `adr_buffers.rs`); `conditions.rs` turns the loads into
//! per-dof lists the kernels read; `probes.rs` reduces the probe rows on the device;
//! `buffers.rs` holds the device-buffer helpers they share.
//!
//! Imports go one way: `buffers` <- `conditions`, `adr_buffers`, `probes` <- `time_loop` <-
//! `adr` <- the two backends; the time loop and ADR know only the trait `DeviceForces`.
//!
//! Units: m, N/m^3, J (as in [`crate::backend`]).

pub mod adr;
mod adr_buffers;
pub mod baked;
pub mod bond_loop;
pub(crate) mod buffers;
pub mod conditions;
pub mod lattice;
pub mod matrix;
mod probes;
pub mod time_loop;

pub use bond_loop::GpuLoop;
pub use matrix::GpuMatrix;

use crate::Error;

/// Name the backend in a GPU error.
pub(crate) fn rename(e: Error, backend: &str) -> Error {
    match e {
        Error::Backend { message, .. } => Error::Backend {
            backend: backend.into(),
            message,
        },
        other => other,
    }
}

/// A device fault (device lost, launch failure) during `what` on backend `backend`, as the
/// error the driver reports: it names the backend and the operation.
pub(crate) fn device_fault(backend: &'static str, what: &'static str) -> impl Fn(Error) -> Error {
    move |e| match e {
        Error::Backend { message, .. } => Error::Backend {
            backend: backend.into(),
            message: format!("{what} failed on the device: {message}"),
        },
        other => other,
    }
}
