//! The GPU loop backend: the CPU loop's node-parallel bond loops as NVRTC kernels
//! (`kernels/*.cu`), one thread per node over its family, the per-bond arrays in the sliced
//! order of `gpu/layout.rs`. Families, node records (position and volume), horizon volumes
//! and bond status are uploaded once; no per-bond weight is stored (the kernels recompute it
//! from the bond length, `bond_weight` in `kernels/common.cuh`). Each trait call uploads the
//! displacement and downloads its result. [`GpuLoop`] also runs the whole explicit time loop
//! on the device (`fused.rs` over the shared `time_loop.rs`), where the host only syncs for
//! output and checks.
//!
//! Files, in the order data flows:
//! - `records.rs`: the per-node records (positions and volumes) the kernels read;
//! - `bond_arrays.rs`: the device bond arrays (neighbour index, status bits), filled and
//!   uploaded in pieces;
//! - `params.rs`: the kernels and the constants of their parameter record;
//! - `setup.rs`: the device bytes counted before allocating, and the upload of a problem;
//! - `launch.rs`: the kernel launches of the force evaluation and of each trait call;
//! - `failure.rs`: bond failure with a history (a softening law's damage per bond, the
//!   critical stretch with `alpha`, breaking after the force), a pass of its own before or
//!   after the force kernels;
//! - `fused.rs`: the explicit steps with the update fused into the force kernel;
//! - `backend.rs`: the `Forces`, `DeviceForces` and `Backend` impls and the footprint.
//!
//! Units as in [`super`]: m, N/m^3, J.

mod backend;
mod bond_arrays;
mod crack_nodes;
mod failure;
mod fused;
mod launch;
mod params;
mod records;
mod setup;

pub use bond_arrays::{bond_slot_bytes, device_bond_arrays};
pub(crate) use failure::{FailurePass, FailureStep};
pub(crate) use params::{full_volume, law_params, Kernels};
pub(crate) use records::{node_records, node_records_f32, record_centre};
pub use setup::device_bytes_per;

use super::buffers::BrokenCounter;
use super::lattice::Stencil;
use super::time_loop::DeviceLoop;
use crate::gpu::layout::SlicedLayout;
use crate::gpu::Gpu;
use crate::setup::Problem;
use crate::Real;
use cudarc::driver::{CudaFunction, CudaSlice};
use std::sync::Arc;

/// The backend's name in the CLI and in errors.
const NAME: &str = "gpu-loop";

