//! The matrix scheme in subdomains: each subdomain's own operator blocks, run one subdomain
//! after another on `cpu-matrix` (the emulation CI checks against the in-core `cpu-matrix`)
//! or on `gpu-matrix` with every subdomain's blocks resident on the device (checked on the
//! GPU machine; streaming the blocks, as `stream.rs` does for the loop scheme, is not done).
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

use super::emulate::{gather, problem_of, scatter};
use super::{partition, Subdomain};
use crate::backend::{Backend, CpuMatrix, GpuMatrix};
use crate::gpu::Gpu;
use crate::material::Law;
use crate::neighbors::Families;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;

/// A matrix backend one subdomain runs on: `cpu-matrix` (the emulation CI runs),
/// `gpu-matrix` with every subdomain's blocks resident on the device, or
/// [`StreamedPart`] (its blocks uploaded whenever it runs).
pub trait MatrixPart<T: Real>: Backend<T> + Sized + Send {
    /// Assemble the operators of a local problem (full storage) for subdomain `s`.
    fn assemble(local: Arc<Problem>, s: usize, slots: &Slots) -> Result<Self>;
    /// LPS forces with the dilatation of every local node given.
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()>;
    /// Strain energy of the first `rows` rows and the first `nodes` nodes, J.
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64>;
    /// Broken rows among the first `rows`.
    fn broken_before(&self, rows: usize) -> usize;
    /// Whether the part is on the device only while it runs.
    fn streamed(&self) -> bool {
        false
    }
    /// Make the part ready to run (a streamed part uploads its blocks).
    fn load(&self) -> Result<()> {
        Ok(())
    }
    /// Done with the part for this pass (a streamed part takes its row status back to the
    /// host and frees its device memory).
    fn unload(&self) -> Result<()> {
        Ok(())
    }
}

/// The two streams (device views) streamed parts alternate on; empty for resident parts.
#[derive(Default)]
pub struct Slots {
    views: Vec<Arc<Gpu>>,
}

impl Slots {
    /// Two new streams on the device, the kernels of precision `T` compiled first (the
    /// views share them).
    pub fn two<T: Real>(gpu: &Gpu) -> Result<Slots> {
        gpu.module(crate::backend::gpu_loop::precision_of::<T>())?;
        let views = (0..2)
            .map(|_| Ok(gpu.on_stream(gpu.new_stream()?)))
            .collect::<Result<_>>()?;
        Ok(Slots { views })
    }

    /// The view subdomain `s` runs on (alternating).
    pub fn view(&self, s: usize) -> &Arc<Gpu> {
        &self.views[s % self.views.len()]
    }
}

impl<T: Real> MatrixPart<T> for CpuMatrix<T> {
    fn assemble(local: Arc<Problem>, _: usize, _: &Slots) -> Result<Self> {
        CpuMatrix::new(local, Storage::Full)
    }
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()> {
        self.internal_force_with_theta(u, theta, force);
        Ok(())
    }
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        Ok(self.strain_energy_of(u, 0..rows, 0..nodes))
    }
    fn broken_before(&self, rows: usize) -> usize {
        self.broken_rows_before(rows)
    }
}

impl<T: Real> MatrixPart<T> for GpuMatrix<T> {
    fn assemble(local: Arc<Problem>, _: usize, _: &Slots) -> Result<Self> {
        GpuMatrix::new(local, Storage::Full)
    }
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()> {
        self.internal_force_with_theta(u, theta, force)
    }
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        self.strain_energy_of(u, rows, nodes)
    }
    fn broken_before(&self, rows: usize) -> usize {
        fatal(self.broken_rows_before(rows), "bond status download")
    }
}

/// Room for cuSPARSE workspaces and allocation granularity over a part's estimate.
const MARGIN: f64 = 1.1;

/// The fewest subdomains of `problem` whose two largest parts fit `budget` device bytes when
/// the matrix scheme streams them on `gpu-matrix` in precision `T` (a part's bytes:
/// `GpuMatrix::memory_estimate` of its local problem, with a margin for the cuSPARSE
/// workspaces). An error naming the budget when one cell slab per subdomain does not fit.
pub fn count_for_budget<T: Real>(problem: &Problem, budget: u64) -> Result<usize> {
    let t = std::mem::size_of::<T>();
    let part_bytes = |sub: &Subdomain| {
        let (local, _) = local_problem(problem, sub);
        GpuMatrix::<T>::memory_estimate(&local, Storage::Full, t) as f64 * MARGIN
    };
    let whole = GpuMatrix::<T>::memory_estimate(problem, Storage::Full, t) as f64 * MARGIN;
    let slabs = super::slabs::SlabCounts::of(problem).nodes.len();
    let largest = |count: usize| -> Result<f64> {
        Ok(partition(problem, count)?
            .iter()
            .map(part_bytes)
            .fold(0.0, f64::max))
    };
    let fits = |count: usize| -> Result<bool> { Ok(2.0 * largest(count)? <= budget as f64) };
    // from the bound without halos, raised in jumps, then back down to the fewest that fits
    let mut count = ((2.0 * whole / budget as f64).ceil() as usize).clamp(1, slabs);
    loop {
        let largest = largest(count)?;
        if 2.0 * largest <= budget as f64 {
            while count > 1 && fits(count - 1)? {
                count -= 1;
            }
            return Ok(count);
        }
        if count == slabs {
            return Err(super::usage(
                "--gpu-memory-budget",
                format!(
                    "{budget} bytes cannot hold two subdomains of this model's matrix scheme: \
                     even {slabs} subdomains (one cell slab each) need {:.0} bytes",
                    2.0 * largest
                ),
            ));
        }
        let next = (count as f64 * 2.0 * largest / budget as f64).ceil() as usize;
        count = next.max(count + 1).min(slabs);
    }
}

