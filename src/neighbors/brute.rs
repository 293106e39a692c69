//! O(n^2) reference neighbour search.

use super::Families;

/// Families of radius `radius` by testing every pair (tests only; O(n^2)).
pub fn brute_force_families(positions: &[[f64; 3]], dim: usize, radius: f64) -> Families {
    let _ = (positions, dim, radius);
    unimplemented!("brute")
}
