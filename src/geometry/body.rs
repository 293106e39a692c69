//! The discretized body: a regular lattice filling the union of boxes minus removed shapes
//! (`lattice.rs`), or a point cloud read from CSV (`points.rs`), with removed shapes applied to
//! it too. Positions in metres, volumes in m^3 (2D: `dx^2 h`).

use super::lattice;
use super::points::read_points;
use super::shapes::{positive, Predicate, ShapeContext};
use crate::model::validate::num;
use crate::model::{Dimension, Discretization, Model};
use crate::{Error, Result};
use std::path::Path;

/// Nodes of the body. Positions always carry three components (`z = 0` in 2D).
#[derive(Debug, Clone)]
pub struct Body {
    pub dimension: Dimension,
    /// Reference positions `X_i`, m.
    pub positions: Vec<[f64; 3]>,
    /// Nodal volumes `V_i`, m^3 (2D: area times thickness).
    pub volumes: Vec<f64>,
    /// Lattice spacing, m.
    pub dx: f64,
    /// Horizon, m.
    pub delta: f64,
    /// Out-of-plane thickness in 2D, m; 1 in 3D.
    pub thickness: f64,
    /// Bounding box of the node positions (min, max).
    pub bbox_min: [f64; 3],
    pub bbox_max: [f64; 3],
}

impl Body {
    /// Spatial dimension `d` (2 or 3).
    pub fn dim(&self) -> usize {
        self.dimension.d()
    }
    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.positions.len()
    }
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }
}

/// Build the body of a validated model. `model_dir` resolves a relative `points_csv`.
///
/// `delta` is `discretization.delta`, else `horizon_factor * dx`; the thickness is
/// `discretization.thickness` (default 1 m) in 2D and 1 in 3D. Lattice nodes have volume
/// `dx^d * thickness`; point-cloud nodes keep their CSV volume.
pub fn build_body(model: &Model, model_dir: &Path) -> Result<Body> {
    let disc = &model.discretization;
    let geometry = &model.geometry;
    let dim = disc.dimension.d();
    let (dx, delta, thickness) = spacing(disc)?;
    let ctx = ShapeContext {
        dim,
        dx,
        delta,
        bbox: None,
    };
    let removals = geometry
        .remove
        .iter()
        .enumerate()
        .map(|(k, s)| Predicate::removal(s, &ctx, &format!("geometry.remove.{k}")))
        .collect::<Result<Vec<_>>>()?;
    let (positions, volumes) = match (geometry.boxes.is_empty(), &geometry.points_csv) {
        (false, None) => {
            let positions = lattice::fill(&geometry.boxes, &removals, dim, dx)?;
            let volume = dx.powi(dim as i32) * thickness;
            let volumes = vec![volume; positions.len()];
            (positions, volumes)
        }
        (true, Some(file)) => {
            let (positions, volumes) = read_points(&model_dir.join(file), dim)?;
            positions
                .into_iter()
                .zip(volumes)
                .filter(|(p, _)| !removals.iter().any(|r| r.contains(p)))
                .unzip()
        }
        (false, Some(_)) => {
            return Err(Error::model(
                "geometry",
                "both box and points_csv are given; give exactly one of them",
            ))
        }
        (true, None) => {
            return Err(Error::model(
                "geometry",
                "no geometry; give [[geometry.box]] entries or geometry.points_csv",
            ))
        }
    };
    if positions.is_empty() {
        return Err(Error::model(
            "geometry",
            if geometry.boxes.is_empty() {
                "the body has no nodes: geometry.remove covers every point of the cloud".to_string()
            } else {
                format!(
                    "the body has no nodes: no lattice point (dx = {} m) lies in the boxes \
                     outside the removed shapes; boxes must be at least dx wide",
                    num(dx)
                )
            },
        ));
    }
    let (bbox_min, bbox_max) = bounds(&positions);
    Ok(Body {
        dimension: disc.dimension,
        positions,
        volumes,
        dx,
        delta,
        thickness,
        bbox_min,
        bbox_max,
    })
}

/// `(dx, delta, thickness)` of the discretization, each finite and positive.
fn spacing(disc: &Discretization) -> Result<(f64, f64, f64)> {
    let dx = positive(disc.dx, "discretization.dx")?;
    let delta = match (disc.delta, disc.horizon_factor) {
        (Some(d), _) => positive(d, "discretization.delta")?,
        (None, Some(m)) => positive(m, "discretization.horizon_factor")? * dx,
        (None, None) => {
            return Err(Error::model(
                "discretization.horizon_factor",
                "missing; give horizon_factor (e.g. 3.015) or delta (m)",
            ))
        }
    };
    let thickness = match disc.dimension {
        Dimension::ThreeD => 1.0,
        _ => positive(disc.thickness.unwrap_or(1.0), "discretization.thickness")?,
    };
    Ok((dx, delta, thickness))
}

/// Componentwise bounds of `positions` (non-empty).
fn bounds(positions: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in positions {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    (lo, hi)
}
