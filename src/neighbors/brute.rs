//! O(n^2) reference neighbour search: tests every pair with the shared predicate
//! [`within_radius`](super::within_radius). Positions and radius in metres.

use super::{within_radius, Families};
use rayon::prelude::*;

/// Families of radius `radius` by testing every pair (tests only; O(n^2)).
///
/// Parallel over `i`; each family is built in ascending `j`, so the result does not depend on
/// the thread count.
pub fn brute_force_families(positions: &[[f64; 3]], dim: usize, radius: f64) -> Families {
    assert!(dim == 2 || dim == 3, "dimension must be 2 or 3, got {dim}");
    assert!(
        positions.len() <= u32::MAX as usize,
        "node indices must fit in u32"
    );
    let r2 = super::family_radius_squared(radius);
    let lists: Vec<Vec<u32>> = positions
        .par_iter()
        .enumerate()
        .map(|(i, xi)| {
            positions
                .iter()
                .enumerate()
                .filter(|&(j, xj)| j != i && within_radius(xi, xj, dim, r2))
                .map(|(j, _)| j as u32)
                .collect()
        })
        .collect();
    let mut offsets = Vec::with_capacity(positions.len() + 1);
    offsets.push(0);
    for list in &lists {
        offsets.push(offsets[offsets.len() - 1] + list.len());
    }
    let neighbors = lists.concat();
    Families { offsets, neighbors }
}
