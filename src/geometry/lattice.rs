//! The lattice fill: one global cell-centred lattice of spacing `dx` (m) over the union of
//! `geometry.box` entries, minus the `geometry.remove` shapes.
//!
//! Origin `o` = componentwise minimum of the boxes' `min`; node `k` sits at
//! `o + (k + 0.5) dx` on each axis, with `ceil((max - o) / dx - 1e-9)` lattice points per axis
//! (so 1 m / 5 mm gives exactly 200). A lattice point is a node if it lies in some box
//! (inclusive, tolerance `1e-9 dx`) and in no removed shape. Nodes are ordered x fastest, then
//! y, then z. Only the index ranges each box covers are visited, so far-apart boxes cost no
//! more than their own nodes.
//!
//! Loading layers (`layers.rs`) continue the same lattice outside the boxes: the index starts
//! below 0 where a layer's slab reaches below the origin (so the body's lattice points keep
//! their places bit for bit), and a lattice point in no box but in a layer's slab is a node of the
//! first such layer. Removed shapes do not apply to layer nodes.

use super::layers::{adds_nothing, LayerNodes, Slab};
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

/// Lattice node positions (z = 0 in 2D) of the union of `boxes` minus `removals`, plus the
/// nodes of the layers `slabs` (each non-empty, else an error naming it), with the node
/// indices of each layer.
pub(crate) fn fill(
    boxes: &[BoxShape],
    slabs: &[Slab],
    removals: &[Predicate],
    dim: usize,
    dx: f64,
) -> Result<(Vec<[f64; 3]>, Vec<LayerNodes>)> {
    let ctx = ShapeContext {
        dim,
        dx,
        delta: dx,
        bbox: None,
    };
    let mut preds = Vec::with_capacity(boxes.len() + slabs.len());
    // the lowest lattice index on each axis (below 0 where a layer reaches below the origin)
    let mut first = [0i64; 3];
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
    for slab in slabs {
        let lo = point(&slab.shape.min, dim, &slab.field)?;
        let hi = point(&slab.shape.max, dim, &slab.field)?;
        let shape = Shape::Box {
            min: slab.shape.min.clone(),
            max: slab.shape.max.clone(),
        };
        preds.push(Predicate::new(&shape, &ctx, &slab.field)?);
        for a in 0..dim {
            if lo[a] < origin[a] {
                // whole spacings below the origin: the index starts below 0, so the boxes'
                // lattice points keep their places bit for bit
                let below = ((origin[a] - lo[a]) / dx - 1e-9).ceil().max(0.0) as i64;
                first[a] = first[a].min(-below);
            }
            top[a] = top[a].max(hi[a]);
        }
    }
    let slab_shapes: Vec<BoxShape> = slabs.iter().map(|s| s.shape.clone()).collect();
    let estimate = node_bound(boxes, dim, dx) + node_bound(&slab_shapes, dim, dx);
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
    if boxes.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut count = [1usize; 3];
    for a in 0..dim {
        count[a] = ((top[a] - origin[a]) / dx - 1e-9).ceil().max(0.0) as usize
            + first[a].unsigned_abs() as usize;
    }
    let mut fill = Fill {
        origin,
        first,
        count,
        dx,
        boxes: &preds,
        body_boxes: boxes.len(),
        removals,
        removed: vec![false; removals.len()],
        out: Vec::new(),
        layers: vec![Vec::new(); slabs.len()],
    };
    let all: Vec<usize> = (0..preds.len()).collect();
    let mut p = [0.0; 3];
    fill.axis(dim - 1, &all, &mut p);
    if let Some(k) = fill.removed.iter().position(|&r| !r) {
        return Err(removes_nothing(k, &removals[k], dx, dim));
    }
    if let Some(k) = fill.layers.iter().position(|l| l.is_empty()) {
        return Err(adds_nothing(&slabs[k], dx));
    }
    let layers = slabs
        .iter()
        .zip(fill.layers)
        .map(|(s, nodes)| LayerNodes {
            field: s.field.clone(),
            nodes,
        })
        .collect();
    Ok((fill.out, layers))
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
    /// Lattice index of the first point visited on each axis (0, or below 0 for layers).
    first: [i64; 3],
    count: [usize; 3],
    dx: f64,
    /// The boxes' predicates, then the layers' slabs.
    boxes: &'a [Predicate],
    /// How many of `boxes` are the body's (the rest are layer slabs).
    body_boxes: usize,
    removals: &'a [Predicate],
    /// Per removed shape, whether it took a lattice point of the boxes.
    removed: Vec<bool>,
    out: Vec<[f64; 3]>,
    /// Per layer, the indices into `out` of its nodes.
    layers: Vec<Vec<usize>>,
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
                let index = k as i64 + self.first[axis];
                p[axis] = self.origin[axis] + (index as f64 + 0.5) * self.dx;
                if axis == 0 {
                    self.emit(active, p);
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

    /// Place a node at the lattice point `p` if it lies in a box and in no removed shape, or
    /// in no box but in a layer's slab (of the `active` boxes and slabs).
    fn emit(&mut self, active: &[usize], p: &[f64; 3]) {
        let n = self.body_boxes;
        if active.iter().any(|&b| b < n && self.boxes[b].contains(p)) {
            if !self.take(p) {
                self.out.push(*p);
            }
        } else if let Some(&b) = active
            .iter()
            .find(|&&b| b >= n && self.boxes[b].contains(p))
        {
            self.layers[b - n].push(self.out.len());
            self.out.push(*p);
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
        let start = self.origin[axis] + self.first[axis] as f64 * self.dx;
        let lo = ((min[axis] - start) / self.dx - 0.5).ceil() - 1.0;
        let hi = ((max[axis] - start) / self.dx - 0.5).floor() + 1.0;
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
