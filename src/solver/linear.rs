//! The linear static system `K u = f` with prescribed displacements: reduction to the free
//! dofs, sparse Cholesky (`LL^T`) with a fall-back to LU, iterative refinement, and the
//! relative residual. Rigid-body modes that no condition holds are removed by
//! [`RigidModes`](super::rigid::RigidModes) supports beforehand.
//!
//! Units: `K` in N/m, `u` in m, `f` in N; dofs are `d * node + component`.

use crate::operators::spmv::spmv as spmv_into;
use crate::operators::Mat;
use crate::{Error, Result};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::sparse::linalg::cholesky::factorize_symbolic_cholesky;
use faer::sparse::linalg::lu::{factorize_symbolic_lu, NumericLu};
use faer::sparse::{SparseColMat, SymbolicSparseColMat};
use faer::{Conj, MatMut, Par, Side};

/// Iterative-refinement steps after the first solve, at most.
const MAX_REFINEMENT: usize = 3;

/// The engine's sparse matrix in `f64`.
type Csr = Mat<f64>;

/// The solution of a linear static system.
#[derive(Debug, Clone)]
pub struct LinearSolution {
    /// Displacement of every dof, m (prescribed values included, supports at zero).
    pub u: Vec<f64>,
    /// `"llt"` or `"lu"`.
    pub factorization: &'static str,
    /// Number of unknowns of the reduced system.
    pub free_dofs: usize,
    /// Refinement steps taken after the first solve.
    pub refinement_steps: usize,
}

/// `y = A x` (row-parallel, bitwise the same at any thread count).
pub fn spmv(a: &Csr, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; a.nrows()];
    spmv_into(a, x, &mut y);
    y
}

fn norm(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(0.0, |s, x| s + x * x).sqrt()
}

/// Solve `K u = f` for symmetric `K` (`n x n`), with the dofs of `prescribed` held at their
/// values and the `supports` held at zero. `f` at held dofs is ignored (those rows carry the
/// reactions).
pub fn solve(
    k: &Csr,
    f: &[f64],
    prescribed: &[(usize, f64)],
    supports: &[usize],
) -> Result<LinearSolution> {
    let n = k.nrows();
    assert!(k.ncols() == n && f.len() == n, "K and f shapes differ");
    let mut u = vec![0.0; n];
    let mut held = vec![false; n];
    for &(dof, value) in prescribed {
        u[dof] = value;
        held[dof] = true;
    }
    for &dof in supports {
        u[dof] = 0.0;
        held[dof] = true;
    }
    let free: Vec<usize> = (0..n).filter(|&d| !held[d]).collect();
    let mut index = vec![u32::MAX; n];
    for (r, &d) in free.iter().enumerate() {
        index[d] = r as u32;
    }
    let ku = spmv(k, &u);
    let rhs: Vec<f64> = free.iter().map(|&d| f[d] - ku[d]).collect();
    let reduced = reduce(k, &free, &index);
    let mut solution = LinearSolution {
        u,
        factorization: "llt",
        free_dofs: free.len(),
        refinement_steps: 0,
    };
    if free.is_empty() {
        return Ok(solution);
    }
    let x = factor_and_solve(&reduced, &rhs, &mut solution)?;
    for (&d, &x) in free.iter().zip(&x) {
        solution.u[d] = x;
    }
    Ok(solution)
}

/// `K` restricted to the rows and columns of `free` (`index[dof]` = position in `free`).
fn reduce(k: &Csr, free: &[usize], index: &[u32]) -> Csr {
    let (rp, ci, val) = (k.symbolic().row_ptr(), k.symbolic().col_idx(), k.val());
    let mut ptr = Vec::with_capacity(free.len() + 1);
    let (mut cols, mut vals) = (Vec::new(), Vec::new());
    ptr.push(0u32);
    for &d in free {
        for e in rp[d] as usize..rp[d + 1] as usize {
            let c = index[ci[e] as usize];
            if c != u32::MAX {
                cols.push(c);
                vals.push(val[e]);
            }
        }
        ptr.push(cols.len() as u32);
    }
    let m = free.len();
    Csr::new(
        faer::sparse::SymbolicSparseRowMat::new_checked(m, m, ptr, None, cols),
        vals,
    )
}

