//! Named regions: node sets selected by shape predicates (`shapes.rs`), as ascending node
//! indices. Lengths in metres.

use super::layers::layer_mask;
use super::shapes::{show, Predicate, ShapeContext};
use super::Body;
use crate::model::Shape;
use crate::{Error, Result};
use rayon::prelude::*;

/// Indices (ascending) of the nodes of `body` inside `shape`. `field` names the model field
/// for error messages; an empty selection is an error. A `layer` region (whose `field` is
/// `region.K`) selects the nodes the body added for it; an `edge` selects only the body's
/// own nodes, measured from the faces of the body without its layers.
pub fn region_nodes(body: &Body, shape: &Shape, field: &str) -> Result<Vec<usize>> {
    let dim = body.dim();
    if let Shape::Layer { .. } = shape {
        return match body.layers.iter().find(|l| l.field == field) {
            Some(l) => Ok(l.nodes.clone()),
            None => Err(Error::model(field, "the body has no layer of this region")),
        };
    }
    if let Shape::Group { group } = shape {
        return group_nodes(body, group, field);
    }
    let ctx = ShapeContext {
        dim,
        dx: body.dx,
        delta: body.delta,
        bbox: Some((body.core_min, body.core_max)),
    };
    let predicate = Predicate::new(shape, &ctx, field)?;
    // an edge is a layer of the body's own nodes: never those of a layer outside it
    let in_layer = match shape {
        Shape::Edge { .. } if !body.layers.is_empty() => layer_mask(&body.layers, body.len()),
        _ => Vec::new(),
    };
    let nodes: Vec<usize> = body
        .positions
        .par_iter()
        .enumerate()
        .filter(|(i, p)| predicate.contains(p) && !in_layer.get(*i).copied().unwrap_or(false))
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

/// The nodes of the body's group `group` (by name, else by number).
fn group_nodes(body: &Body, group: &str, field: &str) -> Result<Vec<usize>> {
    let number: Option<i64> = group.trim().parse().ok();
    let found = body.groups.iter().find(|g| g.name == group).or_else(|| {
        body.groups
            .iter()
            .find(|g| number.is_some() && g.number == number)
    });
    let Some(g) = found else {
        let names: Vec<String> = body
            .groups
            .iter()
            .map(|g| match g.number {
                Some(n) if n.to_string() != g.name => format!("\"{}\" ({n})", g.name),
                _ => format!("\"{}\"", g.name),
            })
            .collect();
        return Err(Error::model(
            format!("{field}.group"),
            if names.is_empty() {
                format!(
                    "no group \"{group}\": the body has no named groups (they come from a \
                     mesh's physical groups or cell data, or a point cloud's region columns)"
                )
            } else {
                format!(
                    "no group \"{group}\"; the body's groups: {}",
                    names.join(", ")
                )
            },
        ));
    };
    if g.nodes.is_empty() {
        return Err(Error::model(
            format!("{field}.group"),
            format!("the group \"{group}\" holds no node of the body"),
        ));
    }
    Ok(g.nodes.clone())
}
