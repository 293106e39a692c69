//! Per-bond weights and per-node LPS coefficients in `f64`, before a backend rounds them to
//! its precision: PMB `w = c lambda beta V_j`, LPS `w = omega beta V_j`; LPS `alpha_i`,
//! `p_i = d K_d / m_i - alpha_i / d` and `d / m_i` (`theory.md` sections 2 and 3). The same
//! arithmetic as `CpuLoop::new`, so the backends start from identical numbers.

use crate::material::stiffness_bound::lps_node_coefficients;
use crate::material::Law;
use crate::setup::Problem;

/// The weight of directed bond `b` (`i -> j`, of length `x`): PMB with the pair's
/// micromodulus where there are several materials.
#[inline]
pub fn bond_weight(p: &Problem, b: usize, i: usize, j: usize, x: f64) -> f64 {
    let bv = p.bonds.beta[b] * p.body.volumes[j];
    weight_of(p, (i, j), bv, p.bonds.correction(b), x)
}

/// The weight of bond `i -> j` of length `x` with `bv = beta V_j` and surface correction
/// `lambda` (what [`bond_weight`] computes from stored bonds; a searched bond gives its own):
/// PMB with the pair's micromodulus where there are several materials.
#[inline]
pub fn weight_of(p: &Problem, (i, j): (usize, usize), bv: f64, lambda: f64, x: f64) -> f64 {
    let m = &p.material;
    match m.law {
        Law::Pmb { c, .. } => {
            let c = p.materials.as_ref().map_or(c, |map| map.c(i, j));
            c * lambda * bv
        }
        Law::Lps { .. } => m.omega(x) * bv,
    }
}

/// LPS per-node coefficients (all zero for bond-based models).
#[derive(Debug, Clone)]
pub struct LpsCoefficients {
    pub alpha: Vec<f64>,
    pub pcoef: Vec<f64>,
    pub d_over_m: Vec<f64>,
}

/// `alpha_i`, `p_i` and `d / m_i` of every node.
pub fn lps_coefficients(p: &Problem) -> LpsCoefficients {
    let m = &p.material;
    let (alpha, pcoef) = lps_node_coefficients(m, p.materials.as_ref(), &p.bonds.weighted_volume);
    let d = m.d() as f64;
    let d_over_m = p
        .bonds
        .weighted_volume
        .iter()
        .map(|&wv| if wv > 0.0 { d / wv } else { 0.0 })
        .collect();
    LpsCoefficients {
        alpha,
        pcoef,
        d_over_m,
    }
}
