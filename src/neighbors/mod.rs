//! Neighbour search: families `H_i = { j != i : |X_j - X_i| <= r }` as exact-size CSR lists,
//! each sorted by `j`, built by a cell-linked list (`cell_list.rs`); a brute-force O(n^2)
//! search (`brute.rs`) is the reference it is tested against; a full box lattice's families
//! come from its stencil of node offsets without a search (`stencil.rs`).

pub mod brute;
pub mod cell_list;
pub mod stencil;

pub use brute::brute_force_families;
pub use cell_list::{cell_list_families, CellList};
pub use stencil::{FamilyFinder, Stencil};

/// Squared family radius used by every search: `r^2 (1 + 1e-10)`. Lattice ties (a neighbour at
/// exactly `r`, as with `delta = 3 dx`) are then included everywhere instead of depending on the
/// rounding of each node's coordinates; the widening is far below any physical length.
pub fn family_radius_squared(radius: f64) -> f64 {
    radius * radius * (1.0 + 1e-10)
}

/// The family predicate shared by every search: `j` belongs to the family of `i` when the
/// squared distance over the first `dim` components is `<= r2` (`r2` = radius squared, m^2).
/// The same arithmetic in the same order for every caller, so the cell list and the brute-force
/// search agree bit for bit, and `(a, b)` and `(b, a)` give the same answer.
#[inline(always)]
pub fn within_radius(a: &[f64; 3], b: &[f64; 3], dim: usize, r2: f64) -> bool {
    let dx = b[0] - a[0];
    let dy = b[1] - a[1];
    let mut d2 = dx * dx + dy * dy;
    if dim == 3 {
        let dz = b[2] - a[2];
        d2 += dz * dz;
    }
    d2 <= r2
}

/// Families in compressed sparse row form: the neighbours of node `i` are
/// `neighbors[offsets[i]..offsets[i + 1]]`, sorted ascending. Bond `b` is the directed bond
/// `(i -> neighbors[b])` for the `i` whose range holds `b`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Families {
    pub offsets: Vec<usize>,
    pub neighbors: Vec<u32>,
}

impl Families {
    /// Host bytes of the families of `nodes` nodes with `bonds` directed bonds: the offsets
    /// (8 bytes each, one more than the nodes) and the neighbour indices (4 bytes each).
    pub fn bytes_for(nodes: usize, bonds: usize) -> usize {
        8 * (nodes + 1) + 4 * bonds
    }

    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    /// Number of directed bonds (sum of family sizes; from the offsets, so also for the
    /// size-only families of a lean problem, whose `neighbors` are empty).
    pub fn bonds(&self) -> usize {
        self.offsets.last().copied().unwrap_or(0)
    }
    /// Neighbours of node `i`.
    #[inline]
    pub fn family(&self, i: usize) -> &[u32] {
        &self.neighbors[self.offsets[i]..self.offsets[i + 1]]
    }
    /// Bond index range of node `i`.
    #[inline]
    pub fn range(&self, i: usize) -> std::ops::Range<usize> {
        self.offsets[i]..self.offsets[i + 1]
    }
    /// Smallest, mean and largest family size.
    pub fn size_stats(&self) -> (usize, f64, usize) {
        let n = self.nodes();
        if n == 0 {
            return (0, 0.0, 0);
        }
        let sizes = (0..n).map(|i| self.offsets[i + 1] - self.offsets[i]);
        let min = sizes.clone().min().unwrap_or(0);
        let max = sizes.max().unwrap_or(0);
        (min, self.bonds() as f64 / n as f64, max)
    }
    /// A per-bond array in CSR order: `f(i, b, j)` for every bond `b = (i -> j)`, allocated
    /// at its exact size once and filled in parallel by blocks of nodes, each writing only
    /// its own bonds (no intermediate collection), so the values are the same at any thread
    /// count.
    pub fn per_bond<T: Clone + Default + Send>(
        &self,
        f: impl Fn(usize, usize, usize) -> T + Sync,
    ) -> Vec<T> {
        use rayon::prelude::*;
        const BLOCK: usize = 2048;
        let n = self.nodes();
        let mut out = vec![T::default(); self.bonds()];
        let mut blocks = Vec::with_capacity(n.div_ceil(BLOCK));
        let mut rest = out.as_mut_slice();
        for first in (0..n).step_by(BLOCK) {
            let last = (first + BLOCK).min(n);
            let (head, tail) = rest.split_at_mut(self.offsets[last] - self.offsets[first]);
            blocks.push((first..last, head));
            rest = tail;
        }
        blocks.into_par_iter().for_each(|(nodes, slice)| {
            let base = self.offsets[nodes.start];
            for i in nodes {
                for b in self.range(i) {
                    slice[b - base] = f(i, b, self.neighbors[b] as usize);
                }
            }
        });
        out
    }

    /// For every bond `b = (i -> j)`, the index of the reverse bond `(j -> i)`.
    /// Families are symmetric, so it always exists.
    pub fn reverse_bonds(&self) -> Vec<usize> {
        self.per_bond(|i, _, j| {
            let k = self
                .family(j)
                .binary_search(&(i as u32))
                .expect("families are symmetric");
            self.offsets[j] + k
        })
    }
}
