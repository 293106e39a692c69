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
use crate::material::Law;
use crate::neighbors::Families;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;

/// A matrix backend one subdomain runs on: `cpu-matrix` (the emulation CI runs) or
/// `gpu-matrix` (every subdomain's blocks resident on the device).
pub trait MatrixPart<T: Real>: Backend<T> + Sized {
    /// Assemble the operators of a local problem (full storage).
    fn assemble(local: Arc<Problem>) -> Result<Self>;
    /// LPS forces with the dilatation of every local node given.
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()>;
    /// Strain energy of the first `rows` rows and the first `nodes` nodes, J.
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64>;
    /// Broken rows among the first `rows`.
    fn broken_before(&self, rows: usize) -> usize;
}

impl<T: Real> MatrixPart<T> for CpuMatrix<T> {
    fn assemble(local: Arc<Problem>) -> Result<Self> {
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
    fn assemble(local: Arc<Problem>) -> Result<Self> {
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
        let parts = partition(problem, count)?
            .into_iter()
            .map(|sub| {
                let (local, bond_index) = local_problem(problem, &sub);
                let owned_rows = local.families.offsets[sub.owned];
                let backend = M::assemble(Arc::new(local))?;
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

    /// LPS phase one: every subdomain's owned dilatations into `self.theta`.
    fn exchange_dilatation(&mut self, u: &[T]) {
        let d = self.dim;
        for part in &mut self.parts {
            let u_local = gather(u, &part.sub.nodes, d);
            let mut theta = vec![T::zero(); part.sub.nodes.len()];
            part.backend.dilatation(&u_local, &mut theta);
            scatter(&theta, part.sub.owned_nodes(), 1, &mut self.theta);
        }
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
        for part in &mut self.parts {
            let u_local = gather(u, &part.sub.nodes, d);
            let mut f_local = vec![T::zero(); u_local.len()];
            if self.lps {
                let theta = gather(&self.theta, &part.sub.nodes, 1);
                fatal(
                    part.backend
                        .force_with_theta(&u_local, &theta, &mut f_local),
                    "force evaluation",
                );
            } else {
                part.backend.internal_force(&u_local, &mut f_local);
            }
            scatter(&f_local, part.sub.owned_nodes(), d, force);
        }
    }

    fn break_bonds(&mut self, u: &[T]) -> usize {
        let before = self.owned_broken();
        let d = self.dim;
        for part in &mut self.parts {
            part.backend.break_bonds(&gather(u, &part.sub.nodes, d));
        }
        self.owned_broken() - before
    }

    fn damage(&self, phi: &mut [T]) {
        for part in &self.parts {
            let mut local = vec![T::zero(); part.sub.nodes.len()];
            part.backend.damage(&mut local);
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
        self.parts
            .iter_mut()
            .map(|p| {
                let u_local = gather(u, &p.sub.nodes, d);
                fatal(
                    p.backend.energy_of(&u_local, p.owned_rows, p.sub.owned),
                    "strain energy",
                )
            })
            .sum()
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
        self.parts.iter().map(|p| p.backend.memory_bytes()).sum()
    }

    fn bytes_per_step(&self) -> usize {
        self.parts.iter().map(|p| p.backend.bytes_per_step()).sum()
    }
}
