//! Making a [`GpuLoop`]: the device bytes it will hold, counted before anything is allocated
//! (`peridot info`, the out-of-memory check, the subdomain planner), the choice between a
//! neighbour list and a full box lattice's stencil, and the upload of a problem (bond arrays,
//! node records, LPS coefficients, the device time loop).
//!
//! Units: bytes; the arrays uploaded in m, m^3 and the laws' units.

use super::bond_arrays::{bond_slot_bytes, upload_bonds, DeviceBonds};
use super::failure::{keeps_history, DeviceHistory};
use super::params::{full_volume, Kernels};
use super::records::{node_arrays, records_kept, records_kept_for};
use super::{GpuLoop, NAME};
use crate::backend::coefficients::{lps_coefficients, LpsCoefficients};
use crate::backend::gpu::baked::baked_defines;
use crate::backend::gpu::buffers::{upload, BrokenCounter};
use crate::backend::gpu::lattice::Stencil;
use crate::backend::gpu::rename;
use crate::backend::gpu::time_loop::DeviceLoop;
use crate::geometry::lattice::MAX_NODES;
use crate::geometry::Body;
use crate::gpu::device::driver_error;
use crate::gpu::layout::{status_words, SlicedLayout, SLICE};
use crate::gpu::Gpu;
use crate::material::Law;
use crate::model::{Model, PartialVolume};
use crate::setup::memory::ModelCounts;
use crate::setup::Problem;
use crate::{Error, Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice};
use rayon::prelude::*;
use std::sync::Arc;

/// Device bytes of the GPU loop backend per node and per bond slot, for precision bytes `p`
/// (`lps`: the state-based law's per-node arrays too); a slot's bytes are a fraction (its
/// status is one bit).
pub fn device_bytes_per(dim: usize, p: usize, lps: bool) -> (usize, f64) {
    // record (position and volume) 32, in f32 the f32 record 16 and only the f64 volume 8
    // (the record too with partial volumes: `records_kept`, counted by `device_bytes`),
    // horizon volume 8, no-fail 1, family size 4, damage p, state u v a f b u_next (6 d p;
    // damped runs add v_half on their first step); LPS theta, alpha, p, d/m and the
    // (alpha, p theta) pair (6 p) and the trait calls' displacement (d p: its outputs ask for
    // the dilatation). Allocated on first use, not counted: the trait calls' force and
    // energy and PMB's displacement (`scratch`).
    let record = if p == 4 { 8 + 16 } else { 32 };
    let node = record + 8 + 1 + 4 + p + 6 * dim * p + if lps { 6 * p + dim * p } else { 0 };
    // neighbour 4, status one bit (no weight: the kernels recompute it)
    (node, 4.0 + 1.0 / 8.0)
}

/// The stencil `gpu-loop` runs `problem` with instead of a neighbour list: where the body is
/// a full box lattice (`lattice.rs`), unless `PERIDOT_KERNEL_DEFINES` holds
/// `PD_LATTICE=0`.
fn lattice_of(problem: &Problem) -> Option<Stencil> {
    // (bond failure with a history keeps its per-bond damage in the list's slots)
    match crate::gpu::kernels::variant_off("PD_LATTICE") || keeps_history(&problem.model) {
        true => None,
        false => Stencil::of(problem),
    }
}

fn to_t<T: Real>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::of(x)).collect()
}

impl<T: Real> GpuLoop<T> {
    /// Open the GPU, compile the kernels (once per process) and upload the problem.
    pub fn new(problem: Arc<Problem>) -> Result<Self> {
        let lattice = lattice_of(&problem);
        Self::with_neighbours(problem, lattice)
    }

    /// [`GpuLoop::new`] with the neighbour list even where the body is a full box lattice
    /// (to compare the two forms).
    pub fn with_neighbour_list(problem: Arc<Problem>) -> Result<Self> {
        Self::with_neighbours(problem, None)
    }

