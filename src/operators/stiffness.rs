//! The global stiffness of the linearized model (`theory.md` section 4), in N/m:
//!
//! `K(mu) = B^T W M (A_d + G S Theta M) B`, so that the internal force in newtons is
//! `f_int = -K u`.
//!
//! It is assembled by sparse-sparse products of the operators, never bond by bond:
//!
//! - the bond term `B^T (W M A_d) B`: `B^T` times `B` with its rows scaled by `w mu a`;
//! - the dilatation term (LPS): `Q P` with `P = Theta M B` (`n x dn`, the gradient of the
//!   dilatation, `theta = P u`) and `Q = B^T W M G S` (`dn x n`), formed as the transpose of
//!   `C B` where `C = S^T W M G` (`n x rows`) lies on the pattern of `Theta`. In half storage
//!   `C` carries `w mu g_ij` at the first node and `w mu g_ji` at the second, which is
//!   `t_ij + t_ji = mu [(a_ij + a_ji) e + g_ij theta_i + g_ji theta_j]`.
//!
//! `K` is symmetric up to round-off: `Q` and `P^T` have the same columns up to the per-node
//! factor `V_k p_k m_k / d`. For nonlinear PMB `K` is the tangent at the reference
//! configuration (the same matrix as linearized PMB). Entries that are exactly zero (bonds
//! broken on every path) are dropped, so the pattern shrinks with damage. The products run
//! column by column in faer, each column summed in a fixed order, so `K` does not depend on
//! the thread count.

use super::{Mat, Operators};
use crate::setup::Problem;
use crate::{Error, Result};
use faer::sparse::linalg::matmul::sparse_sparse_matmul;
use faer::sparse::SymbolicSparseRowMat;

/// `K(mu)` of assembled operators (any storage) for the bond status `row_status` per bond row
/// (1 intact, 0 broken; [`Operators::row_status`] converts from directed bonds).
pub fn stiffness(ops: &Operators<f64>, row_status: &[u8]) -> Result<Mat<f64>> {
    assert_eq!(row_status.len(), ops.rows(), "one status per bond row");
    let mu: Vec<f64> = row_status.iter().map(|&m| f64::from(m)).collect();
    let bond_scale: Vec<f64> = (0..ops.rows())
        .map(|r| ops.vectors.w[r] * mu[r] * ops.vectors.a[r])
        .collect();
    let bond_term = product(&ops.bt, &scale_rows(&ops.b, &bond_scale))?;
    let Some(theta) = &ops.theta else {
        return Ok(prune(&bond_term));
    };
    let p = product(theta, &scale_rows(&ops.b, &mu))?;
    let c = dilatation_weights(ops, theta, &mu);
    let q = super::transpose(&product(&c, &ops.b)?);
    let dilatation_term = product(&q, &p)?;
    Ok(add(&bond_term, &dilatation_term))
}

/// `K` of `problem` for the status `bond_status` per directed bond (CSR order), from operators
/// assembled in full storage.
pub fn assemble_stiffness(problem: &Problem, bond_status: &[u8]) -> Result<Mat<f64>> {
    let ops = Operators::<f64>::assemble(problem, super::Storage::Full)?;
    stiffness(&ops, &ops.row_status(bond_status))
}

/// `C = S^T W M G` on the pattern of `Theta`: entry `(k, r)` is `w mu g` of row `r` if `k` is
/// its first node, `w mu g_second` if it is the second (half storage).
fn dilatation_weights(ops: &Operators<f64>, theta: &Mat<f64>, mu: &[f64]) -> Mat<f64> {
    let (sym, mut val) = theta.clone().into_parts();
    let (ptr, cols) = (sym.row_ptr(), sym.col_idx());
    for k in 0..sym.nrows() {
        for e in ptr[k] as usize..ptr[k + 1] as usize {
            let r = cols[e] as usize;
            let v = &ops.vectors;
            let g = if ops.rows.first[r] as usize == k {
                v.g[r]
            } else {
                v.g_second[r]
            };
            val[e] = v.w[r] * mu[r] * g;
        }
    }
    Mat::new(sym, val)
}

