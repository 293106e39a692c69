//! Subdomain partitioning (`theory.md` section 7, `docs/subdomains.md`): a [`Problem`]'s
//! nodes split into subdomains of whole cells of a cell grid, so a model larger than a GPU's
//! memory can be run one subdomain at a time; for the ranks of a distributed run, into
//! slabs or blocks cut between node layers (`layers.rs`), each part's nodes within a range
//! of cells along every cut axis.
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

pub mod blocks;
mod layers;
pub mod report;
pub(crate) mod slabs;

pub use report::{RankReport, Residency, ResidencyRequest, StreamReport, StreamTimes};
pub use slabs::Balance;

use crate::material::family_radius;
use crate::model::RankPartition;
use crate::neighbors::cell_list::csr_families;
use crate::neighbors::{CellList, Families, FamilyFinder, Stencil};
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
    /// The cells its owned nodes lie in: their range along each cut axis (`Cuts::axes`;
    /// slabs: the one range along the longest axis). Subdomains of whole cells own every
    /// node of theirs; a cut at node layers shares its cell with the neighbour.
    pub cells: Vec<Range<usize>>,
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
    /// The bond status of the owned nodes' bonds at setup (1 intact, 0 cut by a pre-crack),
    /// in this subdomain's CSR order: the problem's stored status, or for a lean problem each
    /// bond tested against the pre-cracks (the test that made the stored status).
    pub fn initial_status(&self, problem: &Problem) -> Vec<u8> {
        if problem.bonds_stored {
            return (0..self.owned)
                .flat_map(|k| problem.initial_mu[self.global_bonds(k)].iter().copied())
                .collect();
        }
        let zone = problem.precrack_zone();
        let zone = &zone;
        (0..self.owned)
            .into_par_iter()
            .flat_map_iter(|k| {
                let i = self.nodes[k];
                let test = zone.near(&problem.body.positions[i]);
                self.families.family(k).iter().map(move |&l| {
                    u8::from(!test || problem.initially_intact(i, self.nodes[l as usize]))
                })
            })
            .collect()
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
    let cuts = Cuts::new(problem, count)?;
    (0..count)
        .into_par_iter()
        .map(|s| Ok(cuts.subdomain(problem, s)))
        .collect()
}

/// The cut of a problem into subdomains, before any is built: each can then be built on its
/// own ([`Cuts::subdomain`]), so a caller can pack one subdomain and drop its families
/// before building the next.
pub struct Cuts {
    assignment: slabs::Assignment,
    owned: Vec<Vec<usize>>,
    /// Nodes per cell slab where one axis is cut (slabs), else empty.
    slab_nodes: Vec<usize>,
}

impl Cuts {
    /// The `count`-way cut of `problem` balanced by nodes (errors as [`partition`]).
    pub fn new(problem: &Problem, count: usize) -> Result<Cuts> {
        Cuts::balanced(problem, count, Balance::Nodes)
    }

    /// The `count`-way cut of `problem` into slabs balanced by `balance` (errors as
    /// [`partition`]).
    pub fn balanced(problem: &Problem, count: usize, balance: Balance) -> Result<Cuts> {
        Ok(Cuts::of(slabs::assign(problem, count, balance)?))
    }

    /// The `count`-way cut of `problem` as `mode` makes it (slabs, or blocks cut along two
    /// or three axes: `blocks.rs`), each cut between node layers (`layers.rs`) balanced by
    /// `balance`.
    pub fn with_mode(
        problem: &Problem,
        count: usize,
        balance: Balance,
        mode: RankPartition,
    ) -> Result<Cuts> {
        Ok(Cuts::of(blocks::assign(problem, count, balance, mode)?))
    }

    fn of(assignment: slabs::Assignment) -> Cuts {
        let mut owned: Vec<Vec<usize>> = vec![Vec::new(); assignment.cells.len()];
        for (i, &s) in assignment.owner.iter().enumerate() {
            owned[s as usize].push(i);
        }
        let mut slab_nodes = vec![
            0;
            if assignment.axes.len() == 1 {
                assignment.len[0]
            } else {
                0
            }
        ];
        if !slab_nodes.is_empty() {
            for &k in &assignment.cell {
                slab_nodes[k as usize] += 1;
            }
        }
        Cuts {
            assignment,
            owned,
            slab_nodes,
        }
    }

    /// The subdomain that owns each node (global index).
    pub fn owners(&self) -> &[u32] {
        &self.assignment.owner
    }

    /// Number of subdomains.
    pub fn count(&self) -> usize {
        self.owned.len()
    }

    /// Owned nodes of subdomain `s` (global, ascending).
    pub fn owned(&self, s: usize) -> &[usize] {
        &self.owned[s]
    }

    /// The axes cut, in the order of the cuts (slabs: the longest axis alone).
    pub fn axes(&self) -> &[usize] {
        &self.assignment.axes
    }

    /// Parts along each axis (1 where it is not cut): `[P, 1, 1]` for slabs along x.
    pub fn product(&self) -> [usize; 3] {
        self.assignment.product
    }

    /// `slabs: 4 along x` or `blocks: 2 x 2 x 2 (x, y, z)`, as `info --ranks` names the cut.
    pub fn describe(&self) -> String {
        let names = ["x", "y", "z"];
        let axes = self.axes();
        let product = self.product();
        match axes {
            [a] => format!("slabs: {} along {}", product[*a], names[*a]),
            _ => {
                let mut sorted = axes.to_vec();
                sorted.sort_unstable();
                let counts: Vec<String> = sorted.iter().map(|&a| product[a].to_string()).collect();
                let named: Vec<&str> = sorted.iter().map(|&a| names[a]).collect();
                format!("blocks: {} ({})", counts.join(" x "), named.join(", "))
            }
        }
    }

