//! The GPU loop backend: the CPU loop's node-parallel bond loops as NVRTC kernels
//! (`kernels/*.cu`), one thread per node over its family, the per-bond arrays in the sliced
//! order of `gpu/layout.rs`. Families, node records (position and volume), horizon volumes
//! and bond status are uploaded once; no per-bond weight is stored (the kernels recompute it
//! from the bond length, `bond_weight` in `kernels/common.cuh`). Each trait call uploads the
//! displacement and downloads its result. [`GpuLoop`] also runs the whole explicit time loop
//! on the device (`gpu_step.rs`), where the host only syncs for output and checks.
//!
//! The bond arrays (neighbour index and initial status in the sliced order) come from a
//! stored problem's families or, for a lean problem ([`Problem::build_lean`]), from families
//! searched again by a cell list (`BondFill`), and are uploaded in pieces, so the host never
//! holds a whole per-bond array in device order: the same arrays either way
//! ([`device_bond_arrays`]).
//!
//! Units as in [`super`]: m, N/m^3, J.

use super::adr::{adr_iteration, sync_adr_state};
use super::lattice::Stencil;
use super::time_loop::{advance_fused, DeviceLoop};
use super::{device_fault, rename};
use crate::backend::coefficients::lps_coefficients;
use crate::backend::gpu::conditions::{addr, upload};
use crate::backend::{Backend, Footprint};
use crate::dynamics::{Adr, ExplicitCall, Forces, Loads, State};
use crate::geometry::Body;
use crate::gpu::device::driver_error;
use crate::gpu::layout::{pack_status, status_words, unpack_status, SlicedLayout, SLICE};
use crate::gpu::params::BondParams;
use crate::gpu::Gpu;
use crate::material::laws::LawParams;
use crate::material::{family_radius, Law};
use crate::model::PartialVolume;
use crate::neighbors::CellList;
use crate::setup::{PrecrackZone, Problem};
use crate::{Error, Precision, Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Arc;

/// The backend's name in the CLI and in errors.
const NAME: &str = "gpu-loop";

/// The kernels this backend launches.
pub(crate) struct Kernels {
    pub pmb_force: CudaFunction,
    /// PMB without partial volumes and surface correction (the weight is `c V_j`).
    pub pmb_force_plain: CudaFunction,
    /// The same on a full box lattice, neighbours from the stencil (`gpu_lattice.rs`).
    pub pmb_force_plain_lattice: CudaFunction,
    pub lps_dilatation: CudaFunction,
    pub lps_force: CudaFunction,
    pub break_bonds: CudaFunction,
    pub damage: CudaFunction,
    pub strain_energy: CudaFunction,
}

impl Kernels {
    pub(crate) fn load(gpu: &Gpu, precision: Precision) -> Result<Self> {
        let f = |name: &str| gpu.function(precision, name);
        Ok(Kernels {
            pmb_force: f("pmb_force")?,
            pmb_force_plain: f("pmb_force_plain")?,
            pmb_force_plain_lattice: f("pmb_force_plain_lattice")?,
            lps_dilatation: f("lps_dilatation")?,
            lps_force: f("lps_force")?,
            break_bonds: f("break_bonds")?,
            damage: f("damage")?,
            strain_energy: f("strain_energy")?,
        })
    }
}

/// GPU loop backend in precision `T`.
pub struct GpuLoop<T: Real> {
    pub(super) problem: Arc<Problem>,
    pub(super) gpu: Arc<Gpu>,
    pub(super) k: Kernels,
    pub(super) dim: usize,
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
    /// Bonds broken on the device since setup (a running counter).
    broken: CudaSlice<u64>,
    /// Last value read from `broken`.
    pub(super) broken_seen: u64,
    /// Bonds broken by pre-cracks.
    precracked: usize,
    /// Largest horizon volume (the surface correction's reference), m^3.
    full_volume: f64,
    /// The device time loop: resident state, condition lists, leapfrog kernels.
    pub(super) stepper: DeviceLoop<T>,
}

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
/// a full box lattice (`gpu_lattice.rs`), unless `PERIDOT_KERNEL_DEFINES` holds
/// `PD_LATTICE=0`.
fn lattice_of(problem: &Problem) -> Option<Stencil> {
    match crate::gpu::kernels::variant_off("PD_LATTICE") {
        true => None,
        false => Stencil::of(problem),
    }
}

/// Whether the f32 kernels of `problem` need the f64 node records (positions for the exact
/// bond lengths of the partial-volume factor in damage); else only the f64 volumes are kept.
fn records_kept(problem: &Problem, t: usize) -> bool {
    t == 8 || problem.model.discretization.partial_volume != PartialVolume::None
}

/// Device bytes of the neighbour index and status bits of `slots` slots of the sliced order.
pub fn bond_slot_bytes(slots: usize) -> usize {
    4 * slots + 4 * status_words(slots)
}

fn to_t<T: Real>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::of(x)).collect()
}

