//! Bond rows and the sparsity patterns of the operators, without values: a pattern depends on
//! the families and the storage only, so it is built once; damage never changes it.
//! Indices are `u32` (node, column and bond indices; `mod.rs` checks the range).

use super::Storage;
use crate::neighbors::Families;
use faer::sparse::SymbolicSparseRowMat;
use rayon::prelude::*;
use std::ops::Range;

/// Rows per parallel task when filling per-row data.
const ROWS_PER_TASK: usize = 256;

/// Fill a per-entry array of a CSR pattern in parallel: `f(row, entries)` writes the entries
/// of `row` (`entries.len() == ptr[row + 1] - ptr[row]`). Count, scan, then fill: the output
/// has its exact size from the start and each task writes only its own rows.
pub fn fill_rows<V, F>(ptr: &[u32], f: F) -> Vec<V>
where
    V: Copy + Default + Send,
    F: Fn(usize, &mut [V]) + Sync,
{
    let nrows = ptr.len() - 1;
    let mut out = vec![V::default(); ptr[nrows] as usize];
    let mut pieces = Vec::with_capacity(nrows / ROWS_PER_TASK + 1);
    let mut rest = out.as_mut_slice();
    for start in (0..nrows).step_by(ROWS_PER_TASK) {
        let end = (start + ROWS_PER_TASK).min(nrows);
        let (head, tail) = rest.split_at_mut((ptr[end] - ptr[start]) as usize);
        pieces.push((start..end, head));
        rest = tail;
    }
    pieces.into_par_iter().for_each(|(rows, mut slice)| {
        for r in rows {
            let (head, tail) = slice.split_at_mut((ptr[r + 1] - ptr[r]) as usize);
            f(r, head);
            slice = tail;
        }
    });
    out
}

/// The bond rows of the operators: row `r` joins `first[r] = i` to `second[r] = j`.
/// Full storage: row `r` is directed bond `r` (CSR order). Half storage: one row per pair
/// `i < j`, ordered by `i` then `j` (a part's pairs that reach a ghost after all others:
/// [`HalfLayout`]), and `pairs[r] = [bond (i -> j), bond (j -> i)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BondRows {
    pub first: Vec<u32>,
    pub second: Vec<u32>,
    pub pairs: Option<Vec<[u32; 2]>>,
    /// Rows `0..early` reach no ghost (every row where the problem has none, and in full
    /// storage).
    pub early: usize,
}

/// Maps from directed bonds (CSR order) used while assembling: the reverse bond
/// `(j -> i)` of each bond `(i -> j)`, and the row that holds each bond (itself in full
/// storage, its pair in half storage). Not kept after assembly.
pub struct BondMaps {
    pub reverse: Vec<usize>,
    pub row_of: Vec<u32>,
}

impl BondMaps {
    /// The maps of `families` in `storage`; in half storage the pairs that reach a node of
    /// index `late` or above take the last rows ([`HalfLayout`]; `late >= n`: none).
    pub fn new(families: &Families, storage: Storage, late: usize) -> Self {
        let reverse = families.reverse_bonds();
        let row_of = match storage {
            Storage::Full => (0..families.bonds() as u32).collect(),
            Storage::Half => HalfLayout::new(families, late).rows_of_bonds(families, &reverse),
        };
        BondMaps { reverse, row_of }
    }
}

/// Where each pair `i < j` goes in half storage. Pairs come in two blocks: first the
/// *early* pairs (`j < late`), then the *late* ones (`j >= late`), each block ordered by `i`
/// then `j`. A part's local problem has its ghosts last (`late` its owned count,
/// `Problem::ghosts_from`), so the rows that read no ghost are a prefix and a rank runs them
/// while the ghosts' values travel. Each node's rows stay ascending in its family order (its
/// late pairs are the tail of its sorted family, and every late row follows every early
/// one), so the node-by-row patterns keep sorted columns.
struct HalfLayout {
    /// Per node, its lower neighbours (`j < i`: where its upper bonds start in its family).
    lower: Vec<usize>,
    /// Per node, where its late upper bonds start in its family.
    split: Vec<usize>,
    /// Exclusive scans of the early and of the late upper counts (`n + 1` values each; the
    /// late block's rows are `early[n] + late[i]..`).
    early: Vec<usize>,
    late: Vec<usize>,
}

