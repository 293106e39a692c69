//! Bond laws, one file each (`pmb.rs`, `lps.rs`): the law's parameters as one plain
//! `#[repr(C)]` struct that the CPU code reads and the kernels receive field for field (its
//! CUDA twin in `kernels/law_<name>.cuh`, the sizes asserted on both sides), and its
//! bond-level formulas as pure functions, generic over the precision, that the loop and
//! matrix forms call (the kernels' twins of them in the same `.cuh`), so the schemes cannot
//! drift apart. The bond geometry every law shares (stretch, extension) is here.
//!
//! Units: lengths m, stretch dimensionless, moduli Pa, micromodulus N/m^6.

pub mod lps;
pub mod pmb;
pub mod softening;

pub use lps::LpsParams;
pub use pmb::PmbParams;
pub use softening::Softening;

use super::{Law, MaterialConstants};
use crate::Real;

/// The parameters of every law, as the bond kernels receive them (`BondParams::law`): the
/// material's own law filled in, the other left zero.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LawParams {
    pub pmb: PmbParams,
    pub lps: LpsParams,
    /// A softening damage law's points (PMB with `damage_law` bilinear or trilinear; zero
    /// for the brittle law).
    pub softening: Softening,
}

/// Bytes of [`LawParams`] (the kernels' `BondParams::law`).
pub const LAW_PARAMS_BYTES: usize =
    pmb::PMB_PARAMS_BYTES + lps::LPS_PARAMS_BYTES + softening::SOFTENING_BYTES;
const _: () = assert!(std::mem::size_of::<LawParams>() == LAW_PARAMS_BYTES);

impl LawParams {
    /// The parameters of `m`'s law.
    pub fn of(m: &MaterialConstants) -> Self {
        match m.law {
            Law::Pmb { .. } => LawParams {
                pmb: PmbParams::of(m),
                softening: m.softening.unwrap_or_default(),
                ..LawParams::default()
            },
            Law::Lps { .. } => LawParams {
                lps: LpsParams::of(m),
                ..LawParams::default()
            },
        }
    }
}

/// A small fixed vector of `d <= 3` components (unused components are zero).
pub type Vec3<T> = [T; 3];

#[inline(always)]
pub fn dot<T: Real>(a: &Vec3<T>, b: &Vec3<T>) -> T {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

#[inline(always)]
pub fn norm<T: Real>(a: &Vec3<T>) -> T {
    dot(a, a).sqrt()
}

/// Nonlinear bond stretch `(|y| - x) / x` with `y = xi + eta`, written as
/// `eta.(2 xi + eta) / (x (|y| + x))`, which keeps its digits in `f32` where the naive
/// difference of two nearly equal lengths loses about four. Returns `(s, |y|)`.
#[inline(always)]
pub fn stretch<T: Real>(xi: &Vec3<T>, eta: &Vec3<T>, x: T) -> (T, T) {
    let two = T::one() + T::one();
    let y = [xi[0] + eta[0], xi[1] + eta[1], xi[2] + eta[2]];
    let w = [
        two * xi[0] + eta[0],
        two * xi[1] + eta[1],
        two * xi[2] + eta[2],
    ];
    stretch_of(dot(eta, &w), dot(&y, &y), x)
}

/// [`stretch`] from its two dot products: `num = eta.(2 xi + eta)` and `y2 = |y|^2`.
/// Returns `(s, |y|)`.
#[inline(always)]
pub fn stretch_of<T: Real>(num: T, y2: T, x: T) -> (T, T) {
    let ly = y2.sqrt();
    (num / (x * (ly + x)), ly)
}

/// Linearized extension `e = n . eta` for the unit bond vector `n`.
#[inline(always)]
pub fn extension<T: Real>(xi: &Vec3<T>, eta: &Vec3<T>, x: T) -> T {
    dot(xi, eta) / x
}
