//! Loading layers outside the body (`[[region]]` with `shape = "layer"`): the slab of space
//! within a depth (m) of one face of a `geometry.box`, over that face, whose lattice points
//! outside every box the lattice fill (`lattice.rs`) adds to the body as nodes of the layer.
//! They are bonded to the body like any node, and carry whatever boundary condition names
//! the region: Madenci and Oterkus's fictitious layers, which load a body without taking
//! material from its edge. Lengths in metres.

use super::shapes::{depth_of, side_of, ShapeContext};
use crate::model::validate::num;
use crate::model::{BoxShape, Model, Shape};
use crate::{Error, Result};

/// The nodes a layer region added to the body.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerNodes {
    /// The region's field, `region.K`.
    pub field: String,
    /// Node indices, ascending.
    pub nodes: Vec<usize>,
}

/// Per node of a body of `n` nodes, whether one of `layers` added it.
pub fn layer_mask(layers: &[LayerNodes], n: usize) -> Vec<bool> {
    let mut mask = vec![false; n];
    for l in layers {
        for &i in &l.nodes {
            mask[i] = true;
        }
    }
    mask
}

/// The slab of one layer region: an axis-aligned box outside its face (inclusive; the lattice
/// fill keeps only its points outside every body box).
#[derive(Debug, Clone)]
pub(crate) struct Slab {
    /// The region's field, `region.K`.
    pub field: String,
    pub shape: BoxShape,
}

/// The slabs of the layer regions of `model` (spacing `dx`, horizon `delta`, m), in region
/// order. A layer needs a lattice body (`[[geometry.box]]`) and names an existing box; with
/// several boxes it must say which.
pub(crate) fn slabs(model: &Model, dx: f64, delta: f64) -> Result<Vec<Slab>> {
    let dim = model.discretization.dimension.d();
    let boxes = &model.geometry.boxes;
    let ctx = ShapeContext {
        dim,
        dx,
        delta,
        bbox: None,
    };
    let mut out = Vec::new();
    for (k, r) in model.region.iter().enumerate() {
        let Shape::Layer {
            side,
            depth,
            depth_dx,
            depth_delta,
            of_box,
        } = &r.shape
        else {
            continue;
        };
        let field = format!("region.{k}");
        if boxes.is_empty() {
            return Err(Error::model(
                format!("{field}.shape"),
                "shape = \"layer\" extends the lattice of [[geometry.box]] entries; a point \
                 cloud (geometry.points_csv) or a mesh (geometry.mesh) has none: put the \
                 layer's nodes in the file and select them with a box or group region",
            ));
        }
        let b = match (of_box, boxes.len()) {
            (Some(i), n) if *i < n => &boxes[*i],
            (Some(i), n) => {
                return Err(Error::model(
                    format!("{field}.box"),
                    format!(
                        "{i} is not a geometry.box index; allowed: 0 to {} ({n} box{})",
                        n - 1,
                        if n == 1 { "" } else { "es" }
                    ),
                ))
            }
            (None, 1) => &boxes[0],
            (None, n) => {
                return Err(Error::model(
                    format!("{field}.box"),
                    format!(
                        "missing: the geometry has {n} boxes; say which one the layer lies \
                         on (box = 0 to {})",
                        n - 1
                    ),
                ))
            }
        };
        let (axis, upper) = side_of(side, dim, &field)?;
        let depth = depth_of([*depth, *depth_dx, *depth_delta], &ctx, &field)?;
        let mut shape = b.clone();
        if upper {
            shape.min[axis] = b.max[axis];
            shape.max[axis] = b.max[axis] + depth;
        } else {
            shape.min[axis] = b.min[axis] - depth;
            shape.max[axis] = b.min[axis];
        }
        out.push(Slab { field, shape });
    }
    Ok(out)
}

/// The error of a layer whose slab holds no lattice point outside the body's boxes.
pub(crate) fn adds_nothing(slab: &Slab, dx: f64) -> Error {
    Error::model(
        slab.field.clone(),
        format!(
            "the layer adds no node at dx = {} m: no lattice point of its slab (min {:?}, \
             max {:?} m) lies outside the body's boxes and the layers before it; give a depth \
             of at least dx on a face of the body",
            num(dx),
            slab.shape.min,
            slab.shape.max
        ),
    )
}
