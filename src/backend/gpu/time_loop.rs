//! The explicit time loop on the device, shared by the GPU backends: the leapfrog of
//! `src/dynamics/explicit.rs` step for step (kick, step velocity, drift, impose, fused bond
//! breaking and forces, body force, accelerate and kick, impose), with the state resident on
//! the device. The host prepares one table of ramp factors per call, launches the kernels,
//! reads the count of broken bonds, and copies the state back only when asked (outputs, the
//! end); the stability check reads one reduced number (`max_abs`).
//!
//! What differs between backends is how forces are computed: a backend implements
//! [`DeviceForces`] (launch the force evaluation on device buffers, read the bonds broken)
//! and owns a [`DeviceLoop`] (the resident state, the condition lists and the leapfrog
//! kernels); [`advance`] runs the loop for either, through [`run_call`], which a backend with
//! its own stepping (`gpu-loop`'s fused update, `bond_loop/fused.rs`) calls with its steps.
//! This file knows only the trait, never a backend.
//!
//! Units as in [`super`]: m, m/s, m/s^2, N/m^3, s.

use super::adr_buffers::AdrDevice;
use super::buffers::{addr, download, upload};
use super::conditions::{
    dof_lists, push_table_row, table_stride, DeviceDofList, DofList, MODE_BETWEEN_STEPS,
    MODE_BODY_FORCE, MODE_IMPOSE, MODE_STEP_VELOCITY,
};
use super::probes::DeviceProbes;
use super::{device_fault, rename};
use crate::dynamics::{Explicit, ExplicitCall, Loads, State, StepTimes};
use crate::gpu::device::driver_error;
use crate::gpu::params::{ConditionParams, ReduceParams, StepParams};
use crate::gpu::Gpu;
use crate::output::{ProbeRegions, ProbeValues};
use crate::{Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice};
use std::sync::Arc;
use std::time::Instant;

/// How a GPU backend computes forces inside the device time loop.
pub(crate) trait DeviceForces<T: Real> {
    /// The backend's time-loop state if it has made one.
    fn loop_if_made(&mut self) -> Option<&mut DeviceLoop<T>>;

    /// Make the time-loop state where there is none yet (the default: a backend that makes
    /// it at setup).
    fn make_loop(&mut self) -> Result<()> {
        Ok(())
    }

    /// The backend's time-loop state (made by [`DeviceForces::make_loop`]).
    fn device_loop(&mut self) -> &mut DeviceLoop<T> {
        self.loop_if_made()
            .expect("the time loop is made before it is used (DeviceForces::make_loop)")
    }

    /// Enqueue the internal force density at displacement `u` into `force` (device
    /// addresses of `d n` values each); with `check_bonds`, bonds whose stretch exceeds the
    /// critical stretch are broken first (the same result as breaking, then forces).
    fn launch_forces(&mut self, u: u64, force: u64, check_bonds: bool) -> Result<()>;

    /// Directed bonds broken on the device since the last call (waits for the stream).
    fn read_broken(&mut self) -> Result<usize>;
}

/// Device buffers of the explicit state (`u`, `v`, `a`, `f`, `b`, half-step velocity).
pub(crate) struct DeviceState<T> {
    pub u: CudaSlice<T>,
    pub v: CudaSlice<T>,
    pub a: CudaSlice<T>,
    pub f: CudaSlice<T>,
    pub b: CudaSlice<T>,
    /// Half-step velocity, for damped runs only (allocated by the first one).
    pub vhalf: Option<CudaSlice<T>>,
    /// The displacement a fused step drifts into (swapped with `u` after each step); only
    /// for a backend whose force kernel does the update.
    pub u_next: Option<CudaSlice<T>>,
}

/// The condition lists on the device, with the host lists they were made from (uploaded
/// again only when the loads change).
struct Lists {
    /// The conditions' identity they were made (or last found equal) for (`Loads::id`).
    loads_id: u64,
    host: (DofList, DofList),
    kinematic: DeviceDofList,
    body: DeviceDofList,
    conditions: usize,
    stride: usize,
}

