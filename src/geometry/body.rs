//! The discretized body: a regular lattice filling the union of boxes minus removed shapes
//! (`lattice.rs`), or a point cloud read from CSV (`points.rs`), with removed shapes applied to
//! it too, plus the nodes of loading layers outside the boxes (`layers.rs`). Positions in
//! metres, volumes in m^3 (2D: `dx^2 h`).

pub use super::file_nodes::NodeGroup;
use super::lattice;
use super::layers::{layer_mask, slabs, LayerNodes};
use super::points::read_points;
use super::shapes::{positive, show, Predicate, ShapeContext};
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
    /// The nodes added outside the boxes by each layer region (`shape = "layer"`), in
    /// region order; empty without layers.
    pub layers: Vec<LayerNodes>,
    /// Bounding box of the nodes that belong to no layer: the faces `edge` regions and
    /// tractions on them measure from. The whole bounding box without layers.
    pub core_min: [f64; 3],
    pub core_max: [f64; 3],
    /// The named node groups of a mesh or a point cloud's region columns (`shape = "group"`
    /// regions select them); empty for a lattice.
    pub groups: Vec<NodeGroup>,
    /// Material id per node, where the file gives one (a mesh's physical group or cell data,
    /// a cloud's `material` column). Stored and reported; every node has the one material of
    /// `[material]`.
    pub material_ids: Option<Vec<i64>>,
    /// Initial displacement per node, m, where the file gives one (a cloud's `ux, uy, uz`
    /// columns; z = 0 in 2D). `[[initial]]` tables act after it.
    pub initial_displacement: Option<Vec<[f64; 3]>>,
    /// Initial velocity per node, m/s (a cloud's `vx, vy, vz` columns).
    pub initial_velocity: Option<Vec<[f64; 3]>>,
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
    /// How many nodes the layers added outside the boxes.
    pub fn layer_node_count(&self) -> usize {
        self.layers.iter().map(|l| l.nodes.len()).sum()
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
    let slabs = slabs(model, dx, delta)?;
    let mut layers = Vec::new();
    let mut groups = Vec::new();
    let mut material_ids = None;
    let (mut initial_displacement, mut initial_velocity) = (None, None);
    let file = match (&geometry.points_csv, &geometry.mesh) {
        (Some(f), None) => Some(("geometry.points_csv", f)),
        (None, Some(f)) => Some(("geometry.mesh", f)),
        (None, None) => None,
        (Some(_), Some(_)) => {
            return Err(Error::model(
                "geometry.mesh",
                "both points_csv and mesh are given; give exactly one of them",
            ))
        }
    };
    let (positions, volumes) = match (geometry.boxes.is_empty(), file) {
        (false, None) => {
            let extents: Vec<([f64; 3], [f64; 3])> = geometry
                .boxes
                .iter()
                .map(|b| (point(&b.min, dim), point(&b.max, dim)))
                .collect();
            removals_reach(&removals, &extents, dim)?;
            let volume = dx.powi(dim as i32) * thickness;
            if !volume.is_normal() {
                return Err(Error::model(
                    "discretization.dx",
                    format!(
                        "dx = {dx:e} m gives the nodal volume dx^{dim}{} = {volume:e} m^3, \
                         which is not a finite number > 0 (at least {:e})",
                        if dim == 2 { " thickness" } else { "" },
                        f64::MIN_POSITIVE
                    ),
                ));
            }
            let positions;
            (positions, layers) = lattice::fill(&geometry.boxes, &slabs, &removals, dim, dx)?;
            let volumes = vec![volume; positions.len()];
            (positions, volumes)
        }
        (true, Some((field, file))) => {
            let path = model_dir.join(file);
            let nodes = if field == "geometry.mesh" {
                super::mesh::mesh_nodes(model, &path, dx, thickness)?
            } else {
                read_points(&path, dim)?
            };
            removals_reach(&removals, &[bounds(&nodes.positions)], dim)?;
            let empty = removals
                .iter()
                .position(|r| !nodes.positions.iter().any(|p| r.contains(p)));
            if let Some(k) = empty {
                return Err(lattice::removes_nothing(k, &removals[k], dx, dim));
            }
            let keep: Vec<bool> = nodes
                .positions
                .iter()
                .map(|p| !removals.iter().any(|r| r.contains(p)))
                .collect();
            let nodes = nodes.retain(&keep);
            groups = nodes.groups;
            material_ids = nodes.material_ids;
            initial_displacement = nodes.displacement;
            initial_velocity = nodes.velocity;
            (nodes.positions, nodes.volumes)
        }
        (false, Some((field, _))) => {
            return Err(Error::model(
                field,
                "both box and a node file are given; give exactly one of them",
            ))
        }
        (true, None) => {
            return Err(Error::model(
                "geometry",
                "no geometry; give [[geometry.box]] entries, geometry.points_csv or \
                 geometry.mesh",
            ))
        }
    };
    if positions.is_empty() {
        return Err(Error::model(
            "geometry",
            if geometry.boxes.is_empty() {
                "the body has no nodes: geometry.remove covers every node of the file".to_string()
            } else {
                format!(
                    "the body has no nodes: no lattice point (dx = {} m) lies in the boxes \
                     outside the removed shapes; boxes must be at least dx wide",
                    num(dx)
                )
            },
        ));
    }
    if positions.len() == 1 {
        return Err(Error::model(
            if let Some((field, _)) = file {
                field
            } else {
                "discretization.dx"
            },
            format!(
                "the body has 1 node (at {} m); a body needs at least 2, and bonds between \
                 them: {}",
                show(&positions[0], dim),
                if geometry.boxes.is_empty() {
                    "give more points or remove less"
                } else {
                    "decrease dx or enlarge the boxes"
                }
            ),
        ));
    }
    let (bbox_min, bbox_max) = bounds(&positions);
    let (core_min, core_max) = if layers.is_empty() {
        (bbox_min, bbox_max)
    } else {
        let in_layer = layer_mask(&layers, positions.len());
        let core: Vec<[f64; 3]> = positions
            .iter()
            .zip(&in_layer)
            .filter(|(_, &l)| !l)
            .map(|(p, _)| *p)
            .collect();
        bounds(&core)
    };
    Ok(Body {
        dimension: disc.dimension,
        positions,
        volumes,
        dx,
        delta,
        thickness,
        bbox_min,
        bbox_max,
        layers,
        core_min,
        core_max,
        groups,
        material_ids,
        initial_displacement,
        initial_velocity,
    })
}

