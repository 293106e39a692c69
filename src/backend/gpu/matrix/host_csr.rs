//! The operators as the device gets them, built on the host: CSR arrays with 32-bit indices
//! for the cuSPARSE products (`Theta`, `Phi`: [`HostCsr`]) and `A^T` with implicit values for
//! the force sum (`matrix_force`: [`SignedIncidence`]).
//!
//! Units: `Theta` 1/m, `Phi` 1, `A^T` 1.

use crate::gpu::cusparse::{CsrMatrix, Handle};
use crate::operators::Mat;
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
    /// The assembled node-row operator `m` as named `name`, its arrays moved (no copy).
    pub(super) fn from_mat(name: &'static str, m: Mat<T>, ncols: usize) -> Self {
        let (sym, values) = m.into_parts();
        let (_, _, row_ptr, _, col_idx) = sym.into_parts();
        HostCsr {
            name,
            ncols,
            row_ptr,
            col_idx,
            values,
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

/// `A^T` as the device applies it (`matrix_force`): node `k`'s rows in the order of the
/// assembled `A^T`, each row index with bit 31 set where `k` is the row's first node (entry
/// `-1`) and clear where it is its second (`+1`); no values (the `-1/V_k` scale is applied
/// per node). Rows stay below `2^31` (`operators` refuses more than `2^32 / (2 d)`).
pub struct SignedIncidence {
    pub row_ptr: Vec<u32>,
    pub col: Vec<u32>,
}

/// Bit of a [`SignedIncidence`] column: the node is the row's first.
pub const FIRST_END: u32 = 1 << 31;

impl SignedIncidence {
    /// From the assembled `A^T` (entries -1 and +1).
    pub fn of<T: Real>(at: &Mat<T>) -> Self {
        let sym = at.symbolic();
        let col = sym
            .col_idx()
            .par_iter()
            .zip(at.val().par_iter())
            .map(|(&r, &v)| {
                debug_assert!(r < FIRST_END, "bond rows below 2^31");
                if v < T::zero() {
                    r | FIRST_END
                } else {
                    r
                }
            })
            .collect();
        SignedIncidence {
            row_ptr: sym.row_ptr().to_vec(),
            col,
        }
    }

    /// Bytes of the two arrays.
    pub fn bytes(&self) -> usize {
        4 * (self.row_ptr.len() + self.col.len())
    }

    /// As a faer matrix with values `scale(k) * (+-1)` in row `k` (host-side checks).
    pub fn to_mat<T: Real>(&self, ncols: usize, scale: impl Fn(usize) -> T) -> Mat<T> {
        let n = self.row_ptr.len() - 1;
        let mut values = Vec::with_capacity(self.col.len());
        for k in 0..n {
            for &c in &self.col[self.row_ptr[k] as usize..self.row_ptr[k + 1] as usize] {
                let s = scale(k);
                values.push(if c & FIRST_END != 0 { T::zero() - s } else { s });
            }
        }
        let cols = self.col.iter().map(|&c| c & !FIRST_END).collect();
        Mat::new(
            faer::sparse::SymbolicSparseRowMat::new_checked(
                n,
                ncols,
                self.row_ptr.clone(),
                None,
                cols,
            ),
            values,
        )
    }
}