/// A device fault after setup stops the run (as in the in-core GPU backends).
fn fatal<R>(r: Result<R>, what: &str) -> R {
    r.unwrap_or_else(|e| panic!("gpu-matrix (subdomains): {what} failed on the device: {e}"))
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

/// The matrix scheme executed subdomain by subdomain, on the CPU (`M = CpuMatrix`) or with
/// every subdomain's operator blocks on the GPU (`M = GpuMatrix`).
pub struct PartitionedMatrix<T: Real, M: MatrixPart<T> = CpuMatrix<T>> {
    parts: Vec<Part<M>>,
    dim: usize,
    lps: bool,
    /// Global dilatation, exchanged between the two LPS phases.
    theta: Vec<T>,
    bonds: usize,
    _scalar: std::marker::PhantomData<T>,
}

/// The local problem of subdomain `sub` for the matrix scheme (what its operators are
/// assembled from; see [`local_problem`]).
pub fn local_problem_of(problem: &Problem, sub: &Subdomain) -> Problem {
    local_problem(problem, sub).0
}

/// The local problem of `sub` for the matrix scheme: owned nodes with their families, halo
/// nodes with their bonds into owned nodes, every family sorted by local index; and the
/// global bond of each local bond.
fn local_problem(problem: &Problem, sub: &Subdomain) -> (Problem, Vec<usize>) {
    let families = &problem.families;
    let owned = sub.owned_nodes();
    let halo = sub.halo_nodes();
    let local_of_owned = |g: usize| owned.binary_search(&g).ok();
    let local_of_halo = |g: usize| halo.binary_search(&g).ok().map(|k| sub.owned + k);
    let mut offsets = vec![0usize];
    let mut neighbors = Vec::new();
    let mut bond_index = Vec::new();
    for (l, &g) in sub.nodes.iter().enumerate() {
        let start = families.offsets[g];
        let mut row: Vec<(u32, usize)> = families
            .family(g)
            .iter()
            .enumerate()
            .filter_map(|(k, &j)| {
                let j = j as usize;
                let local = match l < sub.owned {
                    true => local_of_owned(j).or_else(|| local_of_halo(j)),
                    false => local_of_owned(j),
                };
                local.map(|lj| (lj as u32, start + k))
            })
            .collect();
        row.sort_unstable_by_key(|&(lj, _)| lj);
        neighbors.extend(row.iter().map(|&(lj, _)| lj));
        bond_index.extend(row.iter().map(|&(_, b)| b));
        offsets.push(neighbors.len());
    }
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

    /// [`PartitionedMatrix::new`] with the parts on `slots` (streamed parts alternate on
    /// them).
    pub fn on_slots(problem: &Problem, count: usize, slots: &Slots) -> Result<Self> {
        let parts = partition(problem, count)?
            .into_iter()
            .enumerate()
            .map(|(s, sub)| {
                let (local, bond_index) = local_problem(problem, &sub);
                let owned_rows = local.families.offsets[sub.owned];
                let backend = M::assemble(Arc::new(local), s, slots)?;
                Ok(Part {
                    sub,
                    bond_index,
                    owned_rows,
                    backend,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(PartitionedMatrix {
            parts,
            dim: problem.dim(),
            lps: matches!(problem.material.law, Law::Lps { .. }),
            theta: vec![T::zero(); problem.body.len()],
            bonds: problem.families.bonds(),
            _scalar: std::marker::PhantomData,
        })
    }

    /// Owned rows broken so far, over all subdomains.
    fn owned_broken(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.backend.broken_before(p.owned_rows))
            .sum()
    }

    /// Run `work` on every part in order. Streamed parts: each is loaded first, the next one
    /// loads on another thread while `work` runs (its upload then overlaps this part's
    /// products), and each unloads after its work.
    fn each_part(&mut self, mut work: impl FnMut(&mut Part<M>) + Send) {
        if !self.parts.first().is_some_and(|p| p.backend.streamed()) {
            self.parts.iter_mut().for_each(work);
            return;
        }
        for s in 0..self.parts.len() {
            let (head, tail) = self.parts.split_at_mut(s + 1);
            let part = &mut head[s];
            fatal(part.backend.load(), "subdomain upload");
            let next = std::thread::scope(|scope| {
                let next = scope.spawn(|| tail.first_mut().map_or(Ok(()), |p| p.backend.load()));
                work(part);
                next.join()
            });
            fatal(
                next.unwrap_or_else(|p| std::panic::resume_unwind(p)),
                "subdomain upload",
            );
            fatal(head[s].backend.unload(), "subdomain status download");
        }
    }

    /// LPS phase one: every subdomain's owned dilatations into `self.theta`.
    fn exchange_dilatation(&mut self, u: &[T]) {
        let d = self.dim;
        let mut theta_all = std::mem::take(&mut self.theta);
        self.each_part(|part| {
            let u_local = gather(u, &part.sub.nodes, d);
            let mut theta = vec![T::zero(); part.sub.nodes.len()];
            part.backend.dilatation(&u_local, &mut theta);
            scatter(&theta, part.sub.owned_nodes(), 1, &mut theta_all);
        });
        self.theta = theta_all;
    }
}

impl<T: Real, M: MatrixPart<T>> Backend<T> for PartitionedMatrix<T, M> {
    fn name(&self) -> &'static str {
        match self.parts.first().map(|p| p.backend.name()) {
            Some("gpu-matrix") => "gpu-matrix-partitioned",
            _ => "cpu-matrix-partitioned",
        }
    }

    fn internal_force(&mut self, u: &[T], force: &mut [T]) {
        let d = self.dim;
        if self.lps {
            self.exchange_dilatation(u);
        }
        let (lps, theta_all) = (self.lps, std::mem::take(&mut self.theta));
        self.each_part(|part| {
            let u_local = gather(u, &part.sub.nodes, d);
            let mut f_local = vec![T::zero(); u_local.len()];
            if lps {
                let theta = gather(&theta_all, &part.sub.nodes, 1);
                fatal(
                    part.backend
                        .force_with_theta(&u_local, &theta, &mut f_local),
                    "force evaluation",
                );
            } else {
                part.backend.internal_force(&u_local, &mut f_local);
            }
            scatter(&f_local, part.sub.owned_nodes(), d, force);
        });
        self.theta = theta_all;
    }

    /// PMB: breaking and forces in one pass over the subdomains (each breaks its rows, then
    /// computes its forces: what the two passes give, with one upload of each streamed
    /// part); LPS: the two passes (the dilatations must be exchanged after breaking).
    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> usize {
        if self.lps {
            let broken = self.break_bonds(u);
            self.internal_force(u, force);
            return broken;
        }
        let before = self.owned_broken();
        let d = self.dim;
        self.each_part(|part| {
            let u_local = gather(u, &part.sub.nodes, d);
            let mut f_local = vec![T::zero(); u_local.len()];
            part.backend.break_bonds_and_force(&u_local, &mut f_local);
            scatter(&f_local, part.sub.owned_nodes(), d, force);
        });
        self.owned_broken() - before
    }

    fn break_bonds(&mut self, u: &[T]) -> usize {
        let before = self.owned_broken();
        let d = self.dim;
        self.each_part(|part| {
            part.backend.break_bonds(&gather(u, &part.sub.nodes, d));
        });
        self.owned_broken() - before
    }

    fn damage(&self, phi: &mut [T]) {
        for part in &self.parts {
            let mut local = vec![T::zero(); part.sub.nodes.len()];
            part.backend.damage(&mut local);
            fatal(part.backend.unload(), "subdomain status download");
            scatter(&local, part.sub.owned_nodes(), 1, phi);
        }
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> bool {
        if !self.lps {
            return false;
        }
        self.exchange_dilatation(u);
        theta.copy_from_slice(&self.theta);
        true
    }

    fn strain_energy(&mut self, u: &[T]) -> f64 {
        let d = self.dim;
        let mut energy = 0.0;
        self.each_part(|p| {
            let u_local = gather(u, &p.sub.nodes, d);
            energy += fatal(
                p.backend.energy_of(&u_local, p.owned_rows, p.sub.owned),
                "strain energy",
            );
        });
        energy
    }

    fn broken_bonds(&self) -> usize {
        self.owned_broken()
    }

    fn bond_status(&self) -> Vec<u8> {
        let mut status = vec![0u8; self.bonds];
        for part in &self.parts {
            let local = part.backend.bond_status();
            for r in 0..part.owned_rows {
                status[part.bond_index[r]] = local[r];
            }
        }
        status
    }

    fn memory_bytes(&self) -> usize {
        let each = self.parts.iter().map(|p| p.backend.memory_bytes());
        match self.parts.first().is_some_and(|p| p.backend.streamed()) {
            // at most two streamed parts are on the device at a time
            true => {
                let mut sizes: Vec<usize> = each.collect();
                sizes.sort_unstable_by(|a, b| b.cmp(a));
                sizes.iter().take(2).sum()
            }
            false => each.sum(),
        }
    }

    fn bytes_per_step(&self) -> usize {
        self.parts.iter().map(|p| p.backend.bytes_per_step()).sum()
    }
}
