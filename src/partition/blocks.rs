//! Blocks: the nodes cut along two or three axes into a product `Px x Py x Pz` of parts,
//! for the ranks of a distributed run (`docs/distributed.md`). The cuts are nested: along
//! the first cut axis over the whole body, then within each of those parts along the second,
//! then the third, each falling between node layers and balanced as `layers.rs` says (to
//! within one layer of the part it cuts). Parts are numbered with the first cut axis
//! slowest. The ranks' slabs (a single cut along the longest axis) are cut the same way.
//!
//! The product is chosen on the cell grid (cells one family radius wide along every axis,
//! `slabs.rs`'s [`CellGrid`]), the parts as boxes of whole cells cut as slabs are
//! ([`Balance`]: the running count passes each `k / P_a` of the part being cut), at most as
//! many parts along an axis as it has cells (a part narrower than a cell would take ghosts
//! from beyond its neighbours).
//!
//! Among the products, the ghosts' **cell bound** decides: per part, the nodes of the cells
//! within one cell of its box and outside it (every ghost is there; at a block's edges and
//! corners the bound counts whole cells where the ghosts fill a quarter of a cylinder or an
//! eighth of a ball), summed over the parts. [`RankPartition::Auto`] takes the product with
//! the smallest bound, slabs along the longest axis included (kept on a tie: fewer
//! neighbours); [`RankPartition::Blocks`] the smallest among those cutting two or three axes,
//! slabs where there is none (P prime, a body too thin).
//!
//! The counts sit on the dense grid of the body's bounding box; a sparse body (more than
//! [`CELLS_PER_NODE`] cells a node) is cut into slabs.
//!
//! Units: cells, nodes.

use super::slabs::{self, cuts, Assignment, Balance, CellGrid};
use super::{layers, usage};
use crate::model::RankPartition;
use crate::setup::Problem;
use crate::Result;
use rayon::prelude::*;
use std::ops::Range;

/// Cells of the bounding box's grid per node (and [`CELLS_SPARE`]) beyond which blocks are
/// not tried: the counts are held per cell.
pub const CELLS_PER_NODE: usize = 4;
const CELLS_SPARE: usize = 4096;

/// Parts along each axis (1: the axis is not cut).
pub type Product = [usize; 3];

/// The products of `p` over the first `dim` axes with at most `len[a]` parts along axis
/// `a`, in a fixed order (the first axis' count ascending, then the second's).
pub fn products(p: usize, dim: usize, len: [usize; 3]) -> Vec<Product> {
    let divisors = |n: usize| (1..=n).filter(move |k| n.is_multiple_of(*k));
    let mut out = Vec::new();
    for px in divisors(p).filter(|&k| k <= len[0]) {
        let rest = p / px;
        for py in divisors(rest).filter(|&k| dim >= 2 && k <= len[1] || k == 1) {
            let pz = rest / py;
            if pz == 1 || (dim == 3 && pz <= len[2]) {
                out.push([px, py, pz]);
            }
        }
    }
    out
}

/// The axes a product cuts, in the order of the cuts: the most parts first, then the most
/// cells, then the lower axis.
pub fn cut_axes(product: Product, len: [usize; 3]) -> Vec<usize> {
    let mut axes: Vec<usize> = (0..3).filter(|&a| product[a] > 1).collect();
    axes.sort_by_key(|&a| (std::cmp::Reverse(product[a]), std::cmp::Reverse(len[a]), a));
    axes
}

/// The slab product of `p` along `axis`.
fn slab(p: usize, axis: usize) -> Product {
    let mut product = [1; 3];
    product[axis] = p;
    product
}

