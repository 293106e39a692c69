//! A small safe wrapper of our own over cudarc's raw cuSPARSE bindings (the generic API):
//! a handle bound to the process's stream, CSR matrices that own their device arrays and
//! descriptor, dense-vector descriptors over device addresses, and one sparse matrix-vector
//! product `y = M x` whose workspace is sized and allocated once, at setup. A matrix can
//! also be made with room for larger ones ([`CsrMatrix::with_capacity`]) and refilled by
//! asynchronous copies, its descriptor re-made for each shape ([`CsrMatrix::copy_in`]): the
//! streamed matrix scheme's persistent slots (`backend/partitioned/matrix_stream.rs`).
//!
//! cudarc opens `libcusparse` lazily and panics when it is missing; [`Handle::new`] asks
//! [`super::detect::cusparse_library`] first (which also checks that every function called
//! here exists), so a machine without cuSPARSE gets an error, never a panic.
//!
//! Indices are 32-bit signed (`CUSPARSE_INDEX_32I`): the engine's `u32` row pointers and
//! column indices are converted at upload, with an error where a count exceeds `i32`.
//! Products use `CUSPARSE_SPMV_CSR_ALG1`, which gives bitwise the same result on every run.

use super::detect::cusparse_library;
use super::device::{driver_error, Gpu};
use super::pinned::copy_in;
use crate::{Error, Real, Result};
use cudarc::cusparse::result::CusparseError;
use cudarc::cusparse::sys;
use cudarc::driver::{CudaSlice, DevicePtr};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::Arc;

fn error(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: "gpu".into(),
        message: message.into(),
    }
}

fn check(status: sys::cusparseStatus_t, what: &str) -> Result<()> {
    status
        .result()
        .map_err(|CusparseError(s)| error(format!("cuSPARSE {what}: {s:?}")))
}

/// The cuSPARSE value type of `T`.
fn data_type<T: Real>() -> sys::cudaDataType {
    if T::NAME == "f32" {
        sys::cudaDataType::CUDA_R_32F
    } else {
        sys::cudaDataType::CUDA_R_64F
    }
}

/// A cuSPARSE handle whose work goes to the process's stream ([`Gpu::stream`]), so products
/// and kernels run in order.
pub struct Handle {
    raw: sys::cusparseHandle_t,
    gpu: Arc<Gpu>,
}

// SAFETY: a cuSPARSE handle may be used from any host thread, one call at a time; every use
// goes through `&self` methods of a backend that the `Backend` trait hands out as `&mut` or
// `&` to one thread at a time, and the handle is not `Sync`.
unsafe impl Send for Handle {}

impl Handle {
    /// Open cuSPARSE on `gpu`'s stream. An error (never a panic) where the library is missing.
    pub fn new(gpu: &Arc<Gpu>) -> Result<Self> {
        if cusparse_library().is_none() {
            return Err(error(
                "cuSPARSE (libcusparse) not found or too old; install the CUDA toolkit's \
                 cuSPARSE (or the nvidia-cusparse wheel) or use --backend gpu-loop",
            ));
        }
        gpu.stream()
            .context()
            .bind_to_thread()
            .map_err(driver_error)?;
        let raw = cudarc::cusparse::result::create()
            .map_err(|CusparseError(s)| error(format!("cuSPARSE create: {s:?}")))?;
        let handle = Handle {
            raw,
            gpu: gpu.clone(),
        };
        let stream = gpu.stream().cu_stream() as sys::cudaStream_t;
        // SAFETY: `raw` is a live handle; the stream belongs to the same context and outlives
        // the handle (the process-wide `Gpu` keeps it).
        check(
            unsafe { sys::cusparseSetStream(handle.raw, stream) },
            "set stream",
        )?;
        Ok(handle)
    }

    /// Make the device's context current on this thread (cuSPARSE works in the current
    /// context; the test harness and rayon call from several threads).
    fn bind(&self) -> Result<()> {
        self.gpu
            .stream()
            .context()
            .bind_to_thread()
            .map_err(driver_error)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        let _ = self.bind();
        // SAFETY: created in `new`, destroyed once here.
        let _ = unsafe { cudarc::cusparse::result::destroy(self.raw) };
    }
}

