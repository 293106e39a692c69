//! Adaptive dynamic relaxation of [`GpuLoop`] on the device: the iteration of
//! `src/solver/adr.rs` (forces with bond breaking, body force, free force and the five global
//! sums of the residual and the damping coefficient, velocity, conditions, drift, conditions)
//! as kernels of `kernels/adr.cu` over the resident state. The sums are reduced on the device
//! in a fixed order; the host reads back only the iteration's residual (32 bytes) and the
//! count of broken bonds, which the driver needs to decide whether to go on. The state comes
//! back only when the driver asks ([`GpuLoop::sync_adr_state`]).
//!
//! Units as in [`crate::solver::adr`]: m, m per iteration, N/m^3, N/m^4.

use super::gpu_loop::{precision_of, GpuLoop};
use crate::gpu::conditions::{addr, push_table_row, upload, MODE_BODY_FORCE, MODE_IMPOSE};
use crate::gpu::conditions::MODE_STEP_VELOCITY;
use crate::gpu::device::driver_error;
use crate::gpu::params::AdrParams;
use crate::gpu::Gpu;
use crate::solver::adr::Adr;
use crate::solver::loads::Loads;
use crate::solver::State;
use crate::{Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice};

/// Threads per block of `adr_residual` and `adr_finalize` (`ADR_THREADS` in `adr.cu`).
const THREADS: usize = 256;
/// Most blocks of partial sums (each thread then strides over the dofs).
const MAX_BLOCKS: usize = 1024;
/// Doubles in the status record (`ADR_STATUS`), and the residual's place in it.
const STATUS: usize = 4;
const RESIDUAL: usize = 3;

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
    fn new(gpu: &Gpu, adr: &Adr<T>, loads: &Loads) -> Result<Self> {
        let ndof = adr.lambda().len();
        let blocks = ndof.div_ceil(THREADS).clamp(1, MAX_BLOCKS);
        let s = gpu.stream();
        let zeros = |len: usize| s.alloc_zeros::<T>(len.max(1)).map_err(driver_error);
        let constrained: Vec<u8> = loads.constrained().iter().map(|&c| u8::from(c)).collect();
        let f = |name: &str| gpu.function(precision_of::<T>(), name);
        Ok(AdrDevice {
            lambda: upload(gpu, adr.lambda())?,
            constrained: upload(gpu, &constrained)?,
            force: zeros(ndof)?,
            force_prev: zeros(ndof)?,
            partials: s.alloc_zeros::<f64>(5 * blocks).map_err(driver_error)?,
            status: s.alloc_zeros::<f64>(STATUS).map_err(driver_error)?,
            table: s
                .alloc_zeros::<f64>(2 * crate::gpu::conditions::table_stride(loads))
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
}

impl<T: Real> GpuLoop<T> {
    /// One ADR iteration on the device towards the load at `state.time + h` (see
    /// [`Adr::iterate`]): sets `adr.residual`, advances `state.time` and `state.step`, and
    /// returns the bonds broken. `state`'s vectors are left stale.
    pub(super) fn adr_iteration(
        &mut self,
        adr: &mut Adr<T>,
        loads: &Loads,
        state: &mut State<T>,
        h: f64,
    ) -> Result<usize> {
        if self.adr.is_none() {
            self.adr = Some(AdrDevice::new(&self.gpu, adr, loads)?);
        }
        if self.resident_step != Some(state.step) {
            self.upload_state(state)?;
        }
        self.update_lists(loads)?;
        let (t0, t1) = (state.time, state.time + h);
        let g = self.gpu.clone();
        let ndof = state.u.len();
        let mut rows = Vec::new();
        push_table_row(loads, t0, t1, &mut rows);
        let stride = rows.len();
        push_table_row(loads, t0, t0, &mut rows);
        let ad = self.adr.as_mut().expect("made above");
        g.stream()
            .memcpy_htod(&rows, &mut ad.table)
            .map_err(driver_error)?;
        let step_row = addr(&g, &ad.table);
        let body_row = step_row + (stride * std::mem::size_of::<f64>()) as u64;
        let ad = self.adr.as_ref().expect("made above");
        let p = AdrParams {
            u: addr(&g, &self.state.u),
            v: addr(&g, &self.state.v),
            f: addr(&g, &self.state.f),
            b: addr(&g, &self.state.b),
            lambda: addr(&g, &ad.lambda),
            force: addr(&g, &ad.force),
            force_prev: addr(&g, &ad.force_prev),
            constrained: addr(&g, &ad.constrained),
            partials: addr(&g, &ad.partials),
            status: addr(&g, &ad.status),
            h,
            ndof: ndof as u64,
            blocks: ad.blocks as u32,
            pad: 0,
        };
        let lists = self.lists.as_ref().expect("made by update_lists");
        self.launch_forces(p.u, p.f, adr.damage())?;
        self.apply(&lists.body, lists, MODE_BODY_FORCE, body_row)?;
        // SAFETY: `p` addresses the resident state and this iteration's buffers, `ndof`
        // values each; `adr_residual` runs `blocks` blocks and `adr_finalize` one, of 256
        // threads, writing `5 blocks` partial sums and the status record.
        unsafe {
            g.launch(&ad.residual, ad.blocks * THREADS, &p)?;
            g.launch(&ad.finalize, THREADS, &p)?;
            g.launch(&ad.velocity, ndof, &p)?;
        }
        self.apply(&lists.kinematic, lists, MODE_STEP_VELOCITY, step_row)?;
        // SAFETY: as above.
        unsafe { g.launch(&ad.drift, ndof, &p)? };
        self.apply(&lists.kinematic, lists, MODE_IMPOSE, step_row)?;
        let status = g.stream().clone_dtoh(&ad.status).map_err(driver_error)?;
        let broken = self.read_broken()?;
        let ad = self.adr.as_mut().expect("made above");
        std::mem::swap(&mut ad.force, &mut ad.force_prev);
        adr.residual = status[RESIDUAL];
        state.time = t1;
        state.step += 1;
        self.resident_step = Some(state.step);
        Ok(broken)
    }

    /// Copy the resident ADR state to the host if the device holds a newer one.
    pub(super) fn sync_adr_state(&mut self, state: &mut State<T>) -> Result<()> {
        if self.adr.is_some() && self.resident_step == Some(state.step) {
            self.download_state(state)?;
        }
        Ok(())
    }
}