/// The product a `mode` cut of `p` parts on a grid of `len` cells takes, by its ghosts
/// (`ghosts`, smaller wins; a tie keeps the earlier): the slabs along `longest` first, then
/// [`products`] in order; `None` where no product fits the grid.
pub fn choose(
    p: usize,
    dim: usize,
    len: [usize; 3],
    longest: usize,
    mode: RankPartition,
    ghosts: impl Fn(Product) -> f64 + Sync,
) -> Option<Product> {
    let axes_cut = |q: &Product| q.iter().filter(|&&k| k > 1).count();
    let slabs = (p <= len[longest]).then(|| slab(p, longest));
    let mut candidates: Vec<Product> = slabs.into_iter().collect();
    let others = products(p, dim, len).into_iter().filter(|q| match mode {
        RankPartition::Slabs => false,
        RankPartition::Auto => true,
        RankPartition::Blocks => axes_cut(q) >= 2,
    });
    candidates.extend(others.filter(|q| Some(*q) != slabs));
    if mode == RankPartition::Blocks && candidates.iter().any(|q| axes_cut(q) >= 2) {
        candidates.retain(|q| axes_cut(q) >= 2);
    }
    let cost: Vec<f64> = candidates.par_iter().map(|&q| ghosts(q)).collect();
    let mut best: Option<usize> = None;
    for (k, c) in cost.iter().enumerate() {
        if best.is_none_or(|b| *c < cost[b]) {
            best = Some(k);
        }
    }
    best.map(|k| candidates[k])
}

/// The cell bound of the ghosts of `product` on a uniform grid of `cells` cells along each
/// axis (a node per cell): `prod(c_a + 2 (P_a - 1)) - prod(c_a)`, the cells one deep around
/// every part summed over the parts (a part's box grows by one cell on each side it shares).
pub fn uniform_ghosts(product: Product, cells: [f64; 3]) -> f64 {
    let grown: f64 = (0..3)
        .map(|a| cells[a] + 2.0 * (product[a] as f64 - 1.0))
        .product();
    grown - cells.iter().product::<f64>()
}

/// The node counts and balance weights of the cells of the bounding box's grid.
struct Dense {
    grid: CellGrid,
    /// Balance weight per cell (x fastest).
    weight: Vec<usize>,
    /// Summed-area table of the nodes per cell: `(len + 1)` entries along each axis.
    area: Vec<usize>,
}

impl Dense {
    /// The counts of `problem`; `None` where the grid has more than [`CELLS_PER_NODE`]
    /// cells a node.
    fn of(problem: &Problem, balance: Balance) -> Option<Dense> {
        let grid = CellGrid::of(problem);
        let [lx, ly, lz] = grid.len;
        let n = problem.body.len();
        let cells = lx.checked_mul(ly)?.checked_mul(lz)?;
        if cells > CELLS_PER_NODE * n + CELLS_SPARE || cells > u32::MAX as usize {
            return None;
        }
        let dim = problem.dim();
        let cell: Vec<u32> = (problem.body.positions)
            .par_iter()
            .map(|p| {
                let c = |a: usize| if a < dim { grid.at(p[a], a) } else { 0 };
                (c(0) + lx * (c(1) + ly * c(2))) as u32
            })
            .collect();
        let mut weight = vec![0usize; cells];
        let mut nodes = vec![0usize; cells];
        for (i, &c) in cell.iter().enumerate() {
            weight[c as usize] += balance.weight(problem, i);
            nodes[c as usize] += 1;
        }
        let (ax, ay) = (lx + 1, ly + 1);
        let mut area = vec![0usize; ax * ay * (lz + 1)];
        for z in 0..lz {
            for y in 0..ly {
                for x in 0..lx {
                    let at = |x: usize, y: usize, z: usize| x + ax * (y + ay * z);
                    // inclusion-exclusion over the cube's seven lower corners
                    let sum = nodes[x + lx * (y + ly * z)]
                        + area[at(x, y + 1, z + 1)]
                        + area[at(x + 1, y, z + 1)]
                        + area[at(x + 1, y + 1, z)]
                        + area[at(x, y, z)]
                        - area[at(x, y, z + 1)]
                        - area[at(x, y + 1, z)]
                        - area[at(x + 1, y, z)];
                    area[at(x + 1, y + 1, z + 1)] = sum;
                }
            }
        }
        Some(Dense { grid, weight, area })
    }

