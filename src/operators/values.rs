//! Numeric values of the operators (`theory.md` section 4): reference bond geometry, the bond
//! coefficient vectors `a`, `g`, `w`, and the entries of `B`, `A`, `Theta` and `Phi`. Everything
//! is computed in `f64` from the problem's bond data and rounded to `T` once, by the caller or
//! here. Units: lengths m, `a` N/m^7, `g` N/m^6, `w` m^6, `Theta` 1/m, `Phi` 1.

use super::pattern::{fill_rows, BondRows};
use crate::material::laws::{lps, pmb};
use crate::material::stiffness_bound::lps_node_coefficients;
use crate::material::Law;
use crate::setup::Problem;
use crate::Real;
use faer::sparse::SymbolicSparseRowMat;
use rayon::prelude::*;

/// Reference geometry per bond row: `xi = X_j - X_i` (`d` components), its length `x`, and the
/// unit vector `n = xi / x` (`d` components), all in `f64` as the loop backend computes them.
pub struct BondGeometry {
    pub xi: Vec<f64>,
    pub length: Vec<f64>,
    pub unit: Vec<f64>,
}

impl BondGeometry {
    pub fn new(problem: &Problem, rows: &BondRows) -> Self {
        let (p, d, nr) = (&problem.body.positions, problem.dim(), rows.len());
        let (mut xi, mut unit, mut length) = (vec![0.0; d * nr], vec![0.0; d * nr], vec![0.0; nr]);
        xi.par_chunks_mut(d)
            .zip(unit.par_chunks_mut(d))
            .zip(length.par_iter_mut())
            .enumerate()
            .for_each(|(r, ((xr, ur), lr))| {
                let (i, j) = rows.ends(r);
                let v = [p[j][0] - p[i][0], p[j][1] - p[i][1], p[j][2] - p[i][2]];
                let x = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                for k in 0..d {
                    xr[k] = v[k];
                    ur[k] = v[k] / x;
                }
                *lr = x;
            });
        BondGeometry { xi, length, unit }
    }
}

/// The directed bond `(i -> j)` of row `r`, and in half storage also `(j -> i)`.
#[inline(always)]
fn bonds_of(rows: &BondRows, r: usize) -> (usize, usize) {
    match &rows.pairs {
        None => (r, r),
        Some(p) => (p[r][0] as usize, p[r][1] as usize),
    }
}

/// Bond coefficient vectors in `f64` (see `mod.rs` for their meaning in each storage).
pub struct Coefficients {
    pub a: Vec<f64>,
    pub g: Vec<f64>,
    pub g_second: Vec<f64>,
    pub a_first: Vec<f64>,
    pub w: Vec<f64>,
}

/// Per row: `[a, g, g_second, a_first, w]`.
type RowCoefficients = [f64; 5];

pub fn coefficients(problem: &Problem, rows: &BondRows, geom: &BondGeometry) -> Coefficients {
    let (m, bonds, v) = (&problem.material, &problem.bonds, &problem.body.volumes);
    let (alpha, pcoef) =
        lps_node_coefficients(m, problem.materials.as_ref(), &bonds.weighted_volume);
    let half = rows.pairs.is_some();
    let row = |r: usize| -> RowCoefficients {
        let (i, j) = rows.ends(r);
        let (ij, ji) = bonds_of(rows, r);
        let x = geom.length[r];
        let w = bonds.beta[ij] * v[i] * v[j];
        match m.law {
            Law::Pmb { c, .. } => {
                // (several materials: the pair's micromodulus, the same both ways)
                let c = problem.materials.as_ref().map_or(c, |map| map.c(i, j));
                let a_ij = pmb::matrix_coefficient(c, bonds.correction(ij), x);
                let a_ji = pmb::matrix_coefficient(c, bonds.correction(ji), x);
                let a = if half { a_ij + a_ji } else { a_ij };
                [a, 0.0, 0.0, 0.0, w]
            }
            Law::Lps { .. } => {
                let om = m.omega(x);
                let (a_ij, g_ij) = lps::matrix_coefficients(alpha[i], pcoef[i], om, x);
                if half {
                    let (a_ji, g_ji) = lps::matrix_coefficients(alpha[j], pcoef[j], om, x);
                    [a_ij + a_ji, g_ij, g_ji, a_ij, w]
                } else {
                    [a_ij, g_ij, 0.0, 0.0, w]
                }
            }
        }
    };
    let lps = matches!(m.law, Law::Lps { .. });
    let nr = rows.len();
    let len = |keep: bool| if keep { nr } else { 0 };
    // the five vectors filled in place, in chunks of rows (a vector not kept is empty and
    // takes no values)
    let mut out: [Vec<f64>; 5] = [
        vec![0.0; nr],
        vec![0.0; len(lps)],
        vec![0.0; len(lps && half)],
        vec![0.0; len(lps && half)],
        vec![0.0; nr],
    ];
    const CHUNK: usize = 8192;
    let mut chunks: Vec<(usize, [&mut [f64]; 5])> = Vec::with_capacity(nr.div_ceil(CHUNK));
    let mut rest: [&mut [f64]; 5] = out.each_mut().map(|v| v.as_mut_slice());
    for start in (0..nr).step_by(CHUNK) {
        let take = CHUNK.min(nr - start);
        let parts = rest.map(|s| {
            let k = take.min(s.len());
            s.split_at_mut(k)
        });
        let (head, tail): (Vec<_>, Vec<_>) = parts.into_iter().unzip();
        rest = tail
            .try_into()
            .unwrap_or_else(|_| unreachable!("five parts"));
        chunks.push((
            start,
            head.try_into()
                .unwrap_or_else(|_| unreachable!("five parts")),
        ));
    }
    chunks.into_par_iter().for_each(|(start, mut parts)| {
        for k in 0..CHUNK.min(nr - start) {
            let c = row(start + k);
            for (part, value) in parts.iter_mut().zip(c) {
                if let Some(slot) = part.get_mut(k) {
                    *slot = value;
                }
            }
        }
    });
    let [a, g, g_second, a_first, w] = out;
    Coefficients {
        a,
        g,
        g_second,
        a_first,
        w,
    }
}

