//! Named regions: node sets selected by shape predicates (`shapes.rs`), as ascending node
//! indices. Lengths in metres.

use super::shapes::{show, Predicate, ShapeContext};
use super::Body;
use crate::model::Shape;
use crate::{Error, Result};
use rayon::prelude::*;

/// Indices (ascending) of the nodes of `body` inside `shape`. `field` names the model field
/// for error messages; an empty selection is an error.
pub fn region_nodes(body: &Body, shape: &Shape, field: &str) -> Result<Vec<usize>> {
    let dim = body.dim();
    let ctx = ShapeContext {
        dim,
        dx: body.dx,
        delta: body.delta,
        bbox: Some((body.bbox_min, body.bbox_max)),
    };
    let predicate = Predicate::new(shape, &ctx, field)?;
    let nodes: Vec<usize> = body
        .positions
        .par_iter()
        .enumerate()
        .filter(|(_, p)| predicate.contains(p))
        .map(|(i, _)| i)
        .collect();
    if nodes.is_empty() {
        return Err(Error::model(
            field,
            format!(
                "the shape selects no node at dx = {} m; the body's nodes span {} to {} m",
                crate::model::validate::num(body.dx),
                show(&body.bbox_min, dim),
                show(&body.bbox_max, dim)
            ),
        ));
    }
    Ok(nodes)
}
