//! What the device buffers of a [`GpuMatrix`](super::GpuMatrix) hold: the room an image (or
//! the largest of several) needs ([`Room`]), the bond vectors' device buffers
//! ([`DeviceBondVectors`]), and the checked, enqueued copies of an image's arrays into them
//! ([`put`]).
//!
//! Units: values per buffer, non-zeros per operator, bytes.

use super::host_csr::HostCsr;
use super::image::MatrixImage;
use super::{law_code, LPS, NAME};
use crate::backend::gpu::buffers::addr;
use crate::gpu::device::driver_error;
use crate::gpu::pinned::copy_in;
use crate::gpu::Gpu;
use crate::operators::BondVectors;
use crate::{Error, Real, Result};
use cudarc::driver::{CudaSlice, DeviceRepr, ValidAsZeroBits};

/// What the buffers of a [`GpuMatrix`] must hold for an image (or the largest of several):
/// values per buffer, `(rows, non-zeros)` per operator.
#[derive(Debug, Clone, Default)]
pub(super) struct Room {
    pub nodes: usize,
    pub rows: usize,
    /// `d n`: the displacement and force of the trait calls.
    pub dofs: usize,
    /// `d rows`: the rows' force vectors.
    pub z: usize,
    /// LPS: `rows`, the extensions `Theta` reads.
    pub ze: usize,
    pub theta: usize,
    /// The bond vectors (order of `BondVectors::NAMES`).
    pub vectors: [usize; 7],
    /// `(n + 1, non-zeros)` of the signed `A^T`.
    pub at: (usize, usize),
    /// `Phi`, `Theta`.
    pub csr: [(usize, usize); 2],
}

impl Room {
    pub(super) fn of<T: Real>(image: &MatrixImage<T>) -> Room {
        let p = &*image.problem;
        let (n, d, nr) = (p.body.len(), p.dim(), image.rows.len());
        let law = law_code(p);
        let shape = |m: &HostCsr<T>| (m.row_ptr.len().saturating_sub(1), m.col_idx.len());
        Room {
            nodes: n,
            rows: nr,
            dofs: d * n,
            z: d * nr,
            ze: if law == LPS { nr } else { 0 },
            theta: if law == LPS { n } else { 0 },
            vectors: image.vectors.lengths(),
            at: (image.at.row_ptr.len(), image.at.col.len()),
            csr: [
                shape(&image.damage),
                image.theta.as_ref().map_or((0, 0), shape),
            ],
        }
    }

    /// Room for both.
    pub(super) fn max(&self, other: &Room) -> Room {
        let m = |a: usize, b: usize| a.max(b);
        Room {
            nodes: m(self.nodes, other.nodes),
            rows: m(self.rows, other.rows),
            dofs: m(self.dofs, other.dofs),
            z: m(self.z, other.z),
            ze: m(self.ze, other.ze),
            theta: m(self.theta, other.theta),
            vectors: std::array::from_fn(|k| m(self.vectors[k], other.vectors[k])),
            at: (m(self.at.0, other.at.0), m(self.at.1, other.at.1)),
            csr: std::array::from_fn(|k| {
                let ((r1, n1), (r2, n2)) = (self.csr[k], other.csr[k]);
                (m(r1, r2), m(n1, n2))
            }),
        }
    }
}

/// Enqueue on `gpu`'s stream the copy of `src` into the start of `dst`; bytes. An error where
/// `dst` is shorter.
///
/// # Safety
/// `src` must stay alive and unwritten until the stream has passed the copy.
pub(super) unsafe fn put<U: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    dst: &CudaSlice<U>,
    src: &[U],
    what: &str,
) -> Result<usize> {
    if src.len() > dst.len() {
        return Err(slot_error(format!(
            "{what}: {} values do not fit the slot's {}",
            src.len(),
            dst.len()
        )));
    }
    // SAFETY: `dst` holds at least `src.len()` values; the caller keeps `src`.
    unsafe { copy_in(gpu.stream(), addr(gpu, dst), src)? };
    Ok(std::mem::size_of_val(src))
}

pub(super) fn slot_error(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: NAME.into(),
        message: message.into(),
    }
}

/// Bytes of a CSR matrix on the device as [`CsrMatrix::upload`] allocates it.
pub(super) fn csr_bytes(nrows: usize, nnz: usize, t: usize) -> usize {
    4 * (nrows + 1) + (4 + t) * nnz.max(1)
}

/// The bond vectors on the device: one buffer each, in the order of [`BondVectors::NAMES`].
pub(super) struct DeviceBondVectors<T> {
    buffers: [CudaSlice<T>; 7],
}

impl<T: Real> DeviceBondVectors<T> {
    /// Buffers of `lengths` values each (at least one).
    pub(super) fn new(gpu: &Gpu, lengths: &[usize; 7]) -> Result<Self> {
        let mut buffers = Vec::with_capacity(lengths.len());
        for &len in lengths {
            let buffer = gpu.stream().alloc_zeros::<T>(len.max(1));
            buffers.push(buffer.map_err(driver_error)?);
        }
        Ok(DeviceBondVectors {
            buffers: buffers
                .try_into()
                .unwrap_or_else(|_| unreachable!("seven lengths, seven buffers")),
        })
    }

    /// Device addresses of the buffers.
    pub(super) fn addresses(&self, gpu: &Gpu) -> [u64; 7] {
        self.buffers.each_ref().map(|b| addr(gpu, b))
    }

    /// Enqueue the copies of `vectors` into the buffers (each checked by [`put`]); bytes.
    ///
    /// # Safety
    /// As [`put`]: `vectors` stays alive and unwritten until the stream has passed the copies.
    pub(super) unsafe fn put(&self, gpu: &Gpu, vectors: &BondVectors<T>) -> Result<usize> {
        let mut bytes = 0;
        let sources = vectors.all().into_iter().zip(BondVectors::<T>::NAMES);
        for (buffer, (src, name)) in self.buffers.iter().zip(sources) {
            // SAFETY: as this function's.
            bytes += unsafe { put(gpu, buffer, src, name)? };
        }
        Ok(bytes)
    }

    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> usize {
        self.buffers.iter().map(|b| b.num_bytes()).sum()
    }
}
