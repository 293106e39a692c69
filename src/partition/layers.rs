//! Layer cuts: the nodes of a problem cut into a product `Px x Py x Pz` of parts for the
//! ranks of a distributed run (`docs/distributed.md`), nested along the cut axes in order,
//! each cut falling between **node layers**: the distinct coordinate values of the nodes
//! along the axis (a lattice's planes of nodes), ascending. Where an axis has more distinct
//! values than the counts may hold ([`LAYERS_PER_NODE`] per node over the parts being cut,
//! an irregular body), its layers are quantiles of them: every `d / cap`-th distinct value
//! starts one.
//!
//! Each cut balances what it cuts ([`Balance`]) over the layers its part occupies: the cut
//! point `k` is the layer boundary whose running count is nearest `k / P_a` of the part
//! (every child at least one occupied layer), so each child is within one layer of its share
//! (half a layer at each end). A cut between cells (`slabs.rs`, the streamed subdomains)
//! errs by up to a cell, several layers: compounded over three nested cuts of parts a few
//! cells wide that is the imbalance this cut removes.
//!
//! A part is no box of whole cells: the cell next to a cut holds nodes of both sides. What
//! the search and the ghosts' bound need is the range of cells each part's nodes lie in
//! along each cut axis ([`Layered::cells`]): every neighbour of a node is in its own or an
//! adjacent cell, so within one cell of that range.
//!
//! Besides the owners (4 bytes a node) a cut holds, one axis at a time, the nodes'
//! coordinates along it while it sorts them (8 bytes a node) and their layers (4 bytes).
//!
//! Units: cells, layers, nodes.

use super::slabs::{Balance, CellGrid};
use crate::setup::Problem;
use rayon::prelude::*;
use std::ops::Range;

/// Counts held per node over the parts being cut (and [`LAYERS_SPARE`]): the layers of an
/// axis are at most this many over the number of parts cut along it.
pub const LAYERS_PER_NODE: usize = 4;
const LAYERS_SPARE: usize = 4096;

/// The owner of every node and the cells each part's nodes lie in.
pub struct Layered {
    /// Part of each node (global index), the first cut axis slowest.
    pub owner: Vec<u32>,
    /// Per part, the range of cells (of `grid`) its nodes lie in along each cut axis, in the
    /// order of the cuts; `0..0` for a part without nodes.
    pub cells: Vec<Vec<Range<usize>>>,
}

/// The layers of one axis: the coordinate each starts at, ascending.
struct Layers {
    starts: Vec<f64>,
}

impl Layers {
    /// The distinct coordinates of `problem`'s nodes along `axis`, or `cap` quantiles of
    /// them where there are more.
    fn along(problem: &Problem, axis: usize, cap: usize) -> Layers {
        let mut x: Vec<f64> = (problem.body.positions.par_iter())
            .map(|p| p[axis])
            .collect();
        x.par_sort_unstable_by(f64::total_cmp);
        x.dedup();
        let d = x.len();
        if d > cap {
            x = (0..cap).map(|j| x[j * d / cap]).collect();
        }
        x.shrink_to_fit();
        Layers { starts: x }
    }

    fn len(&self) -> usize {
        self.starts.len()
    }

    /// The layer of coordinate `x` (a node's: at or above the first start).
    #[inline]
    fn of(&self, x: f64) -> u32 {
        self.starts.partition_point(|&b| b <= x).saturating_sub(1) as u32
    }
}

/// Cut points of `weights` into `count` runs: `count + 1` indices from 0 to its length, cut
/// `k` at the boundary whose running sum is nearest `k / count` of the total (the lower one
/// on a tie), each run at least one entry (`count <= weights.len()`).
pub(super) fn nearest_cuts(weights: &[usize], count: usize) -> Vec<usize> {
    let m = weights.len();
    let mut prefix = Vec::with_capacity(m + 1);
    prefix.push(0u128);
    for &w in weights {
        prefix.push(prefix[prefix.len() - 1] + w as u128);
    }
    let total = prefix[m];
    let mut cut = vec![0; count + 1];
    cut[count] = m;
    for k in 1..count {
        // |prefix[j] - k total / count| in units of 1 / count
        let target = k as u128 * total;
        let off = |j: usize| (prefix[j] * count as u128).abs_diff(target);
        let first = prefix.partition_point(|&p| p * (count as u128) < target);
        let j = match first {
            0 => 0,
            f if f > m => m,
            f if off(f - 1) <= off(f) => f - 1,
            f => f,
        };
        cut[k] = j.clamp(cut[k - 1] + 1, m - (count - k));
    }
    cut
}

