//! Cell-linked-list neighbour search (`theory.md` section 6). Positions and radius in metres.
//!
//! 1. A grid of cells of edge `>= radius` over the bounding box of the nodes (only the first
//!    `dim` axes; a flat axis gets one cell). The grid is clamped to about `2 n + 8` cells by
//!    enlarging the cells, which keeps the search exact (cells only need to be at least
//!    `radius` wide) and bounds memory for sparse clouds.
//! 2. Counting sort of the nodes into cells: count per cell, exclusive scan, scatter (a stable
//!    scatter, so each cell lists its nodes in ascending index).
//! 3. Every node scans its `3^d` neighbouring cells; along x those cells are contiguous in the
//!    sorted order, so a scan is `3^(d-1)` contiguous runs.
//! 4. Exact-size CSR in two passes: count per node (parallel), exclusive scan into `offsets`,
//!    fill (parallel, each node writes only its own slice), sort each family by `j`.
//!
//! Every step is either sequential or writes disjoint outputs, so the result is the same at any
//! thread count. The pair test is [`within_radius`](super::within_radius), shared with the
//! brute-force search.

use super::{within_radius, Families};
use rayon::prelude::*;

/// Nodes per parallel work item of the fill pass.
const FILL_BLOCK: usize = 2048;

/// Families of radius `radius` by a cell-linked list.
pub fn cell_list_families(positions: &[[f64; 3]], dim: usize, radius: f64) -> Families {
    let n = positions.len();
    if n == 0 {
        return Families {
            offsets: vec![0],
            neighbors: Vec::new(),
        };
    }
    CellList::new(positions, dim, radius).families_of(n, |k| k)
}

/// A cell list over a set of nodes that finds families on demand: nothing is stored per
/// bond, so a model whose families would not fit in memory can be visited family by family
/// (`setup.rs`'s lean problems) or searched in parts (`partition`).
pub struct CellList<'a> {
    positions: &'a [[f64; 3]],
    grid: Grid,
    bins: Bins,
    r2: f64,
}