/// A CSR matrix on the device: row pointers and column indices (`i32`), values in `T`, and
/// its cuSPARSE descriptor (destroyed before the arrays are freed).
pub struct CsrMatrix<T> {
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    row_ptr: CudaSlice<i32>,
    col_idx: CudaSlice<i32>,
    values: CudaSlice<T>,
    descr: sys::cusparseSpMatDescr_t,
}

// SAFETY: the descriptor is plain host data describing device arrays this value owns; it is
// used one call at a time (see `Handle`).
unsafe impl<T: Send> Send for CsrMatrix<T> {}

impl<T: Real> CsrMatrix<T> {
    /// Upload the CSR matrix `(row_ptr, col_idx, values)` with `ncols` columns. `name` names
    /// it in errors. Errors where a count does not fit the 32-bit signed indices of cuSPARSE.
    pub fn upload(
        handle: &Handle,
        name: &str,
        ncols: usize,
        row_ptr: &[u32],
        col_idx: &[u32],
        values: &[T],
    ) -> Result<Self> {
        let nrows = row_ptr.len().saturating_sub(1);
        let nnz = col_idx.len();
        assert_eq!(values.len(), nnz, "{name}: one value per column index");
        assert_eq!(
            row_ptr.last().map_or(0, |&p| p as usize),
            nnz,
            "{name}: row pointer"
        );
        let limit = i32::MAX as usize;
        if nnz > limit || nrows > limit || ncols > limit {
            return Err(error(format!(
                "operator {name} ({nrows} x {ncols}, {nnz} non-zeros) exceeds the 32-bit \
                 signed indices of cuSPARSE (2^31 - 1); use a coarser dx or --backend gpu-loop"
            )));
        }
        // below 2^31, so the bit patterns are the same numbers as i32
        let as_i32 = |v: &[u32]| -> Vec<i32> { v.iter().map(|&x| x as i32).collect() };
        let s = handle.gpu.stream();
        let up_i32 = |v: Vec<i32>| {
            if v.is_empty() {
                s.alloc_zeros::<i32>(1)
            } else {
                s.clone_htod(&v)
            }
        };
        let row_ptr = if row_ptr.is_empty() {
            s.clone_htod(&[0i32]).map_err(driver_error)?
        } else {
            up_i32(as_i32(row_ptr)).map_err(driver_error)?
        };
        let col_idx = up_i32(as_i32(col_idx)).map_err(driver_error)?;
        let values = if values.is_empty() {
            s.alloc_zeros::<T>(1).map_err(driver_error)?
        } else {
            s.clone_htod(values).map_err(driver_error)?
        };
        let mut m = CsrMatrix {
            nrows: 0,
            ncols: 0,
            nnz: 0,
            row_ptr,
            col_idx,
            values,
            descr: std::ptr::null_mut(),
        };
        m.describe(handle, name, nrows, ncols, nnz)?;
        Ok(m)
    }

    fn ptr<U>(&self, s: &CudaSlice<U>, stream: &Arc<cudarc::driver::CudaStream>) -> *mut c_void {
        let (p, _sync) = s.device_ptr(stream);
        p as *mut c_void
    }

    /// Bytes held on the device (row pointers, column indices, values).
    pub fn bytes(&self) -> usize {
        self.row_ptr.num_bytes() + self.col_idx.num_bytes() + self.values.num_bytes()
    }

    /// A matrix with room for up to `rows` rows and `nnz` non-zeros, not yet described: give
    /// it a shape ([`CsrMatrix::set_shape`] or [`CsrMatrix::copy_in`]) before a product
    /// ([`Spmv::new`]) uses it.
    pub fn with_capacity(handle: &Handle, rows: usize, nnz: usize) -> Result<Self> {
        let s = handle.gpu.stream();
        let m = CsrMatrix {
            nrows: 0,
            ncols: 0,
            nnz: 0,
            row_ptr: s.alloc_zeros::<i32>(rows + 1).map_err(driver_error)?,
            col_idx: s.alloc_zeros::<i32>(nnz.max(1)).map_err(driver_error)?,
            values: s.alloc_zeros::<T>(nnz.max(1)).map_err(driver_error)?,
            descr: std::ptr::null_mut(),
        };
        Ok(m)
    }

