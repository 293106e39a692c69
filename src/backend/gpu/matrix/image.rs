//! [`MatrixImage`]: everything a [`GpuMatrix`](super::GpuMatrix) uploads, assembled on the
//! host once (the force sum's signed `A^T`, `Theta` and `Phi`, the bond vectors, the row
//! status, the no-fail flags, several materials' node indices and the volumes), page-locked
//! where it is uploaded again and again.
//!
//! Units as in [`crate::operators`]: m, N/m^7, N/m^6, m^6, m^3; sizes in bytes.

use super::host_csr::{HostCsr, SignedIncidence};
use crate::gpu::pinned::Registered;
use crate::gpu::Gpu;
use crate::operators::{BondRows, BondVectors, IncidenceOperators, Storage};
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;

/// Everything a [`GpuMatrix`](super::GpuMatrix) uploads, assembled on the host once: the
/// device operators, the bond vectors, the row status and the no-fail flags. The streamed
/// matrix scheme keeps one image per subdomain and uploads it whenever the subdomain runs
/// (`backend/partitioned/matrix_stream.rs`); `mu` is where a subdomain's row status waits
/// between uploads.
pub struct MatrixImage<T: Real> {
    /// Page-locks of the large arrays below ([`MatrixImage::pin`]); first, so they are
    /// released before the arrays are freed.
    pins: Vec<Registered>,
    pub(super) problem: Arc<Problem>,
    pub(super) storage: Storage,
    pub(super) rows: Arc<BondRows>,
    /// `A^T`, signed, for the force sum.
    pub(super) at: SignedIncidence,
    pub(super) theta: Option<HostCsr<T>>,
    pub(super) damage: HostCsr<T>,
    /// The operators' bond vectors.
    pub(super) vectors: BondVectors<T>,
    /// Status of each bond row (1 intact), as the device last left it (never reallocated:
    /// it may be page-locked).
    pub(super) mu: Vec<u8>,
    pub(super) no_fail: Vec<u8>,
    /// Several materials: each node's material index (`MaterialMap::node`; empty for one
    /// material), loaded with the image into a slot's index buffer.
    pub(super) material: Vec<u8>,
}

impl<T: Real> MatrixImage<T> {
    /// Assemble the operators of `problem` in `storage` and build what the device gets.
    pub fn assemble(problem: Arc<Problem>, storage: Storage) -> Result<Self> {
        let p = &*problem;
        let ops = IncidenceOperators::<T>::assemble(p, storage)?;
        let nr = ops.rows();
        let mu = ops.row_status(&p.initial_mu);
        let IncidenceOperators {
            rows,
            vectors,
            incidence_t,
            theta,
            damage,
            ..
        } = ops;
        let at = SignedIncidence::of(&incidence_t);
        drop(incidence_t);
        // (moved, not copied: at 30 M rows a copy of Phi is a large share of the setup)
        let theta = theta.map(|m| HostCsr::from_mat("Theta", m, nr));
        let damage = HostCsr::from_mat("Phi", damage, nr);
        Ok(MatrixImage {
            pins: Vec::new(),
            no_fail: p.no_fail.iter().map(|&b| u8::from(b)).collect(),
            material: p
                .materials
                .as_ref()
                .map_or_else(Vec::new, |m| m.node.clone()),
            problem,
            storage,
            rows: Arc::new(rows),
            at,
            theta,
            damage,
            vectors,
            mu,
        })
    }

    /// Number of bond rows.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Directed bonds broken among the first `rows` rows of the status that leave one of
    /// the first `nodes` nodes (`BondRows::broken_leaving`).
    pub fn broken_bonds_of(&self, rows: usize, nodes: usize) -> usize {
        self.rows.broken_leaving(&self.mu[..rows], nodes)
    }

    /// Status of each bond row (1 intact).
    pub fn row_status(&self) -> &[u8] {
        &self.mu
    }

    /// Status of each bond row, to write into (a download after a pass).
    pub fn row_status_mut(&mut self) -> &mut [u8] {
        &mut self.mu
    }

    /// Nodes of the local problem.
    pub fn nodes(&self) -> usize {
        self.problem.body.len()
    }

    /// Dimension of the local problem.
    pub fn dim(&self) -> usize {
        self.problem.dim()
    }

    /// Page-lock every array in place, so each upload is a copy-engine transfer that does
    /// not occupy the host (for images uploaded again and again: the streamed matrix
    /// scheme). Small arrays too: an asynchronous copy from pageable memory waits for the
    /// stream's earlier work, which would stall the host behind the copies it enqueued. An
    /// array the driver declines (a page shared with another registration) stays pageable:
    /// slower, not wrong.
    pub fn pin(&mut self, gpu: &Gpu) {
        fn bytes<V>(v: &[V]) -> (*const u8, usize) {
            (v.as_ptr() as *const u8, std::mem::size_of_val(v))
        }
        let mut arrays: Vec<_> = self.vectors.all().into_iter().map(|v| bytes(v)).collect();
        arrays.extend([
            bytes(&self.at.row_ptr),
            bytes(&self.at.col),
            bytes(&self.rows.first),
            bytes(&self.rows.second),
            bytes(&self.problem.body.volumes),
            bytes(&self.mu),
            bytes(&self.no_fail),
            bytes(&self.material),
        ]);
        for m in [self.theta.as_ref(), Some(&self.damage)]
            .into_iter()
            .flatten()
        {
            arrays.extend([bytes(&m.row_ptr), bytes(&m.col_idx), bytes(&m.values)]);
        }
        for (ptr, len) in arrays.into_iter().filter(|&(_, len)| len > 0) {
            // SAFETY: every array is owned by this image (or its `Arc`s) and never resized
            // or replaced (`mu` is written in place only); the guards are dropped before the
            // arrays (field order).
            let slice = unsafe { std::slice::from_raw_parts(ptr, len) };
            if let Ok(Some(pin)) = unsafe { Registered::new(gpu, slice) } {
                self.pins.push(pin);
            }
        }
    }

    /// Status per directed bond of the local problem (CSR order), from the rows' status.
    pub fn bond_status(&self) -> Vec<u8> {
        self.rows.bond_status(&self.mu)
    }

    /// Bytes an upload moves: operators, bond vectors, status, no-fail flags, material
    /// indices, volumes.
    pub fn bytes(&self) -> usize {
        let csr = HostCsr::bytes;
        self.at.bytes()
            + self.theta.as_ref().map_or(0, csr)
            + csr(&self.damage)
            + self.vectors.bytes()
            + 8 * self.rows.len()
            + self.mu.len()
            + self.no_fail.len()
            + self.material.len()
            + 8 * self.problem.body.len()
    }
}