impl<'a> CellList<'a> {
    /// The cell list of `positions` (`dim` = 2 or 3) for families of radius `radius`, m.
    pub fn new(positions: &'a [[f64; 3]], dim: usize, radius: f64) -> CellList<'a> {
        assert!(dim == 2 || dim == 3, "dimension must be 2 or 3, got {dim}");
        assert!(
            positions.len() <= u32::MAX as usize,
            "node indices must fit in u32"
        );
        let grid = Grid::new(positions, dim, radius);
        let bins = Bins::new(&grid, positions);
        CellList {
            positions,
            grid,
            bins,
            r2: super::family_radius_squared(radius),
        }
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Size of the family of node `i`.
    pub fn count(&self, i: usize) -> usize {
        let mut count = 0;
        self.bins
            .for_each_neighbor(&self.grid, self.positions, i, self.r2, |_| count += 1);
        count
    }

    /// The family of node `i`, sorted ascending, into `out` (cleared first).
    pub fn family_into(&self, i: usize, out: &mut Vec<u32>) {
        out.clear();
        self.bins
            .for_each_neighbor(&self.grid, self.positions, i, self.r2, |j| out.push(j));
        out.sort_unstable();
    }

    /// Exact-size CSR families of the nodes `query(0..count)` (indices into this list's
    /// nodes), in two passes: count per node (parallel), exclusive scan, fill (parallel, each
    /// node writes only its own slice), each family sorted.
    pub fn families_of(&self, count: usize, query: impl Fn(usize) -> usize + Sync) -> Families {
        csr_families(
            count,
            |k| self.count(query(k)),
            |k, slot| {
                let mut at = 0;
                self.bins
                    .for_each_neighbor(&self.grid, self.positions, query(k), self.r2, |j| {
                        slot[at] = j;
                        at += 1;
                    });
                debug_assert_eq!(at, slot.len());
                slot.sort_unstable();
            },
        )
    }
}

/// CSR offsets from the family sizes `counts`: an exclusive scan with the total last.
pub fn offsets_of(counts: &[usize]) -> Vec<usize> {
    let mut offsets = Vec::with_capacity(counts.len() + 1);
    offsets.push(0usize);
    for c in counts {
        offsets.push(offsets[offsets.len() - 1] + c);
    }
    offsets
}

/// Exact-size CSR families of nodes `0..count` in two passes: `size(k)` per node (parallel),
/// the offsets, then `fill(k, slot)` writing node `k`'s family into its own slice (parallel
/// blocks of [`FILL_BLOCK`] nodes).
pub(crate) fn csr_families(
    count: usize,
    size: impl Fn(usize) -> usize + Sync,
    fill: impl Fn(usize, &mut [u32]) + Sync,
) -> Families {
    let counts: Vec<usize> = (0..count).into_par_iter().map(&size).collect();
    let offsets = offsets_of(&counts);
    drop(counts);
    let mut neighbors = vec![0u32; offsets[count]];
    let blocks = split_blocks(&offsets, &mut neighbors);
    blocks.into_par_iter().for_each(|(first, chunk)| {
        let base = offsets[first];
        for k in first..(first + FILL_BLOCK).min(count) {
            fill(k, &mut chunk[offsets[k] - base..offsets[k + 1] - base]);
        }
    });
    Families { offsets, neighbors }
}

/// Split `neighbors` into the disjoint slices of consecutive blocks of `FILL_BLOCK` nodes,
/// each paired with its first node.
pub(crate) fn split_blocks<'a>(
    offsets: &[usize],
    neighbors: &'a mut [u32],
) -> Vec<(usize, &'a mut [u32])> {
    let n = offsets.len() - 1;
    let mut blocks = Vec::with_capacity(n.div_ceil(FILL_BLOCK));
    let mut rest = neighbors;
    let mut first = 0;
    while first < n {
        let last = (first + FILL_BLOCK).min(n);
        let (head, tail) = rest.split_at_mut(offsets[last] - offsets[first]);
        blocks.push((first, head));
        rest = tail;
        first = last;
    }
    blocks
}

/// The cell grid: `cells[a]` cells along axis `a`, `inv[a]` = cells per metre (0 on a flat
/// axis and beyond `dim`). The device search (`gpu/neighbors.rs`) bins with this same grid.
pub(crate) struct Grid {
    pub(crate) dim: usize,
    pub(crate) lo: [f64; 3],
    pub(crate) inv: [f64; 3],
    pub(crate) cells: [usize; 3],
}

/// Smallest and largest coordinate along each axis, in parallel. `min` and `max` are exact
/// and ignore NaN, so the result is the same in any order of reduction.
fn bounding_box(positions: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let empty = || ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    positions
        .par_chunks(1 << 16)
        .map(|chunk| {
            let (mut lo, mut hi) = empty();
            for p in chunk {
                for a in 0..3 {
                    lo[a] = lo[a].min(p[a]);
                    hi[a] = hi[a].max(p[a]);
                }
            }
            (lo, hi)
        })
        .reduce(empty, |(l1, h1), (l2, h2)| {
            (
                std::array::from_fn(|a| l1[a].min(l2[a])),
                std::array::from_fn(|a| h1[a].max(h2[a])),
            )
        })
}

impl Grid {
    pub(crate) fn new(positions: &[[f64; 3]], dim: usize, radius: f64) -> Grid {
        let mut lo = [0.0f64; 3];
        let mut hi = [0.0f64; 3];
        let mut max_abs = 0.0f64;
        let (lo_all, hi_all) = bounding_box(positions);
        for a in 0..dim {
            lo[a] = lo_all[a];
            hi[a] = hi_all[a];
            max_abs = max_abs.max(lo[a].abs()).max(hi[a].abs());
        }
        // Cells a little wider than the radius: the margin absorbs the rounding of the cell
        // coordinates, so two nodes within `radius` are never more than one cell apart.
        let mut edge = radius.max(0.0) * (1.0 + 1e-9) + 16.0 * f64::EPSILON * max_abs;
        let limit = 2.0 * positions.len() as f64 + 8.0;
        loop {
            let cells = cells_per_axis(&lo, &hi, dim, edge);
            let total: f64 = cells.iter().map(|&c| c as f64).product();
            if total <= limit {
                let mut inv = [0.0; 3];
                for a in 0..dim {
                    let extent = hi[a] - lo[a];
                    if cells[a] > 1 && extent > 0.0 {
                        inv[a] = cells[a] as f64 / extent;
                    }
                }
                return Grid {
                    dim,
                    lo,
                    inv,
                    cells,
                };
            }
            let grow = (total / limit).powf(1.0 / dim as f64).max(1.1);
            edge *= grow;
        }
    }