/// The first layer of each of the `count` children of a part whose weight per layer is
/// `counts`: the nearest cuts over the layers it occupies; where it occupies fewer than
/// `count`, one occupied layer a child and the rest empty (first layer past the end).
fn child_starts(counts: &[usize], count: usize) -> Vec<u32> {
    let occupied: Vec<u32> = (0..counts.len() as u32)
        .filter(|&l| counts[l as usize] > 0)
        .collect();
    let mut starts = vec![counts.len() as u32; count];
    starts[0] = 0;
    if occupied.len() < count {
        if let Some(rest) = occupied.get(1..) {
            starts[1..occupied.len()].copy_from_slice(rest);
        }
        return starts;
    }
    let weights: Vec<usize> = occupied.iter().map(|&l| counts[l as usize]).collect();
    let cut = nearest_cuts(&weights, count);
    for (s, &c) in starts.iter_mut().zip(&cut).skip(1) {
        *s = occupied[c];
    }
    starts
}

/// `problem` cut into `product[a]` parts along each of `axes` in turn (the nested cuts of
/// the module docs), balanced by `balance`; the parts' cells those of `grid`.
pub(super) fn cut(
    problem: &Problem,
    balance: Balance,
    product: [usize; 3],
    axes: &[usize],
    grid: &CellGrid,
) -> Layered {
    let positions = &problem.body.positions;
    let n = positions.len();
    let mut owner = vec![0u32; n];
    let mut parts = 1usize;
    for &a in axes {
        let cap = ((LAYERS_PER_NODE * n + LAYERS_SPARE) / parts).max(product[a]);
        let layers = Layers::along(problem, a, cap);
        // (at least one layer: no chunk of length 0)
        let l = layers.len().max(1);
        let layer: Vec<u32> = positions.par_iter().map(|p| layers.of(p[a])).collect();
        let mut counts = vec![0usize; parts * l];
        for i in 0..n {
            counts[owner[i] as usize * l + layer[i] as usize] += balance.weight(problem, i);
        }
        let starts: Vec<Vec<u32>> = (counts.par_chunks(l))
            .map(|c| child_starts(c, product[a]))
            .collect();
        owner.par_iter_mut().zip(&layer).for_each(|(s, &k)| {
            let child = starts[*s as usize].partition_point(|&b| b <= k) - 1;
            *s = (*s as usize * product[a] + child) as u32;
        });
        parts *= product[a];
    }
    let empty = || vec![(usize::MAX, 0); axes.len()];
    let cells = (0..n)
        .into_par_iter()
        .with_min_len(1 << 16)
        .fold(
            || vec![empty(); parts],
            |mut bounds, i| {
                for (k, &a) in axes.iter().enumerate() {
                    let c = grid.at(positions[i][a], a);
                    let b = &mut bounds[owner[i] as usize][k];
                    *b = (b.0.min(c), b.1.max(c + 1));
                }
                bounds
            },
        )
        .reduce(
            || vec![empty(); parts],
            |mut x, y| {
                for (bx, by) in x.iter_mut().zip(&y) {
                    for (p, q) in bx.iter_mut().zip(by) {
                        *p = (p.0.min(q.0), p.1.max(q.1));
                    }
                }
                x
            },
        );
    let cells = (cells.into_iter())
        .map(|b| b.into_iter().map(|(lo, hi)| lo.min(hi)..hi).collect())
        .collect();
    Layered { owner, cells }
}

#[cfg(test)]
mod tests {
    use super::{child_starts, nearest_cuts};

    /// The cut lands on the boundary nearest its target: 10 layers of 10 in 3 parts (targets
    /// 33.3 and 66.7) cut after 3 and 7 layers (30 and 70, off by 3.3 each), where the
    /// first boundary reaching the target would take 4 and 7 (40: off by 6.7); every part
    /// at least one layer where the weight sits in one.
    #[test]
    fn nearest_cuts_balance_to_half_a_layer() {
        assert_eq!(nearest_cuts(&[10; 10], 3), vec![0, 3, 7, 10]);
        assert_eq!(nearest_cuts(&[10, 10, 10, 10], 2), vec![0, 2, 4]);
        assert_eq!(nearest_cuts(&[40, 0, 0, 0], 4), vec![0, 1, 2, 3, 4]);
        assert_eq!(nearest_cuts(&[5], 1), vec![0, 1]);
    }

    /// A part occupying layers 2, 3, 6 and 7 of 9 (weights 1, 1, 1, 1) splits in two at
    /// layer 6 (two occupied layers each side); occupying one layer only, its first child
    /// takes it and the other starts past the last layer (no node).
    #[test]
    fn children_split_the_occupied_layers() {
        assert_eq!(child_starts(&[0, 0, 1, 1, 0, 0, 1, 1, 0], 2), vec![0, 6]);
        assert_eq!(child_starts(&[0, 0, 3, 0], 2), vec![0, 4]);
    }
}