/// Node records `[x, y, z, V]` (m, m^3) of `nodes`, in that order: what the bond kernels
/// read per node and per neighbour.
pub(crate) fn node_records(body: &Body, nodes: impl Iterator<Item = usize>) -> Vec<f64> {
    nodes
        .flat_map(|i| {
            let x = body.positions[i];
            [x[0], x[1], x[2], body.volumes[i]]
        })
        .collect()
}

/// The point the f32 node records are relative to: the centre of the body's bounding box, m
/// (the same for every subdomain of a body, so their records agree).
pub(crate) fn record_centre(body: &Body) -> [f64; 3] {
    std::array::from_fn(|k| 0.5 * (body.bbox_min[k] + body.bbox_max[k]))
}

/// The f32 node records `[x - cx, y - cy, z - cz, V]` (m, m^3) of the f64 records `records`
/// ([`node_records`]) with `centre` ([`record_centre`]): what the f32 bond kernels read per
/// node and per neighbour (one 16-byte load, no conversion). The differences are taken in f64
/// and rounded once; relative to the centre the rounding of a position is at most 2^-24 of
/// the body's half extent, the size of the rounding the f32 displacement already carries.
pub(crate) fn node_records_f32(records: &[f64], centre: [f64; 3]) -> Vec<f32> {
    records
        .chunks_exact(4)
        .flat_map(|r| {
            [
                (r[0] - centre[0]) as f32,
                (r[1] - centre[1]) as f32,
                (r[2] - centre[2]) as f32,
                r[3] as f32,
            ]
        })
        .collect()
}

/// Slots of the sliced order per piece of the bond arrays' upload: the host holds the
/// neighbour indices and bond status of one piece at a time (5 bytes a slot: 320 MiB).
const UPLOAD_SLOTS: usize = 1 << 26;

/// The source of the device-order bond arrays (neighbour index and initial bond status per
/// slot of the sliced order, `gpu/layout.rs`): a stored problem's families and `initial_mu`,
/// or for a lean problem ([`Problem::build_lean`]) a cell list over all nodes, each family
/// searched again and sorted (the families the stored problem holds) and each bond's status
/// tested against the pre-cracks (all intact where nothing is pre-cracked). Padding slots
/// hold node 0 and status 0 (broken; never visited: a thread stops at its family size).
pub(crate) struct BondFill<'a> {
    problem: &'a Problem,
    layout: &'a SlicedLayout,
    list: Option<CellList<'a>>,
    /// Where a lean problem's bonds can cross a pre-crack (tested only there).
    zone: PrecrackZone,
}

impl<'a> BondFill<'a> {
    /// The bond arrays of `problem` in `layout` (the problem's sliced order).
    pub(crate) fn new(problem: &'a Problem, layout: &'a SlicedLayout) -> Self {
        let kind = problem.model.discretization.partial_volume;
        let radius = family_radius(kind, problem.body.delta, problem.body.dx);
        let list = (!problem.bonds_stored)
            .then(|| CellList::new(&problem.body.positions, problem.dim(), radius));
        BondFill {
            problem,
            layout,
            list,
            zone: problem.precrack_zone(),
        }
    }

