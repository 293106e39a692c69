//! Device buffers as the GPU backends use them: copies to and from the host, a buffer's
//! device address (what the kernels' parameter records hold), and the running count of
//! bonds broken on the device. Units: bytes and values, as each buffer's type says.

use crate::gpu::device::{driver_error, Gpu};
use crate::Result;
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, ValidAsZeroBits};

/// Copy `data` to a new device buffer (one zero element when empty, so no buffer is empty).
pub fn upload<T: DeviceRepr + ValidAsZeroBits + Copy>(
    gpu: &Gpu,
    data: &[T],
) -> Result<CudaSlice<T>> {
    let s = gpu.stream();
    if data.is_empty() {
        s.alloc_zeros::<T>(1).map_err(driver_error)
    } else {
        s.clone_htod(data).map_err(driver_error)
    }
}

/// Device address of a buffer.
pub fn addr<T>(gpu: &Gpu, s: &CudaSlice<T>) -> u64 {
    let (p, _sync) = s.device_ptr(gpu.stream());
    p
}

/// Copy the first `out.len()` values of `src` to the host and wait for them.
pub(crate) fn download<U: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<U>, out: &mut [U]) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let view = src.slice(..out.len());
    gpu.stream().memcpy_dtoh(&view, out).map_err(driver_error)?;
    gpu.synchronize()
}

/// The device's running count of bonds (or bond rows) broken since setup, which the bond
/// kernels add to, and the value last read from it.
pub(super) struct BrokenCounter {
    count: CudaSlice<u64>,
    seen: u64,
}

impl BrokenCounter {
    /// A counter at zero.
    pub(super) fn new(gpu: &Gpu) -> Result<Self> {
        Ok(BrokenCounter {
            count: gpu.stream().alloc_zeros::<u64>(1).map_err(driver_error)?,
            seen: 0,
        })
    }

    /// Device address of the count (the kernels' `broken`).
    pub(super) fn addr(&self, gpu: &Gpu) -> u64 {
        addr(gpu, &self.count)
    }

    /// The count as last read.
    pub(super) fn seen(&self) -> u64 {
        self.seen
    }

    /// Read the count (waits for the stream); returns what was added since the last read.
    pub(super) fn take(&mut self, gpu: &Gpu) -> Result<u64> {
        let total = gpu.stream().clone_dtoh(&self.count).map_err(driver_error)?[0];
        let new = total - self.seen;
        self.seen = total;
        Ok(new)
    }

    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> usize {
        self.count.num_bytes()
    }
}