    /// [`GpuLoop::new`] with the slot-table loop where the baked loop would run (to compare
    /// the two: `backend/gpu/baked.rs`).
    pub fn with_slot_table_loop(problem: Arc<Problem>) -> Result<Self> {
        let mut backend = Self::new(problem)?;
        backend.baked = None;
        Ok(backend)
    }

    /// Whether the force loop is the baked one (the stencil compiled in).
    pub fn runs_baked_loop(&self) -> bool {
        self.baked.is_some()
    }

    fn with_neighbours(problem: Arc<Problem>, lattice: Option<Stencil>) -> Result<Self> {
        crate::backend::check_material(&problem, NAME, crate::backend::Scheme::GpuLoop)?;
        let gpu = Gpu::get().map_err(|e| rename(e, NAME))?;
        let k = Kernels::load(&gpu, T::PRECISION).map_err(|e| rename(e, NAME))?;
        Self::upload(problem, gpu, k, lattice).map_err(|e| rename(e, NAME))
    }

    /// Bytes this backend allocates on the device for `problem` in precision `T`, counted
    /// before any allocation: per node and per bond slot of the sliced order (padding
    /// included). `peridot info` and the out-of-memory check use it.
    pub fn device_bytes(problem: &Problem) -> usize {
        Self::device_bytes_for(problem, lattice_of(problem).as_ref())
    }

    /// The stencil `problem` runs with instead of a neighbour list (a full box lattice,
    /// `lattice.rs`), else `None`: what [`GpuLoop::new`] decides.
    pub fn lattice(problem: &Problem) -> Option<Stencil> {
        lattice_of(problem)
    }

    /// Whether `body` of `model` is one [`GpuLoop::new`] would run without a neighbour list
    /// (a full box lattice, `lattice.rs`), known before any family is searched, so that a run
    /// can set it up lean: the stencil's kernels read no host family.
    pub fn runs_listless(model: &Model, body: &Body) -> bool {
        !crate::gpu::kernels::variant_off("PD_LATTICE")
            && !keeps_history(model)
            && Stencil::of_body(model, body).is_some()
    }

    /// [`device_bytes`](Self::device_bytes) of the form with the neighbour list, even where
    /// the body is a full box lattice: what the subdomain engine streams, and what its budget
    /// percentages are of (`backend/partitioned/plan.rs`).
    pub fn device_bytes_with_list(problem: &Problem) -> usize {
        Self::device_bytes_for(problem, None)
    }

    /// [`device_bytes`](Self::device_bytes) in the form `lattice` says (the stencil of
    /// [`GpuLoop::lattice`], or `None` for the list), without deciding it again.
    pub fn device_bytes_for(problem: &Problem, lattice: Option<&Stencil>) -> usize {
        let n = problem.body.len();
        let (layout, bond_bytes) = match lattice {
            // status bits of K slots a node, the stencil (32 K offsets) and where the plain
            // PMB loop takes it the slot table (8 K reals), no index
            Some(st) => {
                let layout = st.layout(n);
                let bytes = 4 * status_words(layout.padded_len())
                    + 4 * SLICE * st.slots()
                    + slot_table_bytes::<T>(problem, st.slots());
                (layout, bytes)
            }
            None => {
                let layout = SlicedLayout::new(&problem.families);
                let bytes = bond_slot_bytes(layout.padded_len());
                (layout, bytes)
            }
        };
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let kept = records_kept(problem, std::mem::size_of::<T>());
        let slices = layout.slice_start.len();
        // (a softening law's damage per slot, or each node's critical stretch twice)
        let bond_bytes = bond_bytes + DeviceHistory::<T>::bytes(problem, layout.padded_len());
        Self::device_bytes_of(n, problem.dim(), lps, kept, bond_bytes, slices)
    }

