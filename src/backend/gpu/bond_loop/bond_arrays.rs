//! The device bond arrays of `gpu-loop`: the neighbour index and the bond status (one bit)
//! of every slot of the sliced order (`gpu/layout.rs`), or on a full box lattice the status
//! bits and the stencil's offsets alone (`lattice.rs`).
//!
//! The arrays come from a stored problem's families or, for a lean problem
//! ([`Problem::build_lean`]), from families searched again by a cell list ([`BondFill`]), and
//! are uploaded in pieces, so the host never holds a whole per-bond array in device order:
//! the same arrays either way ([`device_bond_arrays`]).
//!
//! Units: node indices, status bits and bytes.

use crate::backend::gpu::buffers::upload;
use crate::backend::gpu::lattice::Stencil;
use crate::gpu::device::driver_error;
use crate::gpu::layout::{pack_status, status_words, SlicedLayout, SLICE};
use crate::gpu::Gpu;
use crate::material::family_radius;
use crate::neighbors::CellList;
use crate::setup::{PrecrackZone, Problem};
use crate::Result;
use cudarc::driver::CudaSlice;
use rayon::prelude::*;
use std::ops::Range;

/// Device bytes of the neighbour index and status bits of `slots` slots of the sliced order.
pub fn bond_slot_bytes(slots: usize) -> usize {
    4 * slots + 4 * status_words(slots)
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
/// (`gpu/layout.rs`), padding included: the arrays [`super::GpuLoop`] uploads (in pieces), the same
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

/// The bond arrays of a [`super::GpuLoop`] on the device.
pub(super) struct DeviceBonds {
    /// The sliced order (on a lattice, every family the stencil's length).
    pub layout: SlicedLayout,
    /// Neighbour index per slot (a one-value placeholder on a lattice).
    pub neighbors: CudaSlice<u32>,
    /// Status bits of the sliced order (`layout::pack_status`).
    pub mu: CudaSlice<u32>,
    /// On a lattice, the node offsets the kernels read (`Stencil::device_offsets`).
    pub stencil: Option<CudaSlice<i32>>,
}

/// The families and bond status of `problem` in device order, from the stored arrays or, for
/// a lean problem, searched again ([`BondFill`]); on a full box lattice (`lattice`) only the
/// status bits and the stencil.
pub(super) fn upload_bonds(
    gpu: &Gpu,
    problem: &Problem,
    lattice: Option<&Stencil>,
) -> Result<DeviceBonds> {
    Ok(match lattice {
        Some(st) => DeviceBonds {
            layout: st.layout(problem.body.len()),
            neighbors: gpu.stream().alloc_zeros::<u32>(1).map_err(driver_error)?,
            mu: upload(gpu, &st.status_words(problem))?,
            stencil: Some(upload(gpu, &st.device_offsets())?),
        },
        None => {
            let layout = SlicedLayout::new(&problem.families);
            let (neighbors, mu) = upload_bond_arrays(gpu, problem, &layout)?;
            DeviceBonds {
                layout,
                neighbors,
                mu,
                stencil: None,
            }
        }
    })
}
