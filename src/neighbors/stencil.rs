//! The families of a full box lattice without a search: a stencil of node offsets.
//!
//! The lattice fill numbers nodes x fastest (`geometry/lattice.rs`). Where every lattice point
//! of the body's bounding box is a node, the family of node `i` is `i + o_k` over one stencil
//! of node offsets `o_k` (ascending, which is the families' ascending order), less the slots
//! that leave the box. A family then costs a few integer tests per slot instead of a cell
//! list's distance tests over `3^d` cells (about six times as many candidates in 3D).
//!
//! The stencil is taken only where it gives the cell list's families exactly: the positions
//! are the box lattice in fill order (to `1e-6 dx`), and no lattice step lies so near the
//! family radius that the rounding of a node's coordinates, or its distance from its lattice
//! point, could decide it
//! ([`Stencil::of_lattice`]). The same families, in the same order, so every sum over a
//! family is bit for bit that of the cell list ([`FamilyFinder`]).
//!
//! Units: m (positions, `dx`, radius).

use super::cell_list::csr_families;
use super::{family_radius_squared, within_radius, CellList, Families};
use crate::geometry::Body;
use rayon::prelude::*;

/// The stencil of a full box lattice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stencil {
    /// Lattice points per axis (1 beyond the dimension).
    pub(crate) dims: [usize; 3],
    /// Lattice step of each slot, in ascending order of node offset.
    pub(crate) steps: Vec<[i64; 3]>,
    /// Node-index offset of each slot.
    pub(crate) offsets: Vec<i64>,
}

impl Stencil {
    /// The stencil of families of radius `radius` where `body` is a full box lattice in fill
    /// order and the stencil decides every bond as the cell list does; `None` otherwise
    /// (point clouds, removed shapes, several boxes that leave gaps, a lattice step within
    /// rounding of the radius).
    pub fn of_lattice(body: &Body, radius: f64) -> Option<Stencil> {
        let (n, dim, dx) = (body.len(), body.dim(), body.dx);
        let mut dims = [1usize; 3];
        for (a, d) in dims.iter_mut().enumerate().take(dim) {
            let span = (body.bbox_max[a] - body.bbox_min[a]) / dx;
            if !span.is_finite() || (span - span.round()).abs() > 1e-6 {
                return None;
            }
            *d = span.round() as usize + 1;
        }
        if dims.iter().product::<usize>() != n || n >= u32::MAX as usize {
            return None;
        }
        let coords = |i: usize| {
            [
                i % dims[0],
                (i / dims[0]) % dims[1],
                i / (dims[0] * dims[1]),
            ]
        };
        // the largest distance of a node from its lattice point, in dx
        let off = body
            .positions
            .par_iter()
            .enumerate()
            .map(|(i, x)| {
                let c = coords(i);
                (0..dim)
                    .map(|a| (x[a] - (body.bbox_min[a] + c[a] as f64 * dx)).abs() / dx)
                    .fold(0.0, f64::max)
            })
            .reduce(|| 0.0, f64::max);
        if !(off <= 1e-6) || near_the_radius(body, radius, off) {
            return None;
        }
        // the lattice steps within the family radius, by the families' predicate on the
        // steps' lengths, less those no node of this box can take; ascending by node offset,
        // which for any one node is ascending by neighbour (its present slots have distinct
        // neighbours)
        let r2 = family_radius_squared(radius);
        let reach = |a: usize| ((radius / dx).floor() as i64 + 1).min(dims[a] as i64 - 1);
        let origin = [0.0; 3];
        let mut steps = Vec::new();
        for sz in -reach(2)..=reach(2) {
            for sy in -reach(1)..=reach(1) {
                for sx in -reach(0)..=reach(0) {
                    let x = [sx as f64 * dx, sy as f64 * dx, sz as f64 * dx];
                    if (sx, sy, sz) != (0, 0, 0) && within_radius(&origin, &x, dim, r2) {
                        steps.push([sx, sy, sz]);
                    }
                }
            }
        }
        let offset = |s: &[i64; 3]| s[0] + dims[0] as i64 * (s[1] + dims[1] as i64 * s[2]);
        steps.sort_by_key(offset);
        let offsets = steps.iter().map(offset).collect();
        Some(Stencil {
            dims,
            steps,
            offsets,
        })
    }

    /// Slots per node.
    pub fn slots(&self) -> usize {
        self.steps.len()
    }