    /// Device-order slots of slices `slices`, as a range of the whole arrays.
    pub(crate) fn slots(&self, slices: Range<usize>) -> Range<usize> {
        let starts = &self.layout.slice_start;
        starts[slices.start] as usize..starts[slices.end] as usize
    }

    /// Write slices `slices` into `neighbors` and `mu` (both [`slots`](Self::slots) long),
    /// padding included; slices in parallel, each writing only its own piece.
    pub(crate) fn fill(&self, slices: Range<usize>, neighbors: &mut [u32], mu: &mut [u8]) {
        let starts = &self.layout.slice_start;
        let len = self.slots(slices.clone()).len();
        assert!(neighbors.len() == len && mu.len() == len);
        neighbors.fill(0);
        mu.fill(0);
        let mut pieces = Vec::with_capacity(slices.len());
        let (mut nb_rest, mut mu_rest) = (neighbors, mu);
        for s in slices {
            let width = (starts[s + 1] - starts[s]) as usize;
            let (nb, nb_tail) = nb_rest.split_at_mut(width);
            let (st, mu_tail) = mu_rest.split_at_mut(width);
            pieces.push((s, nb, st));
            (nb_rest, mu_rest) = (nb_tail, mu_tail);
        }
        let p = self.problem;
        let n = self.layout.lengths.len();
        pieces
            .into_par_iter()
            .for_each_init(Vec::new, |family, (s, nb, st)| {
                for i in s * SLICE..((s + 1) * SLICE).min(n) {
                    let l = i % SLICE;
                    match &self.list {
                        None => {
                            let range = p.families.range(i);
                            let status = &p.initial_mu[range.clone()];
                            for (k, (&j, &m)) in
                                p.families.neighbors[range].iter().zip(status).enumerate()
                            {
                                nb[SLICE * k + l] = j;
                                st[SLICE * k + l] = m;
                            }
                        }
                        Some(list) => {
                            list.family_into(i, family);
                            assert_eq!(
                                family.len(),
                                self.layout.lengths[i] as usize,
                                "family of node {i} as counted"
                            );
                            let test = self.zone.near(&p.body.positions[i]);
                            for (k, &j) in family.iter().enumerate() {
                                nb[SLICE * k + l] = j;
                                st[SLICE * k + l] =
                                    u8::from(!test || p.initially_intact(i, j as usize));
                            }
                        }
                    }
                }
            });
    }

    /// Consecutive runs of whole slices of at most [`UPLOAD_SLOTS`] slots each (a single
    /// wider slice on its own), covering every slice.
    pub(crate) fn pieces(&self) -> Vec<Range<usize>> {
        let starts = &self.layout.slice_start;
        let slices = starts.len().saturating_sub(1);
        let mut out = Vec::new();
        let mut first = 0;
        while first < slices {
            let mut last = first + 1;
            while last < slices && (starts[last + 1] - starts[first]) as usize <= UPLOAD_SLOTS {
                last += 1;
            }
            out.push(first..last);
            first = last;
        }
        out
    }
}

/// The neighbour index and initial bond status of every slot of `problem`'s sliced order
/// (`gpu/layout.rs`), padding included: the arrays [`GpuLoop`] uploads (in pieces), the same
/// for a stored problem and its lean counterpart ([`Problem::build_lean`]).
pub fn device_bond_arrays(problem: &Problem) -> (Vec<u32>, Vec<u8>) {
    let layout = SlicedLayout::new(&problem.families);
    let fill = BondFill::new(problem, &layout);
    let slices = 0..layout.slice_start.len().saturating_sub(1);
    let len = layout.padded_len();
    let (mut neighbors, mut mu) = (vec![0u32; len], vec![0u8; len]);
    fill.fill(slices, &mut neighbors, &mut mu);
    (neighbors, mu)
}