    /// Rows and non-zeros this matrix has room for.
    pub fn capacity(&self) -> (usize, usize) {
        (self.row_ptr.len() - 1, self.values.len())
    }

    /// Enqueue on the handle's stream the copies of the CSR matrix `(row_ptr, col_idx,
    /// values)` with `ncols` columns into this matrix's arrays, and describe it with that
    /// shape. An error (nothing enqueued) where it does not fit the capacity or the 32-bit
    /// signed indices of cuSPARSE, or where the arrays disagree.
    ///
    /// # Safety
    /// The three host arrays must stay alive and unwritten until the copies have completed
    /// (the stream has passed them); from page-locked memory the copies are asynchronous.
    /// No product of this matrix may be in flight on another stream.
    pub unsafe fn copy_in(
        &mut self,
        handle: &Handle,
        name: &str,
        ncols: usize,
        row_ptr: &[u32],
        col_idx: &[u32],
        values: &[T],
    ) -> Result<()> {
        let nrows = row_ptr.len().saturating_sub(1);
        let nnz = col_idx.len();
        let last = row_ptr.last().map_or(0, |&p| p as usize);
        if values.len() != nnz || last != nnz {
            return Err(error(format!(
                "operator {name}: {} values, {nnz} column indices, row pointers ending at \
                 {last}",
                values.len()
            )));
        }
        self.fits(name, nrows, nnz)?;
        let s = handle.gpu.stream();
        let (rp, ci, va) = (
            self.ptr(&self.row_ptr, s) as u64,
            self.ptr(&self.col_idx, s) as u64,
            self.ptr(&self.values, s) as u64,
        );
        self.describe(handle, name, nrows, ncols, nnz)?;
        // below 2^31 (checked by `describe`), so the u32 bit patterns are the same numbers
        // as i32; the device arrays hold at least as many values (checked above)
        // SAFETY: the caller keeps the host arrays alive and unwritten until the copies end.
        unsafe {
            if row_ptr.is_empty() {
                // an empty matrix: its one row pointer is zero
                copy_in(s, rp, &[0u32][..])?;
            } else {
                copy_in(s, rp, row_ptr)?;
            }
            copy_in(s, ci, col_idx)?;
            copy_in(s, va, values)?;
        }
        Ok(())
    }

    /// Describe this matrix as `nrows x ncols` with `nnz` non-zeros over its arrays (no
    /// copies: what `copy_in` would describe, e.g. to size a workspace). An error where it
    /// does not fit the capacity or the 32-bit signed indices of cuSPARSE.
    pub fn set_shape(
        &mut self,
        handle: &Handle,
        name: &str,
        nrows: usize,
        ncols: usize,
        nnz: usize,
    ) -> Result<()> {
        self.fits(name, nrows, nnz)?;
        self.describe(handle, name, nrows, ncols, nnz)
    }

    fn fits(&self, name: &str, nrows: usize, nnz: usize) -> Result<()> {
        let (rows_cap, nnz_cap) = self.capacity();
        if nrows > rows_cap || nnz > nnz_cap {
            return Err(error(format!(
                "operator {name} ({nrows} rows, {nnz} non-zeros) exceeds its slot ({rows_cap} \
                 rows, {nnz_cap} non-zeros)"
            )));
        }
        Ok(())
    }

