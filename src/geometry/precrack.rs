//! Pre-cracks: bonds whose segment crosses a pre-crack start broken. Lengths in metres.
//!
//! The rule is strict in both dimensions: a bond crosses when it passes through the interior of
//! the crack and the crack passes through the interior of the bond. Touching does not count:
//! a node lying exactly on the crack line (2D) or plane (3D), a crack tip lying exactly on a
//! bond, a bond collinear with the crack, or a bond meeting the rectangle exactly on its
//! border keep the bond intact. Place cracks between lattice rows (as the seeds do) and the
//! question never arises.
//!
//! The two ends are put in a canonical order before any arithmetic, so `(a, b)` and `(b, a)`
//! give the same answer bit for bit: both directed bonds of a pair break together.

use super::shapes::{dot, sub};
use crate::model::Precrack;

/// Whether the bond segment `a -> b` crosses `crack` (2D segment or 3D rectangle).
///
/// 2D uses `start`, `end` (x and y); 3D uses `origin`, `edge1`, `edge2` (3 components each).
/// A crack missing its vectors (which validation refuses) crosses nothing.
pub fn bond_crosses_precrack(crack: &Precrack, dim: usize, a: &[f64; 3], b: &[f64; 3]) -> bool {
    let (a, b) = if (a[0], a[1], a[2]) <= (b[0], b[1], b[2]) {
        (a, b)
    } else {
        (b, a)
    };
    if dim == 3 {
        match (vec3(&crack.origin), vec3(&crack.edge1), vec3(&crack.edge2)) {
            (Some(o), Some(e1), Some(e2)) => crosses_rectangle(&o, &e1, &e2, a, b),
            _ => false,
        }
    } else {
        match (vec2(&crack.start), vec2(&crack.end)) {
            (Some(s), Some(e)) => crosses_segment(&s, &e, a, b),
            _ => false,
        }
    }
}

/// Proper intersection of the segments `a -> b` and `s -> e` in the xy plane: each segment's
/// ends lie strictly on opposite sides of the other's line.
fn crosses_segment(s: &[f64; 2], e: &[f64; 2], a: &[f64; 3], b: &[f64; 3]) -> bool {
    let a = [a[0], a[1]];
    let b = [b[0], b[1]];
    opposite(orient(&a, &b, s), orient(&a, &b, e)) && opposite(orient(s, e, &a), orient(s, e, &b))
}

/// Twice the signed area of the triangle `p, q, r` (positive if counter-clockwise).
fn orient(p: &[f64; 2], q: &[f64; 2], r: &[f64; 2]) -> f64 {
    (q[0] - p[0]) * (r[1] - p[1]) - (q[1] - p[1]) * (r[0] - p[0])
}

/// Strictly opposite signs (zero counts as neither side).
fn opposite(u: f64, v: f64) -> bool {
    (u > 0.0 && v < 0.0) || (u < 0.0 && v > 0.0)
}

/// The bond `a -> b` meets the rectangle `o + s e1 + t e2` with `s, t` strictly inside
/// `(0, 1)`, its ends strictly on opposite sides of the rectangle's plane.
fn crosses_rectangle(
    o: &[f64; 3],
    e1: &[f64; 3],
    e2: &[f64; 3],
    a: &[f64; 3],
    b: &[f64; 3],
) -> bool {
    let n = cross(e1, e2);
    let side_a = dot(&sub(a, o), &n);
    let side_b = dot(&sub(b, o), &n);
    if !opposite(side_a, side_b) {
        return false;
    }
    let t = side_a / (side_a - side_b);
    let ab = sub(b, a);
    let p = [a[0] + t * ab[0], a[1] + t * ab[1], a[2] + t * ab[2]];
    let w = sub(&p, o);
    // Coordinates of p in the (e1, e2) frame from the 2x2 Gram system (edges need not be
    // orthogonal; a parallelogram works the same).
    let (g11, g12, g22) = (dot(e1, e1), dot(e1, e2), dot(e2, e2));
    let (r1, r2) = (dot(&w, e1), dot(&w, e2));
    let det = g11 * g22 - g12 * g12;
    if det.is_nan() || det <= 0.0 {
        return false;
    }
    let s = (r1 * g22 - r2 * g12) / det;
    let u = (r2 * g11 - r1 * g12) / det;
    s > 0.0 && s < 1.0 && u > 0.0 && u < 1.0
}

fn vec2(v: &Option<Vec<f64>>) -> Option<[f64; 2]> {
    match v.as_deref() {
        Some([x, y, ..]) => Some([*x, *y]),
        _ => None,
    }
}

fn vec3(v: &Option<Vec<f64>>) -> Option<[f64; 3]> {
    match v.as_deref() {
        Some([x, y, z]) => Some([*x, *y, *z]),
        _ => None,
    }
}

fn cross(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