/// The device neighbour and bond status arrays of `problem` in `layout` (status as bits,
/// `layout::pack_status`), allocated whole on the device and filled piece by piece
/// ([`BondFill::pieces`]): the host holds one piece at a time, never a whole per-bond array
/// in device order.
fn upload_bond_arrays(
    gpu: &Gpu,
    problem: &Problem,
    layout: &SlicedLayout,
) -> Result<(CudaSlice<u32>, CudaSlice<u32>)> {
    let s = gpu.stream();
    let len = layout.padded_len().max(1);
    let mut neighbors = s.alloc_zeros::<u32>(len).map_err(driver_error)?;
    let mut mu = s
        .alloc_zeros::<u32>(status_words(len))
        .map_err(driver_error)?;
    let fill = BondFill::new(problem, layout);
    for slices in fill.pieces() {
        let slots = fill.slots(slices.clone());
        if slots.is_empty() {
            continue;
        }
        let (mut nb, mut st) = (vec![0u32; slots.len()], vec![0u8; slots.len()]);
        fill.fill(slices, &mut nb, &mut st);
        s.memcpy_htod(&nb, &mut neighbors.slice_mut(slots.clone()))
            .map_err(driver_error)?;
        // (slices start at multiples of 32 slots: a piece is whole words)
        let words = slots.start / 32..status_words(slots.end);
        s.memcpy_htod(&pack_status(&st), &mut mu.slice_mut(words))
            .map_err(driver_error)?;
        // (the host piece is dropped next: the copies have read it)
        s.synchronize().map_err(driver_error)?;
    }
    Ok((neighbors, mu))
}

/// The scratch buffer `slot` of `len` values, allocated on first use (after checking that it
/// fits: an error naming the bytes needed and free otherwise).
fn scratch<'a, U: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    slot: &'a mut Option<CudaSlice<U>>,
    len: usize,
) -> Result<&'a mut CudaSlice<U>> {
    if slot.is_none() {
        gpu.ensure_fits(NAME, len.max(1) * std::mem::size_of::<U>())?;
        *slot = Some(
            gpu.stream()
                .alloc_zeros::<U>(len.max(1))
                .map_err(driver_error)?,
        );
    }
    Ok(slot.as_mut().expect("allocated above"))
}

/// The largest horizon volume of `problem`'s nodes, m^3.
pub(crate) fn full_volume(problem: &Problem) -> f64 {
    problem
        .bonds
        .horizon_volume
        .iter()
        .copied()
        .fold(0.0, f64::max)
}