    /// The neighbour of node `i` in slot `k`, `None` where the slot leaves the box.
    pub fn neighbor(&self, i: usize, k: usize) -> Option<usize> {
        let c = self.coords(i);
        self.inside(&c, k)
            .then(|| (i as i64 + self.offsets[k]) as usize)
    }

    /// Call `f(j)` for every neighbour `j` of node `i`, ascending.
    #[inline]
    pub fn for_each_neighbor(&self, i: usize, mut f: impl FnMut(usize)) {
        self.for_each_slot(i, |_, j| f(j));
    }

    /// Call `f(k, j)` for every slot `k` of node `i` that stays in the box, `j` its
    /// neighbour, ascending.
    #[inline]
    pub fn for_each_slot(&self, i: usize, mut f: impl FnMut(usize, usize)) {
        let c = self.coords(i);
        for k in 0..self.slots() {
            if self.inside(&c, k) {
                f(k, (i as i64 + self.offsets[k]) as usize);
            }
        }
    }

    /// Size of the family of node `i`.
    pub fn count(&self, i: usize) -> usize {
        let c = self.coords(i);
        (0..self.slots()).filter(|&k| self.inside(&c, k)).count()
    }

    /// Lattice coordinates of node `i`.
    #[inline]
    fn coords(&self, i: usize) -> [i64; 3] {
        let d = &self.dims;
        [
            (i % d[0]) as i64,
            ((i / d[0]) % d[1]) as i64,
            (i / (d[0] * d[1])) as i64,
        ]
    }

    /// Whether slot `k` of the node at lattice coordinates `c` stays in the box.
    #[inline]
    fn inside(&self, c: &[i64; 3], k: usize) -> bool {
        let s = &self.steps[k];
        (0..3).all(|a| {
            let x = c[a] + s[a];
            x >= 0 && x < self.dims[a] as i64
        })
    }
}

/// Whether some lattice step's squared length lies so near the family's squared radius that
/// the cell list, which measures positions, could decide that bond otherwise than the
/// stencil, which measures steps: within the rounding of the body's coordinates (about
/// `4 eps |X| / |xi|` relative to a squared distance; sixteen times that) or within what the
/// nodes' distance from their lattice points (`off`, in dx) changes it (at most
/// `4 sqrt(3) off dx / r`; eight times `off dx / r`), and at least `1e-12`.
fn near_the_radius(body: &Body, radius: f64, off: f64) -> bool {
    let (dim, dx) = (body.dim(), body.dx);
    let far = (0..3)
        .map(|a| body.bbox_min[a].abs().max(body.bbox_max[a].abs()))
        .fold(0.0, f64::max);
    let window = (64.0 * f64::EPSILON * far / dx)
        .max(8.0 * off * dx / radius)
        .max(1e-12);
    let r2 = family_radius_squared(radius) / (dx * dx);
    let reach = (radius / dx).ceil() as i64 + 1;
    let z = if dim == 3 { reach } else { 0 };
    (0..=z).any(|sz| {
        (0..=reach).any(|sy| {
            (0..=reach).any(|sx| {
                let d2 = (sx * sx + sy * sy + sz * sz) as f64;
                d2 > 0.0 && ((d2 - r2) / r2).abs() <= window
            })
        })
    })
}

/// The families of a body, found node by node: by its lattice stencil where that is exact,
/// else by a cell list. The same families in the same order either way.
pub enum FamilyFinder<'a> {
    Lattice(Stencil),
    Cells(CellList<'a>),
}