    /// The cell slabs of subdomain `s` along the first cut axis (for slabs, its slabs).
    pub fn cells(&self, s: usize) -> Range<usize> {
        self.assignment.cells[s][0].clone()
    }

    /// Upper bound of the halo of subdomain `s`: the nodes of its cells and the cells one
    /// deep around them that it does not own (for slabs of whole cells, the cell slab on
    /// each side; a cut at node layers shares its cell with the neighbour).
    pub fn halo_bound(&self, s: usize) -> usize {
        let a = &self.assignment;
        let cells = &a.cells[s];
        if let [slab] = &cells[..] {
            let end = (slab.end + 1).min(self.slab_nodes.len());
            let near: usize = self.slab_nodes[slab.start.saturating_sub(1)..end]
                .iter()
                .sum();
            return near - self.owned[s].len();
        }
        let s = s as u32;
        (0..a.owner.len())
            .into_par_iter()
            .filter(|&i| a.owner[i] != s && self.reaches(cells, a.cell[i]))
            .count()
    }

    /// Whether linear cell `c` lies within one cell of the box `cells`.
    fn reaches(&self, cells: &[Range<usize>], c: u32) -> bool {
        let at = self.assignment.coords(c);
        (cells.iter().enumerate()).all(|(k, r)| at[k] + 1 >= r.start && at[k] <= r.end)
    }

    /// Subdomain `s`: its owned nodes' families from the problem's where it stores them,
    /// else searched for those nodes alone (the body's lattice stencil, or a cell list over
    /// the subdomain's cells and the cells one deep around them: a neighbour is at most one
    /// cell away); the same subdomain either way. Parallel throughout; besides the subdomain it
    /// holds one `u32` per node of the body while it renumbers.
    pub fn subdomain(&self, problem: &Problem, s: usize) -> Subdomain {
        let cells = self.assignment.cells[s].clone();
        let owned = self.owned[s].clone();
        // (global neighbour indices of the owned nodes' families, renumbered below)
        let families = match problem.bonds_stored {
            true => {
                let f = &problem.families;
                csr_families(
                    owned.len(),
                    |k| f.range(owned[k]).len(),
                    |k, slot| slot.copy_from_slice(f.family(owned[k])),
                )
            }
            false => self.searched(problem, s, &owned),
        };
        let bond_start = owned
            .par_iter()
            .map(|&i| problem.families.offsets[i])
            .collect();
        local_subdomain(
            &self.assignment.owner,
            s,
            owned,
            families,
            bond_start,
            cells,
        )
    }

    /// The families (global indices, each sorted) of subdomain `s`'s owned nodes `owned` of
    /// a problem without stored families.
    fn searched(&self, problem: &Problem, s: usize, owned: &[usize]) -> Families {
        let body = &problem.body;
        let kind = problem.model.discretization.partial_volume;
        let radius = family_radius(kind, body.delta, body.dx);
        if let Some(stencil) = Stencil::of_lattice(body, radius) {
            return FamilyFinder::Lattice(stencil).families_of(owned.len(), |k| owned[k]);
        }
        let a = &self.assignment;
        let cells = &a.cells[s];
        // candidates, ascending: the order of the search is the global one
        let candidates: Vec<usize> = (0..a.cell.len())
            .into_par_iter()
            .filter(|&i| self.reaches(cells, a.cell[i]))
            .collect();
        let positions: Vec<[f64; 3]> = candidates.par_iter().map(|&i| body.positions[i]).collect();
        let list = CellList::new(&positions, body.dim(), radius);
        let owned_at: Vec<usize> = (0..candidates.len())
            .into_par_iter()
            .filter(|&c| a.owner[candidates[c]] == s as u32)
            .collect();
        debug_assert_eq!(owned_at.len(), owned.len());
        let mut families = list.families_of(owned_at.len(), |k| owned_at[k]);
        families
            .neighbors
            .par_iter_mut()
            .for_each(|c| *c = candidates[*c as usize] as u32);
        families
    }
}

/// The subdomain `s` owning `owned` (ascending global indices) whose families `families`
/// hold in global indices: the halo (every neighbour owned elsewhere, ascending) appended to
/// the nodes, the families renumbered to local indices in place.
fn local_subdomain(
    owner: &[u32],
    s: usize,
    owned: Vec<usize>,
    mut families: Families,
    bond_start: Vec<usize>,
    cells: Vec<Range<usize>>,
) -> Subdomain {
    let s = s as u32;
    let mut halo: Vec<u32> = families
        .neighbors
        .par_iter()
        .copied()
        .filter(|&j| owner[j as usize] != s)
        .collect();
    halo.par_sort_unstable();
    halo.dedup();
    let n_owned = owned.len();
    // global -> local, for the nodes of this subdomain
    let mut local = vec![u32::MAX; owner.len()];
    for (k, &i) in owned.iter().enumerate() {
        local[i] = k as u32;
    }
    for (r, &j) in halo.iter().enumerate() {
        local[j as usize] = (n_owned + r) as u32;
    }
    families
        .neighbors
        .par_iter_mut()
        .for_each(|j| *j = local[*j as usize]);
    drop(local);
    let mut nodes = owned;
    nodes.extend(halo.iter().map(|&j| j as usize));
    Subdomain {
        nodes,
        owned: n_owned,
        families,
        bond_start,
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