/// The bond loops' constants for `problem` (law, horizon, partial volumes, critical stretch)
/// over `n` nodes, with every device address 0; `check_bonds`: break over-stretched bonds
/// (where the material has a critical stretch). `full_volume` is the largest horizon volume
/// of the whole body, m^3 (the surface correction's reference: [`full_volume`]).
pub(crate) fn law_params(
    problem: &Problem,
    n: usize,
    check_bonds: bool,
    full_volume: f64,
) -> BondParams {
    let p = problem;
    let m = &p.material;
    let (linearized, lps) = match m.law {
        Law::Pmb { linearized, .. } => (linearized, false),
        Law::Lps { .. } => (true, true),
    };
    let (delta, dx) = (p.body.delta, p.body.dx);
    // (the expressions of the host's `partial_volume`)
    let (pv_full, pv_edge) = (delta - 0.5 * dx, delta + 0.5 * dx);
    let s0 = m.critical_stretch.unwrap_or(f64::INFINITY);
    BondParams {
        critical_stretch: s0,
        full_volume,
        law: LawParams::of(m),
        delta,
        dx,
        n: n as u32,
        dim: p.dim() as i32,
        linearized: i32::from(linearized),
        check_bonds: i32::from(check_bonds && m.critical_stretch.is_some()),
        partial_volume: i32::from(p.model.discretization.partial_volume != PartialVolume::None),
        lps: i32::from(lps),
        pv_full,
        pv_edge,
        critical_stretch_f: s0 as f32,
        delta_f: delta as f32,
        dx_f: dx as f32,
        pv_full_f: pv_full as f32,
        pv_edge_f: pv_edge as f32,
        ..Default::default()
    }
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

    fn with_neighbours(problem: Arc<Problem>, lattice: Option<Stencil>) -> Result<Self> {
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
    /// `gpu_lattice.rs`), else `None`: what [`GpuLoop::new`] decides.
    pub fn lattice(problem: &Problem) -> Option<Stencil> {
        lattice_of(problem)
    }

    /// [`device_bytes`](Self::device_bytes) of the form with the neighbour list, even where
    /// the body is a full box lattice: what the subdomain engine streams, and what its budget
    /// percentages are of (`partition/plan.rs`).
    pub fn device_bytes_with_list(problem: &Problem) -> usize {
        Self::device_bytes_for(problem, None)
    }

    /// [`device_bytes`](Self::device_bytes) in the form `lattice` says (the stencil of
    /// [`GpuLoop::lattice`], or `None` for the list), without deciding it again.
    pub fn device_bytes_for(problem: &Problem, lattice: Option<&Stencil>) -> usize {
        let n = problem.body.len();
        let (layout, bond_bytes) = match lattice {
            // status bits of K slots a node and the stencil (32 K offsets), no index
            Some(st) => {
                let layout = st.layout(n);
                let bytes = 4 * status_words(layout.padded_len()) + 4 * SLICE * st.slots();
                (layout, bytes)
            }
            None => {
                let layout = SlicedLayout::new(&problem.families);
                let bytes = bond_slot_bytes(layout.padded_len());
                (layout, bytes)
            }
        };
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let t = std::mem::size_of::<T>();
        let (node, _) = device_bytes_per(problem.dim(), t, lps);
        // (f32 with partial volumes keeps the f64 records beside the f32 ones)
        let node = node
            + if t == 4 && records_kept(problem, t) {
                24
            } else {
                0
            };
        let slices = layout.slice_start.len();
        // slice starts, the two counters (bonds broken, reduction result), and up to 48 bytes
        // of one-value placeholders for the arrays a law, precision or lattice does not use
        node * n + bond_bytes + 8 * slices + 16 + 48
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
        // Families and bond status in device order, from the stored arrays or, for a lean
        // problem, searched again (`BondFill`); on a full box lattice only the status bits
        // and the stencil.
        let (layout, neighbors, mu, stencil) = match &lattice {
            Some(st) => (
                st.layout(n),
                gpu.stream().alloc_zeros::<u32>(1).map_err(driver_error)?,
                upload(&gpu, &st.status_words(p))?,
                Some(upload(&gpu, &st.device_offsets())?),
            ),
            None => {
                let layout = SlicedLayout::new(&p.families);
                let (neighbors, mu) = upload_bond_arrays(&gpu, p, &layout)?;
                (layout, neighbors, mu, None)
            }
        };
        let t = std::mem::size_of::<T>();
        let records = node_records(&p.body, 0..n);
        // (the f32 kernels' records; the f64 kernels read only `nodes`)
        let nodes_f32 = if t == 4 {
            node_records_f32(&records, record_centre(&p.body))
        } else {
            Vec::new()
        };
        let volumes_only = !records_kept(p, t);
        let nodes = match volumes_only {
            true => p.body.volumes.clone(),
            false => records,
        };
        let no_fail: Vec<u8> = p.no_fail.iter().map(|&b| u8::from(b)).collect();
        let lps = matches!(p.material.law, Law::Lps { .. });
        let coef = lps.then(|| lps_coefficients(p));
        let per_node = |pick: fn(&crate::backend::coefficients::LpsCoefficients) -> &Vec<f64>| {
            coef.as_ref()
                .map(|c| to_t::<T>(pick(c)))
                .unwrap_or_default()
        };
        let zeros = |len: usize| gpu.stream().alloc_zeros::<T>(len.max(1));
        let stepper = DeviceLoop::new(&gpu, n * d, true)?;
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
            lattice,
            stencil,
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
            broken: gpu.stream().alloc_zeros::<u64>(1).map_err(driver_error)?,
            broken_seen: 0,
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

    /// Bond-loop parameters reading displacement `u` and writing force density `force`
    /// (device addresses).
    pub(super) fn bond_params(&self, u: u64, force: u64, check_bonds: bool) -> BondParams {
        let g = &self.gpu;
        BondParams {
            slice_start: addr(g, &self.slice_start),
            lengths: addr(g, &self.lengths),
            neighbors: addr(g, &self.neighbors),
            nodes: addr(g, &self.nodes),
            volumes_only: i32::from(self.volumes_only),
            nodes_f32: addr(g, &self.nodes_f32),
            horizon_volume: addr(g, &self.horizon_volume),
            mu: addr(g, &self.mu),
            no_fail: addr(g, &self.no_fail),
            u,
            force,
            theta: addr(g, &self.theta),
            alpha: addr(g, &self.alpha),
            pcoef: addr(g, &self.pcoef),
            d_over_m: addr(g, &self.d_over_m),
            lps_pair: addr(g, &self.lps_pair),
            phi: addr(g, &self.phi),
            energy: self.energy.as_ref().map_or(0, |e| addr(g, e)),
            broken: addr(g, &self.broken),
            stencil: self.stencil.as_ref().map_or(0, |s| addr(g, s)),
            ..law_params(
                &self.problem,
                self.problem.body.len(),
                check_bonds,
                self.full_volume,
            )
        }
    }

    /// Launch the force kernels (and, with `check_bonds`, the fused bond breaking) for
    /// displacement `u` into `force` (device addresses).
    pub(super) fn launch_forces(&self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        self.launch_force_kernels(&self.bond_params(u, force, check_bonds))
    }

    /// Launch the force kernels with `params` (which may ask for the fused explicit update).
    pub(super) fn launch_force_kernels(&self, params: &BondParams) -> Result<()> {
        let params = *params;
        let n = self.problem.body.len();
        // SAFETY: `params` holds this backend's buffers, sized for `n` nodes and their bonds;
        // `u` and `force` address `d n` values.
        unsafe {
            match self.problem.material.law {
                Law::Pmb { .. } => {
                    let plain =
                        params.partial_volume == 0 && params.law.pmb.surface_correction == 0;
                    let k = match (plain, params.stencil != 0) {
                        (true, true) => &self.k.pmb_force_plain_lattice,
                        (true, false) => &self.k.pmb_force_plain,
                        // (the general loop tests `stencil` itself)
                        (false, _) => &self.k.pmb_force,
                    };
                    self.gpu.launch(k, n, &params)
                }
                Law::Lps { .. } => {
                    self.gpu.launch(&self.k.lps_dilatation, n, &params)?;
                    self.gpu.launch(&self.k.lps_force, n, &params)
                }
            }
        }
    }

    /// Bonds broken on the device since the last read.
    pub(super) fn read_broken(&mut self) -> Result<usize> {
        let total = self
            .gpu
            .stream()
            .clone_dtoh(&self.broken)
            .map_err(driver_error)?[0];
        let new = total - self.broken_seen;
        self.broken_seen = total;
        Ok(new as usize)
    }

    /// Device address of displacement `u`, uploaded for a trait call: into the time loop's
    /// own displacement while that holds no state (the force evaluation of
    /// `Explicit::start`, before the first `advance_explicit`, which uploads the state
    /// anyway), else into scratch allocated on first use. So a run needs no scratch the
    /// device loop does not (a model that fills the GPU still starts).
    fn upload_u(&mut self, u: &[T]) -> Result<u64> {
        let gpu = self.gpu.clone();
        let target = match self.stepper.resident_step {
            None => &mut self.stepper.state.u,
            Some(_) => scratch(&gpu, &mut self.u_in, u.len())?,
        };
        gpu.stream().memcpy_htod(u, target).map_err(driver_error)?;
        Ok(addr(&gpu, target))
    }

    /// The force buffer of a trait call (its address): the time loop's own while it holds
    /// no state, else scratch allocated on first use (as [`upload_u`](Self::upload_u)).
    fn force_out(&mut self, len: usize) -> Result<u64> {
        let gpu = self.gpu.clone();
        Ok(match self.stepper.resident_step {
            None => addr(&gpu, &self.stepper.state.f),
            Some(_) => addr(&gpu, scratch(&gpu, &mut self.f_out, len)?),
        })
    }

    fn try_internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        let u = self.upload_u(u)?;
        let f_out = self.force_out(force.len())?;
        self.launch_forces(u, f_out, false)?;
        let buffer = match self.stepper.resident_step {
            None => &self.stepper.state.f,
            Some(_) => self.f_out.as_ref().expect("allocated above"),
        };
        self.download(buffer, force)
    }

    fn try_break_bonds(&mut self, u: &[T]) -> Result<usize> {
        if self.problem.material.critical_stretch.is_none() {
            return Ok(0);
        }
        let u = self.upload_u(u)?;
        let params = self.bond_params(u, 0, true);
        // SAFETY: as in `launch_forces`; the kernel writes only `mu` and the counter.
        unsafe {
            self.gpu
                .launch(&self.k.break_bonds, self.problem.body.len(), &params)?
        };
        self.read_broken()
    }

    fn try_dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<()> {
        let u = self.upload_u(u)?;
        let params = self.bond_params(u, 0, false);
        // SAFETY: as in `launch_forces`; the kernel writes only `theta`.
        unsafe {
            self.gpu
                .launch(&self.k.lps_dilatation, self.problem.body.len(), &params)?
        };
        self.download(&self.theta, theta)
    }

    fn try_strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let lps = matches!(self.problem.material.law, Law::Lps { .. });
        let n = self.problem.body.len();
        let u = self.upload_u(u)?;
        let gpu = self.gpu.clone();
        scratch(&gpu, &mut self.energy, n)?;
        let params = self.bond_params(u, 0, false);
        // SAFETY: as in `launch_forces`; the kernels write `theta` and `energy`.
        unsafe {
            if lps {
                self.gpu.launch(&self.k.lps_dilatation, n, &params)?;
            }
            self.gpu.launch(&self.k.strain_energy, n, &params)?;
        }
        let per_node = self
            .gpu
            .stream()
            .clone_dtoh(self.energy.as_ref().expect("allocated above"))
            .map_err(driver_error)?;
        Ok(per_node[..n].iter().sum())
    }

    fn try_damage(&self, phi: &mut [T]) -> Result<()> {
        let params = self.bond_params(0, 0, false);
        // SAFETY: as in `launch_forces`; the kernel reads geometry and `mu`, writes `phi`.
        unsafe {
            self.gpu
                .launch(&self.k.damage, self.problem.body.len(), &params)?
        };
        self.download(&self.phi, phi)
    }

    /// Copy the first `out.len()` values of `src` to the host and wait for them.
    pub(super) fn download<U: cudarc::driver::DeviceRepr>(
        &self,
        src: &CudaSlice<U>,
        out: &mut [U],
    ) -> Result<()> {
        if out.is_empty() {
            return Ok(());
        }
        let view = src.slice(..out.len());
        self.gpu
            .stream()
            .memcpy_dtoh(&view, out)
            .map_err(driver_error)?;
        self.gpu.synchronize()
    }
}

