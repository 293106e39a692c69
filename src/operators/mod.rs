//! Sparse operators of the matrix formulation (`theory.md` section 4), assembled once per model
//! from the bond list and never changed afterwards: damage only changes the bond mask `mu`.
//!
//! A *bond row* is one row of the bond-level operators. In [`Storage::Full`] there is one row
//! per directed bond `b = (i -> j)`, in CSR family order (`nb` = sum of family sizes), so a
//! row index is a bond index. In [`Storage::Half`] there is one row per undirected pair
//! `i < j`, ordered by `i` then `j`, and `pairs` maps each row to its two directed bonds.
//!
//! | item | shape | entries | units |
//! |---|---|---|---|
//! | `b` (`B`) | rows x `d n` | `-n` in node `i`'s `d` columns, `+n` in node `j`'s | 1 |
//! | `bt` (`B^T`) | `d n` x rows | the transpose, stored explicitly | 1 |
//! | `incidence` (`A`) | rows x `n` | `-1` at `i`, `+1` at `j` | 1 |
//! | `incidence_t` (`A^T`) | `n` x rows | nonlinear PMB only | 1 |
//! | `theta` (`Theta`) | `n` x rows | `(d / m_k) omega x beta V_other` (LPS only) | 1/m |
//! | `damage` (`Phi`) | `n` x rows | `beta V_other / V_H,k` | 1 |
//! | `a` | rows | `a_b`; half: `a_ij + a_ji` | N/m^7 |
//! | `g` | rows | `g_b`; half: `g_ij` (LPS only) | N/m^6 |
//! | `g_second` | rows | half: `g_ji` (LPS only) | N/m^6 |
//! | `a_first` | rows | half: `a_ij` (LPS only, for the energy) | N/m^7 |
//! | `w` | rows | `beta V_i V_j` | m^6 |
//! | `xi`, `length` | `d` x rows, rows | reference bond vector and length | m |
//!
//! with `i = first[r]`, `j = second[r]`, `k` the node of a `theta` / `damage` row and "other"
//! the bond's other end. PMB: `a_b = c lambda_b / (2 x_b)`, `g = 0`, so the bond force
//! scalar is `t_b = mu_b a_b e_b = mu_b c lambda_b s_b / 2` with the extension `e = x s`
//! (`s` linearized or nonlinear). LPS: `a_b = alpha_i omega_b`,
//! `g_b = omega_b x_b (d K_d / m_i - alpha_i / d)`. Forces in newtons are
//! `f = -B^T (w o t)` (linear laws) and `f = -A^T (w o t o y/|y|)` per component (nonlinear
//! PMB); half storage sums the two directions into one row:
//! `t_ij + t_ji = mu [(a_ij + a_ji) e + g_ij theta_i + g_ji theta_j]`.
//!
//! Every matrix is a faer `SparseRowMat<u32, T>` ([`Mat`]): 32-bit indices halve the index
//! memory and are what cuSPARSE runs fastest; the non-zeros of `B` (`2 d` per row) must stay
//! below `2^32`, which in 3D is about 5.8 million nodes at 122 bonds per node in full storage,
//! where `B` and `B^T` alone take 34 GB each in `f32`: beyond it a problem has to be split
//! into subdomains anyway. [`Operators::assemble`] says so as an error instead of wrapping.
//!
//! Files: `pattern.rs` (bond rows and sparsity patterns, no values), `incidence.rs` (the
//! incidence form a device applies: `A^T`, `Theta`, `Phi`, no `B`; and the bond rows every
//! form starts from), `values.rs` (bond
//! geometry, coefficients and matrix values), `spmv.rs` (deterministic row-parallel sparse
//! products), `footprint.rs` (memory of full and half storage without assembling, from a problem or from counts estimated from a model).

mod bond_vectors;
pub mod convert;
mod footprint;
mod incidence;
mod pattern;
pub mod spmv;
pub mod stiffness;
mod values;

pub use bond_vectors::{bond_vector_lengths, BondVectors};
pub use footprint::{footprint, footprint_of, mat_bytes, Footprint, OperatorBytes, OperatorCounts};
pub use incidence::IncidenceOperators;
pub use pattern::{BondMaps, BondRows};

