//! Shape predicates, the one place that decides whether a point lies in a `Shape`: used by the
//! lattice fill (boxes), by `geometry.remove` and by named regions. Lengths in metres.
//!
//! A model `Shape` is first checked and turned into a [`Predicate`] (vectors padded to three
//! components, axis normalized, depth resolved), then tested point by point.
//!
//! Boundaries are decided with a tolerance `tol = 1e-9 dx`, so that lattice nodes lying
//! mathematically on a boundary are classified the same way whatever the rounding:
//! inclusive shapes (box, circle, cylinder) grow by `tol`, strict ones (notch: distance
//! `< width / 2`; edge: offset `< depth`) shrink by `tol`.

use crate::model::validate::num;
use crate::model::Shape;
use crate::{Error, Result};

/// Relative tolerance of boundary tests, in units of `dx`.
pub(crate) const TOL_DX: f64 = 1e-9;

/// What a predicate needs to know about the body.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShapeContext {
    /// Spatial dimension, 2 or 3.
    pub dim: usize,
    /// Lattice spacing, m.
    pub dx: f64,
    /// Horizon, m.
    pub delta: f64,
    /// Bounding box of the nodes (min, max), needed by `Edge`; `None` while the body is being
    /// built.
    pub bbox: Option<([f64; 3], [f64; 3])>,
}

/// A checked shape, ready to test points.
#[derive(Debug, Clone)]
pub(crate) enum Predicate {
    /// Inclusive box, bounds already widened by the tolerance.
    Box {
        min: [f64; 3],
        max: [f64; 3],
    },
    /// Disc or sphere: `|p - center|^2 <= r2`.
    Ball {
        center: [f64; 3],
        r2: f64,
    },
    /// Distance to the axis line `<= radius`, `|axial offset| <= half_length`.
    Cylinder {
        center: [f64; 3],
        axis: [f64; 3],
        r2: f64,
        half_length: Option<f64>,
    },
    /// Distance to the segment `< half_width` (already shrunk by the tolerance); `planar`
    /// measures it in the xy plane only.
    Notch {
        start: [f64; 3],
        end: [f64; 3],
        half_width: f64,
        planar: bool,
    },
    /// Offset from the face `bound` of the bounding box along `axis` below `depth`.
    Edge {
        axis: usize,
        upper: bool,
        bound: f64,
        depth: f64,
    },
    All,
}

impl Predicate {
    /// Check `shape` and build its predicate. `field` names it in errors (`region.2`).
    pub fn new(shape: &Shape, ctx: &ShapeContext, field: &str) -> Result<Predicate> {
        let tol = TOL_DX * ctx.dx;
        let d = ctx.dim;
        match shape {
            Shape::Box { min, max } => {
                let mut lo = point(min, d, &format!("{field}.min"))?;
                let mut hi = point(max, d, &format!("{field}.max"))?;
                for a in 0..3 {
                    if a < d {
                        lo[a] -= tol;
                        hi[a] += tol;
                    } else {
                        (lo[a], hi[a]) = (f64::NEG_INFINITY, f64::INFINITY);
                    }
                }
                Ok(Predicate::Box { min: lo, max: hi })
            }
            Shape::Circle { center, radius } => {
                let center = point(center, d, &format!("{field}.center"))?;
                let r = positive(*radius, &format!("{field}.radius"))? + tol;
                Ok(Predicate::Ball { center, r2: r * r })
            }
            Shape::Cylinder {
                center,
                axis,
                radius,
                half_length,
            } => cylinder(center, axis, *radius, *half_length, ctx, field),
            Shape::Notch { start, end, width } => notch(start, end, *width, ctx, field),
            Shape::Edge {
                side,
                depth,
                depth_dx,
                depth_delta,
            } => edge(side, [*depth, *depth_dx, *depth_delta], ctx, field),
            Shape::Layer { .. } => Err(Error::model(
                field,
                "shape layer selects the nodes the body adds for it, not a place in the body",
            )),
            Shape::All {} => Ok(Predicate::All),
            Shape::Group { .. } => Err(Error::model(
                field,
                "shape group selects the nodes of a named group of the body's file, not a place",
            )),
        }
    }

    /// Predicate of a `geometry.remove` shape: edges and `all` are refused there.
    pub fn removal(shape: &Shape, ctx: &ShapeContext, field: &str) -> Result<Predicate> {
        match shape {
            Shape::Edge { .. } | Shape::Layer { .. } | Shape::All {} | Shape::Group { .. } => {
                Err(Error::model(
                field,
                "shape edge, layer, all or group cannot remove material; allowed: box, circle, \
                 cylinder, notch",
            ))
            }
            _ => Predicate::new(shape, ctx, field),
        }
    }