    /// Device bytes for `n` nodes in dimension `dim` (`lps`: the state-based law; `kept`: f32
    /// keeps the f64 records too, [`records_kept`]) with `bond_bytes` of bond arrays in
    /// `slices` slices of the sliced order.
    fn device_bytes_of(
        n: usize,
        dim: usize,
        lps: bool,
        kept: bool,
        bond_bytes: usize,
        slices: usize,
    ) -> usize {
        let t = std::mem::size_of::<T>();
        let (node, _) = device_bytes_per(dim, t, lps);
        // (f32 with partial volumes keeps the f64 records beside the f32 ones)
        let node = node + if t == 4 && kept { 24 } else { 0 };
        // slice starts, the two counters (bonds broken, reduction result), and up to 48 bytes
        // of one-value placeholders for the arrays a law, precision or lattice does not use
        node * n + bond_bytes + 8 * slices + 16 + 48
    }

    /// [`device_bytes`](Self::device_bytes) estimated from a model's `counts` before any
    /// node is placed (the memory guard): every node with a full family, each slice of
    /// [`SLICE`] nodes padded to it (an upper estimate; surface nodes have fewer bonds);
    /// `listless`: the stencil of a full box lattice (a status bit per slot, no index).
    pub fn device_bytes_estimate(counts: &ModelCounts, listless: bool) -> usize {
        // (held within the integer arithmetic: beyond the node index limit or a family of
        // 2^20 the body's check or the host's bytes refuse the model first)
        let n = counts.nodes.min(MAX_NODES as f64) as usize;
        let slices = n.div_ceil(SLICE);
        let family = counts.family.ceil().min((1u64 << 20) as f64) as usize;
        let padded = slices * SLICE * family;
        let bond_bytes = match listless {
            true => {
                4 * status_words(padded)
                    + 4 * SLICE * family
                    + 8 * family * std::mem::size_of::<T>()
            }
            false => bond_slot_bytes(padded),
        };
        // (a softening law: its damage per slot; with alpha, each node's two critical
        // stretches, 2 n values, are left out of this estimate; `device_bytes` counts them)
        let bond_bytes =
            bond_bytes + usize::from(counts.bond_damage) * padded * std::mem::size_of::<T>();
        let kept = records_kept_for(counts.partial_volume, std::mem::size_of::<T>());
        Self::device_bytes_of(n, counts.dim, counts.lps(), kept, bond_bytes, slices + 1)
    }

    fn upload(
        problem: Arc<Problem>,
        gpu: Arc<Gpu>,
        k: Kernels,
        lattice: Option<Stencil>,
    ) -> Result<Self> {
        let p = &problem;
        let (n, d) = (p.body.len(), p.dim());
        if n >= u32::MAX as usize || n * d >= u32::MAX as usize {
            return Err(Error::Backend {
                backend: NAME.into(),
                message: format!("{n} nodes exceed the 32-bit node indices of the kernels"),
            });
        }
        gpu.ensure_fits(NAME, Self::device_bytes_for(p, lattice.as_ref()))?;
        let DeviceBonds {
            layout,
            neighbors,
            mu,
            stencil,
        } = upload_bonds(&gpu, p, lattice.as_ref())?;
        let (nodes, volumes_only, nodes_f32) = node_arrays(p, std::mem::size_of::<T>());
        let no_fail: Vec<u8> = p.no_fail.iter().map(|&b| u8::from(b)).collect();
        let lps = matches!(p.material.law, Law::Lps { .. });
        let coef = lps.then(|| lps_coefficients(p));
        let per_node = |pick: fn(&LpsCoefficients) -> &Vec<f64>| {
            coef.as_ref()
                .map(|c| to_t::<T>(pick(c)))
                .unwrap_or_default()
        };
        let zeros = |len: usize| gpu.stream().alloc_zeros::<T>(len.max(1));
        let slot_geometry = match &lattice {
            Some(st) => slot_table(&gpu, p, st)?,
            None => None,
        };
        let baked = match (&lattice, &slot_geometry) {
            (Some(st), Some(_)) => baked_loop::<T>(&gpu, p, st)?,
            _ => None,
        };
        let stepper = DeviceLoop::new(&gpu, n * d, true)?;
        let history = DeviceHistory::upload(&gpu, p, &layout)?;
        let backend = GpuLoop {
            slice_start: upload(&gpu, &layout.slice_start)?,
            lengths: upload(&gpu, &layout.lengths)?,
            neighbors,
            nodes: upload(&gpu, &nodes)?,
            volumes_only,
            nodes_f32: upload(&gpu, &nodes_f32)?,
            horizon_volume: upload(&gpu, &p.bonds.horizon_volume)?,
            no_fail: upload(&gpu, &no_fail)?,
            mu,
            slot_geometry,
            baked,
            lattice,
            stencil,
            materials: match &p.materials {
                Some(map) => Some((upload(&gpu, &map.node)?, upload(&gpu, &map.device_table())?)),
                None => None,
            },
            theta: zeros(if lps { n } else { 1 }).map_err(driver_error)?,
            alpha: upload(&gpu, &per_node(|c| &c.alpha))?,
            pcoef: upload(&gpu, &per_node(|c| &c.pcoef))?,
            d_over_m: upload(&gpu, &per_node(|c| &c.d_over_m))?,
            lps_pair: zeros(if lps { 2 * n } else { 1 }).map_err(driver_error)?,
            u_in: match lps {
                true => Some(zeros(n * d).map_err(driver_error)?),
                false => None,
            },
            f_out: None,
            phi: zeros(n).map_err(driver_error)?,
            energy: None,
            over: None,
            broken: BrokenCounter::new(&gpu)?,
            history,
            layout,
            precracked: p.precracked_bonds(),
            full_volume: full_volume(p),
            stepper,
            dim: d,
            k,
            gpu,
            problem,
        };
        backend.gpu.synchronize()?;
        Ok(backend)
    }
}