impl<T: Real> Forces<T> for GpuLoop<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.try_internal_force(u, force)
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.try_break_bonds(u)
            .map_err(device_fault(NAME, "bond breaking"))
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        self.try_damage(phi).map_err(device_fault(NAME, "damage"))
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if !matches!(self.problem.material.law, Law::Lps { .. }) {
            return Ok(false);
        }
        self.try_dilatation(u, theta)
            .map_err(device_fault(NAME, "dilatation"))?;
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.try_strain_energy(u)
            .map_err(device_fault(NAME, "strain energy"))
    }

    fn broken_bonds(&self) -> usize {
        self.precracked + self.broken_seen as usize
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        let slots = self.layout.padded_len();
        let mut words = vec![0u32; status_words(slots)];
        self.download(&self.mu, &mut words)
            .map_err(device_fault(NAME, "bond status download"))?;
        Ok(match &self.lattice {
            Some(st) => st.to_csr(&words, &self.problem.families),
            None => self.layout.to_csr(&unpack_status(&words, slots)),
        })
    }
}

impl<T: Real> GpuLoop<T> {
    pub fn memory_bytes(&self) -> usize {
        [
            self.slice_start.num_bytes(),
            self.lengths.num_bytes(),
            self.neighbors.num_bytes(),
            self.stencil.as_ref().map_or(0, |s| s.num_bytes()),
            self.nodes.num_bytes(),
            self.nodes_f32.num_bytes(),
            self.horizon_volume.num_bytes(),
            self.no_fail.num_bytes(),
            self.mu.num_bytes(),
            self.theta.num_bytes(),
            self.alpha.num_bytes(),
            self.pcoef.num_bytes(),
            self.d_over_m.num_bytes(),
            self.lps_pair.num_bytes(),
            self.u_in.as_ref().map_or(0, |b| b.num_bytes()),
            self.f_out.as_ref().map_or(0, |b| b.num_bytes()),
            self.phi.num_bytes(),
            self.energy.as_ref().map_or(0, |b| b.num_bytes()),
            self.broken.num_bytes(),
            self.stepper.bytes(),
        ]
        .iter()
        .sum()
    }