/// The leapfrog and condition kernels (`kernels/leapfrog.cu`).
struct LeapfrogKernels {
    kick: CudaFunction,
    drift: CudaFunction,
    accelerate_kick: CudaFunction,
    apply_conditions: CudaFunction,
    max_abs: CudaFunction,
}

/// The device time loop's state: the resident explicit state, the per-step factor table,
/// the condition lists and the reduction result.
pub(crate) struct DeviceLoop<T> {
    pub(crate) gpu: Arc<Gpu>,
    k: LeapfrogKernels,
    /// The explicit state while the time loop runs on the device.
    pub(crate) state: DeviceState<T>,
    /// `State::step` the device state holds, if it holds one.
    pub(crate) resident_step: Option<usize>,
    /// Device buffer of per-step condition factors (grown on demand).
    table: Option<CudaSlice<f64>>,
    /// Boundary-condition lists.
    lists: Option<Lists>,
    /// Buffers of the ADR iteration on the device (made by the first one).
    pub(super) adr: Option<AdrDevice<T>>,
    /// Result of the `max_abs` reduction.
    reduce_out: CudaSlice<u64>,
    /// The probe regions and their partial sums (made by the first probe row).
    pub(super) probes: Option<DeviceProbes>,
    /// Each node's `1 / rho` where several materials differ in density (uploaded by the
    /// first call that needs it).
    inv_density_node: Option<CudaSlice<T>>,
}

/// What one call of `steps` steps launches with: the state addresses and the factor table.
pub(crate) struct Plan {
    pub(crate) sp: StepParams,
    table: u64,
    stride: usize,
    t_end: f64,
}

impl Plan {
    /// Device address of the factor-table row of step `s` of the call.
    pub(crate) fn row(&self, s: usize) -> u64 {
        self.table + (s * self.stride * std::mem::size_of::<f64>()) as u64
    }
}

impl<T: Real> DeviceLoop<T> {
    /// The state buffers for `ndof` values each and the leapfrog kernels of precision `T`;
    /// `fused`: also the second displacement buffer of a fused update.
    pub(super) fn new(gpu: &Arc<Gpu>, ndof: usize, fused: bool) -> Result<Self> {
        let f = |name: &str| gpu.function(T::PRECISION, name);
        let k = LeapfrogKernels {
            kick: f("kick")?,
            drift: f("drift")?,
            accelerate_kick: f("accelerate_kick")?,
            apply_conditions: f("apply_conditions")?,
            max_abs: f("max_abs")?,
        };
        let zeros = || gpu.stream().alloc_zeros::<T>(ndof.max(1));
        let state = DeviceState {
            u: zeros().map_err(driver_error)?,
            v: zeros().map_err(driver_error)?,
            a: zeros().map_err(driver_error)?,
            f: zeros().map_err(driver_error)?,
            b: zeros().map_err(driver_error)?,
            vhalf: None,
            u_next: if fused {
                Some(zeros().map_err(driver_error)?)
            } else {
                None
            },
        };
        Ok(DeviceLoop {
            gpu: gpu.clone(),
            k,
            state,
            resident_step: None,
            table: None,
            lists: None,
            adr: None,
            inv_density_node: None,
            probes: None,
            reduce_out: gpu.stream().alloc_zeros::<u64>(1).map_err(driver_error)?,
        })
    }

    /// Bytes held on the device: the state, the table, the lists and the reduction result.
    pub(super) fn bytes(&self) -> usize {
        let s = &self.state;
        let lists = self.lists.as_ref();
        s.u.num_bytes()
            + s.v.num_bytes()
            + s.a.num_bytes()
            + s.f.num_bytes()
            + s.b.num_bytes()
            + s.vhalf.as_ref().map_or(0, |b| b.num_bytes())
            + s.u_next.as_ref().map_or(0, |b| b.num_bytes())
            + self.table.as_ref().map_or(0, |t| t.num_bytes())
            + lists.map_or(0, |l| l.kinematic.bytes() + l.body.bytes())
            + self.adr.as_ref().map_or(0, |a| a.bytes())
            + self.probes.as_ref().map_or(0, |p| p.bytes())
            + self.reduce_out.num_bytes()
    }

