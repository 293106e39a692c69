//! Page-locked (pinned) host buffers and asynchronous copies between them and device
//! addresses, for work that overlaps copies with computation on several streams (subdomain
//! streaming, `crate::backend::partitioned::stream`). A copy from pageable memory is staged by the
//! driver and blocks the host; one from a pinned buffer runs on a copy engine while the host
//! and the other streams go on.
//!
//! The buffers are plain page-locked memory (not write-combined: the host reads results back
//! from them). Copies here are raw and unsynchronized: the caller orders them with events.

use super::device::{driver_error, Gpu};
use crate::Result;
use cudarc::driver::{result, CudaContext, CudaEvent, CudaStream, DeviceRepr};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

/// Host memory of an existing array page-locked in place (`cuMemHostRegister`), so copies
/// from it run on a copy engine; unlocked when dropped. The array must outlive this guard
/// and must not move or be freed before it is dropped.
pub struct Registered {
    ptr: usize,
    ctx: Arc<CudaContext>,
}

impl Registered {
    /// Page-lock the memory of `values` (nothing for an empty array).
    ///
    /// # Safety
    /// `values` must stay allocated, unmoved, until the returned guard is dropped.
    pub unsafe fn new<T>(gpu: &Gpu, values: &[T]) -> Result<Option<Registered>> {
        let bytes = std::mem::size_of_val(values);
        if bytes == 0 {
            return Ok(None);
        }
        let ctx = gpu.stream().context().clone();
        ctx.bind_to_thread().map_err(driver_error)?;
        let ptr = values.as_ptr() as *mut std::ffi::c_void;
        // SAFETY: `ptr` spans `bytes` bytes of live host memory (the caller keeps it so).
        unsafe { cudarc::driver::sys::cuMemHostRegister_v2(ptr, bytes, 0) }
            .result()
            .map_err(driver_error)?;
        Ok(Some(Registered {
            ptr: ptr as usize,
            ctx: ctx,
        }))
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: registered in `new`, unregistered once, while the memory is still live.
        let _ =
            unsafe { cudarc::driver::sys::cuMemHostUnregister(self.ptr as *mut std::ffi::c_void) };
    }
}

// SAFETY: the guard holds only an address and the context.
unsafe impl Send for Registered {}
unsafe impl Sync for Registered {}

/// A page-locked host array of `T`, zero-initialized.
pub struct Pinned<T> {
    ptr: *mut T,
    len: usize,
    /// Keeps the context (which owns the allocation) alive.
    _ctx: Arc<CudaContext>,
}

// SAFETY: the buffer is plain host memory owned by this value; access follows Rust's borrow
// rules through `Deref`/`DerefMut`.
unsafe impl<T: Send> Send for Pinned<T> {}
unsafe impl<T: Sync> Sync for Pinned<T> {}

impl<T: DeviceRepr + Copy> Pinned<T> {
    /// `len` zeroed values (at least one byte is allocated).
    pub fn zeroed(gpu: &Gpu, len: usize) -> Result<Self> {
        let ctx = gpu.stream().context().clone();
        ctx.bind_to_thread().map_err(driver_error)?;
        let bytes = (len * std::mem::size_of::<T>()).max(1);
        // SAFETY: a fresh allocation of `bytes` bytes; zeroed before any read. Flags 0: plain
        // page-locked memory, readable by the host at full speed.
        let ptr = unsafe {
            let p = result::malloc_host(bytes, 0).map_err(driver_error)?;
            std::ptr::write_bytes(p as *mut u8, 0, bytes);
            p as *mut T
        };
        Ok(Pinned {
            ptr,
            len,
            _ctx: ctx,
        })
    }

    /// A pinned copy of `values`.
    pub fn from_slice(gpu: &Gpu, values: &[T]) -> Result<Self> {
        let mut p = Pinned::zeroed(gpu, values.len())?;
        p.copy_from_slice(values);
        Ok(p)
    }

    /// Bytes held.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
}

impl<T> Deref for Pinned<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `ptr` holds `len` initialized values for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl<T> DerefMut for Pinned<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, with `&mut self` exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl<T> Drop for Pinned<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `malloc_host`; no copy is in flight once the owner drops it
        // (owners synchronize their streams first).
        unsafe {
            let _ = result::free_host(self.ptr as *mut std::ffi::c_void);
        }
    }
}