    /// Nodes in the cells of `b`.
    fn nodes_in(&self, b: &[Range<usize>; 3]) -> usize {
        let (ax, ay) = (self.grid.len[0] + 1, self.grid.len[1] + 1);
        let s = |x: usize, y: usize, z: usize| self.area[x + ax * (y + ay * z)];
        let ([x0, y0, z0], [x1, y1, z1]) = (b.clone().map(|r| r.start), b.clone().map(|r| r.end));
        (s(x1, y1, z1) + s(x0, y0, z1) + s(x0, y1, z0) + s(x1, y0, z0))
            - (s(x0, y1, z1) + s(x1, y0, z1) + s(x1, y1, z0) + s(x0, y0, z0))
    }

    /// The boxes of `product`'s parts, cut along `axes` in order, each cut balanced by the
    /// weights of the part it cuts; the parts numbered with the first cut axis slowest.
    fn boxes(&self, product: Product, axes: &[usize]) -> Vec<[Range<usize>; 3]> {
        let len = self.grid.len;
        let mut boxes = vec![[0..len[0], 0..len[1], 0..len[2]]];
        for &a in axes {
            boxes = (boxes.par_iter())
                .flat_map_iter(|b| {
                    let mut counts = vec![0usize; b[a].len()];
                    for z in b[2].clone() {
                        for y in b[1].clone() {
                            for x in b[0].clone() {
                                let w = self.weight[x + len[0] * (y + len[1] * z)];
                                counts[[x, y, z][a] - b[a].start] += w;
                            }
                        }
                    }
                    let cut = cuts(&counts, product[a]);
                    (0..product[a]).map(move |k| {
                        let mut part = b.clone();
                        part[a] = b[a].start + cut[k]..b[a].start + cut[k + 1];
                        part
                    })
                })
                .collect();
        }
        boxes
    }

    /// The cell bound of the ghosts of `boxes`, summed over them.
    fn ghosts(&self, boxes: &[[Range<usize>; 3]]) -> usize {
        let len = self.grid.len;
        (boxes.iter())
            .map(|b| {
                let grown =
                    [0, 1, 2].map(|a| b[a].start.saturating_sub(1)..(b[a].end + 1).min(len[a]));
                self.nodes_in(&grown) - self.nodes_in(b)
            })
            .sum()
    }
}

/// Assign every node of `problem` to one of `count` parts as `mode` cuts it, balanced by
/// `balance`: slabs along the longest axis, or the blocks of the product chosen by its
/// ghosts, either cut at node layers (`layers.rs`). Slabs as many as the cells along the
/// longest axis at most, a product at most as many parts along an axis as it has cells
/// (errors naming `--subdomains` and `--ranks`).
pub fn assign(
    problem: &Problem,
    count: usize,
    balance: Balance,
    mode: RankPartition,
) -> Result<Assignment> {
    let longest = slabs::longest_axis(problem);
    let grid = CellGrid::of(problem);
    let len = grid.len;
    let dense = match mode {
        _ if count <= 1 => None,
        RankPartition::Slabs => None,
        _ => Dense::of(problem, balance),
    };
    let product = match dense {
        None => slab(count, longest),
        Some(dense) => {
            let ghosts = |q: Product| dense.ghosts(&dense.boxes(q, &cut_axes(q, len))) as f64;
            match choose(count, problem.dim(), len, longest, mode, ghosts) {
                Some(product) => product,
                None => return Err(no_product(count, problem.dim(), len)),
            }
        }
    };
    if count == 0 || (product == slab(count, longest) && count > len[longest]) {
        // (the slabs' own errors: none asked for, more than the cell slabs)
        return slabs::assign(problem, count, balance);
    }
    let axes = match cut_axes(product, len) {
        axes if axes.is_empty() => vec![longest],
        axes => axes,
    };
    let layered = layers::cut(problem, balance, product, &axes, &grid);
    let cut_len: Vec<usize> = axes.iter().map(|&a| len[a]).collect();
    let cell = (problem.body.positions.par_iter())
        .map(|p| (axes.iter().rev()).fold(0, |acc, &a| acc * len[a] + grid.at(p[a], a)) as u32)
        .collect();
    Ok(Assignment {
        owner: layered.owner,
        axes,
        len: cut_len,
        cell,
        cells: layered.cells,
        product,
    })
}