    /// Copy the host state to the device.
    pub(super) fn upload_state(&mut self, state: &State<T>) -> Result<()> {
        let s = self.gpu.stream().clone();
        let d = &mut self.state;
        for (host, dev) in [
            (&state.u, &mut d.u),
            (&state.v, &mut d.v),
            (&state.a, &mut d.a),
            (&state.b, &mut d.b),
        ] {
            s.memcpy_htod(host.as_slice(), dev).map_err(driver_error)?;
        }
        Ok(())
    }

    /// Copy the device state to the host.
    pub(crate) fn download_state(&self, state: &mut State<T>) -> Result<()> {
        let (g, d) = (&*self.gpu, &self.state);
        download(g, &d.u, &mut state.u)?;
        download(g, &d.v, &mut state.v)?;
        download(g, &d.a, &mut state.a)?;
        download(g, &d.f, &mut state.f)?;
        download(g, &d.b, &mut state.b)
    }

    /// Largest |u| of the resident displacement (`ndof` values), `None` if not finite.
    pub(crate) fn device_max_abs(&mut self, ndof: usize) -> Result<Option<f64>> {
        let s = self.gpu.stream().clone();
        s.memset_zeros(&mut self.reduce_out).map_err(driver_error)?;
        let p = ReduceParams {
            u: addr(&self.gpu, &self.state.u),
            ndof: ndof as u64,
            out: addr(&self.gpu, &self.reduce_out),
        };
        // SAFETY: `u` holds `ndof` values; `out` one zeroed u64; 256 threads per block.
        unsafe { self.gpu.launch(&self.k.max_abs, ndof, &p)? };
        let bits = s.clone_dtoh(&self.reduce_out).map_err(driver_error)?[0];
        self.gpu.synchronize()?;
        let m = f64::from_bits(bits);
        Ok(m.is_finite().then_some(m))
    }