/// GPU loop backend in precision `T`.
pub struct GpuLoop<T: Real> {
    problem: Arc<Problem>,
    gpu: Arc<Gpu>,
    k: Kernels,
    dim: usize,
    // Families (sliced order) and geometry.
    layout: SlicedLayout,
    slice_start: CudaSlice<u64>,
    lengths: CudaSlice<u32>,
    neighbors: CudaSlice<u32>,
    /// Node records `[x, y, z, V]`, m and m^3; or, where `volumes_only`, the volumes `V`
    /// alone (f32 without partial volumes: no kernel reads an f64 position).
    nodes: CudaSlice<f64>,
    volumes_only: bool,
    /// In f32, the records the bond loops read: [`node_records_f32`] (one value in f64).
    nodes_f32: CudaSlice<f32>,
    horizon_volume: CudaSlice<f64>,
    no_fail: CudaSlice<u8>,
    // Bond data: status bits of the sliced order (`layout::pack_status`).
    mu: CudaSlice<u32>,
    /// A full box lattice: its stencil (host) and the node offsets the kernels read
    /// (`Stencil::device_offsets`); `neighbors` is then a placeholder.
    lattice: Option<Stencil>,
    stencil: Option<CudaSlice<i32>>,
    /// On such a lattice of one node volume with the plain PMB law, each slot's bond
    /// geometry (`Stencil::slot_geometry`) and the weight `c V` of every bond (N/m^3): the
    /// force loop then reads no neighbour position (`pmb_force_lattice_table`).
    slot_geometry: Option<(CudaSlice<T>, f64)>,
    /// With the slot table, the same loop with the stencil compiled in (`baked.rs`),
    /// launched instead of `pmb_force_lattice_table`; `None` where `PERIDOT_KERNEL_DEFINES`
    /// holds `PD_BAKED=0` (for timing the two).
    baked: Option<CudaFunction>,
    /// Several materials: each node's material index and the pair table
    /// (`MaterialMap::device_table`), f64.
    materials: Option<(CudaSlice<u8>, CudaSlice<f64>)>,
    // LPS per node.
    theta: CudaSlice<T>,
    alpha: CudaSlice<T>,
    pcoef: CudaSlice<T>,
    d_over_m: CudaSlice<T>,
    /// `(alpha_i, p_i theta_i)` per node (what `lps_force` gathers per neighbour).
    lps_pair: CudaSlice<T>,
    // Outputs and scratch of the trait calls (apart from the resident state); the device
    // time loop needs none of the scratch, so it is allocated by the first call that does
    // (`scratch`), except the displacement for LPS, whose outputs ask for the dilatation.
    u_in: Option<CudaSlice<T>>,
    f_out: Option<CudaSlice<T>>,
    phi: CudaSlice<T>,
    energy: Option<CudaSlice<f64>>,
    /// The compaction of a crack-tip sample's nodes (`crack_nodes.rs`; made by its first call).
    over: Option<crack_nodes::OverBuffers>,
    /// Bond failure with a history (`failure.rs`): a softening law's damage per bond, each
    /// node's critical stretch with `alpha` or breaking after the force.
    history: failure::DeviceHistory<T>,
    /// Bonds broken on the device since setup (a running counter).
    broken: BrokenCounter,
    /// Bonds broken by pre-cracks.
    precracked: usize,
    /// Largest horizon volume (the surface correction's reference), m^3.
    full_volume: f64,
    /// The device time loop: resident state, condition lists, leapfrog kernels.
    stepper: DeviceLoop<T>,
}

impl<T: Real> GpuLoop<T> {
    /// The device this backend runs on.
    pub(crate) fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// Set the largest horizon volume the surface correction refers to, m^3: a part of a
    /// body (a rank's nodes, `distributed/gpu/`) takes the whole body's, as the in-core run.
    pub(crate) fn set_full_volume(&mut self, full_volume: f64) {
        self.full_volume = full_volume;
    }

    /// Drop the host's copy of the per-bond arrays the upload read (the neighbour indices
    /// and the initial bond status; the family sizes stay) where this backend runs its
    /// neighbour list and holds the only reference to its problem: the kernels, the bond
    /// status and the reports read the family sizes only. A distributed rank's part calls
    /// it after the upload (`distributed/gpu/`), so the host keeps no per-bond array of
    /// the part for the run; a later read of the dropped arrays would fail loudly (an index
    /// out of range), never read stale values. With `keep_neighbors` the neighbour indices
    /// stay (crack-face contact finds a pair's bond in its family on the host). Returns
    /// whether the arrays were dropped.
    pub(crate) fn release_host_bonds(&mut self, keep_neighbors: bool) -> bool {
        if self.lattice.is_some() || self.history.num_bytes() > 0 {
            return false;
        }
        let Some(p) = Arc::get_mut(&mut self.problem) else {
            return false;
        };
        if !keep_neighbors {
            p.families.neighbors = Vec::new();
        }
        p.initial_mu = Vec::new();
        true
    }

    /// The device time loop (resident state, condition lists, leapfrog kernels).
    pub(crate) fn stepper(&mut self) -> &mut DeviceLoop<T> {
        &mut self.stepper
    }

    /// The problem this backend holds.
    pub(crate) fn problem(&self) -> &Arc<Problem> {
        &self.problem
    }
}
