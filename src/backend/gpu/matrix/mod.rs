//! The GPU matrix backend: the matrix formulation of `backend/cpu/matrix.rs` (`theory.md` section 4,
//! `docs/matrix-formulation.md`) on the device, in its incidence form
//! (`operators::IncidenceOperators`): the bond difference of a row is `A u` with the
//! incidence's implicit +-1 values, and the forces are `A^T` applied to an `n x d` block of
//! the rows' force vectors, so no `B`, `B^T` or `A x I_d` is assembled, held or read. The
//! operators are assembled once on the host (half storage by default) and uploaded once;
//! cuSPARSE descriptors and workspaces are made once. One force evaluation is
//!
//! 1. the bond kernel (`kernels/matrix_bond.cu`), one thread per row: `eta = u_j - u_i` from
//!    the row's two ends (exact, as `A u` on the CPU), (bond breaking,) the extension or
//!    stretch, the force scalar `t`, rounded as the CPU rounds it, and the row's force
//!    vector `Z = w t n` (linear laws, `n = xi / x`) or `w t y/|y|` (nonlinear PMB); LPS
//!    first writes `ze = mu e`, then `theta = Theta ze` (cuSPARSE), then `Z`;
//! 2. `f = -diag(1/V) A^T Z` (`matrix_force`), one thread per node over its rows in `A^T`'s
//!    order, each with the sign of the node's end: the force density, N/m^3.
//!
//! Damage is `phi = Phi (1 - mu)` (a kernel writes `1 - mu`, one SpMV), as on the CPU. The
//! explicit time loop runs on the device (`time_loop.rs`, shared with `gpu-loop`).
//!
//! Everything uploaded is first assembled on the host as a [`MatrixImage`]; a backend's
//! buffers are allocated with room for its image and filled from it by copies on its stream
//! ([`GpuMatrix::load_image`]). The streamed matrix scheme
//! (`backend/partitioned/matrix_stream.rs`) makes a backend once with room for the largest of
//! several images ([`GpuMatrix::slot`]) and loads them into it in turn: no allocation, handle
//! or workspace per load.
//!
//!
//! Files, in the order data flows:
//! - `host_csr.rs`: the device operators built on the host (`Theta`, `Phi`, the signed `A^T`);
//! - `image.rs`: [`MatrixImage`], everything an upload moves, assembled on the host;
//! - `room.rs`: what the device buffers must hold for an image, the bond vectors' device
//!   buffers, and the checked copies into them;
//! - `setup.rs`: making a backend (in core, or a slot for several images) and loading an
//!   image into it;
//! - `kernels.rs`: the bond-row kernels (`kernels/matrix_bond.cu`) and their launches;
//! - `products.rs`: the products of a force evaluation, and their timings;
//! - `calls.rs`: each trait call's device work (upload, launches, download);
//! - `footprint.rs`: device bytes, estimated before assembling and held;
//! - `backend.rs`: the `Forces`, `DeviceForces` and `Backend` impls.
//!
//! Units as in [`super`]: m, N/m^3, J.

mod backend;
mod calls;
mod footprint;
mod host_csr;
mod image;
mod kernels;
mod products;
mod room;
mod setup;
#[cfg(test)]
mod tests;

pub use host_csr::{HostCsr, SignedIncidence};
pub use image::MatrixImage;
pub(crate) use products::Ghosts;
pub use products::ProductTiming;

use super::buffers::BrokenCounter;
use super::time_loop::DeviceLoop;
use crate::gpu::cusparse::{Handle, Spmv};
use crate::gpu::params::MatrixParams;
use crate::gpu::Gpu;
use crate::material::Law;
use crate::operators::{BondRows, Storage};
use crate::setup::Problem;
use crate::Real;
use cudarc::driver::CudaSlice;
use kernels::Kernels;
use room::DeviceBondVectors;
use std::sync::Arc;

const NAME: &str = "gpu-matrix";

/// Threads per block of every launch (`Gpu::launch`); `matrix_energy` sums per block.
const BLOCK: usize = 256;

/// `law` codes of `MatrixParams`.
const PMB_LINEAR: i32 = 0;
const PMB_NONLINEAR: i32 = 1;
const LPS: i32 = 2;

/// Matrix-formulation backend on the GPU, in precision `T`.
pub struct GpuMatrix<T: Real> {
    problem: Arc<Problem>,
    gpu: Arc<Gpu>,
    k: Kernels,
    storage: Storage,
    dim: usize,
    law: i32,
    /// Bond rows on the host (the map back to directed bonds for `bond_status`).
    rows: Arc<BondRows>,
    handle: Handle,
    /// `A^T` with implicit values for `f = -diag(1/V) A^T Z` (`matrix_force`): row pointers
    /// and row indices with the first-end bit ([`host_csr::SignedIncidence`]).
    at_ptr: CudaSlice<u32>,
    at_col: CudaSlice<u32>,
    /// Entries of the loaded image's `A^T` (a slot's buffers may be longer).
    at_nnz: usize,
    /// `theta = Theta ze` (LPS).
    theta_op: Option<Spmv<T>>,
    /// `phi = Phi (1 - mu)`.
    damage_op: Spmv<T>,
    /// Bond vectors (per row; `xi` `d` per row).
    vectors: DeviceBondVectors<T>,
    first: CudaSlice<u32>,
    second: CudaSlice<u32>,
    mu: CudaSlice<u8>,
    // Per node.
    no_fail: CudaSlice<u8>,
    volumes: CudaSlice<f64>,
    /// Several materials: each node's material index (a slot's: room for its largest
    /// image, each image's indices loaded with it) and the pair table
    /// (`MaterialMap::device_table`, f64), which the bond kernels read for each row's
    /// critical stretch and each node's `K_d`.
    materials: Option<(CudaSlice<u8>, CudaSlice<f64>)>,
    // Scratch: Z (d per row), ze (LPS, per row), theta, phi, energy per block, and the
    // displacement and force of the trait calls.
    z: CudaSlice<T>,
    ze: CudaSlice<T>,
    theta: CudaSlice<T>,
    phi: CudaSlice<T>,
    partial: CudaSlice<f64>,
    u_in: CudaSlice<T>,
    f_out: CudaSlice<T>,
    /// Rows broken on the device since setup (a running counter).
    broken: BrokenCounter,
    /// Lengths of the displacement and (LPS) dilatation [`GpuMatrix::stage_inputs`] put on
    /// the device for the next call, which then uploads none of its own.
    staged_u: Option<usize>,
    staged_theta: Option<usize>,
    /// Rows broken by pre-cracks (of the image loaded by `from_image`; a slot's loads leave
    /// it, their callers count broken rows from the row status).
    precracked_rows: usize,
    /// The device time loop: resident state, condition lists, leapfrog kernels (made by
    /// `from_image`, or on first use; a slot, which never runs it, has none).
    stepper: Option<DeviceLoop<T>>,
    /// The bond kernels' parameters (the buffers never move), bond check off.
    base: MatrixParams,
}

/// The law code of `problem`.
fn law_code(problem: &Problem) -> i32 {
    law_code_of(&problem.material.law)
}

/// The kernels' code of `law`.
fn law_code_of(law: &Law) -> i32 {
    match law {
        Law::Pmb {
            linearized: true, ..
        } => PMB_LINEAR,
        Law::Pmb { .. } => PMB_NONLINEAR,
        Law::Lps { .. } => LPS,
    }
}
