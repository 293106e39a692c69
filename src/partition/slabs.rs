//! Assignment of nodes to subdomains: cells of a grid with cell size equal to the family
//! radius (so a node's neighbours lie in its own or an adjacent cell), grouped into slabs of
//! whole cells along the body's longest axis, cut where the running node count passes each
//! `k / count` of the total ([`Balance`]: of the nodes, or of their directed bonds). Every
//! subdomain gets at least one cell slab. The cells along every axis and the cut points are
//! also what the blocks of `blocks.rs` are made of.

use super::usage;
use crate::material::family_radius;
use crate::setup::Problem;
use crate::Result;
use rayon::prelude::*;
use std::ops::Range;

/// The owner of every node and the cells of every subdomain: slabs (one axis cut) or blocks
/// (two or three).
pub struct Assignment {
    /// Subdomain of each node (global index).
    pub owner: Vec<u32>,
    /// The axes cut, in the order of the cuts (slabs: the longest axis alone).
    pub axes: Vec<usize>,
    /// Cells along each cut axis.
    pub len: Vec<usize>,
    /// Cell of each node over the cut axes, linear (the first cut axis fastest); for slabs
    /// the node's slab.
    pub cell: Vec<u32>,
    /// Per subdomain, its cell range along each cut axis.
    pub cells: Vec<Vec<Range<usize>>>,
    /// Subdomains along each axis (1 where it is not cut).
    pub product: [usize; 3],
}

impl Assignment {
    /// The coordinates along the cut axes of linear cell `c` (of [`Assignment::cell`]).
    pub fn coords(&self, c: u32) -> [usize; 3] {
        let mut c = c as usize;
        let mut out = [0; 3];
        for (k, &n) in self.len.iter().enumerate() {
            out[k] = c % n;
            c /= n;
        }
        out
    }
}

/// The longest axis of the body's bounding box among its `dim` axes.
pub(super) fn longest_axis(problem: &Problem) -> usize {
    let (lo, hi) = (problem.body.bbox_min, problem.body.bbox_max);
    (0..problem.dim())
        .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
        .unwrap_or(0)
}

/// The cells of the body along every axis: cells a hair wider than the family radius (as
/// the cell list's grid, so a neighbour at the widened radius of `within_radius` is never
/// two cells away) from the bounding box's low corner.
#[derive(Debug, Clone, Copy)]
pub(super) struct CellGrid {
    /// Cell width, m.
    width: f64,
    lo: [f64; 3],
    /// Cells along each axis (1 beyond the body's dimension).
    pub len: [usize; 3],
}

impl CellGrid {
    pub(super) fn of(problem: &Problem) -> CellGrid {
        let body = &problem.body;
        let kind = problem.model.discretization.partial_volume;
        let width =
            (family_radius(kind, body.delta, body.dx) * (1.0 + 1e-9)).max(f64::MIN_POSITIVE);
        let mut len = [1; 3];
        for (a, n) in len.iter_mut().enumerate().take(problem.dim()) {
            *n = (((body.bbox_max[a] - body.bbox_min[a]) / width).floor() as usize + 1).max(1);
        }
        CellGrid {
            width,
            lo: body.bbox_min,
            len,
        }
    }

    /// The cell of coordinate `x` along `axis`.
    #[inline]
    pub(super) fn at(&self, x: f64, axis: usize) -> usize {
        (((x - self.lo[axis]) / self.width).floor().max(0.0) as usize).min(self.len[axis] - 1)
    }
}

/// Cell slab index of every node along `axis`, and the number of slabs.
fn slab_of_nodes(problem: &Problem, axis: usize) -> (Vec<usize>, usize) {
    let grid = CellGrid::of(problem);
    let slab = (problem.body.positions)
        .par_iter()
        .map(|p| grid.at(p[axis], axis))
        .collect();
    (slab, grid.len[axis])
}

/// Slab cut points: `count + 1` increasing indices from 0 to `counts.len()`, cut where the
/// running node count first reaches `k * total / count`, each part at least one slab wide.
pub(super) fn cuts(counts: &[usize], count: usize) -> Vec<usize> {
    let total: usize = counts.iter().sum();
    let slabs = counts.len();
    let mut prefix = Vec::with_capacity(slabs + 1);
    prefix.push(0usize);
    for &c in counts {
        prefix.push(prefix.last().copied().unwrap_or(0) + c);
    }
    let mut cut = vec![0; count + 1];
    cut[count] = slabs;
    for k in 1..count {
        let target = (k * total).div_ceil(count);
        let first = prefix.partition_point(|&p| p < target);
        cut[k] = first.clamp(cut[k - 1] + 1, slabs - (count - k));
    }
    cut
}

