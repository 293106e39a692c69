//! Point-cloud input: a CSV file of nodes, `x,y,volume` (2D) or `x,y,z,volume` (3D), in metres
//! and m^3 (in 2D the volume column is the nodal volume including the thickness, as stored in
//! `Body::volumes`), with more columns by header name.
//!
//! Format: comma-separated; blank lines and `#` comments (whole line or trailing) are ignored;
//! the first non-blank line may be a header, recognized by none of its fields parsing as a
//! number. A header whose every field is a known column name (case and spaces ignored) names
//! the columns, in any order:
//!
//! - `x`, `y`, `z` (3D), `volume`: required;
//! - `material`: an integer material id per node;
//! - `region`: the name of the group the node belongs to (empty: none);
//! - `region:NAME` (or `group:NAME`): membership of group `NAME`, `1`/`0`, `true`/`false`,
//!   `yes`/`no`;
//! - `ux`, `uy`, `uz` (m) and `vx`, `vy`, `vz` (m/s): the initial displacement and velocity
//!   (missing components are 0; `uz`, `vz` 3D only).
//!
//! Groups are selected by `[[region]]` entries of `shape = "group"`. A header of unknown
//! names and none of the extra columns is skipped and the columns are `x,y[,z],volume` by
//! position, as in a file without a header; one with an extra column and an unknown name is
//! an error naming it. Every other problem is an error naming `geometry.points_csv`, the
//! file, the line number, the column and what is wrong. A cloud needs at least two points,
//! and no two points may share their coordinates (both lines are named): such a pair has no
//! bond direction, and a zero-length bond turns every force into NaN.

use super::file_nodes::{FileNodes, NodeGroup};
use crate::model::validate::num;
use crate::{Error, Result};
use std::collections::HashMap;
use std::path::Path;

/// The field every error of this module names.
const FIELD: &str = "geometry.points_csv";

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Column {
    /// Coordinate along an axis.
    X(usize),
    Volume,
    Material,
    /// The name of the node's group.
    Region,
    /// Membership of group k (index into the groups).
    Member(usize),
    /// Initial displacement along an axis.
    U(usize),
    /// Initial velocity along an axis.
    V(usize),
}

/// The column of header name `name` (lower case, trimmed), if it is one; `region:NAME`
/// registers group `NAME` in `groups`.
fn column_of(name: &str, raw: &str, groups: &mut Vec<String>) -> Option<Column> {
    let axis = |c: char| "xyz".find(c);
    Some(match name {
        "volume" => Column::Volume,
        "material" => Column::Material,
        "region" | "group" => Column::Region,
        _ if name.len() == 1 => Column::X(axis(name.chars().next()?)?),
        _ if name.len() == 2 && name.starts_with('u') => Column::U(axis(name.chars().nth(1)?)?),
        _ if name.len() == 2 && name.starts_with('v') => Column::V(axis(name.chars().nth(1)?)?),
        _ => {
            let (_, rest) = raw.split_once(':')?;
            let prefix = name.split(':').next()?.trim();
            if !(prefix == "region" || prefix == "group") || rest.trim().is_empty() {
                return None;
            }
            groups.push(rest.trim().to_string());
            Column::Member(groups.len() - 1)
        }
    })
}

/// The nodes listed in the CSV file at `path`: positions (z = 0 in 2D), volumes, and what the
/// named columns give.
pub(crate) fn read_points(path: &Path, dim: usize) -> Result<FileNodes> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::model(FIELD, format!("cannot read {}: {e}", path.display())))?;
    parse_points(&text, dim, &path.display().to_string())
}

