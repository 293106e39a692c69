//! What a distributed run reports, brought together: each rank's owned values gathered into
//! the global arrays every rank holds (for snapshots, probes and the summary, which then
//! read them as in a single process, bit for bit), and the bond status (and a softening
//! law's damage per bond) in the global CSR order. Collective: every rank calls these in the same order.
//!
//! Units: as the values gathered.

use super::{bytes_of, bytes_of_mut, Comm};
use crate::backend::partitioned::exchange::scatter;
use crate::Result;

/// Every rank's owned values (`per` per node, rank `r`'s for the nodes `owned_of[r]`, this
/// rank's in `mine`) written into `global` at their nodes.
pub(super) fn gather_owned<T: Copy + Default + Send + Sync>(
    comm: &dyn Comm,
    owned_of: &[Vec<usize>],
    mine: &[T],
    per: usize,
    global: &mut [T],
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    let counts: Vec<usize> = owned_of.iter().map(|o| o.len() * per * size).collect();
    let bytes = comm.all_gather(bytes_of(mine), &counts)?;
    let mut all = vec![T::default(); bytes.len() / size];
    bytes_of_mut(&mut all).copy_from_slice(&bytes);
    let mut at = 0;
    for nodes in owned_of {
        let len = nodes.len() * per;
        scatter(&all[at..at + len], nodes, per, global);
        at += len;
    }
    Ok(())
}

/// A global per-bond array (CSR order of `offsets`: the bond status, a softening law's damage
/// per bond) from every rank's values of its owned nodes' bonds (`mine`: in the order of its
/// owned nodes, each family in CSR order).
pub(super) fn gather_bonds<V: Copy + Default>(
    comm: &dyn Comm,
    owned_of: &[Vec<usize>],
    offsets: &[usize],
    mine: &[V],
) -> Result<Vec<V>> {
    let size = std::mem::size_of::<V>();
    let family = |i: usize| offsets[i]..offsets[i + 1];
    let counts: Vec<usize> = (owned_of.iter())
        .map(|o| size * o.iter().map(|&i| family(i).len()).sum::<usize>())
        .collect();
    let bytes = comm.all_gather(bytes_of(mine), &counts)?;
    let mut all = vec![V::default(); bytes.len() / size];
    bytes_of_mut(&mut all).copy_from_slice(&bytes);
    let mut values = vec![V::default(); offsets.last().copied().unwrap_or(0)];
    let mut at = 0;
    for nodes in owned_of {
        for &i in nodes {
            let bonds = family(i);
            let len = bonds.len();
            values[bonds].copy_from_slice(&all[at..at + len]);
            at += len;
        }
    }
    Ok(values)
}
