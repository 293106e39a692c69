//! The matrix scheme in subdomains: each subdomain's own operator blocks, run one subdomain
//! after another on `cpu-matrix` (the emulation CI checks against the in-core `cpu-matrix`),
//! on `gpu-matrix` with every subdomain's blocks resident on the device, or streamed through
//! two persistent device slots (`matrix_stream.rs`; both checked on the GPU machine). The
//! plan of a budget for the streamed scheme ([`count_for_budget`]) and its `subdomains`
//! report are here.
//!
//! The force on an owned node `i` is row `i` of `-B^T (w o t) / V`: it collects the bonds
//! leaving `i` and the bonds entering `i`, also from halo nodes. So a subdomain's operators
//! (full storage, its own CSR blocks) are assembled from a local problem of its owned nodes
//! with their families and its halo nodes with *only their bonds into owned nodes*: the
//! rows of the owned nodes' bonds come first (they are what the subdomain owns: status,
//! breaks, energy), then the entering rows, which are copies of rows another subdomain owns
//! and break by the same criterion at the same displacement, so they stay equal to their
//! owner's. Local families are sorted by local index (the operators' patterns need it), so
//! sums run in another order than in core: forces agree to round-off, not bitwise; bond
//! status, bonds broken and damage agree exactly.
//!
//! LPS: the entering rows `j -> i` need the dilatation of halo node `j`, which depends on
//! bonds this subdomain does not hold. As in the loop emulation, two phases: every
//! subdomain computes its owned nodes' dilatation, the values are exchanged through a
//! global array, then forces are computed with the exchanged values
//! ([`CpuMatrix::internal_force_with_theta`]).

use super::emulate::problem_of;
use super::exchange::{gather, scatter};
pub use super::matrix_part::{Inputs, MatrixPart, Slots};
use super::matrix_part::{SlotSetup, SlotTimes, NAME};
use super::report::Placed;
use crate::backend::gpu::device_fault;
use crate::backend::{Backend, CpuMatrix, Footprint, GpuMatrix};
use crate::dynamics::Forces;
use crate::material::Law;
use crate::neighbors::Families;
use crate::operators::Storage;
use crate::partition::{partition, Subdomain};
use crate::partition::{Residency, StreamReport, StreamTimes};
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::cell::Cell;
use std::sync::Arc;
use std::time::Instant;

/// Room for cuSPARSE workspaces and allocation granularity over a slot's estimate.
const MARGIN: f64 = 1.1;

/// Device bytes of one streaming slot for the subdomains of `count`: a `gpu-matrix` slot
/// (`GpuMatrix::slot_estimate`, no time loop) with room for the most nodes and the most bond
/// rows of any subdomain's local problem, with a margin for the cuSPARSE workspaces.
fn slot_bytes<T: Real>(problem: &Problem, count: usize) -> Result<f64> {
    let t = std::mem::size_of::<T>();
    let (mut nodes, mut rows) = (0, 0);
    for sub in partition(problem, count)? {
        let (local, _) = local_problem(problem, &sub);
        nodes = local.body.len().max(nodes);
        rows = GpuMatrix::<T>::bond_rows(&local, Storage::Full).max(rows);
    }
    let bytes = GpuMatrix::<T>::slot_estimate(problem, Storage::Full, t, nodes, rows);
    Ok(bytes as f64 * MARGIN)
}