    /// Largest |u| for the stability check: from the device where it holds `state`, else
    /// from the host (see [`crate::backend::Backend::max_abs_displacement`]).
    pub(super) fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        if self.resident_step == Some(state.step) {
            self.device_max_abs(state.u.len())
        } else {
            Ok(state.max_abs_displacement())
        }
    }

    /// Upload the factor table of `steps` steps from `state.time`; returns its address and
    /// the time after the last step.
    fn upload_table(&mut self, loads: &Loads, t: f64, dt: f64, steps: usize) -> Result<(u64, f64)> {
        let mut table = Vec::with_capacity(steps * table_stride(loads));
        let mut t0 = t;
        for _ in 0..steps {
            let t1 = t0 + dt;
            push_table_row(loads, t0, t1, &mut table);
            t0 = t1;
        }
        let s = self.gpu.stream().clone();
        if self.table.as_ref().is_none_or(|b| b.len() < table.len()) {
            self.table = Some(
                s.alloc_zeros::<f64>(table.len().max(1))
                    .map_err(driver_error)?,
            );
        }
        let buf = self.table.as_mut().expect("allocated above");
        s.memcpy_htod(&table, buf).map_err(driver_error)?;
        Ok((addr(&self.gpu, buf), t0))
    }

    /// Make `self.lists` hold the condition lists of `loads`.
    pub(super) fn update_lists(&mut self, loads: &Loads) -> Result<()> {
        // (the same conditions as the last call: nothing to build, O(1) where building and
        // comparing the lists is O(constrained dofs) each call)
        if self
            .lists
            .as_ref()
            .is_some_and(|l| l.loads_id == loads.id())
        {
            return Ok(());
        }
        let host = dof_lists(loads);
        let stride = table_stride(loads);
        if let Some(l) = &mut self.lists {
            if l.host == host && l.stride == stride {
                l.loads_id = loads.id();
                return Ok(());
            }
        }
        self.lists = Some(Lists {
            loads_id: loads.id(),
            kinematic: DeviceDofList::new(&self.gpu, &host.0)?,
            body: DeviceDofList::new(&self.gpu, &host.1)?,
            conditions: loads.conditions().count(),
            stride,
            host,
        });
        Ok(())
    }

    /// The device address of each node's `1 / rho` (`T::of(1 / rho_i)`, rounded as the host
    /// leapfrog rounds it) where `ex` has several densities, uploaded once; else 0.
    fn inv_density_node(&mut self, ex: &Explicit) -> Result<u64> {
        let Some(rho) = &ex.node_density else {
            return Ok(0);
        };
        if self.inv_density_node.is_none() {
            let host: Vec<T> = rho.iter().map(|r| T::of(1.0 / r)).collect();
            let bytes = host.len() * std::mem::size_of::<T>();
            self.gpu.ensure_fits("each node's density", bytes)?;
            self.inv_density_node = Some(upload(&self.gpu, &host)?);
        }
        Ok(addr(
            &self.gpu,
            self.inv_density_node.as_ref().expect("uploaded above"),
        ))
    }

    /// Upload what `steps` steps from `state` need (the state unless it is resident, the
    /// lists, the factor table) and return the launch parameters.
    fn prepare(
        &mut self,
        ex: &Explicit,
        loads: &Loads,
        state: &State<T>,
        steps: usize,
    ) -> Result<Plan> {
        if self.resident_step != Some(state.step) {
            self.upload_state(state)?;
        }
        self.update_lists(loads)?;
        let (table, t_end) = self.upload_table(loads, state.time, ex.dt, steps)?;
        if ex.damping > 0.0 && self.state.vhalf.is_none() {
            let bytes = state.u.len().max(1) * std::mem::size_of::<T>();
            self.gpu.ensure_fits("the damped explicit loop", bytes)?;
            let zeros = self.gpu.stream().alloc_zeros::<T>(state.u.len().max(1));
            self.state.vhalf = Some(zeros.map_err(driver_error)?);
        }
        let inv_density_node = self.inv_density_node(ex)?;
        let g = &self.gpu;
        let sp = StepParams {
            u: addr(g, &self.state.u),
            v: addr(g, &self.state.v),
            a: addr(g, &self.state.a),
            f: addr(g, &self.state.f),
            b: addr(g, &self.state.b),
            vhalf: match &self.state.vhalf {
                Some(b) if ex.damping > 0.0 => addr(g, b),
                _ => 0,
            },
            dt: ex.dt,
            half: 0.5 * ex.dt,
            inv_density: 1.0 / ex.density,
            damping: ex.damping,
            ndof: state.u.len() as u64,
            inv_density_node,
            dim: match &ex.node_density {
                Some(rho) => (state.u.len() / rho.len().max(1)) as u64,
                None => 1,
            },
        };
        let stride = self.lists().stride;
        Ok(Plan {
            sp,
            table,
            stride,
            t_end,
        })
    }

    /// The end of a call of `steps` steps: bring the state to the host if asked (timed as
    /// transfers), advance `state`'s clock and note which step the device holds.
    fn end_call(
        &mut self,
        state: &mut State<T>,
        t_end: f64,
        steps: usize,
        full_sync: bool,
        times: &mut StepTimes,
    ) -> Result<()> {
        if full_sync {
            let t_copy = Instant::now();
            self.download_state(state)?;
            times.transfers += t_copy.elapsed().as_secs_f64();
        }
        state.time = t_end;
        state.step += steps;
        self.resident_step = Some(state.step);
        Ok(())
    }

    /// The condition lists (made by `update_lists`).
    fn lists(&self) -> &Lists {
        self.lists.as_ref().expect("made by prepare")
    }

    /// Launch `apply_conditions` over `list` in `mode` with the table row at `row` and the
    /// step `dt` that mode [`MODE_BETWEEN_STEPS`] drifts by (into `u_next`).
    fn apply(&self, list: &DeviceDofList, mode: i32, row: u64, dt: f64) -> Result<()> {
        if list.count == 0 {
            return Ok(());
        }
        let g = &self.gpu;
        let p = ConditionParams {
            table: row,
            u: addr(g, &self.state.u),
            v: addr(g, &self.state.v),
            b: addr(g, &self.state.b),
            u_next: self.state.u_next.as_ref().map_or(0, |b| addr(g, b)),
            // (null without damping: the kernel then writes no half-step velocity)
            vhalf: self.state.vhalf.as_ref().map_or(0, |b| addr(g, b)),
            dt,
            ..list.params(g, self.lists().conditions, mode)
        };
        assert!(
            mode != MODE_BETWEEN_STEPS || p.u_next != 0,
            "mode 3 needs u_next"
        );
        // SAFETY: the list's dofs are below `d n`, the size of `u`, `v`, `b`, `u_next` and
        // `vhalf`; `row` addresses one table row of `1 + 2 conditions` doubles.
        unsafe { g.launch(&self.k.apply_conditions, list.count, &p) }
    }

    /// The velocity of the kinematic conditions' dofs for the step of table row `row`.
    pub(super) fn step_velocity(&self, row: u64) -> Result<()> {
        self.apply(&self.lists().kinematic, MODE_STEP_VELOCITY, row, 0.0)
    }

    /// Impose the kinematic conditions at the end of the step of table row `row`.
    pub(super) fn impose(&self, row: u64) -> Result<()> {
        self.apply(&self.lists().kinematic, MODE_IMPOSE, row, 0.0)
    }

    /// Add the body forces at table row `row`.
    pub(super) fn body_force(&self, row: u64) -> Result<()> {
        self.apply(&self.lists().body, MODE_BODY_FORCE, row, 0.0)
    }

    /// Between two fused force kernels: the kinematic conditions' dofs step velocity, drift
    /// by `dt` into `u_next` and impose for the step of table row `row`; then `u_next`
    /// becomes `u`.
    pub(super) fn between_steps(&mut self, row: u64, dt: f64) -> Result<()> {
        self.apply(&self.lists().kinematic, MODE_BETWEEN_STEPS, row, dt)?;
        let st = &mut self.state;
        let u_next = st.u_next.as_mut().expect("a fused loop has u_next");
        std::mem::swap(&mut st.u, u_next);
        Ok(())
    }

    /// The part of a step before the forces: kick, step velocity, drift, impose.
    pub(super) fn before_forces(&self, sp: &StepParams, row: u64) -> Result<()> {
        let (g, ndof) = (&self.gpu, sp.ndof as usize);
        // SAFETY: `sp` addresses the resident state of `ndof` values per vector.
        unsafe { g.launch(&self.k.kick, ndof, sp)? };
        self.step_velocity(row)?;
        // SAFETY: as above.
        unsafe { g.launch(&self.k.drift, ndof, sp)? };
        self.impose(row)
    }

    /// The part of a step after the forces: body force, accelerate and kick, impose.
    fn after_forces(&self, sp: &StepParams, row: u64) -> Result<()> {
        self.body_force(row)?;
        // SAFETY: `sp` addresses the resident state of `ndof` values per vector.
        unsafe {
            self.gpu
                .launch(&self.k.accelerate_kick, sp.ndof as usize, sp)?
        };
        self.impose(row)
    }
}

