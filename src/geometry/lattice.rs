//! The lattice fill: one global cell-centred lattice of spacing `dx` (m) over the union of
//! `geometry.box` entries, minus the `geometry.remove` shapes.
//!
//! Origin `o` = componentwise minimum of the boxes' `min`; node `k` sits at
//! `o + (k + 0.5) dx` on each axis, with `ceil((max - o) / dx - 1e-9)` lattice points per axis
//! (so 1 m / 5 mm gives exactly 200). A lattice point is a node if it lies in some box
//! (inclusive, tolerance `1e-9 dx`) and in no removed shape. Nodes are ordered x fastest, then
//! y, then z. Only the index ranges each box covers are visited, so far-apart boxes cost no
//! more than their own nodes.

use super::shapes::{point, Predicate, ShapeContext};
use crate::model::validate::num;
use crate::model::{BoxShape, Shape};
use crate::{Error, Result};

/// Most nodes a body may have: node and cell indices are `u32`, and the device neighbour
/// search counts them in `i32` (`docs/architecture.md`: at most `2^31 - 16` nodes).
pub const MAX_NODES: usize = (1 << 31) - 16;

/// An upper bound on the lattice nodes of `boxes` (spacing `dx`, m): per box the most lattice
/// points a closed interval of its length holds on each axis, `floor(L / dx) + 1`, multiplied
/// over the axes and summed over the boxes (overlaps counted twice). Removed shapes are not
/// subtracted. Infinite where a length overflows.
pub(crate) fn node_bound(boxes: &[BoxShape], dim: usize, dx: f64) -> f64 {
    boxes
        .iter()
        .map(|b| {
            (0..dim.min(b.min.len()).min(b.max.len()))
                .map(|a| ((b.max[a] - b.min[a]) / dx + 1e-9).max(0.0).floor() + 1.0)
                .product::<f64>()
        })
        .sum()
}

/// Lattice node positions (z = 0 in 2D) of the union of `boxes` minus `removals`.
pub(crate) fn fill(
    boxes: &[BoxShape],
    removals: &[Predicate],
    dim: usize,
    dx: f64,
) -> Result<Vec<[f64; 3]>> {
    let ctx = ShapeContext {
        dim,
        dx,
        delta: dx,
        bbox: None,
    };
    let mut preds = Vec::with_capacity(boxes.len());
    let mut origin = [f64::INFINITY; 3];
    let mut top = [f64::NEG_INFINITY; 3];
    for (k, b) in boxes.iter().enumerate() {
        let field = format!("geometry.box.{k}");
        let lo = point(&b.min, dim, &format!("{field}.min"))?;
        let hi = point(&b.max, dim, &format!("{field}.max"))?;
        let shape = Shape::Box {
            min: b.min.clone(),
            max: b.max.clone(),
        };
        preds.push(Predicate::new(&shape, &ctx, &field)?);
        for a in 0..dim {
            origin[a] = origin[a].min(lo[a]);
            top[a] = top[a].max(hi[a]);
        }
    }
    let estimate = node_bound(boxes, dim, dx);
    if !(estimate <= MAX_NODES as f64) {
        return Err(Error::model(
            "discretization.dx",
            format!(
                "dx = {} m fills the boxes with up to {} nodes; at most {MAX_NODES} (2^31 - 16, \
                 the node index limit) are supported: increase dx",
                num(dx),
                if estimate.is_finite() {
                    format!("{estimate:.4e}")
                } else {
                    "more than 1e308".to_string()
                }
            ),
        ));
    }
    if preds.is_empty() {
        return Ok(Vec::new());
    }
    let mut count = [1usize; 3];
    for a in 0..dim {
        count[a] = ((top[a] - origin[a]) / dx - 1e-9).ceil().max(0.0) as usize;
    }
    let mut fill = Fill {
        origin,
        count,
        dx,
        boxes: &preds,
        removals,
        removed: vec![false; removals.len()],
        out: Vec::new(),
    };
    let all: Vec<usize> = (0..preds.len()).collect();
    let mut p = [0.0; 3];
    fill.axis(dim - 1, &all, &mut p);
    if let Some(k) = fill.removed.iter().position(|&r| !r) {
        return Err(removes_nothing(k, &removals[k], dx, dim));
    }
    Ok(fill.out)
}

