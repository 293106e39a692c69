//! Adaptive dynamic relaxation on the device, for both GPU backends: the iteration of
//! `src/dynamics/adr.rs` (forces with bond breaking, body force, free force and the five
//! global sums of the residual and the damping coefficient, velocity, conditions, drift,
//! conditions) as kernels of `kernels/adr.cu` ([`AdrDevice`], `adr_buffers.rs`) over the state
//! resident in the backend's [`DeviceLoop`]. The sums are reduced on the device in a fixed
//! order; the host reads back only the iteration's status (32 bytes) and the count of broken
//! bonds, which the driver needs to decide whether to go on. The state comes back only when
//! the driver asks ([`sync_adr_state`]).
//!
//! Units as in [`crate::dynamics::adr`]: m, m per iteration, N/m^3, N/m^4.

use super::adr_buffers::AdrDevice;
use super::buffers::addr;
use super::conditions::push_table_row;
use super::time_loop::{on_loop, DeviceForces, DeviceLoop};
use crate::dynamics::adr::{Adr, AdrCall};
use crate::dynamics::loads::Loads;
use crate::dynamics::State;
use crate::gpu::params::AdrParams;
use crate::{Real, Result};

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
    let (step_row, body_row) = ad.upload_rows(&g, &rows, stride)?;
    let s = &dl.state;
    let vectors = [&s.u, &s.v, &s.f, &s.b].map(|b| addr(&g, b));
    let p = ad.params(&g, vectors, h, state.u.len());
    Ok((p, step_row, body_row))
}

/// Everything of the iteration after the forces: body force, residual and damping sums,
/// velocity, conditions, drift, conditions; returns the iteration's relative residual.
fn after_forces<T: Real>(dl: &mut DeviceLoop<T>, p: &AdrParams, rows: (u64, u64)) -> Result<f64> {
    let (step_row, body_row) = rows;
    let g = dl.gpu.clone();
    let ad = dl.adr.as_ref().expect("made by prepare");
    dl.body_force(body_row)?;
    ad.launch_sums_and_velocity(&g, p)?;
    dl.step_velocity(step_row)?;
    ad.launch_drift(&g, p)?;
    dl.impose(step_row)?;
    dl.adr.as_mut().expect("made by prepare").finish(&g)
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
fn sync_adr_state<T: Real>(dl: &mut DeviceLoop<T>, state: &mut State<T>) -> Result<()> {
    if dl.adr.is_some() && dl.resident_step == Some(state.step) {
        dl.download_state(state)?;
    }
    Ok(())
}

/// [`crate::backend::Backend::advance_adr`] of a device backend named `name`: the time loop
/// made where there is none, then one iteration on the device.
pub(super) fn advance_adr<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    name: &str,
    call: AdrCall<'_, T>,
) -> Result<usize> {
    on_loop(backend, name, |b| {
        adr_iteration(b, call.adr, call.loads, call.state, call.h)
    })
}

/// [`crate::backend::Backend::sync_adr`] of a device backend named `name`: `adr` takes up
/// the history of the device's iteration, where it has run one.
pub(super) fn sync_adr<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    name: &str,
    adr: &mut Adr<T>,
) -> Result<()> {
    on_loop(backend, name, |b| {
        let dl = b.device_loop();
        if let Some(device) = &dl.adr {
            adr.restore(device.history(&dl.gpu, adr.residual)?);
        }
        Ok(())
    })
}

/// [`crate::backend::Backend::sync_state`] of a device backend named `name`: the time loop
/// made where there is none, then the resident ADR state copied back if newer.
pub(super) fn sync_state<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    name: &str,
    state: &mut State<T>,
) -> Result<()> {
    on_loop(backend, name, |b| sync_adr_state(b.device_loop(), state))
}