/// Nodes and directed bonds per cell slab along the partition axis: what a plan needs to
/// size subdomains without building them.
pub struct SlabCounts {
    pub nodes: Vec<usize>,
    pub bonds: Vec<usize>,
}

impl SlabCounts {
    pub fn of(problem: &Problem) -> SlabCounts {
        let (slab, slabs) = slab_of_nodes(problem, longest_axis(problem));
        let mut c = SlabCounts {
            nodes: vec![0; slabs],
            bonds: vec![0; slabs],
        };
        for (i, &k) in slab.iter().enumerate() {
            c.nodes[k] += 1;
            c.bonds[k] += problem.families.range(i).len();
        }
        c
    }

    /// Per subdomain of a `count`-way split (as [`assign`] cuts it): owned nodes, their
    /// bonds, and an upper bound of the halo (the nodes of the slab on each side).
    pub fn split(&self, count: usize) -> Vec<(usize, usize, usize)> {
        let cut = cuts(&self.nodes, count);
        let sum = |v: &[usize], r: Range<usize>| v[r].iter().sum::<usize>();
        (0..count)
            .map(|s| {
                let (a, b) = (cut[s], cut[s + 1]);
                let before = if a > 0 { self.nodes[a - 1] } else { 0 };
                let after = if b < self.nodes.len() {
                    self.nodes[b]
                } else {
                    0
                };
                (
                    sum(&self.nodes, a..b),
                    sum(&self.bonds, a..b),
                    before + after,
                )
            })
            .collect()
    }
}

/// What the cuts balance: the node count of the parts (memory, the streamed subdomains) or
/// their directed bond count (the work of a force evaluation, the ranks of an MPI run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Balance {
    Nodes,
    Bonds,
}

impl Balance {
    /// What node `i` weighs in the balance.
    #[inline]
    pub(super) fn weight(self, problem: &Problem, i: usize) -> usize {
        match self {
            Balance::Nodes => 1,
            // (a node without bonds still costs its update)
            Balance::Bonds => problem.families.range(i).len().max(1),
        }
    }
}

/// Assign every node of `problem` to one of `count` subdomains, balanced by `balance`.
pub fn assign(problem: &Problem, count: usize, balance: Balance) -> Result<Assignment> {
    if count == 0 {
        return Err(usage("--subdomains", "must be at least 1"));
    }
    let axis = longest_axis(problem);
    let (slab, slabs) = slab_of_nodes(problem, axis);
    if count > slabs {
        let name = ["x", "y", "z"][axis];
        return Err(usage(
            "--subdomains",
            format!(
                "{count} subdomains asked for, but the model is only {slabs} cells (of the \
                 family radius) long along {name}: at most {slabs}"
            ),
        ));
    }
    let mut counts = vec![0usize; slabs];
    for (i, &c) in slab.iter().enumerate() {
        counts[c] += balance.weight(problem, i);
    }
    let cut = cuts(&counts, count);
    let mut subdomain_of_slab = vec![0; slabs];
    for s in 0..count {
        subdomain_of_slab[cut[s]..cut[s + 1]].fill(s);
    }
    Ok(Assignment {
        owner: slab
            .par_iter()
            .map(|&c| subdomain_of_slab[c] as u32)
            .collect(),
        axes: vec![axis],
        len: vec![slabs],
        cell: slab.par_iter().map(|&c| c as u32).collect(),
        cells: (0..count)
            .map(|s| std::iter::once(cut[s]..cut[s + 1]).collect())
            .collect(),
        product: std::array::from_fn(|a| if a == axis { count } else { 1 }),
    })
}

#[cfg(test)]
mod tests {
    use super::cuts;

    #[test]
    fn cuts_balance_and_keep_every_part_nonempty() {
        assert_eq!(cuts(&[10, 10, 10, 10], 2), vec![0, 2, 4]);
        assert_eq!(cuts(&[10, 10, 10, 10], 4), vec![0, 1, 2, 3, 4]);
        assert_eq!(cuts(&[40, 0, 0, 0], 4), vec![0, 1, 2, 3, 4]);
        assert_eq!(cuts(&[5], 1), vec![0, 1]);
    }
}