    /// Cell coordinates of `p` (clamped into the grid; non-finite values land in cell 0).
    #[inline]
    fn coords(&self, p: &[f64; 3]) -> [usize; 3] {
        let mut c = [0usize; 3];
        for a in 0..self.dim {
            let t = (p[a] - self.lo[a]) * self.inv[a];
            c[a] = (t as usize).min(self.cells[a] - 1);
        }
        c
    }

    #[inline]
    fn index(&self, c: [usize; 3]) -> usize {
        (c[2] * self.cells[1] + c[1]) * self.cells[0] + c[0]
    }

    pub(crate) fn len(&self) -> usize {
        self.cells.iter().product()
    }
}

/// Cells per axis for cells of edge at least `edge`: `floor(extent / edge)`, at least 1.
fn cells_per_axis(lo: &[f64; 3], hi: &[f64; 3], dim: usize, edge: f64) -> [usize; 3] {
    let mut cells = [1usize; 3];
    let usable = edge > 0.0 && edge.is_finite();
    if !usable {
        return cells;
    }
    for a in 0..dim {
        let extent = hi[a] - lo[a];
        if extent > 0.0 && extent.is_finite() {
            // `as usize` saturates, and the clamp loop then enlarges the cells.
            cells[a] = ((extent / edge).floor() as usize).max(1);
        }
    }
    cells
}

/// Nodes sorted by cell: the nodes of cell `c` are `index[start[c]..start[c + 1]]`, with
/// positions copied alongside for a cache-friendly scan.
struct Bins {
    start: Vec<usize>,
    index: Vec<u32>,
    pos: Vec<[f64; 3]>,
}

impl Bins {
    fn new(grid: &Grid, positions: &[[f64; 3]]) -> Bins {
        let cell_of: Vec<usize> = positions
            .par_iter()
            .map(|p| grid.index(grid.coords(p)))
            .collect();
        let mut start = vec![0usize; grid.len() + 1];
        for &c in &cell_of {
            start[c + 1] += 1;
        }
        for c in 0..grid.len() {
            start[c + 1] += start[c];
        }
        let mut cursor = start.clone();
        let mut index = vec![0u32; positions.len()];
        let mut pos = vec![[0.0; 3]; positions.len()];
        for (i, &c) in cell_of.iter().enumerate() {
            let k = cursor[c];
            index[k] = i as u32;
            pos[k] = positions[i];
            cursor[c] += 1;
        }
        Bins { start, index, pos }
    }

    /// Call `f(j)` for every `j != i` within the radius of node `i` (`r2` = radius squared),
    /// in cell order.
    #[inline]
    fn for_each_neighbor(
        &self,
        grid: &Grid,
        positions: &[[f64; 3]],
        i: usize,
        r2: f64,
        mut f: impl FnMut(u32),
    ) {
        let xi = &positions[i];
        let c = grid.coords(xi);
        let span = |a: usize| (c[a].saturating_sub(1), (c[a] + 1).min(grid.cells[a] - 1));
        let (x0, x1) = span(0);
        let (y0, y1) = span(1);
        let (z0, z1) = span(2);
        for z in z0..=z1 {
            for y in y0..=y1 {
                let from = self.start[grid.index([x0, y, z])];
                let to = self.start[grid.index([x1, y, z]) + 1];
                for k in from..to {
                    let j = self.index[k];
                    if j as usize != i && within_radius(xi, &self.pos[k], grid.dim, r2) {
                        f(j);
                    }
                }
            }
        }
    }
}