/// The fewest subdomains of `problem` whose two streaming slots fit `budget` device bytes when
/// the matrix scheme streams them on `gpu-matrix` in precision `T` (each slot sized for the
/// largest subdomain: [`slot_bytes`]). An error naming the budget when one cell slab per
/// subdomain does not fit.
pub fn count_for_budget<T: Real>(problem: &Problem, budget: u64) -> Result<usize> {
    let t = std::mem::size_of::<T>();
    let whole = GpuMatrix::<T>::slot_estimate(
        problem,
        Storage::Full,
        t,
        problem.body.len(),
        GpuMatrix::<T>::bond_rows(problem, Storage::Full),
    ) as f64
        * MARGIN;
    let slabs = crate::partition::slabs::SlabCounts::of(problem).nodes.len();
    let fits = |count: usize| -> Result<bool> {
        Ok(2.0 * slot_bytes::<T>(problem, count)? <= budget as f64)
    };
    // from the bound without halos, raised in jumps, then back down to the fewest that fits
    let mut count = ((2.0 * whole / budget as f64).ceil() as usize).clamp(1, slabs);
    loop {
        let slot = slot_bytes::<T>(problem, count)?;
        if 2.0 * slot <= budget as f64 {
            while count > 1 && fits(count - 1)? {
                count -= 1;
            }
            return Ok(count);
        }
        if count == slabs {
            return Err(crate::partition::usage(
                "--gpu-memory-budget",
                format!(
                    "{budget} bytes cannot hold two subdomains of this model's matrix scheme: \
                     even {slabs} subdomains (one cell slab each) need {:.0} bytes",
                    2.0 * slot
                ),
            ));
        }
        let next = (count as f64 * 2.0 * slot / budget as f64).ceil() as usize;
        count = next.max(count + 1).min(slabs);
    }
}

/// One subdomain with its own matrix backend.
struct Part<M> {
    sub: Subdomain,
    /// Global directed bond of each local bond (local CSR order; full storage: each local
    /// bond is one row).
    bond_index: Vec<usize>,
    /// Rows of the owned nodes' bonds (a prefix of the local rows).
    owned_rows: usize,
    backend: M,
}

/// The matrix scheme executed subdomain by subdomain, on the CPU (`M = CpuMatrix`), with
/// every subdomain's operator blocks on the GPU (`M = GpuMatrix`), or streamed through two
/// device slots (`M = StreamedPart`).
pub struct PartitionedMatrix<T: Real, M: MatrixPart<T> = CpuMatrix<T>> {
    parts: Vec<Part<M>>,
    dim: usize,
    lps: bool,
    /// Global dilatation, exchanged between the two LPS phases.
    theta: Vec<T>,
    bonds: usize,
    /// Owned rows broken so far (pre-cracks included), counted after each breaking pass.
    broken: usize,
    /// The streaming slots, where the parts are streamed.
    slots: Option<SlotSetup>,
    /// Force evaluations so far: wall and host seconds, node state moved (the slots' copies
    /// and kernel times are added from `slots` per evaluation).
    times: StreamTimes,
    /// Device bytes of the in-core `gpu-matrix` (half storage) for the whole model.
    in_core: usize,
    /// The budget the plan was made for, bytes (reported).
    budget: Option<u64>,
    _scalar: std::marker::PhantomData<T>,
}

/// The local problem of subdomain `sub` for the matrix scheme (what its operators are
/// assembled from; see [`local_problem`]).
pub fn local_problem_of(problem: &Problem, sub: &Subdomain) -> Problem {
    local_problem(problem, sub).0
}