    pub fn bytes_per_step(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, nb, d) = (
            self.problem.body.len(),
            self.problem.families.bonds(),
            self.dim,
        );
        // One step of the device loop (`gpu_step.rs`, fused update): per bond the neighbour
        // index and the status bit (no weight); per node the record (position and volume,
        // 32 bytes in f64, the f32 record's 16 in f32), family size, slice start share
        // ignored, no-fail flag, and per dof u read,
        // b read, v read and written, u_next written (f and a are stored only on a call's last
        // step); LPS adds alpha, p, d/m read, theta written and read once more, and the
        // (alpha, p theta) pair written once and gathered once.
        // Padding of the sliced order not counted.
        let lps = matches!(self.problem.material.law, Law::Lps { .. });
        let record = if t == 4 { 16 } else { 32 };
        let node = record + 4 + 1 + 5 * d * t + if lps { 5 * t + 2 * t } else { 0 };
        // (on a full box lattice no index, a status bit per stencil slot)
        let bonds = match &self.lattice {
            Some(st) => (n * st.slots()).div_ceil(8),
            None => nb * 4 + nb.div_ceil(8),
        };
        bonds + n * node
    }
}

impl<T: Real> Backend<T> for GpuLoop<T> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn footprint(&self) -> Footprint {
        Footprint::new(self.memory_bytes(), self.bytes_per_step())
    }

    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        advance_fused(self, call).map_err(|e| rename(e, NAME))
    }

    fn advance_adr(
        &mut self,
        adr: &mut Adr<T>,
        loads: &Loads,
        state: &mut State<T>,
        h: f64,
    ) -> Result<usize> {
        adr_iteration(self, adr, loads, state, h).map_err(|e| rename(e, NAME))
    }

    fn sync_state(&mut self, state: &mut State<T>) -> Result<()> {
        sync_adr_state(&mut self.stepper, state).map_err(|e| rename(e, NAME))
    }

    fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        self.stepper
            .max_abs_displacement(state)
            .map_err(device_fault(NAME, "displacement check"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f32 records are the f64 records less the centre, rounded once; volumes rounded.
    #[test]
    fn f32_records_are_the_f64_records_relative_to_the_centre() {
        let records = [1.0, 2.0, 3.0, 0.5, 3.0, 4.0, 5.0, 0.1];
        let f32s = node_records_f32(&records, [2.0, 3.0, 4.0]);
        assert_eq!(f32s, [-1.0, -1.0, -1.0, 0.5, 1.0, 1.0, 1.0, 0.1f32]);
        // far from the origin the difference is taken in f64 first
        let far = node_records_f32(&[10.000_001, 0.0, 0.0, 1.0], [10.0, 0.0, 0.0]);
        assert_eq!(far[0], (10.000_001f64 - 10.0) as f32);
    }
}
