//! A thin 3D plate read through its thickness: the crack-tip finder sees one point per
//! lattice column across the plate, whose damage is the mean over the column's layers that
//! lie at least a horizon inside both faces (or, where none does, the layer or two nearest
//! the mid-plane). Lengths in metres, damage dimensionless.
//!
//! Why: a crack through a plate's thickness is a surface; its extreme points in 3D are
//! points of its front, which jump between layers from sample to sample (a front that runs
//! a little ahead in one layer, then in another), so a tip followed in 3D moves faster than
//! the crack. The layers within a horizon of a face have smaller families, sit in the
//! exclusion zone, and a through-crack touches them all along its length. Through the
//! thickness, the crack is a line in the plate's plane and its tips are the front's
//! position, as in a 2D model of the same plate.
//!
//! Thin: the body's extent along its thinnest axis (the lattice's, `max - min + dx`) is at
//! most [`THIN_RATIO`] of the next smallest; the nodes must stand in columns (every
//! coordinate on the lattice to 1% of `dx`), which lattice bodies do and point clouds in
//! general do not (they keep the 3D rule).

use crate::geometry::body::bounds;
use rayon::prelude::*;
use std::collections::HashMap;

/// A body is a thin plate when its thinnest extent is at most this fraction of the next.
pub const THIN_RATIO: f64 = 0.25;

/// The columns of a thin plate.
#[derive(Clone, Debug)]
pub struct Columns {
    /// The axis across the plate (0, 1, 2: x, y, z).
    pub axis: usize,
    /// The mid-plane's coordinate on that axis, m.
    pub mid: f64,
    /// The two in-plane axes, in order.
    plane: [usize; 2],
    /// Per column, its in-plane position as a 2D point (`[a, b, 0]`), m.
    pub positions: Vec<[f64; 3]>,
    /// Per column, the range of `nodes` it averages.
    offsets: Vec<usize>,
    nodes: Vec<u32>,
    /// Per column, the range of `all` (every node of the column, for the loaded mask).
    all_offsets: Vec<usize>,
    all: Vec<u32>,
}

impl Columns {
    /// The columns of a body with nodes at `positions` (3D, spacing `dx`, horizon `delta`),
    /// or `None` where the body is not a thin plate standing in lattice columns.
    pub fn of_thin_body(positions: &[[f64; 3]], dx: f64, delta: f64) -> Option<Columns> {
        if positions.len() < 2 || dx <= 0.0 {
            return None;
        }
        let (lo, hi) = bounds(positions);
        let extent = |k: usize| hi[k] - lo[k] + dx;
        let mut order = [0usize, 1, 2];
        order.sort_by(|&a, &b| extent(a).total_cmp(&extent(b)));
        let axis = order[0];
        if extent(axis) > THIN_RATIO * extent(order[1]) {
            return None;
        }
        let plane = if axis == 0 {
            [1, 2]
        } else if axis == 1 {
            [0, 2]
        } else {
            [0, 1]
        };
        let index = |p: &[f64; 3], k: usize| -> Option<i64> {
            let s = (p[k] - lo[k]) / dx;
            let r = s.round();
            ((s - r).abs() <= 0.01).then_some(r as i64)
        };
        let layers = chosen_layers(lo[axis], hi[axis], dx, delta);
        let mut columns: HashMap<(i64, i64), (Vec<u32>, Vec<u32>)> = HashMap::new();
        for (i, p) in positions.iter().enumerate() {
            let key = (index(p, plane[0])?, index(p, plane[1])?);
            let layer = index(p, axis)?;
            let entry = columns.entry(key).or_default();
            entry.1.push(i as u32);
            if layers.contains(&layer) {
                entry.0.push(i as u32);
            }
        }
        let mut keys: Vec<(i64, i64)> = columns
            .iter()
            .filter(|(_, c)| !c.0.is_empty())
            .map(|(k, _)| *k)
            .collect();
        keys.sort_unstable();
        let mut out = Columns {
            axis,
            mid: 0.5 * (lo[axis] + hi[axis]),
            plane,
            positions: Vec::with_capacity(keys.len()),
            offsets: vec![0],
            nodes: Vec::new(),
            all_offsets: vec![0],
            all: Vec::new(),
        };
        for key in keys {
            let (chosen, all) = &columns[&key];
            out.positions.push([
                lo[plane[0]] + key.0 as f64 * dx,
                lo[plane[1]] + key.1 as f64 * dx,
                0.0,
            ]);
            out.nodes.extend(chosen);
            out.offsets.push(out.nodes.len());
            out.all.extend(all);
            out.all_offsets.push(out.all.len());
        }
        Some(out)
    }

