//! The discretized body: a regular lattice filling the union of boxes minus removed shapes, or
//! a point cloud read from CSV.

use crate::model::{Dimension, Model};
use crate::Result;
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
pub fn build_body(model: &Model, model_dir: &Path) -> Result<Body> {
    let _ = (model, model_dir);
    unimplemented!("geometry::build_body")
}
