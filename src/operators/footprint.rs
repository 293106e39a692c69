//! Memory footprints of the operators in full and half storage, computed from the counts of a
//! problem without assembling anything (for `peridot info` and for planning), and the actual
//! bytes of assembled operators (which the footprint must equal). Units: bytes.

use super::{bond_vector_lengths, Mat, Operators, Storage};
use crate::material::Law;
use crate::setup::Problem;
use crate::Real;

/// Bytes of one sparse operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperatorBytes {
    /// Name as in `theory.md` (`B`, `B^T`, `A`, `A^T`, `Theta`, `Phi`).
    pub name: &'static str,
    pub nnz: usize,
    /// Row pointer, column indices (4 bytes each) and values.
    pub bytes: usize,
    /// Whether an explicit step uses it (`B` is assembled for the stiffness and export only;
    /// nonlinear PMB uses `A^T` instead of `B^T`).
    pub step: bool,
}

/// Memory of the operators of one problem in one storage and precision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint {
    pub storage: Storage,
    /// Bytes per scalar (4 for `f32`, 8 for `f64`).
    pub scalar_bytes: usize,
    /// Bond rows.
    pub rows: usize,
    pub operators: Vec<OperatorBytes>,
    /// Per-row vectors: `xi`, `length`, `a`, `g`, `g_second`, `a_first`, `w`, the row ends
    /// and the pair map.
    pub bond_vectors: usize,
}

impl Footprint {
    /// Everything [`Operators::assemble`] builds.
    pub fn assembled(&self) -> usize {
        self.operators.iter().map(|o| o.bytes).sum::<usize>() + self.bond_vectors
    }

    /// What an explicit step keeps: the operators it uses (not `B`; not `B^T` for nonlinear
    /// PMB) and the bond vectors.
    pub fn step(&self) -> usize {
        let ops: usize = self
            .operators
            .iter()
            .filter(|o| o.step)
            .map(|o| o.bytes)
            .sum();
        ops + self.bond_vectors
    }
}

fn csr(name: &'static str, nrows: usize, nnz: usize, t: usize, step: bool) -> OperatorBytes {
    OperatorBytes {
        name,
        nnz,
        bytes: 4 * (nrows + 1) + (4 + t) * nnz,
        step,
    }
}

/// The counts the operators' bytes follow: those of an assembled problem
/// ([`OperatorCounts::of`]), or estimated from a model before any node is placed (the memory
/// guard, `backend/estimate.rs`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OperatorCounts {
    pub nodes: usize,
    /// Directed bonds.
    pub bonds: usize,
    pub dim: usize,
    /// The bond law (its kind sets which operators exist).
    pub law: Law,
}

impl OperatorCounts {
    /// The counts of `problem`.
    pub fn of(problem: &Problem) -> OperatorCounts {
        OperatorCounts {
            nodes: problem.body.len(),
            bonds: problem.families.bonds(),
            dim: problem.dim(),
            law: problem.material.law,
        }
    }

    /// Bond rows in `storage`: every directed bond, or one per pair.
    pub fn rows(&self, storage: Storage) -> usize {
        match storage {
            Storage::Full => self.bonds,
            Storage::Half => self.bonds / 2,
        }
    }
}

/// Footprint of `problem`'s operators in `storage` with `scalar_bytes` per value.
pub fn footprint(problem: &Problem, storage: Storage, scalar_bytes: usize) -> Footprint {
    footprint_of(&OperatorCounts::of(problem), storage, scalar_bytes)
}

/// Footprint of the operators of a problem of `counts` in `storage` with `scalar_bytes` per
/// value.
pub fn footprint_of(counts: &OperatorCounts, storage: Storage, scalar_bytes: usize) -> Footprint {
    let (n, d, t) = (counts.nodes, counts.dim, scalar_bytes);
    let rows = counts.rows(storage);
    let half = storage == Storage::Half;
    let lps = matches!(counts.law, Law::Lps { .. });
    let nonlinear = matches!(
        counts.law,
        Law::Pmb {
            linearized: false,
            ..
        }
    );
    let node_nnz = if half { 2 * rows } else { rows };
    let mut operators = vec![
        csr("B", rows, 2 * d * rows, t, false),
        csr("B^T", d * n, 2 * d * rows, t, !nonlinear),
        csr("A", rows, 2 * rows, t, true),
    ];
    if nonlinear {
        operators.push(csr("A^T", n, 2 * rows, t, true));
    }
    if lps {
        operators.push(csr("Theta", n, node_nnz, t, true));
    }
    operators.push(csr("Phi", n, node_nnz, t, true));
    let scalars: usize = bond_vector_lengths(rows, d, &counts.law, storage)
        .iter()
        .sum();
    // first, second; the pair map in half storage
    let indices = 2 + 2 * usize::from(half);
    Footprint {
        storage,
        scalar_bytes,
        rows,
        operators,
        bond_vectors: scalars * t + rows * 4 * indices,
    }
}

/// Bytes of a matrix: row pointer and column indices (4 bytes each) and values.
pub fn mat_bytes<T>(m: &Mat<T>) -> usize {
    let sym = m.symbolic();
    4 * (sym.row_ptr().len() + sym.col_idx().len()) + std::mem::size_of_val(m.val())
}

impl<T: Real> Operators<T> {
    /// Bytes of the assembled operators and bond vectors (equals [`Footprint::assembled`]).
    pub fn bytes(&self) -> usize {
        self.matrix_bytes(true) + self.vector_bytes()
    }

    /// Bytes of the sparse matrices, with or without `B`.
    pub fn matrix_bytes(&self, with_b: bool) -> usize {
        let mut sum = mat_bytes(&self.bt) + mat_bytes(&self.incidence) + mat_bytes(&self.damage);
        sum += self.incidence_t.as_ref().map_or(0, mat_bytes);
        sum += self.theta.as_ref().map_or(0, mat_bytes);
        if with_b {
            sum += mat_bytes(&self.b);
        }
        sum
    }

    /// Bytes of the per-row vectors: the bond vectors and the rows' indices.
    pub fn vector_bytes(&self) -> usize {
        self.vectors.bytes() + self.rows.index_bytes()
    }
}