    /// An axis-aligned box `(min, max)` holding every point the shape contains (infinite
    /// along the axes where it is unbounded: z of a 2D shape, an endless cylinder, an edge).
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        let all = ([f64::NEG_INFINITY; 3], [f64::INFINITY; 3]);
        let grown = |a: &[f64; 3], b: &[f64; 3], r: f64| -> ([f64; 3], [f64; 3]) {
            (
                std::array::from_fn(|k| a[k].min(b[k]) - r),
                std::array::from_fn(|k| a[k].max(b[k]) + r),
            )
        };
        match self {
            Predicate::Box { min, max } => (*min, *max),
            Predicate::Ball { center, r2 } => grown(center, center, r2.sqrt()),
            Predicate::Cylinder {
                center,
                r2,
                half_length: Some(h),
                ..
            } => grown(center, center, r2.sqrt() + h),
            Predicate::Notch {
                start,
                end,
                half_width,
                planar,
            } => {
                let (mut lo, mut hi) = grown(start, end, *half_width);
                if *planar {
                    (lo[2], hi[2]) = (f64::NEG_INFINITY, f64::INFINITY);
                }
                (lo, hi)
            }
            _ => all,
        }
    }

    /// Whether `p` lies in the shape.
    #[inline]
    pub fn contains(&self, p: &[f64; 3]) -> bool {
        match self {
            Predicate::Box { min, max } => (0..3).all(|a| min[a] <= p[a] && p[a] <= max[a]),
            Predicate::Ball { center, r2 } => norm2(&sub(p, center)) <= *r2,
            Predicate::Cylinder {
                center,
                axis,
                r2,
                half_length,
            } => {
                let v = sub(p, center);
                let along = dot(&v, axis);
                let perp = [
                    v[0] - along * axis[0],
                    v[1] - along * axis[1],
                    v[2] - along * axis[2],
                ];
                norm2(&perp) <= *r2 && half_length.is_none_or(|h| along.abs() <= h)
            }
            Predicate::Notch {
                start,
                end,
                half_width: w,
                planar,
            } => {
                // a planar notch is extruded through the thickness: z does not count
                let q = if *planar { [p[0], p[1], 0.0] } else { *p };
                segment_distance2(&q, start, end) < w * w
            }
            Predicate::Edge {
                axis,
                upper,
                bound,
                depth,
            } => {
                let offset = if *upper {
                    bound - p[*axis]
                } else {
                    p[*axis] - bound
                };
                offset < *depth
            }
            Predicate::All => true,
        }
    }
}

fn cylinder(
    center: &[f64],
    axis: &[f64],
    radius: f64,
    half_length: Option<f64>,
    ctx: &ShapeContext,
    field: &str,
) -> Result<Predicate> {
    let tol = TOL_DX * ctx.dx;
    let center = point(center, ctx.dim, &format!("{field}.center"))?;
    let axis = point(axis, ctx.dim, &format!("{field}.axis"))?;
    let len = norm2(&axis).sqrt();
    let usable = len > 0.0 && len.is_finite();
    if !usable {
        return Err(Error::model(
            format!("{field}.axis"),
            "the axis has zero length; give a nonzero direction vector",
        ));
    }
    let axis = [axis[0] / len, axis[1] / len, axis[2] / len];
    let r = positive(radius, &format!("{field}.radius"))? + tol;
    let half_length = match half_length {
        Some(h) => Some(positive(h, &format!("{field}.half_length"))? + tol),
        None => None,
    };
    Ok(Predicate::Cylinder {
        center,
        axis,
        r2: r * r,
        half_length,
    })
}

fn notch(
    start: &[f64],
    end: &[f64],
    width: f64,
    ctx: &ShapeContext,
    field: &str,
) -> Result<Predicate> {
    let n = start.len();
    let allowed = if ctx.dim == 3 {
        "2 (extruded through z) or 3"
    } else {
        "2"
    };
    for (name, v) in [("start", start), ("end", end)] {
        if (v.len() != 2 && !(ctx.dim == 3 && v.len() == 3)) || v.len() != n {
            return Err(Error::model(
                format!("{field}.{name}"),
                format!(
                    "has {} components; expected {allowed}, the same for start and end",
                    v.len()
                ),
            ));
        }
    }
    let start = point(start, n, &format!("{field}.start"))?;
    let end = point(end, n, &format!("{field}.end"))?;
    let half_width = positive(width, &format!("{field}.width"))? / 2.0 - TOL_DX * ctx.dx;
    Ok(Predicate::Notch {
        start,
        end,
        half_width: half_width.max(0.0),
        planar: n == 2,
    })
}

