//! Bond rows and the sparsity patterns of the operators, without values: a pattern depends on
//! the families and the storage only, so it is built once; damage never changes it.
//! Indices are `u32` (node, column and bond indices; `mod.rs` checks the range).

use super::Storage;
use crate::neighbors::Families;
use faer::sparse::SymbolicSparseRowMat;
use rayon::prelude::*;

/// The bond rows of the operators: row `r` joins `first[r] = i` to `second[r] = j`.
/// Full storage: row `r` is directed bond `r` (CSR order). Half storage: one row per pair
/// `i < j`, ordered by `i` then `j`, and `pairs[r] = [bond (i -> j), bond (j -> i)]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BondRows {
    pub first: Vec<u32>,
    pub second: Vec<u32>,
    pub pairs: Option<Vec<[u32; 2]>>,
}

impl BondRows {
    /// The rows of `families` in `storage`.
    pub fn new(families: &Families, storage: Storage) -> Self {
        let n = families.nodes();
        match storage {
            Storage::Full => {
                let first = (0..n)
                    .into_par_iter()
                    .flat_map_iter(|i| std::iter::repeat_n(i as u32, families.range(i).len()))
                    .collect();
                BondRows {
                    first,
                    second: families.neighbors.clone(),
                    pairs: None,
                }
            }
            Storage::Half => {
                let reverse = families.reverse_bonds();
                let rows = families.bonds() / 2;
                let (mut first, mut second) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
                let mut pairs = Vec::with_capacity(rows);
                for i in 0..n {
                    for b in families.range(i) {
                        let j = families.neighbors[b];
                        if j as usize > i {
                            first.push(i as u32);
                            second.push(j);
                            pairs.push([b as u32, reverse[b] as u32]);
                        }
                    }
                }
                BondRows {
                    first,
                    second,
                    pairs: Some(pairs),
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
/// range, so the pattern is `S^T`); half storage: every pair touching `k`, ascending.
pub fn node_rows(rows: &BondRows, n: usize, offsets: &[usize]) -> SymbolicSparseRowMat<u32> {
    match rows.pairs {
        None => {
            let ptr = offsets.iter().map(|&o| o as u32).collect();
            let cols = (0..rows.len() as u32).collect();
            SymbolicSparseRowMat::new_checked(n, rows.len(), ptr, None, cols)
        }
        Some(_) => {
            let a = incidence(rows, n, 1);
            let (ptr, cols, _) = transpose_parts(rows.len(), n, a.row_ptr(), a.col_idx());
            SymbolicSparseRowMat::new_checked(n, rows.len(), ptr, None, cols)
        }
    }
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
        for k in rp[r] as usize..rp[r + 1] as usize {
            let c = ci[k] as usize;
            let slot = next[c] as usize;
            next[c] += 1;
            cols[slot] = r as u32;
            perm[slot] = k as u32;
        }
    }
    (ptr, cols, perm)
}