use incidence::RowBase;

use crate::material::Law;
use crate::setup::Problem;
use crate::{Error, Real, Result};
use faer::sparse::{SparseRowMat, SymbolicSparseRowMat};
use rayon::prelude::*;

/// The one sparse matrix type of the engine's core: CSR with 32-bit indices.
pub type Mat<T> = SparseRowMat<u32, T>;

/// How bond rows are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Storage {
    /// One row per directed bond (`nb` rows), the form of `theory.md` section 4.
    #[default]
    Full,
    /// One row per undirected pair `i < j` (`nb / 2` rows): half the bond memory.
    Half,
}

impl Storage {
    /// `"full"` or `"half"`.
    pub fn name(self) -> &'static str {
        match self {
            Storage::Full => "full",
            Storage::Half => "half",
        }
    }
}

/// The sparse operators and bond vectors of one problem (module docs: shapes and units).
#[derive(Debug, Clone)]
pub struct Operators<T: Real> {
    pub storage: Storage,
    /// Spatial dimension `d`.
    pub dim: usize,
    /// Number of nodes `n`.
    pub nodes: usize,
    /// Bond rows: `first[r] = i`, `second[r] = j`, and the pair map in half storage.
    pub rows: BondRows,
    /// The per-row bond vectors (`xi`, `length`, `a`, `g`, `g_second`, `a_first`, `w`).
    pub vectors: BondVectors<T>,
    /// `B`: extensions `e = B u`.
    pub b: Mat<T>,
    /// `B^T`, stored explicitly: forces `f = -B^T (w o t)`.
    pub bt: Mat<T>,
    /// `A`, the signed incidence: bond differences `eta = A u` per component.
    pub incidence: Mat<T>,
    /// `A^T` (nonlinear PMB only): forces `f = -A^T (w o t o y/|y|)` per component.
    pub incidence_t: Option<Mat<T>>,
    /// `Theta` (LPS only): dilatation `theta = Theta (mu o e)`.
    pub theta: Option<Mat<T>>,
    /// `Phi`: local damage `phi = Phi (1 - mu)`.
    pub damage: Mat<T>,
}

impl<T: Real> Operators<T> {
    /// Assemble every operator of `problem` in `storage`. Errors if the operators do not fit
    /// 32-bit indices or a coefficient is not representable in `T` (f32 with a tiny `dx`).
    pub fn assemble(problem: &Problem, storage: Storage) -> Result<Self> {
        let (n, d) = (problem.body.len(), problem.dim());
        check_index_range(problem.families.bonds(), d, storage)?;
        let base = RowBase::new(problem, storage);
        let nonlinear = matches!(
            problem.material.law,
            Law::Pmb {
                linearized: false,
                ..
            }
        );
        let rows = &base.rows;
        let incidence = Mat::new(
            pattern::incidence(rows, n, 1),
            values::incidence(rows, 1, &[]),
        );
        let b = Mat::new(
            pattern::incidence(rows, n, d),
            values::incidence(rows, d, &base.geometry.unit),
        );
        let bt = pattern::repeat_rows(&base.at, d);
        let bt_val = values::transposed_incidence(rows, &bt, d, &base.geometry.unit);
        let incidence_t = nonlinear.then(|| base.incidence_t());
        let (theta, damage) = base.node_operators(problem);
        let (rows, vectors) = base.into_rows_and_vectors();
        let ops = Operators {
            storage,
            dim: d,
            nodes: n,
            vectors,
            b,
            bt: Mat::new(bt, bt_val),
            incidence_t,
            incidence,
            theta,
            damage,
            rows,
        };
        ops.check_finite(problem)?;
        Ok(ops)
    }