/// One call of `steps` explicit steps on the device for `backend` (see
/// [`crate::backend::Backend::advance_explicit`]): prepare the state, lists and factor table,
/// run `steps_of(backend, integrator, plan, steps)`, read the bonds broken (the whole as
/// force time), then end the call (state to the host if asked, clock advanced).
pub(crate) fn run_call<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    call: ExplicitCall<'_, T>,
    steps_of: impl FnOnce(&mut B, &Explicit, &Plan, usize) -> Result<()>,
) -> Result<usize> {
    Ok(run_call_timed(backend, call, steps_of)?.0)
}

/// [`run_call`], and the wall seconds of its steps alone: from the first launch to the bonds
/// broken read back (which waits for the device), so the device loop (the force passes and
/// whatever `steps_of` exchanges between them) without the call's preparation (the state's
/// upload where the device does not hold it, the condition lists, the factor table) nor the
/// state's download.
pub(crate) fn run_call_timed<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    call: ExplicitCall<'_, T>,
    steps_of: impl FnOnce(&mut B, &Explicit, &Plan, usize) -> Result<()>,
) -> Result<(usize, f64)> {
    let ExplicitCall {
        integrator: ex,
        loads,
        state,
        times,
        steps,
        full_sync,
    } = call;
    let t_start = Instant::now();
    let plan = backend.device_loop().prepare(ex, loads, state, steps)?;
    let t_steps = Instant::now();
    steps_of(backend, ex, &plan, steps)?;
    let broken = backend.read_broken()?;
    let steps_seconds = t_steps.elapsed().as_secs_f64();
    times.forces += t_start.elapsed().as_secs_f64();
    backend
        .device_loop()
        .end_call(state, plan.t_end, steps, full_sync, times)?;
    Ok((broken, steps_seconds))
}

