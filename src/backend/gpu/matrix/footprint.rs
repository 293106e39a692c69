//! The device bytes of `gpu-matrix`: estimated from a problem's counts before anything is
//! assembled (the out-of-memory check, `peridot info`, the subdomain planner), and held by a
//! backend (`memory_bytes`, with the cuSPARSE workspaces) or moved by one explicit step.
//!
//! Units: bytes.

use super::room::csr_bytes;
use super::{law_code_of, GpuMatrix, BLOCK, LPS};
use crate::operators::{bond_vector_lengths, OperatorCounts, Storage};
use crate::setup::Problem;
use crate::Real;

impl<T: Real> GpuMatrix<T> {
    /// `scalar_bytes` per value, without assembling or touching a GPU: operators, bond
    /// vectors, scratch and the time loop's state. Equals [`Backend::memory_bytes`] less the
    /// cuSPARSE workspaces ([`GpuMatrix::workspace_bytes`]) and the time loop's condition
    /// lists and factor table (made by the first `advance_explicit`).
    pub fn memory_estimate(problem: &Problem, storage: Storage, scalar_bytes: usize) -> usize {
        Self::memory_estimate_of(&OperatorCounts::of(problem), storage, scalar_bytes)
    }

    /// [`memory_estimate`](Self::memory_estimate) of a problem of `counts`.
    pub fn memory_estimate_of(
        counts: &OperatorCounts,
        storage: Storage,
        scalar_bytes: usize,
    ) -> usize {
        let (n, d, t) = (counts.nodes, counts.dim, scalar_bytes);
        let rows = counts.rows(storage);
        // u v a f b (the half-step velocity only in damped runs, on their first step)
        let state = 5 * (d * n).max(1) * t + 8;
        Self::slot_estimate_of(counts, storage, t, n, rows) + state
    }

    /// Bond rows of `problem` in `storage`.
    pub fn bond_rows(problem: &Problem, storage: Storage) -> usize {
        OperatorCounts::of(problem).rows(storage)
    }

    /// Bytes of a [`GpuMatrix::slot`] with room for `nodes` nodes and `rows` bond rows of
    /// problems of `problem`'s law and dimension (the largest node count and the largest
    /// row count of its images: every buffer's length follows one of the two), in `storage`
    /// with `scalar_bytes` per value: operators, bond vectors and scratch, no time loop.
    /// Equals the slot's [`Backend::memory_bytes`] less its cuSPARSE workspaces.
    pub fn slot_estimate(
        problem: &Problem,
        storage: Storage,
        scalar_bytes: usize,
        nodes: usize,
        rows: usize,
    ) -> usize {
        let counts = OperatorCounts::of(problem);
        Self::slot_estimate_of(&counts, storage, scalar_bytes, nodes, rows)
    }

    /// [`slot_estimate`](Self::slot_estimate) for problems of the law and dimension of
    /// `counts`.
    pub fn slot_estimate_of(
        counts: &OperatorCounts,
        storage: Storage,
        scalar_bytes: usize,
        nodes: usize,
        rows: usize,
    ) -> usize {
        let (t, n, d) = (scalar_bytes, nodes, counts.dim);
        let law = law_code_of(&counts.law);
        let lps = law == LPS;
        let half = storage == Storage::Half;
        let node_nnz = if half { 2 * rows } else { rows };
        // (the signed A^T: row pointers and two row indices per bond row, no values)
        let ops = 4 * (n + 1)
            + 4 * (2 * rows).max(1)
            + if lps { csr_bytes(n, node_nnz, t) } else { 0 }
            + csr_bytes(n, node_nnz, t);
        let v = |len: usize, bytes: usize| len.max(1) * bytes;
        let lengths = bond_vector_lengths(rows, d, &counts.law, storage);
        let vectors = lengths.iter().map(|&len| v(len, t)).sum::<usize>()
            + 2 * v(rows, 4)
            + v(rows, 1)
            + v(n, 1)
            + v(n, 8);
        let scratch = v(d * rows, t)
            + v(if lps { rows } else { 0 }, t)
            + v(if lps { n } else { 0 }, t)
            + v(n, t)
            + v(rows.max(n).div_ceil(BLOCK), 8)
            + 2 * v(d * n, t)
            + 8;
        ops + vectors + scratch
    }

    /// Bytes of the cuSPARSE workspaces.
    pub fn workspace_bytes(&self) -> usize {
        self.products().iter().map(|s| s.workspace_bytes()).sum()
    }

    pub fn memory_bytes(&self) -> usize {
        let ops: usize = self.products().iter().map(|s| s.bytes()).sum();
        let scratch = [
            &self.z,
            &self.ze,
            &self.theta,
            &self.phi,
            &self.u_in,
            &self.f_out,
        ]
        .iter()
        .map(|v| v.num_bytes())
        .sum::<usize>();
        ops + self.vectors.bytes()
            + scratch
            + self.at_ptr.num_bytes()
            + self.at_col.num_bytes()
            + self.first.num_bytes()
            + self.second.num_bytes()
            + self.mu.num_bytes()
            + self.no_fail.num_bytes()
            + self.volumes.num_bytes()
            + self.partial.num_bytes()
            + self.broken.bytes()
            + self.stepper.as_ref().map_or(0, |s| s.bytes())
    }

    /// Minimal bytes of one explicit step with bond checking: the bond kernel reads the
    /// row ends, `xi`, the length, `a` and `w`, reads and writes the status, writes `Z`, and
    /// reads every node's displacement once (the rows' gathers of it hit the caches); the
    /// force sum reads `A^T`'s row pointers and signed rows, each row's `Z` twice (once per
    /// end), each node's volume, and writes the force; LPS writes and reads `ze`, runs
    /// `Theta` (matrix read once, input read once, output written once) and reads `g` (and
    /// `g_ji`) and the dilatations.
    pub fn bytes_per_step(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, d, rows) = (self.problem.body.len(), self.dim, self.nrows());
        let mut bytes = rows * (8 + d * t + 3 * t + 2 + d * t) + n * d * t;
        bytes += 4 * (n + 1) + 2 * rows * (4 + d * t) + n * (8 + d * t);
        if let Some(op) = &self.theta_op {
            let half = usize::from(self.storage == Storage::Half);
            bytes += op.traffic() + rows * (2 * t + (1 + half) * t) + n * t;
        }
        bytes
    }

    pub fn operator_nnz(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![("A^T", self.at_nnz)];
        if let Some(m) = &self.theta_op {
            out.push(("Theta", m.matrix.nnz));
        }
        out.push(("Phi", self.damage_op.matrix.nnz));
        out
    }
}
