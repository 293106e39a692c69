//! Parallel iteration over blocks of nodes together with their bonds' slices of a per-bond
//! array, so per-bond state (the bond status) can be updated in parallel without locks and
//! with a result independent of the thread count.

use rayon::prelude::*;
use std::ops::Range;

/// Nodes per block: large enough to amortize scheduling, small enough to balance 2..128 cores.
const BLOCK: usize = 512;

/// Call `f(nodes, bonds_of_nodes)` in parallel for consecutive node blocks, where
/// `bonds_of_nodes` is the slice `data[offsets[start]..offsets[end]]`. Returns the sum of the
/// values `f` returns.
pub fn par_node_blocks<D, F>(offsets: &[usize], data: &mut [D], f: F) -> usize
where
    D: Send,
    F: Fn(Range<usize>, &mut [D]) -> usize + Sync,
{
    let n = offsets.len().saturating_sub(1);
    let mut pieces = Vec::with_capacity(n / BLOCK + 1);
    let mut rest = data;
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        let len = offsets[end] - offsets[start];
        let (head, tail) = rest.split_at_mut(len);
        pieces.push((start..end, head));
        rest = tail;
        start = end;
    }
    pieces
        .into_par_iter()
        .map(|(nodes, slice)| f(nodes, slice))
        .sum()
}

/// Like [`par_node_blocks`], with a per-node array as well: `f(nodes, bonds_of_nodes,
/// node_values)` where `node_values` is `per_node` entries per node of the block.
pub fn par_node_blocks_with<D, E, F>(
    offsets: &[usize],
    bond_data: &mut [D],
    node_data: &mut [E],
    per_node: usize,
    f: F,
) -> usize
where
    D: Send,
    E: Send,
    F: Fn(Range<usize>, &mut [D], &mut [E]) -> usize + Sync,
{
    let n = offsets.len().saturating_sub(1);
    assert_eq!(node_data.len(), n * per_node, "per-node array length");
    par_blocks_of_two(offsets, bond_data, node_data, |s, e| (e - s) * per_node, f)
}

/// Like [`par_node_blocks`], with two per-bond arrays: `f(nodes, a_of_bonds, b_of_bonds)`.
pub fn par_node_blocks_pair<D: Send, E: Send>(
    offsets: &[usize],
    a: &mut [D],
    b: &mut [E],
    f: impl Fn(Range<usize>, &mut [D], &mut [E]) -> usize + Sync,
) -> usize {
    assert_eq!(a.len(), b.len(), "per-bond array lengths");
    par_blocks_of_two(offsets, a, b, |s, e| offsets[e] - offsets[s], f)
}

/// The blocks of [`par_node_blocks`] over `first` (per bond) and `second`, whose part for
/// nodes `start..end` is `second_len(start, end)` long.
fn par_blocks_of_two<D: Send, E: Send>(
    offsets: &[usize],
    first: &mut [D],
    second: &mut [E],
    second_len: impl Fn(usize, usize) -> usize,
    f: impl Fn(Range<usize>, &mut [D], &mut [E]) -> usize + Sync,
) -> usize {
    let n = offsets.len().saturating_sub(1);
    let mut pieces = Vec::with_capacity(n / BLOCK + 1);
    let (mut bonds, mut nodes) = (first, second);
    let mut start = 0;
    while start < n {
        let end = (start + BLOCK).min(n);
        let (bond_head, bond_tail) = bonds.split_at_mut(offsets[end] - offsets[start]);
        let (node_head, node_tail) = nodes.split_at_mut(second_len(start, end));
        pieces.push((start..end, bond_head, node_head));
        (bonds, nodes) = (bond_tail, node_tail);
        start = end;
    }
    pieces
        .into_par_iter()
        .map(|(range, b, v)| f(range, b, v))
        .sum()
}