    /// Number of bond rows (`nb` or the number of pairs).
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Non-zeros per operator, named as in `theory.md` (`B`, `B^T`, `A`, `A^T`, `Theta`, `Phi`).
    pub fn nnz(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![
            ("B", nnz(&self.b)),
            ("B^T", nnz(&self.bt)),
            ("A", nnz(&self.incidence)),
        ];
        if let Some(m) = &self.incidence_t {
            out.push(("A^T", nnz(m)));
        }
        if let Some(m) = &self.theta {
            out.push(("Theta", nnz(m)));
        }
        out.push(("Phi", nnz(&self.damage)));
        out
    }

    /// Bond status per row from a status per directed bond (see [`BondRows::row_status`]).
    pub fn row_status(&self, bond_status: &[u8]) -> Vec<u8> {
        self.rows.row_status(bond_status)
    }

    /// Status per directed bond (CSR order) from a status per row.
    pub fn bond_status(&self, row_status: &[u8]) -> Vec<u8> {
        self.rows.bond_status(row_status)
    }

    fn check_finite(&self, problem: &Problem) -> Result<()> {
        check_finite(problem, &self.vectors, self.theta.as_ref(), &self.damage)
    }
}

/// An error unless every bond coefficient and node-row value is finite in `T` (SI-scaled
/// operators overflow `f32` at a tiny `dx`).
fn check_finite<T: Real>(
    problem: &Problem,
    v: &BondVectors<T>,
    theta: Option<&Mat<T>>,
    damage: &Mat<T>,
) -> Result<()> {
    let finite = |v: &[T]| v.iter().all(|x| x.is_finite());
    let ok = [&v.a, &v.g, &v.g_second, &v.a_first, &v.w]
        .iter()
        .all(|v| finite(v))
        && theta.is_none_or(|m| finite(m.val()))
        && finite(damage.val());
    if ok {
        return Ok(());
    }
    Err(Error::Backend {
        backend: "cpu-matrix".into(),
        message: format!(
            "a bond coefficient does not fit {} at dx = {:.3e} m (SI-scaled operators); \
                 use --precision f64",
            T::NAME,
            problem.body.dx
        ),
    })
}

/// Non-zeros of a matrix.
pub fn nnz<T>(m: &Mat<T>) -> usize {
    m.symbolic().col_idx().len()
}

/// Refuse problems whose operators would overflow 32-bit indices.
fn check_index_range(bonds: usize, d: usize, storage: Storage) -> Result<()> {
    let rows = match storage {
        Storage::Full => bonds,
        Storage::Half => bonds / 2,
    };
    if (2 * d * rows) as u64 <= u32::MAX as u64 {
        return Ok(());
    }
    Err(Error::Backend {
        backend: "cpu-matrix".into(),
        message: format!(
            "{bonds} bonds need {} non-zeros in B, above the 32-bit index range; use half \
             storage, a coarser dx, or a loop backend",
            2 * d * rows
        ),
    })
}

fn to_t<T: Real>(v: &[f64]) -> Vec<T> {
    v.par_iter().map(|&x| T::of(x)).collect()
}

/// `v` rounded to `T`, moved without a copy where `T` is `f64`.
fn into_t<T: Real>(v: Vec<f64>) -> Vec<T> {
    let any: Box<dyn std::any::Any> = Box::new(v);
    match any.downcast::<Vec<T>>() {
        Ok(same) => *same,
        Err(any) => {
            let v = any
                .downcast::<Vec<f64>>()
                .unwrap_or_else(|_| unreachable!("boxed as Vec<f64>"));
            to_t(&v)
        }
    }
}

/// The transpose of a CSR matrix, itself CSR with sorted columns (a counting sort that keeps
/// the order of the source rows). Summing a transposed row in order therefore visits the
/// source rows in ascending order, whatever the thread count.
pub fn transpose<T: Copy>(m: &Mat<T>) -> Mat<T> {
    let sym = m.symbolic();
    let (nrows, ncols) = (sym.nrows(), sym.ncols());
    let (ptr, cols, perm) = pattern::transpose_parts(nrows, ncols, sym.row_ptr(), sym.col_idx());
    let val = m.val();
    let vals = perm.iter().map(|&k| val[k as usize]).collect();
    Mat::new(
        SymbolicSparseRowMat::new_checked(ncols, nrows, ptr, None, cols),
        vals,
    )
}