/// The columns of a named header, or `None` for a legacy header; an error names a column
/// that a named header cannot have.
fn header(
    fields: &[&str],
    dim: usize,
    line: usize,
    origin: &str,
    groups: &mut Vec<String>,
) -> Result<Option<Vec<Column>>> {
    let at = |m: String| Error::model(FIELD, format!("{origin} line {line}: {m}"));
    let mut columns = Vec::new();
    let mut unknown = Vec::new();
    for (c, f) in fields.iter().enumerate() {
        let name = f.to_ascii_lowercase();
        match column_of(name.trim(), f, groups) {
            Some(col) => columns.push(col),
            None => unknown.push(format!("column {} '{f}'", c + 1)),
        }
    }
    if !unknown.is_empty() {
        // a header naming none of the extra columns is the legacy one, skipped
        let extra = |c: &Column| !matches!(c, Column::X(_) | Column::Volume);
        if !columns.iter().any(extra) {
            groups.clear();
            return Ok(None);
        }
        return Err(at(format!(
            "{} not a known column; known: x, y{}, volume, material, region, region:NAME, \
             ux, uy{}, vx, vy{}",
            unknown.join(", ") + if unknown.len() == 1 { " is" } else { " are" },
            if dim == 3 { ", z" } else { "" },
            if dim == 3 { ", uz" } else { "" },
            if dim == 3 { ", vz" } else { "" },
        )));
    }
    for (c, col) in columns.iter().enumerate() {
        if let Column::X(a) | Column::U(a) | Column::V(a) = col {
            if *a >= dim {
                return Err(at(format!(
                    "column {} '{}' is a z component, but the model is 2D",
                    c + 1,
                    fields[c]
                )));
            }
        }
        if let Some(k) = columns[..c].iter().position(|o| o == col) {
            return Err(at(format!(
                "column {} '{}' repeats column {}",
                c + 1,
                fields[c],
                k + 1
            )));
        }
    }
    let required: Vec<Column> = (0..dim).map(Column::X).chain([Column::Volume]).collect();
    if let Some(missing) = required.iter().find(|r| !columns.contains(r)) {
        let name = match missing {
            Column::X(a) => ["x", "y", "z"][*a],
            _ => "volume",
        };
        return Err(at(format!(
            "no '{name}' column; a named header needs x, y{}, volume",
            if dim == 3 { ", z" } else { "" }
        )));
    }
    Ok(Some(columns))
}

/// A boolean cell: `1`/`0`, `true`/`false`, `yes`/`no` (case ignored), empty for no.
fn boolean(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" => Some(true),
        "0" | "false" | "no" | "" => Some(false),
        _ => None,
    }
}

