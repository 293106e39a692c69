//! Pre-cracks: bonds whose segment crosses a pre-crack start broken.

use crate::model::Precrack;

/// Whether the bond segment `a -> b` crosses `crack` (2D segment or 3D rectangle).
pub fn bond_crosses_precrack(crack: &Precrack, dim: usize, a: &[f64; 3], b: &[f64; 3]) -> bool {
    let _ = (crack, dim, a, b);
    unimplemented!("precrack")
}
