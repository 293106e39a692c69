//! Checks of the geometric parts of a model: `[geometry]` boxes and removal shapes,
//! `[[precrack]]` entries and `[[region]]` shapes. Coordinates and lengths are in metres.

use super::{dim_name, num, positive, vec_str};
use crate::model::{Dimension, Geometry, Precrack, Region, Shape};
use crate::{Error, Result};

/// Relative tolerance below which two pre-crack edges count as parallel.
const PARALLEL_TOLERANCE: f64 = 1e-9;

/// `[geometry]`: exactly one body description; boxes and removal shapes in range.
pub(super) fn geometry(g: &Geometry, dim: Dimension) -> Result<()> {
    if let (Some(_), Some(_)) = (&g.points_csv, &g.mesh) {
        return Err(Error::model(
            "geometry.mesh",
            "give either geometry.points_csv or geometry.mesh, not both",
        ));
    }
    if g.mesh_nodes.is_some() && g.mesh.is_none() {
        return Err(Error::model(
            "geometry.mesh_nodes",
            "is for a mesh body; give geometry.mesh too, or remove mesh_nodes",
        ));
    }
    if let Some(path) = &g.mesh {
        let ext = path.rsplit('.').next().unwrap_or("").to_ascii_lowercase();
        if !g.boxes.is_empty() {
            return Err(Error::model(
                "geometry.mesh",
                "give either [[geometry.box]] or mesh, not both",
            ));
        }
        if path.trim().is_empty() || !(ext == "msh" || ext == "vtu") {
            return Err(Error::model(
                "geometry.mesh",
                format!("\"{path}\": must name a .msh (Gmsh 4.1) or .vtu file"),
            ));
        }
        return regions_of_geometry(g, dim);
    }
    match (g.boxes.is_empty(), &g.points_csv) {
        (true, None) => Err(Error::model(
            "geometry.box",
            "give the body: at least one [[geometry.box]], geometry.points_csv or geometry.mesh",
        )),
        (false, Some(_)) => Err(Error::model(
            "geometry.points_csv",
            "give either [[geometry.box]] or points_csv, not both",
        )),
        (true, Some(path)) if path.trim().is_empty() => Err(Error::model(
            "geometry.points_csv",
            "must name a CSV file with columns x,y[,z],volume",
        )),
        _ => Ok(()),
    }?;
    regions_of_geometry(g, dim)
}

/// The boxes and removed shapes of `[geometry]`.
fn regions_of_geometry(g: &Geometry, dim: Dimension) -> Result<()> {
    for (i, b) in g.boxes.iter().enumerate() {
        box_shape(&format!("geometry.box.{i}"), &b.min, &b.max, dim)?;
    }
    for (i, s) in g.remove.iter().enumerate() {
        let f = format!("geometry.remove.{i}");
        let name = match s {
            Shape::Edge { .. } => "edge",
            Shape::Layer { .. } => "layer",
            Shape::All {} => "all",
            Shape::Group { .. } => "group",
            _ => {
                shape(&f, s, dim)?;
                continue;
            }
        };
        return Err(Error::model(
            format!("{f}.shape"),
            format!(
                "shape = \"{name}\" selects nodes and cannot remove material; allowed here: \
                 box, circle, notch{}",
                if dim.d() == 3 { ", cylinder" } else { "" }
            ),
        ));
    }
    Ok(())
}

/// `[[region]]`: unique non-empty names, shapes in range.
pub(super) fn regions(regions: &[Region], dim: Dimension) -> Result<()> {
    for (i, r) in regions.iter().enumerate() {
        let f = format!("region.{i}");
        if r.name.trim().is_empty() {
            return Err(Error::model(format!("{f}.name"), "must not be empty"));
        }
        if let Some(j) = regions[..i].iter().position(|o| o.name == r.name) {
            return Err(Error::model(
                format!("{f}.name"),
                format!(
                    "\"{}\" is already the name of region.{j}; names must be unique",
                    r.name
                ),
            ));
        }
        shape(&f, &r.shape, dim)?;
    }
    Ok(())
}

