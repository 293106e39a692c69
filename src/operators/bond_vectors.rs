//! The per-row bond vectors of the matrix formulation: the reference bond vector and length
//! and the bond coefficients `a`, `g` (and in half storage `g_ji`, `a_ij`), `w`. One home,
//! owned by [`Operators`](super::Operators): the CPU matrix backend computes from it, the GPU
//! one uploads it, and both count its bytes here.
//!
//! Units: `xi`, `length` m; `a` N/m^7; `g` N/m^6; `w` m^6.

use crate::material::Law;
use crate::Real;

use super::Storage;

/// The seven per-row vectors, in the order of [`BondVectors::NAMES`].
#[derive(Debug, Clone)]
pub struct BondVectors<T> {
    /// Reference bond vector `xi = X_j - X_i` per row, `d` components, m.
    pub xi: Vec<T>,
    /// Reference bond length `x` per row, m.
    pub length: Vec<T>,
    /// `a` per row (half: `a_ij + a_ji`).
    pub a: Vec<T>,
    /// `g` per row, multiplying the dilatation of the first node (empty for PMB).
    pub g: Vec<T>,
    /// Half storage, LPS: `g_ji`, multiplying the dilatation of the second node; else empty.
    pub g_second: Vec<T>,
    /// Half storage, LPS: `a_ij` (the first node's share of `a`), for the energy; else empty.
    pub a_first: Vec<T>,
    /// Weights `w = beta V_i V_j` per row, m^6.
    pub w: Vec<T>,
}

impl<T: Real> BondVectors<T> {
    /// The vectors' names, in the order of [`BondVectors::all`] and [`BondVectors::lengths`].
    pub const NAMES: [&'static str; 7] = ["xi", "length", "a", "g", "g_second", "a_first", "w"];

    /// The seven vectors, in the order of [`BondVectors::NAMES`].
    pub fn all(&self) -> [&Vec<T>; 7] {
        [
            &self.xi,
            &self.length,
            &self.a,
            &self.g,
            &self.g_second,
            &self.a_first,
            &self.w,
        ]
    }

    /// Values of each vector, in the order of [`BondVectors::NAMES`].
    pub fn lengths(&self) -> [usize; 7] {
        self.all().map(|v| v.len())
    }

    /// Bytes of the seven vectors.
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<T>() * self.lengths().iter().sum::<usize>()
    }
}

/// Values of each bond vector (order of [`BondVectors::NAMES`]) for `rows` bond rows in
/// dimension `d` of a material with `law` in `storage`, without assembling: `xi` has `d`
/// per row; `length`, `a`, `w` one; `g` one for LPS; `g_second` and `a_first` one for LPS in
/// half storage; the others none.
pub fn bond_vector_lengths(rows: usize, d: usize, law: &Law, storage: Storage) -> [usize; 7] {
    let lps = matches!(law, Law::Lps { .. });
    let half_lps = lps && storage == Storage::Half;
    let per = |keep: bool| if keep { rows } else { 0 };
    [
        d * rows,
        rows,
        rows,
        per(lps),
        per(half_lps),
        per(half_lps),
        rows,
    ]
}