/// The error of `count` parts that no product fits on a grid of `len` cells.
fn no_product(count: usize, dim: usize, len: [usize; 3]) -> crate::Error {
    let [x, y, z] = len;
    let grid = match dim {
        2 => format!("{x} x {y}"),
        _ => format!("{x} x {y} x {z}"),
    };
    usage(
        "--ranks",
        format!(
            "{count} parts asked for, but the model's grid of cells (of the family radius) \
             is {grid}: no product of {count} parts fits it"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The products of 8 on a roomy 3D grid are the 10 ordered triples; on a grid of 2
    /// cells along z none has more than 2 parts there; in 2D the third count is always 1.
    #[test]
    fn products_are_the_ordered_factorizations_that_fit() {
        let all = products(8, 3, [10, 10, 10]);
        assert_eq!(all.len(), 10);
        assert!(all.iter().all(|q| q.iter().product::<usize>() == 8));
        assert!(products(8, 3, [10, 10, 2]).iter().all(|q| q[2] <= 2));
        let flat = products(4, 2, [10, 10, 1]);
        assert_eq!(flat, vec![[1, 4, 1], [2, 2, 1], [4, 1, 1]]);
    }

    /// On a cube of 34 cells a side, the cell bound (uniform) picks slabs for 2 and 3 parts
    /// (a single cut is all there is, and the slabs along the longest axis come first),
    /// and a cube of parts for 8, 27 and 64 (2 x 2 x 2 ...): at 8 parts the cubes' bound is
    /// 36^3 - 34^3 cells (3 cut planes, each counted on both sides, and the edges), under
    /// half the slabs' 7 x 2 x 34^2.
    #[test]
    fn the_cell_bound_picks_cubes_of_parts_on_a_cube() {
        let c = [34.0; 3];
        let pick = |p, mode| choose(p, 3, [34; 3], 0, mode, |q| uniform_ghosts(q, c)).unwrap();
        assert_eq!(pick(2, RankPartition::Auto), [2, 1, 1]);
        assert_eq!(pick(3, RankPartition::Blocks), [3, 1, 1]);
        for (p, k) in [(8, 2), (27, 3), (64, 4)] {
            assert_eq!(pick(p, RankPartition::Auto), [k; 3], "{p}");
        }
        let slabs = uniform_ghosts([8, 1, 1], c);
        let cube = uniform_ghosts([2, 2, 2], c);
        assert!(
            (slabs - 7.0 * 2.0 * 34.0 * 34.0).abs() < 1e-9 * slabs,
            "{slabs}"
        );
        assert!(cube < slabs * 0.5, "{cube} {slabs}");
        // a plate 4 cells tall: slabs across x win at 4 parts under auto, blocks forced
        // take 2 x 2
        let plate = [14.0, 4.0, 1.0];
        let pick2 = |mode| choose(4, 2, [14, 4, 1], 0, mode, |q| uniform_ghosts(q, plate));
        assert_eq!(pick2(RankPartition::Auto), Some([4, 1, 1]));
        assert_eq!(pick2(RankPartition::Blocks), Some([2, 2, 1]));
        assert_eq!(pick2(RankPartition::Slabs), Some([4, 1, 1]));
    }
}