    /// Per column, the mean damage of its chosen layers.
    pub fn damage(&self, node_damage: &[f64]) -> Vec<f64> {
        (0..self.positions.len())
            .into_par_iter()
            .map(|c| {
                let members = &self.nodes[self.offsets[c]..self.offsets[c + 1]];
                let sum: f64 = members.iter().map(|&i| node_damage[i as usize]).sum();
                sum / members.len() as f64
            })
            .collect()
    }

    /// Per column, whether any of its nodes is marked in `node_mask`.
    pub fn any(&self, node_mask: &[bool]) -> Vec<bool> {
        (0..self.positions.len())
            .map(|c| {
                let members = &self.all[self.all_offsets[c]..self.all_offsets[c + 1]];
                members.iter().any(|&i| node_mask[i as usize])
            })
            .collect()
    }

    /// A point of the columns' plane (`[a, b, _]`) as a 3D position on the mid-plane.
    pub fn to_body(&self, p: [f64; 3]) -> [f64; 3] {
        let mut q = [0.0; 3];
        q[self.plane[0]] = p[0];
        q[self.plane[1]] = p[1];
        q[self.axis] = self.mid;
        q
    }

    /// The axis across the plate as a name.
    pub fn axis_name(&self) -> &'static str {
        ["x", "y", "z"][self.axis]
    }
}

/// The layer indices (from the layer at `lo`) a column averages, for layers from `lo` to
/// `hi` at spacing `dx`: those whose family reaches no face (at least `floor(delta / dx)`
/// layers inside both), else the one or two nearest the mid-plane.
fn chosen_layers(lo: f64, hi: f64, dx: f64, delta: f64) -> Vec<i64> {
    let count = ((hi - lo) / dx).round() as i64 + 1;
    let reach = (delta / dx * (1.0 + 1e-9)).floor() as i64;
    let inside: Vec<i64> = (0..count)
        .filter(|&k| k >= reach && count - 1 - k >= reach)
        .collect();
    if !inside.is_empty() {
        return inside;
    }
    if count % 2 == 1 {
        vec![count / 2]
    } else {
        vec![count / 2 - 1, count / 2]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plate(nx: usize, ny: usize, nz: usize) -> Vec<[f64; 3]> {
        let mut p = Vec::new();
        for k in 0..nz {
            for j in 0..ny {
                for i in 0..nx {
                    p.push([i as f64 + 0.5, j as f64 + 0.5, k as f64 + 0.5]);
                }
            }
        }
        p
    }

    // A 40 x 20 x 9 lattice at dx = 1 with a horizon of 3.015: thin along z (9 <= 0.25 x
    // 20 is false: 9 > 5), so not a plate; 40 x 40 x 9 is (9 <= 10). Its columns average
    // the three middle layers (3 inside both faces), and a field with damage d on layer k
    // averages to the middle layers' mean exactly.
    #[test]
    fn thin_plate_columns() {
        assert!(Columns::of_thin_body(&plate(40, 20, 9), 1.0, 3.015).is_none());
        let p = plate(40, 40, 9);
        let c = Columns::of_thin_body(&p, 1.0, 3.015).expect("a thin plate");
        assert_eq!((c.axis, c.axis_name(), c.mid), (2, "z", 4.5));
        assert_eq!(c.positions.len(), 1600);
        let damage: Vec<f64> = p.iter().map(|q| q[2]).collect();
        let columns = c.damage(&damage);
        // layers 3, 4, 5 (z = 3.5, 4.5, 5.5): mean 4.5
        assert!(columns.iter().all(|&d| (d - 4.5).abs() < 1e-12));
        assert_eq!(c.to_body([2.5, 7.5, 0.0]), [2.5, 7.5, 4.5]);
        let mut mask = vec![false; p.len()];
        mask[0] = true; // the column at (0.5, 0.5), bottom layer
        let any = c.any(&mask);
        assert_eq!(any.iter().filter(|&&m| m).count(), 1);
        assert!(any[0]);
    }

    // Four layers and a horizon of 3: no layer is inside both faces, so the two middle
    // ones are averaged; a plate across y maps its plane to (x, z).
    #[test]
    fn few_layers_and_other_axes() {
        assert_eq!(chosen_layers(0.5, 3.5, 1.0, 3.015), vec![1, 2]);
        assert_eq!(chosen_layers(0.5, 4.5, 1.0, 3.015), vec![2]);
        let p = plate(40, 4, 40);
        let c = Columns::of_thin_body(&p, 1.0, 3.015).expect("thin across y");
        assert_eq!((c.axis, c.mid), (1, 2.0));
        assert_eq!(c.to_body([1.5, 2.5, 0.0]), [1.5, 2.0, 2.5]);
    }

    // Nodes off the lattice (a point cloud) keep the 3D rule.
    #[test]
    fn off_lattice_is_not_columns() {
        let mut p = plate(40, 40, 4);
        p[7][0] += 0.3;
        assert!(Columns::of_thin_body(&p, 1.0, 3.015).is_none());
    }
}