impl HalfLayout {
    fn new(families: &Families, late: usize) -> Self {
        let n = families.nodes();
        let (lower, split): (Vec<usize>, Vec<usize>) = (0..n)
            .into_par_iter()
            .map(|i| {
                let family = families.family(i);
                let lower = family.partition_point(|&j| (j as usize) < i);
                let split = family.partition_point(|&j| (j as usize) < late.max(i + 1));
                (lower, split)
            })
            .unzip();
        let (mut early, mut late_start) = (vec![0usize; n + 1], vec![0usize; n + 1]);
        for i in 0..n {
            let len = families.range(i).len();
            early[i + 1] = early[i] + split[i] - lower[i];
            late_start[i + 1] = late_start[i] + len - split[i];
        }
        HalfLayout {
            lower,
            split,
            early,
            late: late_start,
        }
    }

    /// Rows whose two ends are both below `late`.
    fn early_rows(&self) -> usize {
        self.early[self.early.len() - 1]
    }

    /// The row of node `i`'s upper bond `b` (a CSR index in its family).
    fn upper_row(&self, families: &Families, i: usize, b: usize) -> usize {
        let at = b - families.offsets[i];
        match at < self.split[i] {
            true => self.early[i] + at - self.lower[i],
            false => self.early_rows() + self.late[i] + at - self.split[i],
        }
    }

    /// Pair row of every directed bond: a bond `(i -> j)` with `j > i` takes its pair's row,
    /// one with `j < i` the row of its reverse.
    fn rows_of_bonds(&self, families: &Families, reverse: &[usize]) -> Vec<u32> {
        families.per_bond(|i, b, j| {
            let r = match j > i {
                true => self.upper_row(families, i, b),
                false => self.upper_row(families, j, reverse[b]),
            };
            r as u32
        })
    }

    /// A per-row array in this order: `f(i, bonds, part)` fills node `i`'s rows of one block
    /// from its upper bonds of that block (`bonds`, CSR indices).
    fn per_row<V: Clone + Default + Send>(
        &self,
        families: &Families,
        f: impl Fn(usize, Range<usize>, &mut [V]) + Sync,
    ) -> Vec<V> {
        let off = &families.offsets;
        let mut out = per_node_parts(&self.early, |i, part| {
            f(i, off[i] + self.lower[i]..off[i] + self.split[i], part)
        });
        let late = per_node_parts(&self.late, |i, part| {
            f(i, off[i] + self.split[i]..off[i + 1], part)
        });
        out.extend(late);
        out
    }
}

/// An array of `start[n]` values whose part `start[i]..start[i + 1]` is node `i`'s, filled
/// by `f(i, part)` in parallel by blocks of nodes (each writing only its own parts).
fn per_node_parts<T: Clone + Default + Send>(
    start: &[usize],
    f: impl Fn(usize, &mut [T]) + Sync,
) -> Vec<T> {
    const BLOCK: usize = 2048;
    let n = start.len() - 1;
    let mut out = vec![T::default(); start[n]];
    let mut blocks = Vec::with_capacity(n.div_ceil(BLOCK));
    let mut rest = out.as_mut_slice();
    for first in (0..n).step_by(BLOCK) {
        let last = (first + BLOCK).min(n);
        let (head, tail) = rest.split_at_mut(start[last] - start[first]);
        blocks.push((first..last, head));
        rest = tail;
    }
    blocks.into_par_iter().for_each(|(nodes, slice)| {
        let base = start[nodes.start];
        for i in nodes {
            f(i, &mut slice[start[i] - base..start[i + 1] - base]);
        }
    });
    out
}

impl BondRows {
    /// The rows of `families` in `storage`, the pairs reaching a node `late` or above last
    /// (half storage; see [`BondMaps::new`]).
    pub fn new(families: &Families, storage: Storage, late: usize) -> Self {
        let maps = BondMaps::new(families, storage, late);
        Self::from_maps(families, storage, &maps, late)
    }

