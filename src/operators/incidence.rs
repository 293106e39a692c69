//! The incidence form of the operators, for a device that forms each row's bond difference
//! from its two end nodes (`eta_r = u_j - u_i`: the incidence `A` with implicit +-1 values,
//! no matrix read) and sums the rows' force vectors into the nodes with one sparse product
//! `F = A^T Z` over an `n x d` block: [`IncidenceOperators`], which holds `A^T`, `Theta`,
//! `Phi` and the bond vectors, and none of `B`, `B^T` or `A`, so the bytes held and moved
//! per step are those of two non-zeros per row instead of `2 d` in each of `B` and `B^T`.
//! Also what both forms share: the bond rows with their geometry and coefficients
//! ([`RowBase`]).
//!
//! Units as in [`super`]: `A^T` 1, `Theta` 1/m, `Phi` 1; bond vectors as [`BondVectors`].

use super::values::{self, BondGeometry, Coefficients, NodeRow};
use super::{check_finite, check_index_range, into_t, pattern, BondMaps, BondRows, BondVectors};
use super::{Mat, Storage};
use crate::material::Law;
use crate::setup::Problem;
use crate::{Real, Result};
use faer::sparse::SymbolicSparseRowMat;

/// What every form of the operators is built from: the bond rows in a storage, their
/// geometry and coefficients (f64), and the pattern of `A^T` (node `k`'s rows, in the
/// order the families give).
pub(super) struct RowBase {
    pub storage: Storage,
    pub maps: BondMaps,
    pub rows: BondRows,
    pub geometry: BondGeometry,
    pub coef: Coefficients,
    pub at: SymbolicSparseRowMat<u32>,
}

impl RowBase {
    pub fn new(problem: &Problem, storage: Storage) -> Self {
        let fam = &problem.families;
        let late = problem.ghosts_from.unwrap_or(fam.nodes());
        let maps = BondMaps::new(fam, storage, late);
        let rows = BondRows::from_maps(fam, storage, &maps, late);
        let geometry = BondGeometry::new(problem, &rows);
        let coef = values::coefficients(problem, &rows, &geometry);
        let at = pattern::node_incidence(fam, storage, &maps);
        RowBase {
            storage,
            maps,
            rows,
            geometry,
            coef,
            at,
        }
    }

    /// `A^T`: `-1` where node `k` is a row's first node, `+1` where it is its second.
    pub fn incidence_t<T: Real>(&self) -> Mat<T> {
        let val = values::transposed_incidence(&self.rows, &self.at, 1, &[]);
        Mat::new(self.at.clone(), val)
    }

    /// `Theta` (LPS only) and `Phi`.
    pub fn node_operators<T: Real>(&self, problem: &Problem) -> (Option<Mat<T>>, Mat<T>) {
        let node_rows = match self.storage {
            Storage::Full => pattern::node_rows(&problem.families, self.storage, &self.maps),
            Storage::Half => self.at.clone(),
        };
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let theta = lps.then(|| {
            let val = values::node_rows(problem, &self.rows, &node_rows, NodeRow::Theta);
            Mat::new(node_rows.clone(), val)
        });
        let damage = values::node_rows(problem, &self.rows, &node_rows, NodeRow::Damage);
        (theta, Mat::new(node_rows, damage))
    }

    /// The bond rows, and the bond vectors rounded to `T` (moved, not copied, in f64).
    pub fn into_rows_and_vectors<T: Real>(self) -> (BondRows, BondVectors<T>) {
        let (g, c) = (self.geometry, self.coef);
        let vectors = BondVectors {
            xi: into_t(g.xi),
            length: into_t(g.length),
            a: into_t(c.a),
            g: into_t(c.g),
            g_second: into_t(c.g_second),
            a_first: into_t(c.a_first),
            w: into_t(c.w),
        };
        (self.rows, vectors)
    }
}

/// The operators of the incidence form (module docs): every law's forces are
/// `f = -diag(1/V) A^T Z`, `Z` the rows' force vectors (`w t n` for the linear laws,
/// `w t y/|y|` for nonlinear PMB), `d` per row.
#[derive(Debug, Clone)]
pub struct IncidenceOperators<T: Real> {
    pub storage: Storage,
    /// Bond rows: `first[r] = i`, `second[r] = j`, and the pair map in half storage.
    pub rows: BondRows,
    /// The per-row bond vectors, as [`super::Operators::vectors`].
    pub vectors: BondVectors<T>,
    /// `A^T` (`n` x rows, +-1).
    pub incidence_t: Mat<T>,
    /// `Theta` (LPS only).
    pub theta: Option<Mat<T>>,
    /// `Phi`.
    pub damage: Mat<T>,
}

impl<T: Real> IncidenceOperators<T> {
    /// Assemble the incidence form of `problem` in `storage`; the same errors as
    /// [`super::Operators::assemble`] (32-bit indices, coefficients that overflow `T`).
    pub fn assemble(problem: &Problem, storage: Storage) -> Result<Self> {
        check_index_range(problem.families.bonds(), problem.dim(), storage)?;
        let base = RowBase::new(problem, storage);
        let (theta, damage) = base.node_operators(problem);
        let incidence_t = base.incidence_t();
        let (rows, vectors) = base.into_rows_and_vectors();
        check_finite(problem, &vectors, theta.as_ref(), &damage)?;
        Ok(IncidenceOperators {
            storage,
            incidence_t,
            vectors,
            theta,
            damage,
            rows,
        })
    }

    /// Number of bond rows.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Bond status per row from a status per directed bond.
    pub fn row_status(&self, bond_status: &[u8]) -> Vec<u8> {
        self.rows.row_status(bond_status)
    }
}