/// `[[precrack]]` entry `i`: a segment in 2D, a rectangle in 3D.
pub(super) fn precrack(i: usize, p: &Precrack, dim: Dimension) -> Result<()> {
    let f = format!("precrack.{i}");
    type Named<'a> = Vec<(&'static str, &'a Option<Vec<f64>>)>;
    let (unused, required, what): (Named, Named, &str) = if dim.d() == 2 {
        (
            vec![
                ("origin", &p.origin),
                ("edge1", &p.edge1),
                ("edge2", &p.edge2),
            ],
            vec![("start", &p.start), ("end", &p.end)],
            "a 2D pre-crack is the segment start -> end",
        )
    } else {
        (
            vec![("start", &p.start), ("end", &p.end)],
            vec![
                ("origin", &p.origin),
                ("edge1", &p.edge1),
                ("edge2", &p.edge2),
            ],
            "a 3D pre-crack is the rectangle origin + s edge1 + t edge2, s and t in [0, 1]",
        )
    };
    if let Some((name, _)) = unused.iter().find(|(_, v)| v.is_some()) {
        return Err(Error::model(
            format!("{f}.{name}"),
            format!("not used for dimension = \"{}\": {what}", dim_name(dim)),
        ));
    }
    let mut given = Vec::new();
    for (name, value) in required {
        let Some(v) = value else {
            return Err(Error::model(
                format!("{f}.{name}"),
                format!("required for dimension = \"{}\": {what}", dim_name(dim)),
            ));
        };
        vector(&format!("{f}.{name}"), v, &[dim.d()], dim)?;
        given.push(v.as_slice());
    }
    if let [start, end] = given[..] {
        if start == end {
            return Err(Error::model(
                format!("{f}.end"),
                format!("must differ from start (both are {})", vec_str(start)),
            ));
        }
    } else if let [_, e1, e2] = given[..] {
        crack_edges(&f, e1, e2)?;
    }
    Ok(())
}

/// The edges of a 3D pre-crack: non-zero and not parallel.
fn crack_edges(f: &str, e1: &[f64], e2: &[f64]) -> Result<()> {
    for (name, e) in [("edge1", e1), ("edge2", e2)] {
        if norm(e) == 0.0 {
            return Err(Error::model(
                format!("{f}.{name}"),
                format!("must be a non-zero vector (got {})", vec_str(e)),
            ));
        }
    }
    let cross = [
        e1[1] * e2[2] - e1[2] * e2[1],
        e1[2] * e2[0] - e1[0] * e2[2],
        e1[0] * e2[1] - e1[1] * e2[0],
    ];
    if norm(&cross) <= PARALLEL_TOLERANCE * norm(e1) * norm(e2) {
        return Err(Error::model(
            format!("{f}.edge2"),
            format!(
                "must not be parallel to edge1 (edge1 = {}, edge2 = {})",
                vec_str(e1),
                vec_str(e2)
            ),
        ));
    }
    Ok(())
}

/// A removal or region shape at field prefix `f`.
fn shape(f: &str, s: &Shape, dim: Dimension) -> Result<()> {
    let d = dim.d();
    match s {
        Shape::Box { min, max } => box_shape(f, min, max, dim),
        Shape::Circle { center, radius } => {
            vector(&format!("{f}.center"), center, &[d], dim)?;
            positive(&format!("{f}.radius"), *radius, " m")
        }
        Shape::Cylinder {
            center,
            axis,
            radius,
            half_length,
        } => {
            if d == 2 {
                return Err(Error::model(
                    format!("{f}.shape"),
                    "shape = \"cylinder\" is 3D only; in 2D use shape = \"circle\"",
                ));
            }
            vector(&format!("{f}.center"), center, &[3], dim)?;
            vector(&format!("{f}.axis"), axis, &[3], dim)?;
            if norm(axis) == 0.0 {
                return Err(Error::model(
                    format!("{f}.axis"),
                    format!("must be a non-zero vector (got {})", vec_str(axis)),
                ));
            }
            positive(&format!("{f}.radius"), *radius, " m")?;
            match half_length {
                Some(h) => positive(&format!("{f}.half_length"), *h, " m"),
                None => Ok(()),
            }
        }
        Shape::Notch { start, end, width } => {
            let lens: &[usize] = if d == 3 { &[2, 3] } else { &[2] };
            vector(&format!("{f}.start"), start, lens, dim)?;
            vector(&format!("{f}.end"), end, lens, dim)?;
            if start.len() != end.len() {
                return Err(Error::model(
                    format!("{f}.end"),
                    format!(
                        "must have as many components as start (start = {}, end = {})",
                        vec_str(start),
                        vec_str(end)
                    ),
                ));
            }
            positive(&format!("{f}.width"), *width, " m")
        }
        Shape::Edge {
            side,
            depth,
            depth_dx,
            depth_delta,
        } => edge(f, side, [*depth, *depth_dx, *depth_delta], dim),
        Shape::Layer {
            side,
            depth,
            depth_dx,
            depth_delta,
            ..
        } => edge(f, side, [*depth, *depth_dx, *depth_delta], dim),
        Shape::All {} => Ok(()),
        Shape::Group { group } if group.trim().is_empty() => Err(Error::model(
            format!("{f}.group"),
            "must name a group of the body's mesh or point cloud",
        )),
        Shape::Group { .. } => Ok(()),
    }
}

