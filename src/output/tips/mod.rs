//! Crack tips as an output: `crack_tips.csv` and the `crack_tips` block of `summary.json`
//! (`docs/crack-tips.md`). Pure functions of node positions, damage and masks; the run
//! driver (`solver/tips.rs`) feeds them. Lengths in metres, times in seconds, speeds in m/s.
//!
//! - [`finder`]: the cracks of one damage field (threshold, components, skeleton, tips);
//! - [`tracker`]: tips matched from sample to sample, their ids, branching, speeds;
//! - [`csv`]: the file;
//! - [`columns`]: a thin 3D plate read through its thickness (one point per column);
//! - here: the threshold rule ([`threshold_for`]) and the exclusion zone
//!   ([`exclusion_mask`]).

pub mod columns;
pub mod csv;
pub mod finder;
pub mod tracker;

pub use columns::Columns;
pub use csv::TipCsv;
pub use finder::{find_cracks, find_cracks_among, Crack, DamageField};
pub use tracker::{TipRow, TipStats, TipTracker, Track, TrackerMemory};

use crate::neighbors::{CellList, FamilyFinder};
use rayon::prelude::*;

/// The damage threshold of seed 000 at its horizon of 3.015 dx.
pub const SEED_THRESHOLD: f64 = 0.38;
/// The horizon (in spacings) the seed's threshold belongs to.
pub const SEED_HORIZON: f64 = 3.015;

/// The damage of a lattice node next to a long straight crack: the fraction of its family
/// (the lattice offsets within `m` spacings, `dim` = 2 or 3) that crosses a line (2D) or
/// plane (3D) half a spacing away. 11/28 at `m` = 3.015 in 2D.
pub fn adjacent_damage(dim: usize, m: f64) -> f64 {
    let r = m.max(1.0) * (1.0 + 1e-9);
    let k = r.floor() as i64;
    let z_range = if dim == 3 { -k..=k } else { 0..=0 };
    let (mut family, mut crossing) = (0usize, 0usize);
    for a in -k..=k {
        for b in -k..=k {
            for c in z_range.clone() {
                let d2 = (a * a + b * b + c * c) as f64;
                if d2 == 0.0 || d2 > r * r {
                    continue;
                }
                family += 1;
                // the crack lies half a spacing above the node on the last axis
                let across = if dim == 3 { c } else { b };
                if across >= 1 {
                    crossing += 1;
                }
            }
        }
    }
    crossing as f64 / family as f64
}

/// The damage threshold for a horizon of `m` spacings in `dim` dimensions: the seed's 0.38
/// scaled by the damage of a node next to a crack, [`adjacent_damage`], relative to its value
/// at the seed's 3.015 in 2D. So 0.38 at 3.015 in 2D, and in general about 97% of the damage
/// of the two node rows a crack runs between, above that of the rows beyond.
pub fn threshold_for(dim: usize, m: f64) -> f64 {
    SEED_THRESHOLD * (adjacent_damage(dim, m) / adjacent_damage(2, SEED_HORIZON))
}

/// Nodes whose damage the finder does not read: those within the horizon `delta` (m) of the
/// body's boundary, that is whose family of radius `delta` is smaller than the largest one
/// (a lattice node sees the boundary within its horizon as missing neighbours), and those
/// within `delta` of a node of a loaded region (`loaded`, per node).
pub fn exclusion_mask(
    positions: &[[f64; 3]],
    dim: usize,
    delta: f64,
    loaded: &[bool],
) -> Vec<bool> {
    if positions.is_empty() {
        return Vec::new();
    }
    let list = FamilyFinder::Cells(CellList::new(positions, dim, delta));
    exclusion_mask_by(&list, loaded)
}

/// [`exclusion_mask`] with the families of radius `delta` found by `finder` (a lattice's
/// stencil finds them without a search).
pub fn exclusion_mask_by(finder: &FamilyFinder, loaded: &[bool]) -> Vec<bool> {
    let sizes: Vec<(usize, bool)> = (0..loaded.len())
        .into_par_iter()
        .map_init(Vec::new, |family, i| {
            finder.family_into(i, family);
            let near_load = loaded[i] || family.iter().any(|&j| loaded[j as usize]);
            (family.len(), near_load)
        })
        .collect();
    let full = sizes.iter().map(|s| s.0).max().unwrap_or(0);
    sizes
        .into_iter()
        .map(|(size, near_load)| near_load || size < full)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The seed's threshold is recovered at its horizon; the lattice counts are exact.
    #[test]
    fn threshold_rule() {
        assert_eq!(adjacent_damage(2, 3.015), 11.0 / 28.0);
        assert_eq!(threshold_for(2, 3.015), 0.38);
        // 3D at 3.015: 122 offsets in the ball, 47 of them above the plane
        assert_eq!(adjacent_damage(3, 3.015), 47.0 / 122.0);
        let t3 = threshold_for(3, 3.015);
        assert!(t3 > 47.0 / 122.0 * 0.96 && t3 < 47.0 / 122.0);
    }

    // A 5 x 5 lattice, horizon 1 spacing: the 3 x 3 core is interior, the ring excluded; a
    // loaded corner node also excludes its neighbours.
    #[test]
    fn exclusion_of_boundary_and_loads() {
        let positions: Vec<[f64; 3]> = (0..25)
            .map(|k| [(k % 5) as f64, (k / 5) as f64, 0.0])
            .collect();
        let none = vec![false; 25];
        let mask = exclusion_mask(&positions, 2, 1.0, &none);
        let interior: Vec<usize> = (0..25).filter(|&k| !mask[k]).collect();
        assert_eq!(interior, vec![6, 7, 8, 11, 12, 13, 16, 17, 18]);
        let mut loaded = none.clone();
        loaded[1] = true;
        let mask = exclusion_mask(&positions, 2, 1.0, &loaded);
        let interior: Vec<usize> = (0..25).filter(|&k| !mask[k]).collect();
        assert_eq!(interior, vec![7, 8, 11, 12, 13, 16, 17, 18]);
    }
}