/// The local problem of `sub` for the matrix scheme: owned nodes with their families, halo
/// nodes with their bonds into owned nodes, every family sorted by local index; and the
/// global bond of each local bond (also a rank's part of a distributed run,
/// `distributed/matrix.rs`). Built in parallel over blocks of nodes (count, scan, fill: each
/// block writes only its nodes' bonds), the same arrays at any thread count.
pub(crate) fn local_problem(problem: &Problem, sub: &Subdomain) -> (Problem, Vec<usize>) {
    let families = &problem.families;
    let owned = sub.owned as u32;
    // the local index of every node of the subdomain (owned first, then halo; NONE elsewhere)
    const NONE: u32 = u32::MAX;
    let mut local_of = vec![NONE; problem.body.len()];
    for (l, &g) in sub.nodes.iter().enumerate() {
        local_of[g] = l as u32;
    }
    // an owned node keeps every bond into the subdomain, a halo node its bonds into owned nodes
    let kept = |l: usize, j: u32| {
        let lj = local_of[j as usize];
        let keep = match l < sub.owned {
            true => lj != NONE,
            false => lj < owned,
        };
        keep.then_some(lj)
    };
    let counts: Vec<usize> = (sub.nodes.par_iter().enumerate())
        .map(|(l, &g)| {
            (families.family(g).iter())
                .filter(|&&j| kept(l, j).is_some())
                .count()
        })
        .collect();
    let mut offsets = Vec::with_capacity(counts.len() + 1);
    offsets.push(0usize);
    for c in &counts {
        offsets.push(offsets[offsets.len() - 1] + c);
    }
    let total = offsets[counts.len()];
    let (mut neighbors, mut bond_index) = (vec![0u32; total], vec![0usize; total]);
    // blocks of nodes, each with its parts of the two arrays
    const BLOCK: usize = 512;
    let mut blocks = Vec::with_capacity(counts.len().div_ceil(BLOCK));
    let (mut rest_n, mut rest_b) = (neighbors.as_mut_slice(), bond_index.as_mut_slice());
    for first in (0..counts.len()).step_by(BLOCK) {
        let last = (first + BLOCK).min(counts.len());
        let len = offsets[last] - offsets[first];
        let (n_head, n_tail) = rest_n.split_at_mut(len);
        let (b_head, b_tail) = rest_b.split_at_mut(len);
        blocks.push((first..last, n_head, b_head));
        (rest_n, rest_b) = (n_tail, b_tail);
    }
    blocks.into_par_iter().for_each(|(nodes, out_n, out_b)| {
        let mut row: Vec<(u32, usize)> = Vec::new();
        let base = offsets[nodes.start];
        for l in nodes {
            let g = sub.nodes[l];
            let start = families.offsets[g];
            row.clear();
            let family = families.family(g).iter().enumerate();
            row.extend(family.filter_map(|(k, &j)| kept(l, j).map(|lj| (lj, start + k))));
            // (distinct local indices: any sort gives this order)
            row.sort_unstable_by_key(|&(lj, _)| lj);
            let at = offsets[l] - base..offsets[l + 1] - base;
            for ((n, b), &(lj, bond)) in out_n[at.clone()].iter_mut().zip(&mut out_b[at]).zip(&row)
            {
                (*n, *b) = (lj, bond);
            }
        }
    });
    let local = problem_of(
        problem,
        &sub.nodes,
        Families { offsets, neighbors },
        &bond_index,
    );
    (local, bond_index)
}

impl<T: Real, M: MatrixPart<T>> PartitionedMatrix<T, M> {
    /// Partition `problem` into `count` subdomains and assemble each one's operators.
    pub fn new(problem: &Problem, count: usize) -> Result<Self> {
        Self::on_slots(problem, count, &Slots::default())
    }

    /// This backend reporting `budget` (bytes) as the budget its plan was made for.
    pub fn with_budget(self, budget: Option<u64>) -> Self {
        PartitionedMatrix { budget, ..self }
    }