/// An axis-aligned box: `d` components each, `min < max` in every component.
fn box_shape(f: &str, min: &[f64], max: &[f64], dim: Dimension) -> Result<()> {
    vector(&format!("{f}.min"), min, &[dim.d()], dim)?;
    vector(&format!("{f}.max"), max, &[dim.d()], dim)?;
    match min.iter().zip(max).position(|(a, b)| a >= b) {
        Some(k) => Err(Error::model(
            format!("{f}.max"),
            format!(
                "must be greater than min in every component (min = {}, max = {}: \
                 component {k})",
                vec_str(min),
                vec_str(max)
            ),
        )),
        None => Ok(()),
    }
}

/// An `edge` or `layer` region: a side of the bounding box (of a box) and exactly one
/// positive depth.
fn edge(f: &str, side: &str, depths: [Option<f64>; 3], dim: Dimension) -> Result<()> {
    let sides: &[&str] = match dim.d() {
        3 => &["-x", "+x", "-y", "+y", "-z", "+z"],
        _ => &["-x", "+x", "-y", "+y"],
    };
    if !sides.contains(&side) {
        return Err(Error::model(
            format!("{f}.side"),
            format!(
                "must be one of {} for dimension = \"{}\" (got \"{side}\")",
                sides.join(", "),
                dim_name(dim)
            ),
        ));
    }
    let names = ["depth", "depth_dx", "depth_delta"];
    let units = [" m", " (multiples of dx)", " (multiples of the horizon)"];
    let given: Vec<(usize, f64)> = (0..3).filter_map(|k| depths[k].map(|v| (k, v))).collect();
    match given[..] {
        [] => Err(Error::model(
            format!("{f}.depth"),
            "give the layer depth: one of depth (m), depth_dx (multiples of dx) or \
             depth_delta (multiples of the horizon)",
        )),
        [(k, value)] => positive(&format!("{f}.{}", names[k]), value, units[k]),
        [_, (k, _), ..] => Err(Error::model(
            format!("{f}.{}", names[k]),
            "give only one of depth, depth_dx, depth_delta",
        )),
    }
}

/// A point or vector: one of the component counts `lens`, finite components.
fn vector(field: &str, v: &[f64], lens: &[usize], dim: Dimension) -> Result<()> {
    if !lens.contains(&v.len()) {
        let counts: Vec<String> = lens.iter().map(|n| n.to_string()).collect();
        return Err(Error::model(
            field,
            format!(
                "must have {} components for dimension = \"{}\" (got {}: {})",
                counts.join(" or "),
                dim_name(dim),
                v.len(),
                vec_str(v)
            ),
        ));
    }
    match v.iter().position(|c| !c.is_finite()) {
        Some(k) => Err(Error::model(
            format!("{field}.{k}"),
            format!("must be a finite number (got {})", num(v[k])),
        )),
        None => Ok(()),
    }
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|c| c * c).sum::<f64>().sqrt()
}