/// `diag(s) M`: the rows of `m` scaled by `s`.
fn scale_rows(m: &Mat<f64>, s: &[f64]) -> Mat<f64> {
    let (sym, mut val) = m.clone().into_parts();
    let ptr = sym.row_ptr();
    for (r, &s) in s.iter().enumerate() {
        val[ptr[r] as usize..ptr[r + 1] as usize]
            .iter_mut()
            .for_each(|v| *v *= s);
    }
    Mat::new(sym, val)
}

/// `X Y` of two CSR matrices, as CSR with sorted columns. A CSR matrix is the CSC form of its
/// transpose, so `(X Y)^T = Y^T X^T` is one faer product of the two views, without copies.
pub fn product(x: &Mat<f64>, y: &Mat<f64>) -> Result<Mat<f64>> {
    let zt = sparse_sparse_matmul(
        y.transpose(),
        x.transpose(),
        1.0,
        faer::get_global_parallelism(),
    )
    .map_err(|e| Error::Backend {
        backend: "stiffness".into(),
        message: format!(
            "the product of a {} x {} and a {} x {} operator failed ({e:?}); the stiffness \
             of this model does not fit 32-bit indices or memory: use a coarser dx",
            x.nrows(),
            x.ncols(),
            y.nrows(),
            y.ncols()
        ),
    })?;
    let (sym, val) = zt.into_parts();
    let (ncols, nrows) = (sym.nrows(), sym.ncols());
    let (col_ptr, row_idx) = (sym.col_ptr().to_vec(), sym.row_idx().to_vec());
    Ok(Mat::new(
        SymbolicSparseRowMat::new_checked(nrows, ncols, col_ptr, None, row_idx),
        val,
    ))
}

/// `X + Y` for CSR matrices of the same shape with sorted columns, dropping exact zeros.
fn add(x: &Mat<f64>, y: &Mat<f64>) -> Mat<f64> {
    assert!(
        x.nrows() == y.nrows() && x.ncols() == y.ncols(),
        "add: shapes differ"
    );
    fn row(m: &Mat<f64>, r: usize) -> (&[u32], &[f64]) {
        let p = m.symbolic().row_ptr();
        let (s, e) = (p[r] as usize, p[r + 1] as usize);
        (&m.symbolic().col_idx()[s..e], &m.val()[s..e])
    }
    let mut ptr = Vec::with_capacity(x.nrows() + 1);
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    ptr.push(0u32);
    for r in 0..x.nrows() {
        let ((cx, vx), (cy, vy)) = (row(x, r), row(y, r));
        let (mut a, mut b) = (0, 0);
        while a < cx.len() || b < cy.len() {
            let (c, v) = match (cx.get(a), cy.get(b)) {
                (Some(&p), Some(&q)) if p == q => {
                    a += 1;
                    b += 1;
                    (p, vx[a - 1] + vy[b - 1])
                }
                (Some(&p), Some(&q)) if p < q => {
                    a += 1;
                    (p, vx[a - 1])
                }
                (Some(&p), None) => {
                    a += 1;
                    (p, vx[a - 1])
                }
                (_, Some(&q)) => {
                    b += 1;
                    (q, vy[b - 1])
                }
                (None, None) => unreachable!("loop condition"),
            };
            if v != 0.0 {
                cols.push(c);
                vals.push(v);
            }
        }
        ptr.push(cols.len() as u32);
    }
    Mat::new(
        SymbolicSparseRowMat::new_checked(x.nrows(), x.ncols(), ptr, None, cols),
        vals,
    )
}

/// `m` without its exactly-zero entries.
fn prune(m: &Mat<f64>) -> Mat<f64> {
    let empty = Mat::new(
        SymbolicSparseRowMat::new_checked(
            m.nrows(),
            m.ncols(),
            vec![0u32; m.nrows() + 1],
            None,
            Vec::new(),
        ),
        Vec::new(),
    );
    add(m, &empty)
}
