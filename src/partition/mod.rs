//! Subdomain partitioning (`theory.md` section 7, `docs/subdomains.md`): a [`Problem`]'s
//! nodes split into subdomains of whole cells of a cell grid, so a model larger than a GPU's
//! memory can be run one subdomain at a time.
//!
//! This module owns the partition ([`partition`], [`Subdomain`]: owned nodes, halo, local
//! families and the global bond slices they cover), the plan that sizes it from a count or a
//! memory budget ([`plan`]), and a CPU emulation of subdomain-by-subdomain execution
//! ([`emulate`]) that is tested to give bitwise the results of the in-core CPU loop backend,
//! and the execution on the GPU ([`stream`]: subdomains on device slots, copies overlapping
//! computation, the host data in pinned memory packed by `parts.rs`).
//!
//! Units: positions m; memory in bytes. Node indices are `usize` (global: the problem's;
//! local: a subdomain's, owned nodes first, then halo nodes).

pub mod backend;
pub mod emulate;
mod fused;
pub mod matrix;
mod parts;
pub mod plan;
pub mod report;
pub(crate) mod slabs;
pub mod stream;

pub use backend::SubdomainRequest;
pub use emulate::PartitionedCpu;
pub use matrix::PartitionedMatrix;
pub use plan::parse_bytes;
pub use report::{Residency, ResidencyRequest, StreamReport, StreamTimes};
pub use stream::GpuStreamed;

use crate::neighbors::Families;
use crate::setup::Problem;
use crate::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;

/// One subdomain: the nodes it owns (whose forces and bonds it computes), its halo (every
/// node outside it within the family radius of an owned node, read-only), and the owned
/// nodes' families in local indices.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subdomain {
    /// Local -> global node index: the owned nodes (ascending), then the halo (ascending).
    pub nodes: Vec<usize>,
    /// Number of owned nodes (`nodes[..owned]`).
    pub owned: usize,
    /// Families of the owned nodes in local indices, each in the global CSR order (so sums run
    /// in the same order as in core; local indices are therefore not sorted in general).
    pub families: Families,
    /// Per owned node, the start of its family in the global bond arrays: owned node `k`
    /// covers global bonds `bond_start[k]..bond_start[k] + families.family(k).len()`.
    pub bond_start: Vec<usize>,
    /// The cell slab range (along the partition axis) this subdomain is made of.
    pub cells: Range<usize>,
}

impl Subdomain {
    /// Owned node indices (global).
    pub fn owned_nodes(&self) -> &[usize] {
        &self.nodes[..self.owned]
    }
    /// Halo node indices (global).
    pub fn halo_nodes(&self) -> &[usize] {
        &self.nodes[self.owned..]
    }
    /// Number of halo nodes.
    pub fn halo(&self) -> usize {
        self.nodes.len() - self.owned
    }
    /// Number of directed bonds of the owned nodes.
    pub fn bonds(&self) -> usize {
        self.families.bonds()
    }
    /// Global bond range of owned node `k` (local index).
    pub fn global_bonds(&self, k: usize) -> Range<usize> {
        let start = self.bond_start[k];
        start..start + self.families.range(k).len()
    }
}

/// Split `problem` into `count` subdomains of whole cell slabs along the longest axis of the
/// body, balanced by node count (`slabs.rs`). An error when `count` is zero or larger than
/// the number of cell slabs.
pub fn partition(problem: &Problem, count: usize) -> Result<Vec<Subdomain>> {
    let families = &problem.families;
    let owner_of = slabs::assign(problem, count)?;
    let (owner, cell_ranges) = (&owner_of.owner, &owner_of.cells);
    let mut owned: Vec<Vec<usize>> = vec![Vec::new(); count];
    for (i, &s) in owner.iter().enumerate() {
        owned[s].push(i);
    }
    Ok(owned
        .into_par_iter()
        .enumerate()
        .map(|(s, nodes)| subdomain(families, owner, s, nodes, cell_ranges[s].clone()))
        .collect())
}

/// The subdomain `s` owning `owned` (ascending global indices).
fn subdomain(
    families: &Families,
    owner: &[usize],
    s: usize,
    owned: Vec<usize>,
    cells: Range<usize>,
) -> Subdomain {
    let mut halo: Vec<usize> = owned
        .iter()
        .flat_map(|&i| families.family(i).iter().map(|&j| j as usize))
        .filter(|&j| owner[j] != s)
        .collect();
    halo.sort_unstable();
    halo.dedup();
    let n_owned = owned.len();
    let mut nodes = owned;
    nodes.extend_from_slice(&halo);
    let local_of = |j: usize| -> u32 {
        let k = match owner[j] == s {
            true => nodes[..n_owned].binary_search(&j),
            false => halo.binary_search(&j).map(|k| n_owned + k),
        };
        k.expect("a neighbour is owned or in the halo") as u32
    };
    let mut offsets = Vec::with_capacity(n_owned + 1);
    offsets.push(0);
    let mut neighbors = Vec::new();
    let mut bond_start = Vec::with_capacity(n_owned);
    for &i in &nodes[..n_owned] {
        bond_start.push(families.offsets[i]);
        neighbors.extend(families.family(i).iter().map(|&j| local_of(j as usize)));
        offsets.push(neighbors.len());
    }
    Subdomain {
        families: Families { offsets, neighbors },
        bond_start,
        owned: n_owned,
        nodes,
        cells,
    }
}

/// A usage error for subdomain options.
pub(crate) fn usage(option: &str, message: impl Into<String>) -> Error {
    Error::Usage {
        option: option.into(),
        message: message.into(),
    }
}
