//! The operators' matrices as the sparse types of other crates, behind cargo features, for
//! Rust callers of those crates: `sprs` ([`to_sprs`], `sprs::CsMat`) and `nalgebra-sparse`
//! ([`to_nalgebra`], `nalgebra_sparse::CsrMatrix`). The engine keeps one sparse type, faer's
//! `operators::Mat`; these are copies made at the edge (row pointers, column indices and values as
//! they are, so the product of the copy is the product of the original).
//!
//! ```toml
//! peridot = { path = "...", features = ["sprs", "nalgebra-sparse"] }
//! ```

#[cfg(any(feature = "sprs", feature = "nalgebra-sparse"))]
use super::Mat;

/// The row pointers, column indices and values of `m`, as `usize` and owned.
#[cfg(any(feature = "sprs", feature = "nalgebra-sparse"))]
fn csr_parts<T: Copy>(m: &Mat<T>) -> (Vec<usize>, Vec<usize>, Vec<T>) {
    let sym = m.symbolic();
    let indptr = sym.row_ptr().iter().map(|&p| p as usize).collect();
    let indices = sym.col_idx().iter().map(|&c| c as usize).collect();
    (indptr, indices, m.val().to_vec())
}

/// `m` as a `sprs::CsMat` in CSR storage (feature `sprs`).
#[cfg(feature = "sprs")]
pub fn to_sprs<T: Copy>(m: &Mat<T>) -> sprs::CsMat<T> {
    let (indptr, indices, values) = csr_parts(m);
    // faer's rows are sorted and in bounds, which is all `CsMat::new` checks
    sprs::CsMat::new((m.nrows(), m.ncols()), indptr, indices, values)
}

/// `m` as a `nalgebra_sparse::CsrMatrix` (feature `nalgebra-sparse`).
#[cfg(feature = "nalgebra-sparse")]
pub fn to_nalgebra<T: nalgebra_sparse::na::Scalar + Copy>(
    m: &Mat<T>,
) -> nalgebra_sparse::CsrMatrix<T> {
    let (indptr, indices, values) = csr_parts(m);
    nalgebra_sparse::CsrMatrix::try_from_csr_data(m.nrows(), m.ncols(), indptr, indices, values)
        .expect("faer's CSR rows are sorted, without repeats and in bounds")
}
