//! The GPU matrix backend: the matrix formulation of `backend/cpu/matrix.rs` (`theory.md` section 4,
//! `docs/matrix-formulation.md`) on the device, its sparse products by cuSPARSE
//! (`crate::gpu::cusparse`) and its elementwise bond kernels by NVRTC
//! (`kernels/matrix_bond.cu`). The operators are assembled once on the host
//! (`Operators::assemble`, half storage by default) and uploaded once; cuSPARSE descriptors and
//! workspaces are made once. One force evaluation is
//!
//! 1. `eta = (A x I_d) u`: the incidence with each row repeated per component, so one SpMV
//!    gives the `d` interleaved components of every bond difference (a two-term row sums to
//!    `u_j - u_i` exactly, as on the CPU);
//! 2. the bond kernel: (bond breaking,) the extension or stretch, the force scalar `z = w t`
//!    (LPS: `z = mu e`, `theta = Theta z`, then `z = w t` in place), rounded as the CPU
//!    rounds it;
//! 3. `f = F z` with `F = -diag(1/V) B^T` (linear laws) or `-diag(1/V) (A^T x I_d)`
//!    (nonlinear PMB, `d` values per row): the epilogue `-1/V_i` of `cpu-matrix` is folded
//!    into the operator's values at upload, so the product gives the force density, N/m^3.
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
//! - `host_csr.rs`: the device operators built on the host (`A x I_d`, the force operator);
//! - `image.rs`: [`MatrixImage`], everything an upload moves, assembled on the host;
//! - `room.rs`: what the device buffers must hold for an image, the bond vectors' device
//!   buffers, and the checked copies into them;
//! - `setup.rs`: making a backend (in core, or a slot for several images) and loading an
//!   image into it;
//! - `kernels.rs`: the bond-row kernels (`kernels/matrix_bond.cu`) and their launches;
//! - `products.rs`: the cuSPARSE products of a force evaluation, and their timings;
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

pub use host_csr::{device_operators, HostCsr};
pub use image::MatrixImage;
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
    /// `eta = (A x I_d) u`.
    diff: Spmv<T>,
    /// `f = -diag(1/V) B^T z`, or `-diag(1/V) (A^T x I_d) z` for nonlinear PMB.
    force: Spmv<T>,
    /// `theta = Theta z` (LPS).
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
    // Scratch: eta (d per row), z (per row; d per row for nonlinear PMB), theta, phi,
    // energy per block, and the displacement and force of the trait calls.
    eta: CudaSlice<T>,
    z: CudaSlice<T>,
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
