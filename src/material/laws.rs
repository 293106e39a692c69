//! Pure bond laws, generic over the precision: the loop kernels and the matrix backend's bond
//! kernel both call these, so the two schemes cannot drift apart.

use crate::Real;

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
    let ly = norm(&y);
    let w = [
        two * xi[0] + eta[0],
        two * xi[1] + eta[1],
        two * xi[2] + eta[2],
    ];
    (dot(eta, &w) / (x * (ly + x)), ly)
}

/// Linearized extension `e = n . eta` for the unit bond vector `n`.
#[inline(always)]
pub fn extension<T: Real>(xi: &Vec3<T>, eta: &Vec3<T>, x: T) -> T {
    dot(xi, eta) / x
}

/// PMB micropotential of one bond, J/m^6 (times `V_i V_j` it is energy): `c s^2 x / 2`.
#[inline(always)]
pub fn pmb_micropotential(c: f64, s: f64, x: f64) -> f64 {
    0.5 * c * s * s * x
}
