//! The operators as the device gets them, built on the host: CSR arrays with 32-bit indices
//! ([`HostCsr`]), `A x I_d` for the bond differences and the force operator with its `-1/V`
//! epilogue folded into the values ([`device_operators`]).
//!
//! Units: `A` 1, `B` 1, the force operator 1/m^3 (times the bond scalars, N/m^3).

use crate::gpu::cusparse::{CsrMatrix, Handle};
use crate::operators::{Mat, Operators};
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;

/// A CSR operator as the device gets it, built on the host.
pub struct HostCsr<T> {
    pub name: &'static str,
    pub ncols: usize,
    pub row_ptr: Vec<u32>,
    pub col_idx: Vec<u32>,
    pub values: Vec<T>,
}

impl<T: Real> HostCsr<T> {
    /// The assembled node-row operator `m` (`Theta`, `Phi`) as named `name`, with `ncols`
    /// columns (the bond rows).
    pub(super) fn of(name: &'static str, m: &Mat<T>, ncols: usize) -> Self {
        let sym = m.symbolic();
        HostCsr {
            name,
            ncols,
            row_ptr: sym.row_ptr().to_vec(),
            col_idx: sym.col_idx().to_vec(),
            values: m.val().to_vec(),
        }
    }

    /// Describe `m` with this matrix's shape (no copies).
    pub(super) fn shape(&self, handle: &Handle, m: &mut CsrMatrix<T>) -> Result<()> {
        let rows = self.row_ptr.len().saturating_sub(1);
        m.set_shape(handle, self.name, rows, self.ncols, self.col_idx.len())
    }

    /// Enqueue the copies of this matrix into `m` (see [`CsrMatrix::copy_in`]); bytes.
    ///
    /// # Safety
    /// As [`CsrMatrix::copy_in`]: `self` stays alive and unwritten until the copies end.
    pub(super) unsafe fn copy_into(&self, handle: &Handle, m: &mut CsrMatrix<T>) -> Result<usize> {
        // SAFETY: as this function's.
        unsafe {
            m.copy_in(
                handle,
                self.name,
                self.ncols,
                &self.row_ptr,
                &self.col_idx,
                &self.values,
            )?
        };
        Ok(self.bytes())
    }

    /// Bytes of the three arrays.
    pub(super) fn bytes(&self) -> usize {
        4 * (self.row_ptr.len() + self.col_idx.len()) + std::mem::size_of::<T>() * self.values.len()
    }

    /// As a faer matrix (for host-side checks).
    pub fn to_mat(&self) -> Mat<T> {
        Mat::new(
            faer::sparse::SymbolicSparseRowMat::new_checked(
                self.row_ptr.len() - 1,
                self.ncols,
                self.row_ptr.clone(),
                None,
                self.col_idx.clone(),
            ),
            self.values.clone(),
        )
    }
}

/// The two operators built for the device from the assembled ones: `A x I_d` (bond
/// differences, `d` interleaved components per row) and the force operator
/// `-diag(1/V) B^T` (linear laws) or `-diag(1/V) (A^T x I_d)` (nonlinear PMB), whose rows
/// are the dofs `d i + k`. `Theta` and `Phi` are uploaded as assembled.
pub fn device_operators<T: Real>(problem: &Problem, ops: &Operators<T>) -> [HostCsr<T>; 2] {
    let (n, d, nr) = (problem.body.len(), problem.dim(), ops.rows());
    let (rp, ci, va) = kron_identity(&ops.incidence, d, |_| T::one());
    let diff = HostCsr {
        name: "A x I_d",
        ncols: d * n,
        row_ptr: rp,
        col_idx: ci,
        values: va,
    };
    let neg_inv: Vec<T> = problem
        .body
        .volumes
        .iter()
        .map(|&v| T::of(-1.0 / v))
        .collect();
    let force = match &ops.incidence_t {
        Some(at) => {
            let (rp, ci, va) = kron_identity(at, d, |q| neg_inv[q / d]);
            HostCsr {
                name: "A^T x I_d",
                ncols: d * nr,
                row_ptr: rp,
                col_idx: ci,
                values: va,
            }
        }
        None => {
            let (rp, ci, va) = kron_identity(&ops.bt, 1, |q| neg_inv[q / d]);
            HostCsr {
                name: "B^T",
                ncols: nr,
                row_ptr: rp,
                col_idx: ci,
                values: va,
            }
        }
    };
    [diff, force]
}

/// The CSR arrays of `m` with every row repeated for `d` components (`m x I_d`, `d = 1`:
/// `m` itself): row `(r, k)` is row `d r + k`, its entries those of row `r` at columns
/// `d c + k`, values times `scale(d r + k)`.
fn kron_identity<T: Real>(
    m: &Mat<T>,
    d: usize,
    scale: impl Fn(usize) -> T + Sync,
) -> (Vec<u32>, Vec<u32>, Vec<T>) {
    let sym = m.symbolic();
    let (ptr, cols, val) = (sym.row_ptr(), sym.col_idx(), m.val());
    let nr = sym.nrows();
    let du = d as u32;
    let out_ptr = (0..=nr * d)
        .into_par_iter()
        .map(|q| {
            if q == nr * d {
                return du * ptr[nr];
            }
            let (r, k) = (q / d, (q % d) as u32);
            du * ptr[r] + k * (ptr[r + 1] - ptr[r])
        })
        .collect();
    let row = |r: usize| ptr[r] as usize..ptr[r + 1] as usize;
    let out_cols = (0..nr)
        .into_par_iter()
        .flat_map_iter(|r| (0..du).flat_map(move |k| cols[row(r)].iter().map(move |&c| du * c + k)))
        .collect();
    let scale = &scale;
    let out_val = (0..nr)
        .into_par_iter()
        .flat_map_iter(|r| {
            (0..d).flat_map(move |k| {
                let s = scale(d * r + k);
                val[row(r)].iter().map(move |&v| v * s)
            })
        })
        .collect();
    (out_ptr, out_cols, out_val)
}