/// Values of `A` (`d = 1`, `unit` empty: `-1` at `i`, `+1` at `j`) or `B` (`d = dim`: `-n`
/// and `+n`), in the column order of `pattern::incidence` (lower node first).
pub fn incidence<T: Real>(rows: &BondRows, d: usize, unit: &[f64]) -> Vec<T> {
    let per = 2 * d;
    let mut val = vec![T::zero(); per * rows.len()];
    val.par_chunks_mut(per).enumerate().for_each(|(r, out)| {
        let (i, j) = rows.ends(r);
        for k in 0..d {
            let n = if unit.is_empty() {
                1.0
            } else {
                unit[d * r + k]
            };
            let (at_i, at_j) = (T::of(-n), T::of(n));
            if i < j {
                out[k] = at_i;
                out[d + k] = at_j;
            } else {
                out[k] = at_j;
                out[d + k] = at_i;
            }
        }
    });
    val
}

/// Values of `A^T` (`d = 1`, `unit` empty) or `B^T` (`d = dim`) on the pattern `pattern`
/// (from `pattern::node_incidence`, rows repeated `d` times for `B^T`): the entry of node
/// `k`, component `c`, in row `r` is `-n_r[c]` (or `-1`) if `k` is the row's first node and
/// `+n_r[c]` (or `+1`) if it is its second.
pub fn transposed_incidence<T: Real>(
    rows: &BondRows,
    pattern: &SymbolicSparseRowMat<u32>,
    d: usize,
    unit: &[f64],
) -> Vec<T> {
    let (ptr, cols) = (pattern.row_ptr(), pattern.col_idx());
    fill_rows(ptr, |kc, out: &mut [T]| {
        let (k, c) = (kc / d, kc % d);
        let row = &cols[ptr[kc] as usize..ptr[kc + 1] as usize];
        for (o, &r) in out.iter_mut().zip(row) {
            let r = r as usize;
            let n = if unit.is_empty() {
                1.0
            } else {
                unit[d * r + c]
            };
            *o = T::of(if rows.first[r] as usize == k { -n } else { n });
        }
    })
}

/// Which node-by-row operator to fill.
#[derive(Debug, Clone, Copy)]
pub enum NodeRow {
    /// `Theta[k, r] = (d / m_k) omega x beta V_other`.
    Theta,
    /// `Phi[k, r] = beta V_other / V_H,k`.
    Damage,
}

/// Values of `Theta` or `Phi` on the pattern `pattern` (from `pattern::node_rows`).
pub fn node_rows<T: Real>(
    problem: &Problem,
    rows: &BondRows,
    pattern: &SymbolicSparseRowMat<u32>,
    which: NodeRow,
) -> Vec<T> {
    let (m, bonds, v) = (&problem.material, &problem.bonds, &problem.body.volumes);
    let (p, d) = (&problem.body.positions, m.d() as f64);
    let (ptr, cols) = (pattern.row_ptr(), pattern.col_idx());
    fill_rows(ptr, |k, out: &mut [T]| {
        let row = &cols[ptr[k] as usize..ptr[k + 1] as usize];
        for (o, &r) in out.iter_mut().zip(row) {
            let r = r as usize;
            let (i, j) = rows.ends(r);
            let (ij, ji) = bonds_of(rows, r);
            let (other, b) = if i == k { (j, ij) } else { (i, ji) };
            let bv = bonds.beta[b] * v[other];
            let value = match which {
                NodeRow::Theta => {
                    let wv = bonds.weighted_volume[k];
                    let x = crate::material::bonds::bond_length(p, k, other);
                    if wv > 0.0 {
                        d / wv * m.omega(x) * x * bv
                    } else {
                        0.0
                    }
                }
                NodeRow::Damage => {
                    let vh = bonds.horizon_volume[k];
                    if vh > 0.0 {
                        bv / vh
                    } else {
                        0.0
                    }
                }
            };
            *o = T::of(value);
        }
    })
}
