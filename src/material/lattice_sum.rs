//! Lattice sums: the effective elastic constants of a regular square (2D) or cubic (3D)
//! lattice of spacing `dx` for a bulk node, with the same horizon, partial volumes and
//! material constants as a simulation.
//!
//! A bulk node under a homogeneous strain `eps` stores the strain energy density `W(eps)`
//! (`theory.md` sections 2 and 3) exactly as a finite sum over the lattice offsets in its
//! family; `W` is quadratic, so the stiffness in Voigt form follows by polarization. This is
//! what a simulation of a large body converges to away from its surfaces: the discrete
//! lattice differs from the continuum by a few percent at `delta = 3 dx`, and tests compare
//! simulations with these values tightly and with the continuum loosely.

use super::constants::{family_radius, partial_volume, Law, MaterialConstants};
use crate::model::PartialVolume;

/// Effective constants of a lattice.
#[derive(Debug, Clone, PartialEq)]
pub struct LatticeConstants {
    /// Stiffness in Voigt form, Pa: 2D order `[xx, yy, xy]`, 3D `[xx, yy, zz, yz, xz, xy]`,
    /// with engineering shear strains.
    pub stiffness: Vec<Vec<f64>>,
    /// Young's modulus along a lattice axis under uniaxial stress (in-plane for 2D), Pa.
    pub youngs_modulus: f64,
    /// Lateral-to-axial strain ratio under uniaxial stress along a lattice axis (2D: the
    /// in-plane ratio, which is `nu` in plane stress and `nu / (1 - nu)` in plane strain for
    /// the continuum).
    pub lateral_ratio: f64,
}

/// One lattice offset of a bulk node's family: unit vector, length, `beta V_j`.
struct Offset {
    n: [f64; 3],
    x: f64,
    bv: f64,
}

fn offsets(d: usize, dx: f64, volume: f64, delta: f64, kind: PartialVolume) -> Vec<Offset> {
    let r = family_radius(kind, delta, dx);
    let k = (r / dx).ceil() as i64 + 1;
    let kz = if d == 3 { k } else { 0 };
    let mut out = Vec::new();
    for a in -k..=k {
        for b in -k..=k {
            for c in -kz..=kz {
                let xi = [a as f64 * dx, b as f64 * dx, c as f64 * dx];
                let x = (xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]).sqrt();
                if x == 0.0 || x * x > r * r {
                    continue;
                }
                let beta = partial_volume(kind, x, delta, dx);
                out.push(Offset {
                    n: [xi[0] / x, xi[1] / x, xi[2] / x],
                    x,
                    bv: beta * volume,
                });
            }
        }
    }
    out
}

/// Strain energy density of a bulk node under the homogeneous strain tensor `eps`.
fn energy(m: &MaterialConstants, offs: &[Offset], eps: &[[f64; 3]; 3]) -> f64 {
    let d = m.d() as f64;
    let stretch = |o: &Offset| {
        let mut s = 0.0;
        for a in 0..3 {
            for b in 0..3 {
                s += o.n[a] * eps[a][b] * o.n[b];
            }
        }
        s
    };
    match m.law {
        Law::Pmb { c, .. } => offs
            .iter()
            .map(|o| 0.25 * c * stretch(o).powi(2) * o.x * o.bv)
            .sum(),
        Law::Lps { kd, g, .. } => {
            let wv: f64 = offs.iter().map(|o| m.omega(o.x) * o.x * o.x * o.bv).sum();
            let alpha = if m.d() == 3 {
                15.0 * g / wv
            } else {
                8.0 * g / wv
            };
            let theta = d / wv
                * offs
                    .iter()
                    .map(|o| m.omega(o.x) * o.x * (o.x * stretch(o)) * o.bv)
                    .sum::<f64>();
            let dev: f64 = offs
                .iter()
                .map(|o| m.omega(o.x) * (o.x * stretch(o) - theta * o.x / d).powi(2) * o.bv)
                .sum();
            0.5 * kd * theta * theta + 0.5 * alpha * dev
        }
    }
}

/// Voigt index pairs: 2D `[xx, yy, xy]`, 3D `[xx, yy, zz, yz, xz, xy]`.
fn voigt(d: usize) -> Vec<(usize, usize)> {
    if d == 2 {
        vec![(0, 0), (1, 1), (0, 1)]
    } else {
        vec![(0, 0), (1, 1), (2, 2), (1, 2), (0, 2), (0, 1)]
    }
}

fn strain_of(d: usize, weights: &[f64]) -> [[f64; 3]; 3] {
    let mut eps = [[0.0; 3]; 3];
    for (&(a, b), &w) in voigt(d).iter().zip(weights) {
        if a == b {
            eps[a][a] += w;
        } else {
            eps[a][b] += 0.5 * w;
            eps[b][a] += 0.5 * w;
        }
    }
    eps
}

/// Effective elastic constants of the lattice of spacing `dx` (2D volumes `dx^2 thickness`).
pub fn lattice_constants(
    m: &MaterialConstants,
    dx: f64,
    thickness: f64,
    kind: PartialVolume,
) -> LatticeConstants {
    let d = m.d();
    let volume = if d == 2 {
        dx * dx * thickness
    } else {
        dx * dx * dx
    };
    let offs = offsets(d, dx, volume, m.delta, kind);
    let nv = voigt(d).len();
    let unit = |i: usize| {
        let mut w = vec![0.0; nv];
        w[i] = 1.0;
        w
    };
    let w_of = |w: &[f64]| energy(m, &offs, &strain_of(d, w));
    let mut c = vec![vec![0.0; nv]; nv];
    for i in 0..nv {
        c[i][i] = 2.0 * w_of(&unit(i));
        for j in 0..i {
            let both: Vec<f64> = unit(i).iter().zip(unit(j)).map(|(a, b)| a + b).collect();
            let cij = w_of(&both) - w_of(&unit(i)) - w_of(&unit(j));
            c[i][j] = cij;
            c[j][i] = cij;
        }
    }
    let s = invert(&c);
    LatticeConstants {
        youngs_modulus: 1.0 / s[0][0],
        lateral_ratio: -s[0][1] / s[0][0],
        stiffness: c,
    }
}

/// Inverse of a small symmetric positive definite matrix by Gauss-Jordan with pivoting.
fn invert(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = a.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let mut r = row.clone();
            r.extend((0..n).map(|j| if i == j { 1.0 } else { 0.0 }));
            r
        })
        .collect();
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&p, &q| m[p][col].abs().total_cmp(&m[q][col].abs()))
            .unwrap_or(col);
        m.swap(col, piv);
        let p = m[col][col];
        for v in m[col].iter_mut() {
            *v /= p;
        }
        for r in 0..n {
            if r != col {
                let f = m[r][col];
                let pivot_row = m[col].clone();
                for (v, pv) in m[r].iter_mut().zip(pivot_row) {
                    *v -= f * pv;
                }
            }
        }
    }
    m.into_iter().map(|r| r[n..].to_vec()).collect()
}
