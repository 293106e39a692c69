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