    /// (Re)make the descriptor over this matrix's arrays with the shape given.
    fn describe(
        &mut self,
        handle: &Handle,
        name: &str,
        nrows: usize,
        ncols: usize,
        nnz: usize,
    ) -> Result<()> {
        let limit = i32::MAX as usize;
        if nnz > limit || nrows > limit || ncols > limit {
            return Err(error(format!(
                "operator {name} ({nrows} x {ncols}, {nnz} non-zeros) exceeds the 32-bit \
                 signed indices of cuSPARSE (2^31 - 1); use a coarser dx or --backend gpu-loop"
            )));
        }
        handle.bind()?;
        if !self.descr.is_null() {
            // SAFETY: made by `describe` or `upload`, destroyed once here and replaced.
            let _ = unsafe { sys::cusparseDestroySpMat(self.descr) };
            self.descr = std::ptr::null_mut();
        }
        let s = handle.gpu.stream();
        let (rp, ci, va) = (
            self.ptr(&self.row_ptr, s),
            self.ptr(&self.col_idx, s),
            self.ptr(&self.values, s),
        );
        // SAFETY: the three arrays are live device allocations of at least `nrows + 1` and
        // `nnz` values, owned by `self`, which destroys the descriptor before freeing them.
        check(
            unsafe {
                sys::cusparseCreateCsr(
                    &mut self.descr,
                    nrows as i64,
                    ncols as i64,
                    nnz as i64,
                    rp,
                    ci,
                    va,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexType_t::CUSPARSE_INDEX_32I,
                    sys::cusparseIndexBase_t::CUSPARSE_INDEX_BASE_ZERO,
                    data_type::<T>(),
                )
            },
            &format!("create CSR {name}"),
        )?;
        (self.nrows, self.ncols, self.nnz) = (nrows, ncols, nnz);
        Ok(())
    }
}

impl<T> Drop for CsrMatrix<T> {
    fn drop(&mut self) {
        if !self.descr.is_null() {
            // SAFETY: created in `upload`, destroyed once, before the arrays are freed.
            let _ = unsafe { sys::cusparseDestroySpMat(self.descr) };
        }
    }
}

/// A dense-vector descriptor over a device address (cuSPARSE reads or writes `len` values
/// there when a product runs). The address can be moved to another buffer of the same length.
struct DnVec {
    descr: sys::cusparseDnVecDescr_t,
    addr: Cell<u64>,
}

impl DnVec {
    fn new<T: Real>(len: usize, addr: u64) -> Result<Self> {
        let mut descr = std::ptr::null_mut();
        // SAFETY: creates a descriptor only; the address is used by products, whose callers
        // guarantee it (see `Spmv::apply`).
        check(
            unsafe {
                sys::cusparseCreateDnVec(
                    &mut descr,
                    len as i64,
                    addr as *mut c_void,
                    data_type::<T>(),
                )
            },
            "create dense vector",
        )?;
        Ok(DnVec {
            descr,
            addr: Cell::new(addr),
        })
    }

    /// Point the descriptor at `addr` (unchanged addresses cost nothing).
    fn point_at(&self, addr: u64) -> Result<()> {
        if self.addr.get() != addr {
            // SAFETY: `descr` is live; the caller guarantees `addr` (see `Spmv::apply`).
            check(
                unsafe { sys::cusparseDnVecSetValues(self.descr, addr as *mut c_void) },
                "set dense vector",
            )?;
            self.addr.set(addr);
        }
        Ok(())
    }
}

impl Drop for DnVec {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { sys::cusparseDestroyDnVec(self.descr) };
    }
}

/// The product `y = M x` of one matrix: the matrix, its input and output descriptors and the
/// workspace `cusparseSpMV_bufferSize` asked for, allocated once.
pub struct Spmv<T> {
    pub matrix: CsrMatrix<T>,
    x: DnVec,
    y: DnVec,
    workspace: Option<CudaSlice<u8>>,
}

// SAFETY: as for `CsrMatrix`; the descriptors are used one call at a time.
unsafe impl<T: Send> Send for Spmv<T> {}

const ALG: sys::cusparseSpMVAlg_t = sys::cusparseSpMVAlg_t::CUSPARSE_SPMV_CSR_ALG1;
const OP: sys::cusparseOperation_t = sys::cusparseOperation_t::CUSPARSE_OPERATION_NON_TRANSPOSE;

impl<T: Real> Spmv<T> {
    /// Plan `y = matrix x` with `x` and `y` at the device addresses given (buffers of
    /// `ncols` and `nrows` values); sizes and allocates the workspace.
    pub fn new(handle: &Handle, matrix: CsrMatrix<T>, x: u64, y: u64) -> Result<Self> {
        handle.bind()?;
        let xv = DnVec::new::<T>(matrix.ncols, x)?;
        let yv = DnVec::new::<T>(matrix.nrows, y)?;
        let mut spmv = Spmv {
            matrix,
            x: xv,
            y: yv,
            workspace: None,
        };
        let size = spmv.workspace_needed(handle)?;
        // (at least one byte, so the product never gets a null workspace)
        spmv.reserve(handle, size.max(1))?;
        Ok(spmv)
    }

