//! Point-cloud input: a CSV file of nodes, `x,y,volume` (2D) or `x,y,z,volume` (3D), in metres
//! and m^3 (in 2D the volume column is the nodal volume including the thickness, as stored in
//! `Body::volumes`).
//!
//! Format: comma-separated; blank lines and `#` comments (whole line or trailing) are ignored;
//! the first non-blank line may be a header, recognized by none of its fields parsing as a
//! number (`x,y,volume`). Every other problem is an error naming `geometry.points_csv`, the
//! file, the line number, the column and what is wrong. A cloud needs at least two points, and
//! no two points may share their coordinates (both lines are named): such a pair has no bond
//! direction, and a zero-length bond turns every force into NaN.

use crate::model::validate::num;
use crate::{Error, Result};
use std::collections::HashMap;
use std::path::Path;

/// The field every error of this module names.
const FIELD: &str = "geometry.points_csv";

/// Positions (z = 0 in 2D) and volumes of the nodes listed in the CSV file at `path`.
pub(crate) fn read_points(path: &Path, dim: usize) -> Result<(Vec<[f64; 3]>, Vec<f64>)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::model(FIELD, format!("cannot read {}: {e}", path.display())))?;
    parse_points(&text, dim, &path.display().to_string())
}

/// Parse the CSV `text` (`origin` names the file in messages).
pub(crate) fn parse_points(
    text: &str,
    dim: usize,
    origin: &str,
) -> Result<(Vec<[f64; 3]>, Vec<f64>)> {
    let columns = if dim == 3 {
        "x,y,z,volume"
    } else {
        "x,y,volume"
    };
    let names: Vec<&str> = columns.split(',').collect();
    let mut positions = Vec::new();
    let mut volumes = Vec::new();
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
            continue;
        }
        let at =
            |message: String| Error::model(FIELD, format!("{origin} line {}: {message}", k + 1));
        if fields.len() != dim + 1 {
            return Err(at(format!(
                "{} columns; expected {} ({columns})",
                fields.len(),
                dim + 1
            )));
        }
        let mut values = [0.0; 4];
        for (c, f) in fields.iter().enumerate() {
            values[c] = f.parse::<f64>().map_err(|_| {
                at(format!(
                    "column {} ({}) '{f}' is not a number",
                    c + 1,
                    names[c]
                ))
            })?;
        }
        let mut p = [0.0; 3];
        p[..dim].copy_from_slice(&values[..dim]);
        if let Some(c) = p.iter().position(|x| !x.is_finite()) {
            return Err(at(format!(
                "column {} ({}): {} is not finite",
                c + 1,
                names[c],
                p[c]
            )));
        }
        let volume = values[dim];
        let valid = volume > 0.0 && volume.is_finite() && volume.is_normal();
        if !valid {
            return Err(at(format!(
                "column {}: volume {} is out of range; expected a finite value > 0 \
                 (at least {:e} m^3)",
                dim + 1,
                num(volume),
                f64::MIN_POSITIVE
            )));
        }
        if positions.len() >= super::lattice::MAX_NODES {
            return Err(at(format!(
                "more than {} points (2^31 - 16, the node index limit)",
                super::lattice::MAX_NODES
            )));
        }
        let key = p.map(|x| (x + 0.0).to_bits());
        if let Some(first) = seen.insert(key, k + 1) {
            return Err(at(format!(
                "the point ({}) repeats line {first}: every point needs its own coordinates",
                fields[..dim].join(", ")
            )));
        }
        positions.push(p);
        volumes.push(volume);
    }
    match positions.len() {
        0 => Err(Error::model(
            FIELD,
            format!("{origin}: no points; expected lines of {columns}"),
        )),
        1 => Err(Error::model(
            FIELD,
            format!("{origin}: 1 point; a body needs at least 2 (lines of {columns})"),
        )),
        _ => Ok((positions, volumes)),
    }
}
