//! Gerschgorin bounds on the rows of the linearized stiffness (force density per unit
//! displacement, N/m^4), per node: the stable explicit time step (`theory.md` section 2) and
//! the fictitious density of adaptive dynamic relaxation (section 5) both come from them.

use super::bonds::BondSource;
use super::constants::{Law, MaterialConstants};
use super::several::MaterialMap;
use crate::geometry::Body;
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};

/// Unit vector and length of bond `i -> j`.
#[inline]
fn unit(p: &[[f64; 3]], i: usize, j: usize) -> ([f64; 3], f64) {
    let xi = [p[j][0] - p[i][0], p[j][1] - p[i][1], p[j][2] - p[i][2]];
    let x = (xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]).sqrt();
    ([xi[0] / x, xi[1] / x, xi[2] / x], x)
}

/// Per-node LPS coefficients: `alpha_i` and `p_i = d K_d / m_i - alpha_i / d`, with node
/// `i`'s own material's `K_d` and `G` where there are several (`several`).
pub fn lps_node_coefficients(
    m: &MaterialConstants,
    several: Option<&MaterialMap>,
    weighted_volume: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let Law::Lps { .. } = m.law else {
        return (
            vec![0.0; weighted_volume.len()],
            vec![0.0; weighted_volume.len()],
        );
    };
    let moduli = |i: usize| match several.map_or(m.law, |map| map.of_node(i).law) {
        Law::Lps { kd, g, .. } => (kd, g),
        Law::Pmb { .. } => (0.0, 0.0),
    };
    let d = m.d() as f64;
    let a_factor = if m.d() == 3 { 15.0 } else { 8.0 };
    let alpha: Vec<f64> = weighted_volume
        .iter()
        .enumerate()
        .map(|(i, &wv)| {
            if wv > 0.0 {
                a_factor * moduli(i).1 / wv
            } else {
                0.0
            }
        })
        .collect();
    let p = weighted_volume
        .iter()
        .zip(&alpha)
        .enumerate()
        .map(|(i, (&wv, &a))| {
            if wv > 0.0 {
                d * moduli(i).0 / wv - a / d
            } else {
                0.0
            }
        })
        .collect();
    (alpha, p)
}

/// The PMB micromodulus of bond `i -> j`: the pair's where there are several materials.
#[inline]
fn micromodulus(c: f64, several: Option<&MaterialMap>, i: usize, j: usize) -> f64 {
    several.map_or(c, |map| map.c(i, j))
}

/// Per node, the largest Gerschgorin row sum `R_i = max_a sum_c |K_(ia),c|` of the linearized
/// stiffness in force-density units (an upper bound for LPS, whose dilatation couples nodes
/// up to `2 delta` apart). `weighted_volume`: the LPS `m_i` of every node; `several`: the
/// materials where there are several (each bond's own stiffness).
pub fn row_bounds(
    body: &Body,
    source: &impl BondSource,
    weighted_volume: &[f64],
    m: &MaterialConstants,
    several: Option<&MaterialMap>,
) -> Vec<f64> {
    row_bounds_of(body, source, weighted_volume, m, several, 0..body.len())
}