/// The axis and whether the face is the upper one (`+x` -> `(0, true)`) of `side`, or an
/// error naming `{field}.side` and the allowed sides of dimension `dim`.
pub(crate) fn side_of(side: &str, dim: usize, field: &str) -> Result<(usize, bool)> {
    let sides: &[&str] = if dim == 3 {
        &["-x", "+x", "-y", "+y", "-z", "+z"]
    } else {
        &["-x", "+x", "-y", "+y"]
    };
    match sides.iter().position(|s| *s == side) {
        Some(k) => Ok((k / 2, k % 2 == 1)),
        None => Err(Error::model(
            format!("{field}.side"),
            format!("'{side}' is not a face; allowed: {}", sides.join(", ")),
        )),
    }
}

/// The depth in metres of an edge or layer: exactly one of `depth` (m), `depth_dx` (times
/// `dx`) and `depth_delta` (times the horizon), each finite and > 0.
pub(crate) fn depth_of(depths: [Option<f64>; 3], ctx: &ShapeContext, field: &str) -> Result<f64> {
    match depths {
        [Some(d), None, None] => positive(d, &format!("{field}.depth")),
        [None, Some(m), None] => Ok(positive(m, &format!("{field}.depth_dx"))? * ctx.dx),
        [None, None, Some(m)] => Ok(positive(m, &format!("{field}.depth_delta"))? * ctx.delta),
        _ => Err(Error::model(
            format!("{field}.depth"),
            "give exactly one of depth (m), depth_dx or depth_delta",
        )),
    }
}

fn edge(
    side: &str,
    depths: [Option<f64>; 3],
    ctx: &ShapeContext,
    field: &str,
) -> Result<Predicate> {
    let (axis, upper) = side_of(side, ctx.dim, field)?;
    let depth = depth_of(depths, ctx, field)?;
    let Some((lo, hi)) = ctx.bbox else {
        return Err(Error::model(field, "shape edge needs the body's nodes"));
    };
    Ok(Predicate::Edge {
        axis,
        upper,
        bound: if upper { hi[axis] } else { lo[axis] },
        depth: depth - TOL_DX * ctx.dx,
    })
}

/// A point of `dim` components, padded with `z = 0` in 2D; every component finite.
pub(crate) fn point(v: &[f64], dim: usize, field: &str) -> Result<[f64; 3]> {
    if v.len() != dim {
        return Err(Error::model(
            field,
            format!("has {} components; expected {dim}", v.len()),
        ));
    }
    if let Some(x) = v.iter().find(|x| !x.is_finite()) {
        return Err(Error::model(
            field,
            format!("component {} is not a finite number", num(*x)),
        ));
    }
    let mut p = [0.0; 3];
    p[..dim].copy_from_slice(v);
    Ok(p)
}

/// `value` if it is finite and `> 0`.
pub(crate) fn positive(value: f64, field: &str) -> Result<f64> {
    if value > 0.0 && value.is_finite() {
        Ok(value)
    } else {
        Err(Error::model(
            field,
            format!(
                "{} is out of range; expected a finite value > 0",
                num(value)
            ),
        ))
    }
}

/// Squared distance from `p` to the segment `s -> e` (a point if `s == e`).
fn segment_distance2(p: &[f64; 3], s: &[f64; 3], e: &[f64; 3]) -> f64 {
    let d = sub(e, s);
    let len2 = norm2(&d);
    let t = if len2 > 0.0 {
        (dot(&sub(p, s), &d) / len2).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let q = [s[0] + t * d[0], s[1] + t * d[1], s[2] + t * d[2]];
    norm2(&sub(p, &q))
}

#[inline]
pub(crate) fn sub(a: &[f64; 3], b: &[f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

#[inline]
pub(crate) fn dot(a: &[f64; 3], b: &[f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline]
fn norm2(a: &[f64; 3]) -> f64 {
    dot(a, a)
}

/// `p` as `(x, y)` or `(x, y, z)`, for messages.
pub(crate) fn show(p: &[f64; 3], dim: usize) -> String {
    let parts: Vec<String> = p[..dim].iter().map(|x| num(*x)).collect();
    format!("({})", parts.join(", "))
}
