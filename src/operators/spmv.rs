//! Deterministic row-parallel sparse products on [`Mat`]: each output row is summed by one
//! task over its entries in storage order (ascending columns), starting from zero, so results
//! are bitwise the same at any thread count. An epilogue closure sees each row's sum before it
//! is stored (scaling, sign), which saves a pass over the output.
//!
//! Vectors of several components per node are interleaved (`x[K c + k]`, node-major, as the
//! solver's state): [`spmv_interleaved`] applies one matrix to all `K` components at once
//! (`eta = A u` per component).

use super::Mat;
use crate::Real;
use rayon::prelude::*;

/// Rows per rayon task: enough to amortize scheduling on short rows, few enough to balance
/// the load of rows of different lengths over many cores.
const ROWS_PER_TASK: usize = 256;

/// `y = M x`.
pub fn spmv<T: Real>(m: &Mat<T>, x: &[T], y: &mut [T]) {
    spmv_interleaved(m, 1, x, y, |_, _, s| s);
}

/// `y[r] = out(r, (M x)[r])`.
pub fn spmv_with<T: Real, F>(m: &Mat<T>, x: &[T], y: &mut [T], out: F)
where
    F: Fn(usize, T) -> T + Sync,
{
    spmv_interleaved(m, 1, x, y, |r, _, s| out(r, s));
}

/// `K` interleaved vectors: `y[K r + k] = out(r, k, sum_e M[r, c_e] x[K c_e + k])`, `K <= 3`.
pub fn spmv_interleaved<T: Real, F>(m: &Mat<T>, k: usize, x: &[T], y: &mut [T], out: F)
where
    F: Fn(usize, usize, T) -> T + Sync,
{
    assert_eq!(y.len(), k * m.nrows(), "spmv: y has the wrong length");
    spmv_rows(m, k, x, 0, y, out);
}

/// [`spmv_interleaved`] over the rows `first..first + y.len() / k` only, into `y` (those
/// rows' values): a product split into row ranges gives the same bits as the whole.
pub fn spmv_rows<T: Real, F>(m: &Mat<T>, k: usize, x: &[T], first: usize, y: &mut [T], out: F)
where
    F: Fn(usize, usize, T) -> T + Sync,
{
    assert_eq!(x.len(), k * m.ncols(), "spmv: x has the wrong length");
    assert!(y.len() % k == 0, "spmv: y has the wrong length");
    assert!(
        first + y.len() / k <= m.nrows(),
        "spmv: rows past the matrix"
    );
    match k {
        1 => rows::<T, F, 1>(m, x, first, y, out),
        2 => rows::<T, F, 2>(m, x, first, y, out),
        3 => rows::<T, F, 3>(m, x, first, y, out),
        _ => panic!("spmv_interleaved: {k} components (at most 3)"),
    }
}

fn rows<T: Real, F, const K: usize>(m: &Mat<T>, x: &[T], start: usize, y: &mut [T], out: F)
where
    F: Fn(usize, usize, T) -> T + Sync,
{
    let sym = m.symbolic();
    let (ptr, cols, val) = (sym.row_ptr(), sym.col_idx(), m.val());
    y.par_chunks_mut(K * ROWS_PER_TASK)
        .enumerate()
        .for_each(|(block, ys)| {
            let first = start + block * ROWS_PER_TASK;
            for (k, yr) in ys.chunks_exact_mut(K).enumerate() {
                let r = first + k;
                let (s, e) = (ptr[r] as usize, ptr[r + 1] as usize);
                let mut acc = [T::zero(); K];
                for (&c, &a) in cols[s..e].iter().zip(&val[s..e]) {
                    let base = K * c as usize;
                    for (q, acc_q) in acc.iter_mut().enumerate() {
                        // SAFETY: a `Mat` built through faer's safe constructors has every
                        // column index below `ncols`, and `x.len() == K * ncols` is asserted
                        // above, so `base + q < x.len()`.
                        *acc_q += a * unsafe { *x.get_unchecked(base + q) };
                    }
                }
                for (q, (y, &sum)) in yr.iter_mut().zip(&acc).enumerate() {
                    *y = out(r, q, sum);
                }
            }
        });
}
