//! CPU emulation of the matrix scheme in subdomains: what `gpu-matrix` will do per subdomain,
//! run on the CPU so CI can check it against the in-core `cpu-matrix`.
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

use super::{partition, Subdomain};
use crate::backend::{Backend, CpuMatrix};
use crate::geometry::Body;
use crate::material::{BondData, Law};
use crate::neighbors::Families;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;

/// One subdomain with its own matrix backend.
struct Part<T: Real> {
    sub: Subdomain,
    /// Global directed bond of each local bond (local CSR order; full storage: each local
    /// bond is one row).
    bond_index: Vec<usize>,
    /// Rows of the owned nodes' bonds (a prefix of the local rows).
    owned_rows: usize,
    backend: CpuMatrix<T>,
}

/// The matrix scheme executed subdomain by subdomain on the CPU.
pub struct PartitionedMatrix<T: Real> {
    parts: Vec<Part<T>>,
    dim: usize,
    lps: bool,
    /// Global dilatation, exchanged between the two LPS phases.
    theta: Vec<T>,
    bonds: usize,
}

/// `values` (`per` entries per node) of the global `nodes`.
fn gather<V: Copy>(values: &[V], nodes: &[usize], per: usize) -> Vec<V> {
    nodes
        .iter()
        .flat_map(|&g| values[per * g..per * (g + 1)].iter().copied())
        .collect()
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
    let b = &problem.bonds;
    let by_bond = |v: &[f64]| -> Vec<f64> { bond_index.iter().map(|&k| v[k]).collect() };
    let nodes = &sub.nodes;
    let body = &problem.body;
    let local = Problem {
        name: problem.name.clone(),
        model: problem.model.clone(),
        body: Body {
            positions: gather(&body.positions, nodes, 1),
            volumes: gather(&body.volumes, nodes, 1),
            dimension: body.dimension,
            dx: body.dx,
            delta: body.delta,
            thickness: body.thickness,
            bbox_min: body.bbox_min,
            bbox_max: body.bbox_max,
        },
        families: Families { offsets, neighbors },
        material: problem.material,
        bonds: BondData {
            beta: by_bond(&b.beta),
            correction: b.correction.as_ref().map(|c| by_bond(c)),
            horizon_volume: gather(&b.horizon_volume, nodes, 1),
            weighted_volume: gather(&b.weighted_volume, nodes, 1),
        },
        initial_mu: bond_index.iter().map(|&k| problem.initial_mu[k]).collect(),
        no_fail: gather(&problem.no_fail, nodes, 1),
        regions: Vec::new(),
        neighbor_seconds: 0.0,
        neighbor_search: problem.neighbor_search,
    };
    (local, bond_index)
}

impl<T: Real> PartitionedMatrix<T> {
    /// Partition `problem` into `count` subdomains and assemble each one's operators.
    pub fn new(problem: &Problem, count: usize) -> Result<Self> {
        let parts = partition(problem, count)?
            .into_iter()
            .map(|sub| {
                let (local, bond_index) = local_problem(problem, &sub);
                let owned_rows = local.families.offsets[sub.owned];
                let backend = CpuMatrix::new(Arc::new(local), Storage::Full)?;
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
        })
    }

    /// Owned rows broken so far, over all subdomains.
    fn owned_broken(&self) -> usize {
        self.parts
            .iter()
            .map(|p| p.backend.broken_rows_before(p.owned_rows))
            .sum()
    }

    /// LPS phase one: every subdomain's owned dilatations into `self.theta`.
    fn exchange_dilatation(&mut self, u: &[T]) {
        let d = self.dim;
        for part in &mut self.parts {
            let u_local = gather(u, &part.sub.nodes, d);
            let mut theta = vec![T::zero(); part.sub.nodes.len()];
            part.backend.dilatation(&u_local, &mut theta);
            for (k, &g) in part.sub.owned_nodes().iter().enumerate() {
                self.theta[g] = theta[k];
            }
        }
    }
}

impl<T: Real> Backend<T> for PartitionedMatrix<T> {
    fn name(&self) -> &'static str {
        "cpu-matrix-partitioned"
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
                part.backend
                    .internal_force_with_theta(&u_local, &theta, &mut f_local);
            } else {
                part.backend.internal_force(&u_local, &mut f_local);
            }
            for (k, &g) in part.sub.owned_nodes().iter().enumerate() {
                force[d * g..d * g + d].copy_from_slice(&f_local[d * k..d * k + d]);
            }
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
            for (k, &g) in part.sub.owned_nodes().iter().enumerate() {
                phi[g] = local[k];
            }
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
                p.backend
                    .strain_energy_of(&u_local, 0..p.owned_rows, 0..p.sub.owned)
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