/// Factor the reduced matrix (Cholesky, else LU) and solve, with refinement. The
/// factorizations and solves run sequentially (`Par::Seq`) so that the solution is bitwise the
/// same at any thread count.
fn factor_and_solve(a: &Csr, rhs: &[f64], out: &mut LinearSolution) -> Result<Vec<f64>> {
    let m = a.nrows();
    // A symmetric CSR matrix is its own transpose, so its arrays are also the CSC form.
    let (sym, val) = (a.symbolic(), a.val());
    let csc = SparseColMat::new(
        SymbolicSparseColMat::new_checked(
            m,
            m,
            sym.row_ptr().to_vec(),
            None,
            sym.col_idx().to_vec(),
        ),
        val.to_vec(),
    );
    let csc = csc.as_ref();
    let failed = |e: &dyn std::fmt::Debug| singular(&format!("{e:?}"));
    if let Ok(symbolic) = factorize_symbolic_cholesky(
        csc.symbolic(),
        Side::Lower,
        Default::default(),
        Default::default(),
    ) {
        let mut values = vec![0.0; symbolic.len_val()];
        let scratch = symbolic.factorize_numeric_llt_scratch::<f64>(Par::Seq, Default::default());
        let mut mem = MemBuffer::try_new(scratch).map_err(|e| failed(&e))?;
        let factor = symbolic.factorize_numeric_llt(
            &mut values,
            csc,
            Side::Lower,
            Default::default(),
            Par::Seq,
            MemStack::new(&mut mem),
            Default::default(),
        );
        if let Ok(llt) = factor {
            let scratch = symbolic.solve_in_place_scratch::<f64>(1, Par::Seq);
            let mut mem = MemBuffer::try_new(scratch).map_err(|e| failed(&e))?;
            let solve = |x: MatMut<'_, f64>| {
                llt.solve_in_place_with_conj(Conj::No, x, Par::Seq, MemStack::new(&mut mem))
            };
            return refine(a, rhs, solve, out);
        }
    }
    out.factorization = "lu";
    let symbolic =
        factorize_symbolic_lu(csc.symbolic(), Default::default()).map_err(|e| failed(&e))?;
    let mut numeric = NumericLu::new();
    let scratch = symbolic.factorize_numeric_lu_scratch::<f64>(Par::Seq, Default::default());
    let mut mem = MemBuffer::try_new(scratch).map_err(|e| failed(&e))?;
    let lu = symbolic
        .factorize_numeric_lu(
            &mut numeric,
            csc,
            Par::Seq,
            MemStack::new(&mut mem),
            Default::default(),
        )
        .map_err(|e| failed(&e))?;
    let scratch = symbolic.solve_in_place_scratch::<f64>(1, Par::Seq);
    let mut mem = MemBuffer::try_new(scratch).map_err(|e| failed(&e))?;
    let solve = |x: MatMut<'_, f64>| {
        lu.solve_in_place_with_conj(Conj::No, x, Par::Seq, MemStack::new(&mut mem))
    };
    refine(a, rhs, solve, out)
}

/// Solve with `solve` (a factorization of `a`) and refine while a step at least halves the
/// residual; at the round-off floor of `A x` further steps only trade digits, so the best
/// iterate is kept.
fn refine(
    a: &Csr,
    rhs: &[f64],
    mut solve: impl FnMut(MatMut<'_, f64>),
    out: &mut LinearSolution,
) -> Result<Vec<f64>> {
    let m = a.nrows();
    let scale = norm(rhs.iter().copied());
    let mut x = vec![0.0; m];
    let mut r = rhs.to_vec();
    let mut best = f64::INFINITY;
    for step in 0..MAX_REFINEMENT + 1 {
        let mut dx = faer::Mat::from_fn(m, 1, |i, _| r[i]);
        solve(dx.as_mut());
        let trial: Vec<f64> = x.iter().enumerate().map(|(i, x)| x + dx[(i, 0)]).collect();
        let ax = spmv(a, &trial);
        let trial_r: Vec<f64> = rhs.iter().zip(&ax).map(|(b, ax)| b - ax).collect();
        let res = norm(trial_r.iter().copied());
        if !res.is_finite() || trial.iter().any(|v| !v.is_finite()) {
            return Err(singular("the solution is not finite"));
        }
        if res >= best {
            break;
        }
        out.refinement_steps = step;
        let halved = res <= 0.5 * best;
        (x, r, best) = (trial, trial_r, res);
        if res <= 1e-15 * scale || !halved {
            break;
        }
    }
    Ok(x)
}

fn singular(detail: &str) -> Error {
    Error::Backend {
        backend: "solve-static".into(),
        message: format!(
            "the stiffness matrix of the free dofs is singular ({detail}): some part of the \
             body can move without resistance (a mechanism, e.g. a node or a line of nodes held \
             by too few bonds); add boundary conditions or check the pre-cracks"
        ),
    }
}

/// Relative residuals of a static solution, both relative to the larger of `|f|` and
/// `|K u_p|` over the free dofs (`u_p`: the prescribed values alone), so that a body loaded
/// only by prescribed displacements has a meaningful scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Residuals {
    /// `|K u - f|` over the free dofs (neither prescribed nor supports).
    pub free: f64,
    /// `|K u - f|` over the supports: the load they carry.
    pub supports: f64,
}

