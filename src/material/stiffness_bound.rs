//! Gerschgorin bounds on the rows of the linearized stiffness (force density per unit
//! displacement, N/m^4), per node: the stable explicit time step (`theory.md` section 2) and
//! the fictitious density of adaptive dynamic relaxation (section 5) both come from them.

use super::bonds::BondData;
use super::constants::{Law, MaterialConstants};
use crate::geometry::Body;
use crate::neighbors::Families;
use rayon::prelude::*;

/// Unit vector and length of bond `i -> j`.
#[inline]
fn unit(p: &[[f64; 3]], i: usize, j: usize) -> ([f64; 3], f64) {
    let xi = [p[j][0] - p[i][0], p[j][1] - p[i][1], p[j][2] - p[i][2]];
    let x = (xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]).sqrt();
    ([xi[0] / x, xi[1] / x, xi[2] / x], x)
}

/// Per-node LPS coefficients: `alpha_i` and `p_i = d K_d / m_i - alpha_i / d`.
pub fn lps_node_coefficients(
    m: &MaterialConstants,
    weighted_volume: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let Law::Lps { kd, g, .. } = m.law else {
        return (
            vec![0.0; weighted_volume.len()],
            vec![0.0; weighted_volume.len()],
        );
    };
    let d = m.d() as f64;
    let a_factor = if m.d() == 3 { 15.0 } else { 8.0 };
    let alpha: Vec<f64> = weighted_volume
        .iter()
        .map(|&wv| if wv > 0.0 { a_factor * g / wv } else { 0.0 })
        .collect();
    let p = weighted_volume
        .iter()
        .zip(&alpha)
        .map(|(&wv, &a)| if wv > 0.0 { d * kd / wv - a / d } else { 0.0 })
        .collect();
    (alpha, p)
}

/// Per node, the largest Gerschgorin row sum `R_i = max_a sum_c |K_(ia),c|` of the linearized
/// stiffness in force-density units (an upper bound for LPS, whose dilatation couples nodes
/// up to `2 delta` apart).
pub fn row_bounds(
    body: &Body,
    fam: &Families,
    bonds: &BondData,
    m: &MaterialConstants,
) -> Vec<f64> {
    let p = &body.positions;
    let v = &body.volumes;
    let d = m.d();
    let (alpha, pc) = lps_node_coefficients(m, &bonds.weighted_volume);
    // T_k bounds the l1 norm of the gradient of theta_k with respect to all displacements.
    let t: Vec<f64> = (0..body.len())
        .into_par_iter()
        .map(|k| {
            let wv = bonds.weighted_volume[k];
            if wv <= 0.0 {
                return 0.0;
            }
            let s: f64 = fam
                .range(k)
                .map(|b| {
                    let (n, x) = unit(p, k, fam.neighbors[b] as usize);
                    let n1 = n[..d].iter().map(|c| c.abs()).sum::<f64>();
                    m.omega(x) * x * bonds.beta[b] * v[fam.neighbors[b] as usize] * 2.0 * n1
                })
                .sum();
            d as f64 / wv * s
        })
        .collect();
    (0..body.len())
        .into_par_iter()
        .map(|i| {
            let mut diag = [[0.0f64; 3]; 3];
            let mut off = [0.0f64; 3];
            for b in fam.range(i) {
                let j = fam.neighbors[b] as usize;
                let (n, x) = unit(p, i, j);
                let bv = bonds.beta[b] * v[j];
                let (k, dil) = match m.law {
                    Law::Pmb { c, .. } => (c * bonds.correction(b) * bv / x, 0.0),
                    Law::Lps { .. } => {
                        let w = m.omega(x);
                        let k = (alpha[i] + alpha[j]) * w * bv;
                        let dil = bv * w * x * (pc[i].abs() * t[i] + pc[j].abs() * t[j]);
                        (k, dil)
                    }
                };
                let n1 = n[..d].iter().map(|c| c.abs()).sum::<f64>();
                for a in 0..d {
                    for c in 0..d {
                        diag[a][c] += k * n[a] * n[c];
                    }
                    off[a] += k * n[a].abs() * n1 + dil * n[a].abs();
                }
            }
            (0..d)
                .map(|a| diag[a][..d].iter().map(|x| x.abs()).sum::<f64>() + off[a])
                .fold(0.0, f64::max)
        })
        .collect()
}

/// Stable explicit time step, s, before the safety factor: for PMB the Silling-Askari bound
/// `min_i sqrt(2 rho / sum_j c beta V_j / x)`, for LPS Gerschgorin's `min_i 2 sqrt(rho / R_i)`.
pub fn stable_time_step(
    body: &Body,
    fam: &Families,
    bonds: &BondData,
    m: &MaterialConstants,
) -> f64 {
    let per_node: Vec<f64> = match m.law {
        Law::Pmb { c, .. } => (0..body.len())
            .into_par_iter()
            .map(|i| {
                let s: f64 = fam
                    .range(i)
                    .map(|b| {
                        let j = fam.neighbors[b] as usize;
                        let (_, x) = unit(&body.positions, i, j);
                        c * bonds.correction(b) * bonds.beta[b] * body.volumes[j] / x
                    })
                    .sum();
                (2.0 * m.density / s).sqrt()
            })
            .collect(),
        Law::Lps { .. } => row_bounds(body, fam, bonds, m)
            .into_iter()
            .map(|r| 2.0 * (m.density / r).sqrt())
            .collect(),
    };
    per_node
        .into_iter()
        .filter(|dt| dt.is_finite())
        .fold(f64::INFINITY, f64::min)
}