impl<'a> FamilyFinder<'a> {
    /// The finder of families of radius `radius` of `body`'s nodes.
    pub fn for_body(body: &'a Body, radius: f64) -> FamilyFinder<'a> {
        match Stencil::of_lattice(body, radius) {
            Some(stencil) => FamilyFinder::Lattice(stencil),
            None => FamilyFinder::Cells(CellList::new(&body.positions, body.dim(), radius)),
        }
    }

    /// Size of the family of node `i`.
    pub fn count(&self, i: usize) -> usize {
        match self {
            FamilyFinder::Lattice(s) => s.count(i),
            FamilyFinder::Cells(c) => c.count(i),
        }
    }

    /// The family of node `i`, sorted ascending, into `out` (cleared first).
    pub fn family_into(&self, i: usize, out: &mut Vec<u32>) {
        match self {
            FamilyFinder::Lattice(s) => {
                out.clear();
                s.for_each_neighbor(i, |j| out.push(j as u32));
            }
            FamilyFinder::Cells(c) => c.family_into(i, out),
        }
    }

    /// Exact-size CSR families of the first `n` nodes (all of the body's), each sorted.
    pub fn families(&self, n: usize) -> Families {
        self.families_of(n, |k| k)
    }

    /// Exact-size CSR families of the nodes `query(0..count)` of the body, each sorted (in
    /// the body's indices), in parallel.
    pub fn families_of(&self, count: usize, query: impl Fn(usize) -> usize + Sync) -> Families {
        let stencil = match self {
            FamilyFinder::Lattice(s) => s,
            FamilyFinder::Cells(c) => return c.families_of(count, query),
        };
        csr_families(
            count,
            |k| stencil.count(query(k)),
            |k, slot| {
                let mut at = 0;
                stencil.for_each_neighbor(query(k), |j| {
                    slot[at] = j as u32;
                    at += 1;
                });
            },
        )
    }

    /// The stencil, where the body is a lattice it serves.
    pub fn stencil(&self) -> Option<&Stencil> {
        match self {
            FamilyFinder::Lattice(s) => Some(s),
            FamilyFinder::Cells(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::body::bounds;
    use crate::model::Dimension;

    /// A box lattice of `nx x ny x nz` points of spacing `dx` from `origin`, fill order.
    fn lattice(n: [usize; 3], dx: f64, origin: [f64; 3], dim: Dimension) -> Body {
        let mut positions = Vec::new();
        for k in 0..n[2] {
            for j in 0..n[1] {
                for i in 0..n[0] {
                    positions.push([
                        origin[0] + i as f64 * dx,
                        origin[1] + j as f64 * dx,
                        origin[2] + k as f64 * dx,
                    ]);
                }
            }
        }
        let (bbox_min, bbox_max) = bounds(&positions);
        Body {
            dimension: dim,
            volumes: vec![dx * dx * dx; positions.len()],
            positions,
            dx,
            delta: 3.015 * dx,
            thickness: 1.0,
            bbox_min,
            bbox_max,
            layers: Vec::new(),
            core_min: bbox_min,
            core_max: bbox_max,
            groups: Vec::new(),
            material_ids: None,
            initial_displacement: None,
            initial_velocity: None,
        }
    }

    /// The stencil gives the cell list's families node for node, in 2D and 3D, at radii with
    /// and without lattice ties (3 dx: a neighbour at exactly the radius).
    #[test]
    fn the_stencil_gives_the_cell_lists_families() {
        for (n, dim) in [
            ([23, 17, 1], Dimension::PlaneStress),
            ([9, 8, 7], Dimension::ThreeD),
        ] {
            let body = lattice(n, 1e-3, [0.125, -0.5, 0.25], dim);
            for factor in [3.015, 3.0, 1.0, 2.5] {
                let radius = factor * body.dx;
                let stencil = Stencil::of_lattice(&body, radius).expect("a full box lattice");
                let cells = CellList::new(&body.positions, body.dim(), radius);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                for i in 0..body.len() {
                    FamilyFinder::Lattice(stencil.clone()).family_into(i, &mut a);
                    cells.family_into(i, &mut b);
                    assert_eq!(a, b, "node {i}, radius {factor} dx, {dim:?}");
                    assert_eq!(stencil.count(i), b.len());
                }
                let finder = FamilyFinder::Lattice(stencil);
                let all = finder.families(body.len());
                assert_eq!(
                    all,
                    cells.families_of(body.len(), |k| k),
                    "{factor} dx, {dim:?}"
                );
            }
        }
    }

    /// A radius a hair (1e-13 relative) away from a lattice distance is left to the cell
    /// list, and so is a tie (3 dx) where a node stands 1e-7 dx off its lattice point; a
    /// body that is not a full lattice has no stencil.
    #[test]
    fn the_stencil_steps_aside_where_it_could_differ() {
        let body = lattice([12, 12, 1], 1e-3, [0.0; 3], Dimension::PlaneStress);
        let tie = 3.0 * body.dx * (1.0 + 1e-10f64).sqrt().recip() * (1.0 + 1e-13);
        assert!(Stencil::of_lattice(&body, tie).is_none());
        let mut nudged = body.clone();
        nudged.positions[17][0] += 1e-7 * body.dx;
        assert!(Stencil::of_lattice(&nudged, 3.0 * body.dx).is_none());
        assert!(Stencil::of_lattice(&nudged, 3.015 * body.dx).is_some());
        let mut holed = body.clone();
        holed.positions.swap_remove(40);
        holed.volumes.swap_remove(40);
        assert!(Stencil::of_lattice(&holed, 3.015e-3).is_none());
    }
}