    /// The rows of `families` in `storage`, with the bond maps (of the same `late`) built.
    pub fn from_maps(families: &Families, storage: Storage, maps: &BondMaps, late: usize) -> Self {
        match storage {
            Storage::Full => {
                let first = families.per_bond(|i, _, _| i as u32);
                BondRows {
                    early: first.len(),
                    first,
                    second: families.neighbors.clone(),
                    pairs: None,
                }
            }
            Storage::Half => {
                let layout = HalfLayout::new(families, late);
                let first = layout.per_row(families, |i, _, part: &mut [u32]| part.fill(i as u32));
                let second = layout.per_row(families, |_, bonds, part: &mut [u32]| {
                    part.copy_from_slice(&families.neighbors[bonds])
                });
                let pairs = layout.per_row(families, |_, bonds, part: &mut [[u32; 2]]| {
                    for (p, b) in part.iter_mut().zip(bonds) {
                        *p = [b as u32, maps.reverse[b] as u32];
                    }
                });
                BondRows {
                    first,
                    second,
                    pairs: Some(pairs),
                    early: layout.early_rows(),
                }
            }
        }
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.first.len()
    }

    pub fn is_empty(&self) -> bool {
        self.first.is_empty()
    }

    /// Bytes of the row ends and, in half storage, the pair map (4 bytes an index).
    pub fn index_bytes(&self) -> usize {
        let pairs = self.pairs.as_ref().map_or(0, |p| 2 * p.len());
        4 * (self.first.len() + self.second.len() + pairs)
    }

    /// Bond status per row from a status per directed bond: in half storage a pair is intact
    /// only if both of its directed bonds are.
    pub fn row_status(&self, bond_status: &[u8]) -> Vec<u8> {
        match &self.pairs {
            None => bond_status.to_vec(),
            Some(pairs) => pairs
                .par_iter()
                .map(|&[ij, ji]| bond_status[ij as usize].min(bond_status[ji as usize]))
                .collect(),
        }
    }

    /// Status per directed bond (CSR order) from a status per row.
    pub fn bond_status(&self, row_status: &[u8]) -> Vec<u8> {
        match &self.pairs {
            None => row_status.to_vec(),
            Some(pairs) => {
                let mut out = vec![0u8; 2 * pairs.len()];
                for (&[ij, ji], &m) in pairs.iter().zip(row_status) {
                    out[ij as usize] = m;
                    out[ji as usize] = m;
                }
                out
            }
        }
    }

    /// Directed bonds broken among the rows of `mu` (the status of the first `mu.len()`
    /// rows, 0 broken) that leave one of the first `nodes` nodes: a broken row counts its
    /// first node's direction if that node is among them and, in half storage, its second
    /// node's likewise. (A rank's owned nodes come first: its broken owned bonds.)
    pub fn broken_leaving(&self, mu: &[u8], nodes: usize) -> usize {
        let half = usize::from(self.pairs.is_some());
        let leaves = |k: u32| usize::from((k as usize) < nodes);
        (mu.par_chunks(ROWS_PER_TASK * 64).enumerate())
            .map(|(c, chunk)| {
                let start = c * ROWS_PER_TASK * 64;
                (start..)
                    .zip(chunk)
                    .filter(|&(_, &m)| m == 0)
                    .map(|(r, _)| leaves(self.first[r]) + half * leaves(self.second[r]))
                    .sum::<usize>()
            })
            .sum()
    }

    /// Nodes `(i, j)` of row `r`.
    #[inline(always)]
    pub fn ends(&self, r: usize) -> (usize, usize) {
        (self.first[r] as usize, self.second[r] as usize)
    }
}

/// Pattern of the incidence-like operators, rows x `d n`: row `r` holds the `d` columns of
/// each of its two nodes, in ascending order (`d = 1`: `A`; `d = dim`: `B`).
pub fn incidence(rows: &BondRows, n: usize, d: usize) -> SymbolicSparseRowMat<u32> {
    let per = 2 * d;
    let row_ptr: Vec<u32> = (0..=rows.len()).map(|r| (per * r) as u32).collect();
    let mut cols = vec![0u32; per * rows.len()];
    cols.par_chunks_mut(per).enumerate().for_each(|(r, c)| {
        let (i, j) = rows.ends(r);
        let (lo, hi) = (i.min(j), i.max(j));
        for k in 0..d {
            c[k] = (d * lo + k) as u32;
            c[d + k] = (d * hi + k) as u32;
        }
    });
    SymbolicSparseRowMat::new_checked(rows.len(), d * n, row_ptr, None, cols)
}

