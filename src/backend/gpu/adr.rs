//! Adaptive dynamic relaxation on the device, for both GPU backends: the iteration of
//! `src/solver/adr.rs` (forces with bond breaking, body force, free force and the five global
//! sums of the residual and the damping coefficient, velocity, conditions, drift, conditions)
//! as kernels of `kernels/adr.cu` over the state resident in the backend's [`DeviceLoop`].
//! The sums are reduced on the device in a fixed order; the host reads back only the
//! iteration's status (32 bytes) and the count of broken bonds, which the driver needs to
//! decide whether to go on. The state comes back only when the driver asks
//! ([`sync_adr_state`]).
//!
//! Units as in [`crate::dynamics::adr`]: m, m per iteration, N/m^3, N/m^4.

use super::time_loop::{DeviceForces, DeviceLoop};
use crate::backend::gpu::conditions::{addr, push_table_row, table_stride, upload};
use crate::backend::gpu::conditions::{MODE_BODY_FORCE, MODE_IMPOSE, MODE_STEP_VELOCITY};
use crate::dynamics::adr::Adr;
use crate::dynamics::loads::Loads;
use crate::dynamics::State;
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
        let f = |name: &str| gpu.function(T::PRECISION, name);
        Ok(AdrDevice {
            lambda: upload(gpu, adr.lambda())?,
            constrained: upload(gpu, &constrained)?,
            force: zeros(ndof)?,
            force_prev: zeros(ndof)?,
            partials: s.alloc_zeros::<f64>(5 * blocks).map_err(driver_error)?,
            status: s.alloc_zeros::<f64>(STATUS).map_err(driver_error)?,
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
}

/// Make the ADR buffers, bring the state and the condition lists to the device, and upload
/// this iteration's two table rows; returns the kernel parameters and the rows' addresses.
fn prepare<T: Real>(
    dl: &mut DeviceLoop<T>,
    adr: &Adr<T>,
    loads: &Loads,
    state: &State<T>,
    h: f64,
) -> Result<(AdrParams, u64, u64)> {
    if dl.adr.is_none() {
        dl.adr = Some(AdrDevice::new(&dl.gpu, adr, loads)?);
    }
    if dl.resident_step != Some(state.step) {
        dl.upload_state(state)?;
    }
    dl.update_lists(loads)?;
    let g = dl.gpu.clone();
    let mut rows = Vec::new();
    push_table_row(loads, state.time, state.time + h, &mut rows);
    let stride = rows.len();
    push_table_row(loads, state.time, state.time, &mut rows);
    let ad = dl.adr.as_mut().expect("made above");
    g.stream()
        .memcpy_htod(&rows, &mut ad.table)
        .map_err(driver_error)?;
    let step_row = addr(&g, &ad.table);
    let body_row = step_row + (stride * std::mem::size_of::<f64>()) as u64;
    let p = AdrParams {
        u: addr(&g, &dl.state.u),
        v: addr(&g, &dl.state.v),
        f: addr(&g, &dl.state.f),
        b: addr(&g, &dl.state.b),
        lambda: addr(&g, &ad.lambda),
        force: addr(&g, &ad.force),
        force_prev: addr(&g, &ad.force_prev),
        constrained: addr(&g, &ad.constrained),
        partials: addr(&g, &ad.partials),
        status: addr(&g, &ad.status),
        h,
        ndof: state.u.len() as u64,
        blocks: ad.blocks as u32,
        pad: 0,
    };
    Ok((p, step_row, body_row))
}

/// Everything of the iteration after the forces: body force, residual and damping sums,
/// velocity, conditions, drift, conditions; returns the iteration's relative residual.
fn after_forces<T: Real>(dl: &mut DeviceLoop<T>, p: &AdrParams, rows: (u64, u64)) -> Result<f64> {
    let (step_row, body_row) = rows;
    let g = dl.gpu.clone();
    let lists = dl.lists.as_ref().expect("made by prepare");
    let ad = dl.adr.as_ref().expect("made by prepare");
    let ndof = p.ndof as usize;
    dl.apply(&lists.body, lists, MODE_BODY_FORCE, body_row)?;
    // SAFETY: `p` addresses the resident state and this iteration's buffers, `ndof` values
    // each; `adr_residual` runs `blocks` blocks and `adr_finalize` one, of 256 threads,
    // writing `5 blocks` partial sums and the status record.
    unsafe {
        g.launch(&ad.residual, ad.blocks * THREADS, p)?;
        g.launch(&ad.finalize, THREADS, p)?;
        g.launch(&ad.velocity, ndof, p)?;
    }
    dl.apply(&lists.kinematic, lists, MODE_STEP_VELOCITY, step_row)?;
    // SAFETY: as above.
    unsafe { g.launch(&ad.drift, ndof, p)? };
    dl.apply(&lists.kinematic, lists, MODE_IMPOSE, step_row)?;
    let status = g.stream().clone_dtoh(&ad.status).map_err(driver_error)?;
    let ad = dl.adr.as_mut().expect("made by prepare");
    std::mem::swap(&mut ad.force, &mut ad.force_prev);
    Ok(status[RESIDUAL])
}

/// One ADR iteration of `backend` on the device towards the load at `state.time + h` (see
/// [`Adr::iterate`]): sets `adr.residual`, advances `state.time` and `state.step`, and
/// returns the bonds broken. `state`'s vectors are left stale.
pub(super) fn adr_iteration<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    adr: &mut Adr<T>,
    loads: &Loads,
    state: &mut State<T>,
    h: f64,
) -> Result<usize> {
    let (p, step_row, body_row) = prepare(backend.device_loop(), adr, loads, state, h)?;
    backend.launch_forces(p.u, p.f, adr.damage())?;
    adr.residual = after_forces(backend.device_loop(), &p, (step_row, body_row))?;
    let broken = backend.read_broken()?;
    state.time += h;
    state.step += 1;
    backend.device_loop().resident_step = Some(state.step);
    Ok(broken)
}

/// Copy the resident ADR state to the host if the device holds a newer one.
pub(super) fn sync_adr_state<T: Real>(dl: &mut DeviceLoop<T>, state: &mut State<T>) -> Result<()> {
    if dl.adr.is_some() && dl.resident_step == Some(state.step) {
        dl.download_state(state)?;
    }
    Ok(())
}