/// The [`Residuals`] of `u` (when both scales are 0, the absolute norms).
pub fn residuals(
    k: &Csr,
    u: &[f64],
    f: &[f64],
    prescribed: &[(usize, f64)],
    supports: &[usize],
) -> Residuals {
    let n = u.len();
    let mut up = vec![0.0; n];
    let mut kind = vec![0u8; n];
    for &(d, v) in prescribed {
        kind[d] = 1;
        up[d] = v;
    }
    supports.iter().for_each(|&d| kind[d] = 2);
    let (ku, kup) = (spmv(k, u), spmv(k, &up));
    let kind = &kind;
    let over = |which: u8| (0..n).filter(move |&d| kind[d] == which);
    let scale = norm(over(0).map(|d| f[d])).max(norm(over(0).map(|d| kup[d])));
    let scale = if scale > 0.0 { scale } else { 1.0 };
    Residuals {
        free: norm(over(0).map(|d| ku[d] - f[d])) / scale,
        supports: norm(over(2).map(|d| ku[d] - f[d])) / scale,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain of `n` unit springs: tridiagonal `[-1 2 -1]` with 1 at both ends.
    fn chain(n: usize) -> Csr {
        let mut t = Vec::new();
        for i in 0..n - 1 {
            t.push(faer::sparse::Triplet::new(i as u32, i as u32, 1.0));
            t.push(faer::sparse::Triplet::new(i as u32 + 1, i as u32 + 1, 1.0));
            t.push(faer::sparse::Triplet::new(i as u32, i as u32 + 1, -1.0));
            t.push(faer::sparse::Triplet::new(i as u32 + 1, i as u32, -1.0));
        }
        Csr::try_new_from_triplets(n, n, &t).unwrap()
    }

    // A chain fixed at 0 and pulled to 1 at the far end stretches linearly; with a unit load
    // at the end instead, each spring carries it.
    #[test]
    fn spring_chain() {
        let k = chain(5);
        let s = solve(&k, &[0.0; 5], &[(0, 0.0), (4, 1.0)], &[]).unwrap();
        assert_eq!(s.factorization, "llt");
        for (i, u) in s.u.iter().enumerate() {
            assert!((u - i as f64 / 4.0).abs() < 1e-14);
        }
        let f = [0.0, 0.0, 0.0, 0.0, 1.0];
        let s = solve(&k, &f, &[(0, 0.0)], &[]).unwrap();
        assert!((s.u[4] - 4.0).abs() < 1e-13);
        assert!(residuals(&k, &s.u, &f, &[(0, 0.0)], &[]).free < 1e-15);
    }

    // A symmetric indefinite matrix defeats Cholesky; LU solves it.
    #[test]
    fn indefinite_falls_back_to_lu() {
        let t = [(0, 0, 1.0), (0, 1, 2.0), (1, 0, 2.0), (1, 1, 1.0)]
            .map(|(i, j, v)| faer::sparse::Triplet::new(i as u32, j as u32, v));
        let k = Csr::try_new_from_triplets(2, 2, &t).unwrap();
        let s = solve(&k, &[3.0, 3.0], &[], &[]).unwrap();
        assert_eq!(s.factorization, "lu");
        assert!((s.u[0] - 1.0).abs() < 1e-15 && (s.u[1] - 1.0).abs() < 1e-15);
    }

    // With nothing held, the chain is singular: an error, not a panic or NaN.
    #[test]
    fn singular_is_an_error() {
        let k = chain(4);
        let e = solve(&k, &[1.0, 0.0, 0.0, -1.0], &[], &[]);
        if let Ok(s) = &e {
            // LU may return a finite answer for a consistent singular system; it must solve it.
            assert!(residuals(&k, &s.u, &[1.0, 0.0, 0.0, -1.0], &[], &[]).free < 1e-10);
        }
    }
}