/// Pattern of the node-by-row operators `Theta` and `Phi` (`n` x rows): row `k` holds every
/// bond row that contributes to node `k`. Full storage: the bonds leaving `k` (the family
/// range, so the pattern is `S^T`); half storage: every pair touching `k`
/// ([`node_incidence`]).
pub fn node_rows(
    families: &Families,
    storage: Storage,
    maps: &BondMaps,
) -> SymbolicSparseRowMat<u32> {
    match storage {
        Storage::Full => {
            let ptr = families.offsets.iter().map(|&o| o as u32).collect();
            let cols = (0..families.bonds() as u32).collect();
            let n = families.nodes();
            SymbolicSparseRowMat::new_checked(n, families.bonds(), ptr, None, cols)
        }
        Storage::Half => node_incidence(families, storage, maps),
    }
}

/// Pattern of `A^T` (`n` x rows): row `k` lists every bond row with an end at `k`, ascending,
/// built in parallel from the families (the transpose of `A` without a sort). Full storage:
/// the bonds entering `k` from lower nodes, the bonds leaving `k`, the bonds entering from
/// higher nodes. Half storage: the rows of `k`'s family bonds, in family order, which is
/// ascending (pairs `(j, k)`, `j < k`, come before the pairs `(k, j)`).
pub fn node_incidence(
    families: &Families,
    storage: Storage,
    maps: &BondMaps,
) -> SymbolicSparseRowMat<u32> {
    let n = families.nodes();
    let per_bond = match storage {
        Storage::Full => 2,
        Storage::Half => 1,
    };
    let rows = families.bonds() / (3 - per_bond);
    let mut ptr = vec![0u32; n + 1];
    for k in 0..n {
        ptr[k + 1] = ptr[k] + (per_bond * families.range(k).len()) as u32;
    }
    let cols = fill_rows(&ptr, |k, out: &mut [u32]| {
        let range = families.range(k);
        match storage {
            Storage::Half => {
                for (o, b) in out.iter_mut().zip(range) {
                    *o = maps.row_of[b];
                }
            }
            Storage::Full => {
                let lower = families.family(k).partition_point(|&j| (j as usize) < k);
                let mid = range.start + lower;
                let entering = |b: usize| maps.reverse[b] as u32;
                let order = (range.start..mid)
                    .map(entering)
                    .chain(range.clone().map(|b| b as u32))
                    .chain((mid..range.end).map(entering));
                for (o, r) in out.iter_mut().zip(order) {
                    *o = r;
                }
            }
        }
    });
    SymbolicSparseRowMat::new_checked(n, rows, ptr, None, cols)
}

/// Repeat every row of `pattern` `d` times (row `k` becomes rows `d k .. d k + d`): the
/// pattern of `B^T` from that of `A^T`.
pub fn repeat_rows(pattern: &SymbolicSparseRowMat<u32>, d: usize) -> SymbolicSparseRowMat<u32> {
    let (ptr, cols) = (pattern.row_ptr(), pattern.col_idx());
    let n = pattern.nrows();
    let mut out_ptr = vec![0u32; d * n + 1];
    for k in 0..n {
        let len = ptr[k + 1] - ptr[k];
        for c in 0..d {
            out_ptr[d * k + c + 1] = out_ptr[d * k + c] + len;
        }
    }
    let out_cols = fill_rows(&out_ptr, |kc, out: &mut [u32]| {
        let k = kc / d;
        out.copy_from_slice(&cols[ptr[k] as usize..ptr[k + 1] as usize]);
    });
    SymbolicSparseRowMat::new_checked(d * n, pattern.ncols(), out_ptr, None, out_cols)
}

/// Transpose of a CSR pattern (`nrows` x `ncols`, row pointer `rp`, columns `ci`) by counting
/// sort: returns the transposed row pointer, its columns (the source rows, ascending within
/// each row) and, per transposed entry, the index of the source entry.
pub fn transpose_parts(
    nrows: usize,
    ncols: usize,
    rp: &[u32],
    ci: &[u32],
) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let mut ptr = vec![0u32; ncols + 1];
    for &c in ci {
        ptr[c as usize + 1] += 1;
    }
    for c in 0..ncols {
        ptr[c + 1] += ptr[c];
    }
    let mut next = ptr[..ncols].to_vec();
    let mut cols = vec![0u32; ci.len()];
    let mut perm = vec![0u32; ci.len()];
    for r in 0..nrows {
        let (s, e) = (rp[r] as usize, rp[r + 1] as usize);
        for (k, &c) in (s..e).zip(&ci[s..e]) {
            let c = c as usize;
            let slot = next[c] as usize;
            next[c] += 1;
            cols[slot] = r as u32;
            perm[slot] = k as u32;
        }
    }
    (ptr, cols, perm)
}