/// [`row_bounds`] of the nodes `nodes` alone (in their order): each row reads its own bonds
/// and, for LPS, the dilatation bound `T_k` of its neighbours, computed for those alone, so
/// a share of the nodes gives the same values as the whole.
pub fn row_bounds_of(
    body: &Body,
    source: &impl BondSource,
    weighted_volume: &[f64],
    m: &MaterialConstants,
    several: Option<&MaterialMap>,
    nodes: Range<usize>,
) -> Vec<f64> {
    let p = &body.positions;
    let v = &body.volumes;
    let d = m.d();
    let (alpha, pc) = lps_node_coefficients(m, several, weighted_volume);
    let lps = matches!(m.law, Law::Lps { .. });
    // (the nodes whose T_k a row of `nodes` reads: they and their neighbours)
    let whole = nodes == (0..body.len());
    let needed: Vec<AtomicBool> = match lps && !whole {
        true => (0..body.len()).map(|_| AtomicBool::new(false)).collect(),
        false => Vec::new(),
    };
    if !needed.is_empty() {
        nodes.clone().into_par_iter().for_each(|i| {
            needed[i].store(true, Ordering::Relaxed);
            source.for_each_bond(i, |j, _, _| needed[j].store(true, Ordering::Relaxed));
        });
    }
    // T_k bounds the l1 norm of the gradient of theta_k with respect to all displacements.
    let t: Vec<f64> = (0..body.len())
        .into_par_iter()
        .map(|k| {
            let wv = weighted_volume[k];
            if !lps || wv <= 0.0 || needed.get(k).is_some_and(|n| !n.load(Ordering::Relaxed)) {
                return 0.0;
            }
            let mut s = 0.0;
            source.for_each_bond(k, |j, beta, _| {
                let (n, x) = unit(p, k, j);
                let n1 = n[..d].iter().map(|c| c.abs()).sum::<f64>();
                s += m.omega(x) * x * beta * v[j] * 2.0 * n1;
            });
            d as f64 / wv * s
        })
        .collect();
    nodes
        .into_par_iter()
        .map(|i| {
            let mut diag = [[0.0f64; 3]; 3];
            let mut off = [0.0f64; 3];
            source.for_each_bond(i, |j, beta, lambda| {
                let (n, x) = unit(p, i, j);
                let bv = beta * v[j];
                let (k, dil) = match m.law {
                    Law::Pmb { c, .. } => (micromodulus(c, several, i, j) * lambda * bv / x, 0.0),
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
            });
            (0..d)
                .map(|a| diag[a][..d].iter().map(|x| x.abs()).sum::<f64>() + off[a])
                .fold(0.0, f64::max)
        })
        .collect()
}

/// The mass density of node `i`, kg/m^3: its material's where there are several.
fn density(m: &MaterialConstants, several: Option<&MaterialMap>, i: usize) -> f64 {
    several.map_or(m.density, |s| s.of_node(i).density)
}

/// Stable explicit time step, s, before the safety factor: for PMB the Silling-Askari bound
/// `min_i sqrt(2 rho_i / (sum_j c lambda beta V_j / x + k_c V_i))`, for LPS Gerschgorin's
/// `min_i 2 sqrt(rho_i / (R_i + (1 + sqrt d) k_c V_i))`; each bond with its own micromodulus,
/// each node with its own material's constants and density where there are several
/// (`several`).
/// `contact` is `k_c` (N/m^7): contact's row of a node per unit of its volume (0 without
/// contact; `Problem::contact_row_stiffness`, `docs/contact.md`): the contact springs of a
/// node are bonds of micromodulus `c_sr` and length `delta` to partners of about its volume,
/// `k_c V_i` their row sum; `(1 + sqrt d)` the largest Gerschgorin row of a spring's two
/// `d x d` blocks `k n n^T`, `-k n n^T` per unit `k`, as `row_bounds` counts a bond.
///
/// `nodes`: the nodes whose bound is taken (all of them, or a distributed run's process's
/// share, whose least the processes then take: the same least as the whole's).
pub fn stable_time_step(
    body: &Body,
    source: &impl BondSource,
    weighted_volume: &[f64],
    m: &MaterialConstants,
    several: Option<&MaterialMap>,
    contact: f64,
    nodes: Range<usize>,
) -> f64 {
    let v = &body.volumes;
    let first = nodes.start;
    let per_node: Vec<f64> = match m.law {
        Law::Pmb { c, .. } => nodes
            .into_par_iter()
            .map(|i| {
                let mut s = 0.0;
                source.for_each_bond(i, |j, beta, lambda| {
                    let (_, x) = unit(&body.positions, i, j);
                    s += micromodulus(c, several, i, j) * lambda * beta * v[j] / x;
                });
                if contact > 0.0 {
                    s += contact * v[i];
                }
                (2.0 * density(m, several, i) / s).sqrt()
            })
            .collect(),
        Law::Lps { .. } => {
            let spring = 1.0 + (m.d() as f64).sqrt();
            (row_bounds_of(body, source, weighted_volume, m, several, nodes).into_iter())
                .enumerate()
                .map(|(k, r)| {
                    let i = first + k;
                    let r = if contact > 0.0 {
                        r + spring * contact * v[i]
                    } else {
                        r
                    };
                    2.0 * (density(m, several, i) / r).sqrt()
                })
                .collect()
        }
    };
    per_node
        .into_iter()
        .filter(|dt| dt.is_finite())
        .fold(f64::INFINITY, f64::min)
}