    /// [`PartitionedMatrix::new`] with the parts on `slots` (streamed parts alternate on
    /// them).
    pub fn on_slots(problem: &Problem, count: usize, slots: &Slots) -> Result<Self> {
        let mut parts = partition(problem, count)?
            .into_iter()
            .enumerate()
            .map(|(s, sub)| {
                let (local, bond_index) = local_problem(problem, &sub);
                let owned_rows = local.families.offsets[sub.owned];
                let local = Arc::new(local);
                let backend = M::assemble(local, s, owned_rows, slots, Storage::Full)?;
                Ok(Part {
                    sub,
                    bond_index,
                    owned_rows,
                    backend,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut backends: Vec<&mut M> = parts.iter_mut().map(|p| &mut p.backend).collect();
        let slots = M::prepare(&mut backends, slots)?;
        let t = std::mem::size_of::<T>();
        let mut me = PartitionedMatrix {
            parts,
            dim: problem.dim(),
            lps: matches!(problem.material.law, Law::Lps { .. }),
            theta: vec![T::zero(); problem.body.len()],
            bonds: problem.families.bonds(),
            broken: 0,
            in_core: match slots {
                Some(_) => GpuMatrix::<T>::memory_estimate(problem, Storage::Half, t),
                None => 0,
            },
            slots,
            times: StreamTimes::default(),
            budget: None,
            _scalar: std::marker::PhantomData,
        };
        me.broken = me.owned_broken()?;
        Ok(me)
    }

    /// The slots' totals so far (zero where the parts are not streamed).
    fn slot_times(&self) -> SlotTimes {
        self.slots.as_ref().map_or_else(SlotTimes::default, |s| {
            *s.times.lock().unwrap_or_else(|p| p.into_inner())
        })
    }

    /// Run one force evaluation `f`, adding to `self.times` its wall time, its host time and
    /// node state, and the slots' copies and kernel times it caused.
    fn timed<R>(&mut self, f: impl FnOnce(&mut Self, &Moved) -> R) -> R {
        let (t0, before) = (Instant::now(), self.slot_times());
        let moved = Moved::default();
        let r = f(self, &moved);
        let after = self.slot_times();
        let t = &mut self.times;
        t.force_evaluations += 1;
        t.wall += t0.elapsed().as_secs_f64();
        t.host += moved.host.get();
        t.compute += after.compute - before.compute;
        t.copy_in += after.copy_in - before.copy_in;
        t.copy_out += after.copy_out - before.copy_out;
        t.bytes_in += after.bytes_in - before.bytes_in + moved.bytes_in.get();
        t.bytes_out += after.bytes_out - before.bytes_out + moved.bytes_out.get();
        r
    }

    /// The `subdomains` report of a streamed run.
    fn report(&self) -> Option<StreamReport> {
        let slots = self.slots.as_ref()?;
        // with one or two subdomains each keeps its slot: nothing moves but node state
        let resident = self.parts.len() <= 2;
        let placed = Placed {
            count: self.parts.len(),
            residency: match resident {
                true => Residency::Resident,
                false => Residency::Streamed,
            },
            resident: if resident { self.parts.len() } else { 0 },
            in_core: self.in_core,
            budget: self.budget,
        };
        Some(slots.memory.report(placed, &self.times))
    }

    /// Owned rows broken so far, over all subdomains.
    fn owned_broken(&self) -> Result<usize> {
        self.parts
            .iter()
            .map(|p| p.backend.broken_of(p.owned_rows, p.sub.owned))
            .sum()
    }

    /// Run `work` on every part in order with the inputs `inputs` gathers for it. Streamed
    /// parts: the first is loaded, then before each part runs the next one is loaded with its
    /// inputs (its copies, enqueued on the other slot's stream, overlap this part's
    /// products), and each takes its status back after its work.
    fn each_part(
        &mut self,
        mut inputs: impl FnMut(&Part<M>) -> Inputs<T>,
        mut work: impl FnMut(&mut Part<M>, Inputs<T>) -> Result<()>,
    ) -> Result<()> {
        if !self.parts.first().is_some_and(|p| p.backend.streamed()) {
            for part in &mut self.parts {
                let i = inputs(part);
                work(part, i)?;
            }
            return Ok(());
        }
        let upload = device_fault(NAME, "subdomain upload");
        let mut current = None;
        for s in 0..self.parts.len() {
            let this = match current.take() {
                Some(i) => i,
                None => {
                    let i = inputs(&self.parts[s]);
                    self.parts[s].backend.load(&i).map_err(&upload)?;
                    i
                }
            };
            if let Some(next) = self.parts.get(s + 1) {
                let i = inputs(next);
                next.backend.load(&i).map_err(&upload)?;
                current = Some(i);
            }
            work(&mut self.parts[s], this)?;
            self.parts[s]
                .backend
                .unload()
                .map_err(device_fault(NAME, "subdomain status download"))?;
        }
        Ok(())
    }

    /// LPS phase one: every subdomain's owned dilatations into `self.theta`.
    fn exchange_dilatation(&mut self, u: &[T], moved: &Moved) -> Result<()> {
        let d = self.dim;
        let mut theta_all = std::mem::take(&mut self.theta);
        let done = self.each_part(
            |part| moved.gather(u, part, d),
            |part, i| {
                let mut theta = vec![T::zero(); part.sub.nodes.len()];
                part.backend.dilatation(&i.u, &mut theta)?;
                moved.scatter(&theta, part, 1, &mut theta_all);
                Ok(())
            },
        );
        self.theta = theta_all;
        done
    }

    /// Forces at `u` into `force` (LPS: after the exchange of dilatations).
    fn forces(&mut self, u: &[T], force: &mut [T], moved: &Moved) -> Result<()> {
        let d = self.dim;
        if self.lps {
            self.exchange_dilatation(u, moved)?;
        }
        let (lps, theta_all) = (self.lps, std::mem::take(&mut self.theta));
        let done = self.each_part(
            |part| {
                let mut i = moved.gather(u, part, d);
                if lps {
                    i.theta = Some(moved.gather(&theta_all, part, 1).u);
                }
                i
            },
            |part, i| {
                let mut f_local = vec![T::zero(); i.u.len()];
                match &i.theta {
                    Some(theta) => part
                        .backend
                        .force_with_theta(&i.u, theta, &mut f_local)
                        .map_err(device_fault(NAME, "force evaluation"))?,
                    None => part.backend.internal_force(&i.u, &mut f_local)?,
                }
                moved.scatter(&f_local, part, d, force);
                Ok(())
            },
        );
        self.theta = theta_all;
        done
    }

    /// Break the over-stretched bonds at `u`; bonds broken.
    fn break_pass(&mut self, u: &[T], moved: &Moved) -> Result<usize> {
        let before = self.owned_broken()?;
        let d = self.dim;
        self.each_part(
            |part| moved.gather(u, part, d),
            |part, i| part.backend.break_bonds(&i.u).map(|_| ()),
        )?;
        self.broken = self.owned_broken()?;
        Ok(self.broken - before)
    }

    /// PMB: breaking and forces in one pass (see `break_bonds_and_force`).
    fn break_and_force_pass(&mut self, u: &[T], force: &mut [T], moved: &Moved) -> Result<usize> {
        let before = self.owned_broken()?;
        let d = self.dim;
        self.each_part(
            |part| moved.gather(u, part, d),
            |part, i| {
                let mut f_local = vec![T::zero(); i.u.len()];
                part.backend.break_bonds_and_force(&i.u, &mut f_local)?;
                moved.scatter(&f_local, part, d, force);
                Ok(())
            },
        )?;
        self.broken = self.owned_broken()?;
        Ok(self.broken - before)
    }
}

/// Host time and node state of the passes of one call: gathers and scatters, and the
/// values each part's backend copies in and out with them.
#[derive(Default)]
struct Moved {
    host: Cell<f64>,
    bytes_in: Cell<u64>,
    bytes_out: Cell<u64>,
}

impl Moved {
    /// The values of `all` (`per` per node) at `part`'s local nodes, as its inputs' `u`.
    fn gather<T: Real, M>(&self, all: &[T], part: &Part<M>, per: usize) -> Inputs<T> {
        let t0 = Instant::now();
        let u = gather(all, &part.sub.nodes, per);
        self.host.set(self.host.get() + t0.elapsed().as_secs_f64());
        let bytes = std::mem::size_of_val(u.as_slice()) as u64;
        self.bytes_in.set(self.bytes_in.get() + bytes);
        Inputs { u, theta: None }
    }

    /// `local` (`per` per local node) of `part`'s owned nodes into `all`.
    fn scatter<T: Real, M>(&self, local: &[T], part: &Part<M>, per: usize, all: &mut [T]) {
        let t0 = Instant::now();
        scatter(local, part.sub.owned_nodes(), per, all);
        self.host.set(self.host.get() + t0.elapsed().as_secs_f64());
        let bytes = std::mem::size_of_val(local) as u64;
        self.bytes_out.set(self.bytes_out.get() + bytes);
    }
}

impl<T: Real, M: MatrixPart<T>> Forces<T> for PartitionedMatrix<T, M> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.timed(|me, moved| me.forces(u, force, moved))
    }

    /// PMB: breaking and forces in one pass over the subdomains (each breaks its rows, then
    /// computes its forces: what the two passes give, with one upload of each streamed
    /// part); LPS: the two passes (the dilatations must be exchanged after breaking).
    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.timed(|me, moved| match me.lps {
            true => {
                let broken = me.break_pass(u, moved)?;
                me.forces(u, force, moved)?;
                Ok(broken)
            }
            false => me.break_and_force_pass(u, force, moved),
        })
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.break_pass(u, &Moved::default())
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        for part in &self.parts {
            let mut local = vec![T::zero(); part.sub.nodes.len()];
            part.backend.damage(&mut local)?;
            part.backend.unload()?;
            scatter(&local, part.sub.owned_nodes(), 1, phi);
        }
        Ok(())
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if !self.lps {
            return Ok(false);
        }
        self.exchange_dilatation(u, &Moved::default())?;
        theta.copy_from_slice(&self.theta);
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let d = self.dim;
        let mut energy = 0.0;
        let moved = Moved::default();
        self.each_part(
            |p| moved.gather(u, p, d),
            |p, i| {
                energy += p.backend.energy_of(&i.u, p.owned_rows, p.sub.owned)?;
                Ok(())
            },
        )?;
        Ok(energy)
    }

    fn broken_bonds(&self) -> usize {
        self.broken
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        let mut status = vec![0u8; self.bonds];
        for part in &self.parts {
            let local = part.backend.bond_status()?;
            let rows = part.owned_rows;
            scatter(&local[..rows], &part.bond_index[..rows], 1, &mut status);
        }
        Ok(status)
    }
}

impl<T: Real, M: MatrixPart<T>> PartitionedMatrix<T, M> {
    pub fn memory_bytes(&self) -> usize {
        match &self.slots {
            // streamed parts share the slots
            Some(slots) => slots.memory.allocated,
            None => self
                .parts
                .iter()
                .map(|p| p.backend.footprint().memory_bytes)
                .sum(),
        }
    }