/// Bytes of the slot table of `slots` stencil slots where [`slot_table`] makes one.
fn slot_table_bytes<T: Real>(problem: &Problem, slots: usize) -> usize {
    match takes_slot_table(problem) {
        true => 8 * slots * std::mem::size_of::<T>(),
        false => 0,
    }
}

/// Whether the plain PMB loop on a lattice takes a slot table: PMB without partial volumes
/// or the surface correction, every node of one volume, and not turned off by
/// `PERIDOT_KERNEL_DEFINES` holding `PD_TABLE=0` (positions read per bond, for timing).
fn takes_slot_table(problem: &Problem) -> bool {
    let volumes = &problem.body.volumes;
    // (several materials: each bond's weight from its pair, no one weight of every bond)
    matches!(problem.material.law, Law::Pmb { .. })
        && problem.materials.is_none()
        && problem.model.discretization.partial_volume == PartialVolume::None
        && !problem.material.surface_correction
        && volumes.par_iter().all(|&v| v == volumes[0])
        && !crate::gpu::kernels::variant_off("PD_TABLE")
}

/// The slot table of `stencil` on the device and the weight `c V` of every bond, where the
/// plain PMB loop takes one ([`takes_slot_table`]) and the offsets are exact in it.
fn slot_table<T: Real>(
    gpu: &Gpu,
    problem: &Problem,
    stencil: &Stencil,
) -> Result<Option<(CudaSlice<T>, f64)>> {
    let (Law::Pmb { c, .. }, true) = (problem.material.law, takes_slot_table(problem)) else {
        return Ok(None);
    };
    let Some(table) = stencil.slot_geometry::<T>(problem.body.dx) else {
        return Ok(None);
    };
    Ok(Some((upload(gpu, &table)?, c * problem.body.volumes[0])))
}

/// The plain PMB loop with `stencil` compiled in (`backend/gpu/baked.rs`), for a problem that
/// takes the slot table; `None` where `PERIDOT_KERNEL_DEFINES` holds `PD_BAKED=0`.
fn baked_loop<T: Real>(
    gpu: &Gpu,
    problem: &Problem,
    stencil: &Stencil,
) -> Result<Option<CudaFunction>> {
    if crate::gpu::kernels::variant_off("PD_BAKED") {
        return Ok(None);
    }
    let linearized = problem.material.linearized();
    let defines = baked_defines::<T>(stencil, problem.body.dx, problem.dim(), linearized);
    gpu.baked_function(T::PRECISION, &defines).map(Some)
}