/// Parse the CSV `text` (`origin` names the file in messages).
pub(crate) fn parse_points(text: &str, dim: usize, origin: &str) -> Result<FileNodes> {
    let legacy = if dim == 3 {
        "x,y,z,volume"
    } else {
        "x,y,volume"
    };
    let mut columns: Vec<Column> = (0..dim).map(Column::X).chain([Column::Volume]).collect();
    let mut names: Vec<String> = legacy.split(',').map(String::from).collect();
    let mut named = false;
    let mut group_names: Vec<String> = Vec::new();
    let mut members: Vec<Vec<usize>> = Vec::new();
    let mut nodes = FileNodes::default();
    let (mut material, mut u, mut v) = (Vec::new(), Vec::new(), Vec::new());
    // the line of every point, keyed by its coordinates' bits (-0 counted as 0)
    let mut seen: HashMap<[u64; 3], usize> = HashMap::new();
    let mut first = true;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (k, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let is_first = std::mem::replace(&mut first, false);
        if is_first && fields.iter().all(|f| f.parse::<f64>().is_err()) {
            let mut groups = Vec::new();
            if let Some(cols) = header(&fields, dim, k + 1, origin, &mut groups)? {
                columns = cols;
                names = fields.iter().map(|f| f.to_string()).collect();
                named = true;
                members = vec![Vec::new(); groups.len()];
                group_names = groups;
            }
            continue;
        }
        let at =
            |message: String| Error::model(FIELD, format!("{origin} line {}: {message}", k + 1));
        if fields.len() != columns.len() {
            return Err(at(format!(
                "{} columns; expected {} ({})",
                fields.len(),
                columns.len(),
                names.join(",")
            )));
        }
        let node = nodes.positions.len();
        let mut p = [0.0; 3];
        let (mut volume, mut id) = (0.0, 0i64);
        let (mut du, mut dv) = ([0.0; 3], [0.0; 3]);
        for (c, (f, col)) in fields.iter().zip(&columns).enumerate() {
            let number = || -> Result<f64> {
                let x = f.parse::<f64>().map_err(|_| {
                    at(format!(
                        "column {} ({}) '{f}' is not a number",
                        c + 1,
                        names[c]
                    ))
                })?;
                Ok(x)
            };
            match *col {
                Column::Region => {
                    if !f.is_empty() {
                        let g = match group_names.iter().position(|n| n == f) {
                            Some(g) => g,
                            None => {
                                group_names.push(f.to_string());
                                members.push(Vec::new());
                                group_names.len() - 1
                            }
                        };
                        members[g].push(node);
                    }
                }
                Column::Member(g) => match boolean(f) {
                    Some(true) => members[g].push(node),
                    Some(false) => {}
                    None => {
                        return Err(at(format!(
                            "column {} ({}) '{f}' is not 1/0, true/false or yes/no",
                            c + 1,
                            names[c]
                        )))
                    }
                },
                Column::Material => {
                    id = f.parse::<i64>().map_err(|_| {
                        at(format!(
                            "column {} ({}) '{f}' is not an integer material id",
                            c + 1,
                            names[c]
                        ))
                    })?;
                }
                Column::Volume => volume = number()?,
                Column::X(a) | Column::U(a) | Column::V(a) => {
                    let x = number()?;
                    if !x.is_finite() {
                        return Err(at(format!(
                            "column {} ({}): {} is not finite",
                            c + 1,
                            names[c],
                            x
                        )));
                    }
                    match *col {
                        Column::X(_) => p[a] = x,
                        Column::U(_) => du[a] = x,
                        _ => dv[a] = x,
                    }
                }
            }
        }
        let valid = volume > 0.0 && volume.is_finite() && volume.is_normal();
        if !valid {
            let c = columns
                .iter()
                .position(|c| *c == Column::Volume)
                .unwrap_or(dim);
            return Err(at(format!(
                "column {}: volume {} is out of range; expected a finite value > 0 \
                 (at least {:e} m^3)",
                c + 1,
                num(volume),
                f64::MIN_POSITIVE
            )));
        }
        if nodes.positions.len() >= super::lattice::MAX_NODES {
            return Err(at(format!(
                "more than {} points (2^31 - 16, the node index limit)",
                super::lattice::MAX_NODES
            )));
        }
        let key = p.map(|x| (x + 0.0).to_bits());
        if let Some(first) = seen.insert(key, k + 1) {
            let shown: Vec<&str> = (0..dim)
                .filter_map(|a| columns.iter().position(|c| *c == Column::X(a)))
                .map(|c| fields[c])
                .collect();
            return Err(at(format!(
                "the point ({}) repeats line {first}: every point needs its own coordinates",
                shown.join(", ")
            )));
        }
        nodes.positions.push(p);
        nodes.volumes.push(volume);
        material.push(id);
        u.push(du);
        v.push(dv);
    }
    match nodes.positions.len() {
        0 => {
            return Err(Error::model(
                FIELD,
                format!("{origin}: no points; expected lines of {}", names.join(",")),
            ))
        }
        1 => {
            return Err(Error::model(
                FIELD,
                format!(
                    "{origin}: 1 point; a body needs at least 2 (lines of {})",
                    names.join(",")
                ),
            ))
        }
        _ => {}
    }
    let has = |f: fn(&Column) -> bool| named && columns.iter().any(f);
    if has(|c| *c == Column::Material) {
        nodes.material_ids = Some(material);
    }
    if has(|c| matches!(c, Column::U(_))) {
        nodes.displacement = Some(u);
    }
    if has(|c| matches!(c, Column::V(_))) {
        nodes.velocity = Some(v);
    }
    nodes.groups = group_names
        .into_iter()
        .zip(members)
        .map(|(name, nodes)| NodeGroup {
            name,
            number: None,
            nodes,
        })
        .collect();
    Ok(nodes)
}