/// Enqueue on `stream` a copy of `src` to the device address `dst`.
///
/// # Safety
/// `dst` must address at least `src.len()` values of `T`, and `src` (pinned, for the copy to
/// be asynchronous) must stay alive and unwritten until the copy has completed (an event
/// recorded after it on `stream`).
pub unsafe fn copy_in<T>(stream: &CudaStream, dst: u64, src: &[T]) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    result::memcpy_htod_async(dst, src, stream.cu_stream()).map_err(driver_error)
}

/// Enqueue on `stream` a copy of `dst.len()` values from the device address `src` to `dst`.
///
/// # Safety
/// `src` must address at least `dst.len()` values of `T`, and `dst` must stay alive and
/// unread until the copy has completed.
pub unsafe fn copy_out<T>(stream: &CudaStream, dst: &mut [T], src: u64) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    result::memcpy_dtoh_async(dst, src, stream.cu_stream()).map_err(driver_error)
}

/// Copy `dst.len()` bytes from the device address `src` to `dst` and wait for them (the
/// calling thread's current context).
///
/// # Safety
/// `src` must address at least `dst.len()` bytes of device memory, written by work that has
/// completed.
pub unsafe fn copy_bytes_out(dst: &mut [u8], src: u64) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    result::memcpy_dtoh_sync(dst, src).map_err(driver_error)
}

/// Copy `src` to the device address `dst` and wait for it (the calling thread's current
/// context).
///
/// # Safety
/// `dst` must address at least `src.len()` bytes of device memory that no enqueued work
/// reads or writes meanwhile.
pub unsafe fn copy_bytes_in(dst: u64, src: &[u8]) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    result::memcpy_htod_sync(dst, src).map_err(driver_error)
}

/// An event that records timestamps (for the elapsed time between two of them).
pub fn timing_event(gpu: &Gpu) -> Result<CudaEvent> {
    gpu.stream()
        .context()
        .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(driver_error)
}

/// Seconds between two completed events.
pub fn seconds_between(start: &CudaEvent, end: &CudaEvent) -> Result<f64> {
    start
        .elapsed_ms(end)
        .map(|ms| f64::from(ms) * 1e-3)
        .map_err(driver_error)
}

/// Host-to-device and device-to-host bandwidth of pinned copies of `bytes` bytes, B/s,
/// measured now: the best of five copies each way (what the link sustains; a single slow
/// copy, say while the host is busy, would understate it).
pub fn pinned_bandwidth(gpu: &Gpu, bytes: usize) -> Result<(f64, f64)> {
    let stream = gpu.stream().context().new_stream().map_err(driver_error)?;
    let mut host = Pinned::<u8>::zeroed(gpu, bytes)?;
    let dev = stream
        .alloc_zeros::<u8>(bytes.max(1))
        .map_err(driver_error)?;
    let d = {
        let (p, _sync) = cudarc::driver::DevicePtr::device_ptr(&dev, &stream);
        p
    };
    let (start, end) = (timing_event(gpu)?, timing_event(gpu)?);
    let time = |dir_in: bool, host: &mut Pinned<u8>| -> Result<f64> {
        let mut runs = Vec::new();
        for _ in 0..5 {
            start.record(&stream).map_err(driver_error)?;
            // SAFETY: `dev` and `host` hold `bytes` bytes each and outlive the copy (waited
            // for by `seconds_between`).
            unsafe {
                if dir_in {
                    copy_in(&stream, d, host)?;
                } else {
                    copy_out(&stream, host, d)?;
                }
            }
            end.record(&stream).map_err(driver_error)?;
            runs.push(seconds_between(&start, &end)?);
        }
        let best = runs.iter().copied().fold(f64::INFINITY, f64::min);
        Ok(bytes as f64 / best.max(1e-12))
    };
    let h2d = time(true, &mut host)?;
    let d2h = time(false, &mut host)?;
    stream.synchronize().map_err(driver_error)?;
    Ok((h2d, d2h))
}