    /// The workspace bytes a product of the matrix in its current shape needs.
    fn workspace_needed(&self, handle: &Handle) -> Result<usize> {
        handle.bind()?;
        let (one, zero) = (T::one(), T::zero());
        let mut size = 0usize;
        // SAFETY: live handle and descriptors; alpha and beta are host scalars of the
        // compute type (host pointer mode, cuSPARSE's default).
        check(
            unsafe {
                sys::cusparseSpMV_bufferSize(
                    handle.raw,
                    OP,
                    &one as *const T as *const c_void,
                    self.matrix.descr as sys::cusparseConstSpMatDescr_t,
                    self.x.descr as sys::cusparseConstDnVecDescr_t,
                    &zero as *const T as *const c_void,
                    self.y.descr,
                    data_type::<T>(),
                    ALG,
                    &mut size,
                )
            },
            "SpMV buffer size",
        )?;
        Ok(size)
    }

    /// After the matrix changed shape ([`CsrMatrix::copy_in`]): describe `x` and `y` with its
    /// new column and row counts, at the device addresses given, and return the workspace
    /// bytes its products need (at most [`Spmv::workspace_bytes`] unless the caller then
    /// [`Spmv::reserve`]s more).
    pub fn reshape(&mut self, handle: &Handle, x: u64, y: u64) -> Result<usize> {
        handle.bind()?;
        self.x = DnVec::new::<T>(self.matrix.ncols, x)?;
        self.y = DnVec::new::<T>(self.matrix.nrows, y)?;
        self.workspace_needed(handle)
    }

    /// Make the workspace at least `bytes` long (allocating only where it is shorter).
    pub fn reserve(&mut self, handle: &Handle, bytes: usize) -> Result<()> {
        if self.workspace_bytes() < bytes {
            self.workspace = None;
            self.workspace = Some(
                handle
                    .gpu
                    .stream()
                    .alloc_zeros::<u8>(bytes)
                    .map_err(driver_error)?,
            );
        }
        Ok(())
    }

    /// Enqueue `y = M x` on the stream (`y` overwritten, not read).
    ///
    /// # Safety
    /// `x` must address `ncols` values of `T` and `y` `nrows` values, valid until the product
    /// has run on the stream, and `y` must not overlap `x`.
    pub unsafe fn apply(&self, handle: &Handle, x: u64, y: u64) -> Result<()> {
        handle.bind()?;
        self.x.point_at(x)?;
        self.y.point_at(y)?;
        let (one, zero) = (T::one(), T::zero());
        let buffer = match &self.workspace {
            Some(w) => {
                let (p, _sync) = w.device_ptr(handle.gpu.stream());
                p as *mut c_void
            }
            None => std::ptr::null_mut(),
        };
        // SAFETY: live handle and descriptors; the caller guarantees `x` and `y`; the
        // workspace has the size `cusparseSpMV_bufferSize` gave for this matrix.
        check(
            unsafe {
                sys::cusparseSpMV(
                    handle.raw,
                    OP,
                    &one as *const T as *const c_void,
                    self.matrix.descr as sys::cusparseConstSpMatDescr_t,
                    self.x.descr as sys::cusparseConstDnVecDescr_t,
                    &zero as *const T as *const c_void,
                    self.y.descr,
                    data_type::<T>(),
                    ALG,
                    buffer,
                )
            },
            "SpMV",
        )
    }

    /// Bytes of the workspace.
    pub fn workspace_bytes(&self) -> usize {
        self.workspace.as_ref().map_or(0, |w| w.num_bytes())
    }

    /// Bytes held on the device: the matrix and the workspace.
    pub fn bytes(&self) -> usize {
        self.matrix.bytes() + self.workspace_bytes()
    }

    /// Minimal bytes one product moves: row pointers, column indices and values read once,
    /// `x` read once, `y` written once.
    pub fn traffic(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let m = &self.matrix;
        4 * (m.nrows + 1) + (4 + t) * m.nnz + t * (m.ncols + m.nrows)
    }
}