/// Every `geometry.remove` shape must reach into one of the `extents` (the boxes of a
/// lattice body, the bounding box of a cloud; z = 0 in 2D): one that lies entirely outside
/// the body removes nothing and is an error naming it.
fn removals_reach(
    removals: &[Predicate],
    extents: &[([f64; 3], [f64; 3])],
    dim: usize,
) -> Result<()> {
    for (k, r) in removals.iter().enumerate() {
        let (lo, hi) = r.bounds();
        let meets = |(a, b): &&([f64; 3], [f64; 3])| (0..3).all(|i| lo[i] <= b[i] && a[i] <= hi[i]);
        if extents.iter().any(|e| meets(&e)) {
            continue;
        }
        let span = |pick: fn(f64, f64) -> f64, side: fn(&([f64; 3], [f64; 3])) -> [f64; 3]| {
            let init = side(&extents[0]);
            extents.iter().fold(init, |acc, e| {
                std::array::from_fn(|i| pick(acc[i], side(e)[i]))
            })
        };
        let (a, b) = (span(f64::min, |e| e.0), span(f64::max, |e| e.1));
        return Err(Error::model(
            format!("geometry.remove.{k}"),
            format!(
                "the shape lies entirely outside the body, which spans {} to {} m: it removes \
                 nothing",
                show(&a, dim),
                show(&b, dim)
            ),
        ));
    }
    Ok(())
}

/// A model point of `dim` components as three (z = 0 in 2D).
fn point(v: &[f64], dim: usize) -> [f64; 3] {
    std::array::from_fn(|k| if k < dim { v[k] } else { 0.0 })
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

/// Componentwise bounds of `positions` (non-empty; infinite bounds for none).
pub fn bounds(positions: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
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