/// The error of a removed shape `k` that contains no node of the body (a lattice point of
/// the boxes at spacing `dx`, or a point of a cloud): it would leave the body as it is,
/// silently (a notch narrower than `dx` between two lattice rows, say).
pub(crate) fn removes_nothing(k: usize, shape: &Predicate, dx: f64, dim: usize) -> Error {
    let (lo, hi) = shape.bounds();
    Error::model(
        format!("geometry.remove.{k}"),
        format!(
            "the shape (spanning {} to {} m) removes no node at dx = {} m: no node of the body \
             lies in it, so the body is as if it were not there; make it at least dx wide over \
             a lattice row, decrease dx, or cut the bonds across it with a [[precrack]] \
             instead",
            super::shapes::show(&lo, dim),
            super::shapes::show(&hi, dim),
            num(dx)
        ),
    )
}

/// The lattice walk: axes from z (outer) down to x (inner).
struct Fill<'a> {
    origin: [f64; 3],
    count: [usize; 3],
    dx: f64,
    boxes: &'a [Predicate],
    removals: &'a [Predicate],
    /// Per removed shape, whether it took a lattice point of the boxes.
    removed: Vec<bool>,
    out: Vec<[f64; 3]>,
}

impl Fill<'_> {
    /// Visit, in ascending order, the lattice indices on `axis` covered by the boxes `active`
    /// (those that contain the coordinates already fixed on the outer axes), keep the boxes
    /// that contain each coordinate and go one axis in; on x, emit the node.
    fn axis(&mut self, axis: usize, active: &[usize], p: &mut [f64; 3]) {
        let mut spans: Vec<(usize, usize)> = active
            .iter()
            .filter_map(|&b| self.span(axis, &self.boxes[b]))
            .collect();
        spans.sort_unstable();
        let mut next = 0usize;
        for (lo, hi) in spans {
            for k in lo.max(next)..=hi {
                p[axis] = self.origin[axis] + (k as f64 + 0.5) * self.dx;
                if axis == 0 {
                    let inside = active.iter().any(|&b| self.boxes[b].contains(p));
                    if inside && !self.take(p) {
                        self.out.push(*p);
                    }
                } else {
                    let inner: Vec<usize> = active
                        .iter()
                        .copied()
                        .filter(|&b| covers(&self.boxes[b], axis, p[axis]))
                        .collect();
                    if !inner.is_empty() {
                        self.axis(axis - 1, &inner, p);
                    }
                }
            }
            next = next.max(hi + 1);
        }
    }

    /// Whether a removed shape contains the lattice point `p` of the boxes, marking every
    /// shape that does.
    fn take(&mut self, p: &[f64; 3]) -> bool {
        let mut taken = false;
        for (r, removed) in self.removals.iter().zip(self.removed.iter_mut()) {
            if r.contains(p) {
                *removed = true;
                taken = true;
            }
        }
        taken
    }

    /// Lattice indices on `axis` that may lie in `b`: a superset (one index of slack on each
    /// side against rounding); membership itself is decided by the box predicate.
    fn span(&self, axis: usize, b: &Predicate) -> Option<(usize, usize)> {
        let Predicate::Box { min, max } = b else {
            return None;
        };
        let n = self.count[axis];
        let lo = ((min[axis] - self.origin[axis]) / self.dx - 0.5).ceil() - 1.0;
        let hi = ((max[axis] - self.origin[axis]) / self.dx - 0.5).floor() + 1.0;
        let overlaps = n > 0 && hi >= 0.0 && lo <= (n - 1) as f64 && lo <= hi;
        if !overlaps {
            return None;
        }
        Some((lo.max(0.0) as usize, (hi as usize).min(n - 1)))
    }
}

/// Whether the (widened) box `b` covers coordinate `x` on `axis`: the box predicate restricted
/// to one axis.
fn covers(b: &Predicate, axis: usize, x: f64) -> bool {
    match b {
        Predicate::Box { min, max } => min[axis] <= x && x <= max[axis],
        _ => false,
    }
}