/// Run `steps` explicit steps on the device for `backend`, the forces of each step by
/// [`DeviceForces::launch_forces`]; the bonds broken and the steps' seconds
/// ([`run_call_timed`]).
fn advance<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    call: ExplicitCall<'_, T>,
) -> Result<(usize, f64)> {
    run_call_timed(backend, call, |backend, ex, plan, steps| {
        let sp = plan.sp;
        for s in 0..steps {
            backend.device_loop().before_forces(&sp, plan.row(s))?;
            backend.launch_forces(sp.u, sp.f, ex.damage)?;
            backend.device_loop().after_forces(&sp, plan.row(s))?;
        }
        Ok(())
    })
}

/// `work` on `backend` once its time loop is made (where there is none); errors name backend
/// `name`.
pub(crate) fn on_loop<T: Real, B: DeviceForces<T>, R>(
    backend: &mut B,
    name: &str,
    work: impl FnOnce(&mut B) -> Result<R>,
) -> Result<R> {
    backend.make_loop().map_err(|e| rename(e, name))?;
    work(backend).map_err(|e| rename(e, name))
}

/// [`crate::backend::Backend::advance_explicit`] of a backend with the generic loop: the
/// time loop made where there is none, then [`advance`]; errors name backend `name`.
pub(crate) fn advance_explicit<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    name: &str,
    call: ExplicitCall<'_, T>,
) -> Result<usize> {
    Ok(advance_explicit_timed(backend, name, call)?.0)
}

/// [`advance_explicit`], and the seconds of the call's steps alone ([`run_call_timed`]).
pub(crate) fn advance_explicit_timed<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    name: &str,
    call: ExplicitCall<'_, T>,
) -> Result<(usize, f64)> {
    on_loop(backend, name, |b| advance(b, call))
}

/// [`crate::backend::Backend::state_changed`] of a device backend: the device's copy of the
/// state is no longer current, so the next call uploads the host's.
pub(super) fn state_changed<T: Real, B: DeviceForces<T>>(backend: &mut B) {
    if let Some(dl) = backend.loop_if_made() {
        dl.resident_step = None;
    }
}

/// [`crate::backend::Backend::max_abs_displacement`] of a device backend named `name`: from
/// its time loop where it has one, else from the host.
pub(super) fn max_abs_displacement<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    name: &'static str,
    state: &State<T>,
) -> Result<Option<f64>> {
    match backend.loop_if_made() {
        Some(dl) => dl
            .max_abs_displacement(state)
            .map_err(device_fault(name, "displacement check")),
        None => Ok(state.max_abs_displacement()),
    }
}

/// [`crate::backend::Backend::probe_values`] of a device backend named `name`: reduced on
/// the device where its time loop holds `state` (`probes.rs`), else from the host.
pub(super) fn probe_values<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    name: &'static str,
    state: &State<T>,
    regions: &ProbeRegions,
) -> Result<Vec<ProbeValues>> {
    match backend.loop_if_made() {
        Some(dl) if dl.resident_step == Some(state.step) => dl
            .device_probe_values(regions)
            .map_err(device_fault(name, "probe sums")),
        _ => Ok(regions.on_host(&state.u, &state.f)),
    }
}

impl<T: Real> DeviceLoop<T> {
    /// The probe values of `regions` from the resident displacement and force density (the
    /// regions uploaded on first use, and again if they change).
    fn device_probe_values(&mut self, regions: &ProbeRegions) -> Result<Vec<ProbeValues>> {
        if !self.probes.as_ref().is_some_and(|p| p.holds(regions)) {
            self.probes = Some(DeviceProbes::new::<T>(&self.gpu, regions)?);
        }
        let probes = self.probes.as_ref().expect("made above");
        probes.reduce(&self.gpu, &self.state.u, &self.state.f, regions)
    }
}
