//! The device buffers and kernels of adaptive dynamic relaxation (`kernels/adr.cu`), held by
//! the device time loop ([`super::time_loop::DeviceLoop`]) once the first iteration has made
//! them: the diagonal mass `lambda`, the constrained-dof flags, the free force of this and the
//! last iteration, the partial sums and status record of the reductions, and the iteration's
//! two condition-table rows. The iteration itself is `adr.rs`.
//!
//! Units as in [`crate::dynamics::adr`]: m, m per iteration, N/m^3, N/m^4.

use super::buffers::{addr, download, upload};
use super::conditions::table_stride;
use crate::dynamics::adr::{Adr, AdrHistory};
use crate::dynamics::loads::Loads;
use crate::gpu::device::driver_error;
use crate::gpu::params::AdrParams;
use crate::gpu::Gpu;
use crate::{Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice};

/// Threads per block of `adr_residual` and `adr_finalize` (`ADR_THREADS` in `adr.cu`).
const THREADS: usize = 256;
/// Most blocks of partial sums (each thread then strides over the dofs).
const MAX_BLOCKS: usize = 1024;
/// Doubles in the status record (`ADR_STATUS`), and the residual's place in it.
const STATUS: usize = 4;
const RESIDUAL: usize = 3;
/// The place of the "first iteration has run" flag in the status record (`ADR_STARTED`).
const STARTED: usize = 0;

/// Device buffers and kernels of the ADR iteration, made on the first iteration.
pub(super) struct AdrDevice<T> {
    lambda: CudaSlice<T>,
    constrained: CudaSlice<u8>,
    force: CudaSlice<T>,
    force_prev: CudaSlice<T>,
    partials: CudaSlice<f64>,
    status: CudaSlice<f64>,
    /// Two condition-table rows: the step `t0 -> t1`, and `t0` for the body force.
    table: CudaSlice<f64>,
    blocks: usize,
    residual: CudaFunction,
    finalize: CudaFunction,
    velocity: CudaFunction,
    drift: CudaFunction,
}

impl<T: Real> AdrDevice<T> {
    /// The buffers for `adr`, taking up its history (a fresh one, or one restored from a
    /// checkpoint: the last free force and whether the first iteration has run).
    pub(super) fn new(gpu: &Gpu, adr: &Adr<T>, loads: &Loads) -> Result<Self> {
        let ndof = adr.lambda().len();
        let history = adr.history();
        let mut status = [0.0; STATUS];
        status[STARTED] = if history.started { 1.0 } else { 0.0 };
        let blocks = ndof.div_ceil(THREADS).clamp(1, MAX_BLOCKS);
        let s = gpu.stream();
        let zeros = |len: usize| s.alloc_zeros::<T>(len.max(1)).map_err(driver_error);
        let constrained: Vec<u8> = loads.constrained().iter().map(|&c| u8::from(c)).collect();
        let f = |name: &str| gpu.function(T::PRECISION, name);
        Ok(AdrDevice {
            lambda: upload(gpu, adr.lambda())?,
            constrained: upload(gpu, &constrained)?,
            force: zeros(ndof)?,
            force_prev: upload(gpu, &history.f_prev)?,
            partials: s.alloc_zeros::<f64>(5 * blocks).map_err(driver_error)?,
            status: upload(gpu, &status)?,
            table: s
                .alloc_zeros::<f64>(2 * table_stride(loads))
                .map_err(driver_error)?,
            blocks,
            residual: f("adr_residual")?,
            finalize: f("adr_finalize")?,
            velocity: f("adr_velocity")?,
            drift: f("adr_drift")?,
        })
    }

    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> usize {
        self.lambda.num_bytes()
            + self.constrained.num_bytes()
            + self.force.num_bytes()
            + self.force_prev.num_bytes()
            + self.partials.num_bytes()
            + self.status.num_bytes()
            + self.table.num_bytes()
    }

    /// Copy the iteration's table `rows` (the step's row, then the body force's, each
    /// `stride` doubles) to the device; returns the two rows' addresses.
    pub(super) fn upload_rows(
        &mut self,
        gpu: &Gpu,
        rows: &[f64],
        stride: usize,
    ) -> Result<(u64, u64)> {
        gpu.stream()
            .memcpy_htod(rows, &mut self.table)
            .map_err(driver_error)?;
        let step_row = addr(gpu, &self.table);
        Ok((
            step_row,
            step_row + (stride * std::mem::size_of::<f64>()) as u64,
        ))
    }

    /// The kernels' parameters: this iteration's buffers, the state's `u`, `v`, `f`, `b`
    /// (device addresses of `ndof` values each) and the step `h`.
    pub(super) fn params(&self, gpu: &Gpu, state: [u64; 4], h: f64, ndof: usize) -> AdrParams {
        let [u, v, f, b] = state;
        AdrParams {
            u,
            v,
            f,
            b,
            lambda: addr(gpu, &self.lambda),
            force: addr(gpu, &self.force),
            force_prev: addr(gpu, &self.force_prev),
            constrained: addr(gpu, &self.constrained),
            partials: addr(gpu, &self.partials),
            status: addr(gpu, &self.status),
            h,
            ndof: ndof as u64,
            blocks: self.blocks as u32,
            pad: 0,
        }
    }

    /// Launch the residual and damping sums and the velocity update.
    pub(super) fn launch_sums_and_velocity(&self, gpu: &Gpu, p: &AdrParams) -> Result<()> {
        // SAFETY: `p` addresses the resident state and this iteration's buffers, `ndof` values
        // each; `adr_residual` runs `blocks` blocks and `adr_finalize` one, of 256 threads,
        // writing `5 blocks` partial sums and the status record.
        unsafe {
            gpu.launch(&self.residual, self.blocks * THREADS, p)?;
            gpu.launch(&self.finalize, THREADS, p)?;
            gpu.launch(&self.velocity, p.ndof as usize, p)
        }
    }

    /// Launch the drift.
    pub(super) fn launch_drift(&self, gpu: &Gpu, p: &AdrParams) -> Result<()> {
        // SAFETY: as in `launch_sums_and_velocity`.
        unsafe { gpu.launch(&self.drift, p.ndof as usize, p) }
    }

    /// The iteration's history on the device (after [`AdrDevice::finish`], the last free
    /// force is in `force_prev`), with `residual` the host has read.
    pub(super) fn history(&self, gpu: &Gpu, residual: f64) -> Result<AdrHistory<T>> {
        let mut f_prev = vec![T::zero(); self.lambda.len()];
        download(gpu, &self.force_prev, &mut f_prev)?;
        let mut status = [0.0; STATUS];
        download(gpu, &self.status, &mut status)?;
        Ok(AdrHistory {
            f_prev,
            started: status[STARTED] != 0.0,
            residual,
        })
    }

    /// Read the iteration's relative residual (waits for the stream), and make this
    /// iteration's free force the next one's previous.
    pub(super) fn finish(&mut self, gpu: &Gpu) -> Result<f64> {
        let status = gpu
            .stream()
            .clone_dtoh(&self.status)
            .map_err(driver_error)?;
        std::mem::swap(&mut self.force, &mut self.force_prev);
        Ok(status[RESIDUAL])
    }
}