    pub fn bytes_per_step(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.backend.footprint().bytes_per_step)
            .sum()
    }

    pub fn stream_report(&self) -> Option<StreamReport> {
        self.report()
    }
}

impl<T: Real, M: MatrixPart<T>> Backend<T> for PartitionedMatrix<T, M> {
    fn name(&self) -> &'static str {
        match self.parts.first().map(|p| p.backend.name()) {
            Some("gpu-matrix") => "gpu-matrix-partitioned",
            _ => "cpu-matrix-partitioned",
        }
    }

    fn footprint(&self) -> Footprint {
        Footprint {
            subdomains: self.stream_report(),
            ..Footprint::new(self.memory_bytes(), self.bytes_per_step())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The local problem of every subdomain of a small 3D block in 3 parts is the one its
    /// definition gives, node by node (each local node's global family kept where the
    /// neighbour is in the subdomain, a halo node's only into owned nodes, sorted by local
    /// index; found here by binary search in the owned and halo lists): the same families
    /// and global bonds exactly, on one thread and on all (the parallel build writes the same
    /// arrays; a difference would change the order of a rank's sums).
    #[test]
    fn local_problem_is_its_definition_on_any_thread_count() {
        let text = include_str!("../../../models/pmb_block_3d.toml");
        let set = ["discretization.dx=5e-3".to_string()];
        let model = crate::model::parse(text, "block.toml", &set).expect("valid model");
        let problem = Problem::build(model, std::path::Path::new(".")).expect("builds");
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for sub in partition(&problem, 3).unwrap() {
            let (owned, halo) = (sub.owned_nodes(), sub.halo_nodes());
            let (mut offsets, mut neighbors, mut bonds) = (vec![0], Vec::new(), Vec::new());
            for (l, &g) in sub.nodes.iter().enumerate() {
                let f = &problem.families;
                let mut row: Vec<(u32, usize)> = (f.family(g).iter().enumerate())
                    .filter_map(|(k, &j)| {
                        let j = j as usize;
                        let o = owned.binary_search(&j).ok();
                        let h = halo.binary_search(&j).ok().map(|k| sub.owned + k);
                        let lj = if l < sub.owned { o.or(h) } else { o };
                        lj.map(|lj| (lj as u32, f.offsets[g] + k))
                    })
                    .collect();
                row.sort_by_key(|&(lj, _)| lj);
                neighbors.extend(row.iter().map(|&(lj, _)| lj));
                bonds.extend(row.iter().map(|&(_, b)| b));
                offsets.push(neighbors.len());
            }
            assert!(
                sub.halo() > 0 && neighbors.len() > offsets[sub.owned],
                "a halo"
            );
            for (local, index) in [
                local_problem(&problem, &sub),
                one.install(|| local_problem(&problem, &sub)),
            ] {
                assert_eq!(local.families.offsets, offsets);
                assert_eq!(local.families.neighbors, neighbors);
                assert_eq!(index, bonds);
            }
        }
    }
}
