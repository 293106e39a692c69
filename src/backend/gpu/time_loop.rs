//! The explicit time loop on the device, shared by the GPU backends: the leapfrog of
//! `src/solver/explicit.rs` step for step (kick, step velocity, drift, impose, fused bond
//! breaking and forces, body force, accelerate and kick, impose), with the state resident on
//! the device. The host prepares one table of ramp factors per call, launches the kernels,
//! reads the count of broken bonds, and copies the state back only when asked (outputs, the
//! end); the stability check reads one reduced number (`max_abs`).
//!
//! What differs between backends is how forces are computed: a backend implements
//! [`DeviceForces`] (launch the force evaluation on device buffers, read the bonds broken)
//! and owns a [`DeviceLoop`] (the resident state, the condition lists and the leapfrog
//! kernels); [`advance`] runs the loop for either. `gpu-loop` launches its bond-loop
//! kernels, `gpu-matrix` its cuSPARSE products and bond kernels.
//!
//! `gpu-loop` runs a fused variant ([`advance_fused`]): one full pass over the nodes per step.
//! The first step of a call runs kick and drift as their own kernels; after that the force
//! kernel of step s also does step s's accelerate and kick and step s+1's kick and drift
//! (`BondParams::update`), drifting into a second displacement buffer that is swapped with
//! `u` (the neighbours still read step s's `u`). Only the dofs of kinematic conditions are
//! then fixed by a small kernel (`apply_conditions` mode 3: step velocity, drift, impose).
//! The last step of a call stores `f`, `a` and `v` and ends with the impose, as the host
//! loop does.

use super::bond_loop::GpuLoop;
use crate::backend::gpu::conditions::{
    addr, dof_lists, push_table_row, table_stride, DeviceDofList, DofList, MODE_BETWEEN_STEPS,
    MODE_BODY_FORCE, MODE_IMPOSE, MODE_STEP_VELOCITY,
};
use crate::dynamics::{Explicit, ExplicitCall, Loads, State, StepTimes};
use crate::gpu::device::driver_error;
use crate::gpu::params::{
    BondParams, ConditionParams, ReduceParams, StepParams, UPDATE_DRIFT, UPDATE_END,
};
use crate::gpu::Gpu;
use crate::{Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr};
use std::sync::Arc;
use std::time::Instant;

/// How a GPU backend computes forces inside the device time loop.
pub(super) trait DeviceForces<T: Real> {
    /// The backend's time-loop state.
    fn device_loop(&mut self) -> &mut DeviceLoop<T>;

    /// Enqueue the internal force density at displacement `u` into `force` (device
    /// addresses of `d n` values each); with `check_bonds`, bonds whose stretch exceeds the
    /// critical stretch are broken first (the same result as breaking, then forces).
    fn launch_forces(&mut self, u: u64, force: u64, check_bonds: bool) -> Result<()>;

    /// Directed bonds broken on the device since the last call (waits for the stream).
    fn read_broken(&mut self) -> Result<usize>;
}

/// Device buffers of the explicit state (`u`, `v`, `a`, `f`, `b`, half-step velocity).
pub(super) struct DeviceState<T> {
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
pub(super) struct Lists {
    host: (DofList, DofList),
    pub(super) kinematic: DeviceDofList,
    pub(super) body: DeviceDofList,
    pub(super) conditions: usize,
    stride: usize,
}

impl Lists {
    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> usize {
        self.kinematic.bytes() + self.body.bytes()
    }
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
pub(super) struct DeviceLoop<T> {
    pub(super) gpu: Arc<Gpu>,
    k: LeapfrogKernels,
    /// The explicit state while the time loop runs on the device.
    pub(super) state: DeviceState<T>,
    /// `State::step` the device state holds, if it holds one.
    pub(super) resident_step: Option<usize>,
    /// Device buffer of per-step condition factors (grown on demand).
    table: Option<CudaSlice<f64>>,
    /// Boundary-condition lists.
    pub(super) lists: Option<Lists>,
    /// Buffers of the ADR iteration on the device (made by the first one).
    pub(super) adr: Option<super::adr::AdrDevice<T>>,
    /// Result of the `max_abs` reduction.
    reduce_out: CudaSlice<u64>,
}

/// Copy the first `out.len()` values of `src` to the host and wait for them.
pub(super) fn download<U: DeviceRepr>(gpu: &Gpu, src: &CudaSlice<U>, out: &mut [U]) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    let view = src.slice(..out.len());
    gpu.stream().memcpy_dtoh(&view, out).map_err(driver_error)?;
    gpu.synchronize()
}

/// What one call of [`advance`] launches with: the state addresses and the factor table.
struct Plan {
    sp: StepParams,
    table: u64,
    stride: usize,
    t_end: f64,
}

impl<T: Real> DeviceLoop<T> {
    /// The state buffers for `ndof` values each and the leapfrog kernels of precision `T`;
    /// `fused`: also the second displacement buffer of [`advance_fused`].
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
            reduce_out: gpu.stream().alloc_zeros::<u64>(1).map_err(driver_error)?,
        })
    }

    /// Bytes held on the device: the state, the table, the lists and the reduction result.
    pub(super) fn bytes(&self) -> usize {
        let s = &self.state;
        s.u.num_bytes()
            + s.v.num_bytes()
            + s.a.num_bytes()
            + s.f.num_bytes()
            + s.b.num_bytes()
            + s.vhalf.as_ref().map_or(0, |b| b.num_bytes())
            + s.u_next.as_ref().map_or(0, |b| b.num_bytes())
            + self.table.as_ref().map_or(0, |t| t.num_bytes())
            + self.lists.as_ref().map_or(0, |l| l.bytes())
            + self.adr.as_ref().map_or(0, |a| a.bytes())
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
    pub(super) fn download_state(&self, state: &mut State<T>) -> Result<()> {
        let (g, d) = (&*self.gpu, &self.state);
        download(g, &d.u, &mut state.u)?;
        download(g, &d.v, &mut state.v)?;
        download(g, &d.a, &mut state.a)?;
        download(g, &d.f, &mut state.f)?;
        download(g, &d.b, &mut state.b)
    }

    /// Largest |u| of the resident displacement (`ndof` values), `None` if not finite.
    fn device_max_abs(&mut self, ndof: usize) -> Result<Option<f64>> {
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
    /// from the host (see [`super::Backend::max_abs_displacement`]).
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
        let host = dof_lists(loads);
        let stride = table_stride(loads);
        if let Some(l) = &self.lists {
            if l.host == host && l.stride == stride {
                return Ok(());
            }
        }
        self.lists = Some(Lists {
            kinematic: DeviceDofList::new(&self.gpu, &host.0)?,
            body: DeviceDofList::new(&self.gpu, &host.1)?,
            conditions: loads.conditions().count(),
            stride,
            host,
        });
        Ok(())
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
        };
        let stride = self.lists.as_ref().expect("made by update_lists").stride;
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

    /// Launch `apply_conditions` over `list` in `mode` with the table row at `row`.
    pub(super) fn apply(
        &self,
        list: &DeviceDofList,
        lists: &Lists,
        mode: i32,
        row: u64,
    ) -> Result<()> {
        self.apply_dt(list, lists, mode, row, 0.0)
    }

    /// [`DeviceLoop::apply`] with the step `dt` that mode [`MODE_BETWEEN_STEPS`] drifts by
    /// (into `u_next`).
    fn apply_dt(
        &self,
        list: &DeviceDofList,
        lists: &Lists,
        mode: i32,
        row: u64,
        dt: f64,
    ) -> Result<()> {
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
            ..list.params(g, lists.conditions, mode)
        };
        assert!(
            mode != MODE_BETWEEN_STEPS || p.u_next != 0,
            "mode 3 needs u_next"
        );
        // SAFETY: the list's dofs are below `d n`, the size of `u`, `v`, `b`, `u_next` and
        // `vhalf`; `row` addresses one table row of `1 + 2 conditions` doubles.
        unsafe { g.launch(&self.k.apply_conditions, list.count, &p) }
    }

    /// The part of a step before the forces: kick, step velocity, drift, impose.
    fn before_forces(&self, sp: &StepParams, row: u64) -> Result<()> {
        let (g, lists) = (&self.gpu, self.lists.as_ref().expect("made by prepare"));
        let ndof = sp.ndof as usize;
        // SAFETY: `sp` addresses the resident state of `ndof` values per vector.
        unsafe { g.launch(&self.k.kick, ndof, sp)? };
        self.apply(&lists.kinematic, lists, MODE_STEP_VELOCITY, row)?;
        // SAFETY: as above.
        unsafe { g.launch(&self.k.drift, ndof, sp)? };
        self.apply(&lists.kinematic, lists, MODE_IMPOSE, row)
    }

    /// The part of a step after the forces: body force, accelerate and kick, impose.
    fn after_forces(&self, sp: &StepParams, row: u64) -> Result<()> {
        let (g, lists) = (&self.gpu, self.lists.as_ref().expect("made by prepare"));
        self.apply(&lists.body, lists, MODE_BODY_FORCE, row)?;
        // SAFETY: `sp` addresses the resident state of `ndof` values per vector.
        unsafe { g.launch(&self.k.accelerate_kick, sp.ndof as usize, sp)? };
        self.apply(&lists.kinematic, lists, MODE_IMPOSE, row)
    }
}

/// Run `steps` explicit steps on the device for `backend` (see
/// [`super::Backend::advance_explicit`]).
pub(super) fn advance<T: Real, B: DeviceForces<T>>(
    backend: &mut B,
    call: ExplicitCall<'_, T>,
) -> Result<usize> {
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
    let sp = plan.sp;
    for s in 0..steps {
        let row = plan.table + (s * plan.stride * std::mem::size_of::<f64>()) as u64;
        backend.device_loop().before_forces(&sp, row)?;
        backend.launch_forces(sp.u, sp.f, ex.damage)?;
        backend.device_loop().after_forces(&sp, row)?;
    }
    let broken = backend.read_broken()?;
    times.forces += t_start.elapsed().as_secs_f64();
    backend
        .device_loop()
        .end_call(state, plan.t_end, steps, full_sync, times)?;
    Ok(broken)
}

// The loop backend's forces: its bond-loop kernels (kept here, so `gpu_loop.rs` holds only
// the kernels' own code).
impl<T: Real> DeviceForces<T> for GpuLoop<T> {
    fn device_loop(&mut self) -> &mut DeviceLoop<T> {
        &mut self.stepper
    }

    fn launch_forces(&mut self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        GpuLoop::launch_forces(self, u, force, check_bonds)
    }

    fn read_broken(&mut self) -> Result<usize> {
        GpuLoop::read_broken(self)
    }
}

/// Run `steps` explicit steps of `gpu-loop` on the device with the fused force and update
/// kernel (see the module notes and [`super::Backend::advance_explicit`]).
pub(super) fn advance_fused<T: Real>(
    backend: &mut GpuLoop<T>,
    call: ExplicitCall<'_, T>,
) -> Result<usize> {
    let ExplicitCall {
        integrator: ex,
        loads,
        state,
        times,
        steps,
        full_sync,
    } = call;
    let t_start = Instant::now();
    let plan = backend.stepper.prepare(ex, loads, state, steps)?;
    let sp = plan.sp;
    let ndof = sp.ndof as usize;
    let row = |s: usize| plan.table + (s * plan.stride * std::mem::size_of::<f64>()) as u64;
    {
        let dl = &backend.stepper;
        let (g, lists) = (&dl.gpu, dl.lists.as_ref().expect("made by prepare"));
        if steps > 0 {
            // SAFETY: `sp` addresses the resident state of `ndof` values per vector.
            unsafe { g.launch(&dl.k.kick, ndof, &sp)? };
            dl.apply(&lists.kinematic, lists, MODE_STEP_VELOCITY, row(0))?;
            // SAFETY: as above.
            unsafe { g.launch(&dl.k.drift, ndof, &sp)? };
            dl.apply(&lists.kinematic, lists, MODE_IMPOSE, row(0))?;
        }
    }
    for s in 0..steps {
        let last = s + 1 == steps;
        let dl = &backend.stepper;
        let lists = dl.lists.as_ref().expect("made by prepare");
        dl.apply(&lists.body, lists, MODE_BODY_FORCE, row(s))?;
        backend.launch_force_kernels(&step_params(backend, ex, &sp, last))?;
        let dl = &mut backend.stepper;
        let lists = dl.lists.as_ref().expect("made by prepare");
        if last {
            dl.apply(&lists.kinematic, lists, MODE_IMPOSE, row(s))?;
        } else {
            dl.apply_dt(
                &lists.kinematic,
                lists,
                MODE_BETWEEN_STEPS,
                row(s + 1),
                ex.dt,
            )?;
            let st = &mut dl.state;
            std::mem::swap(
                &mut st.u,
                st.u_next.as_mut().expect("a fused loop has u_next"),
            );
        }
    }
    let broken = backend.read_broken()?;
    times.forces += t_start.elapsed().as_secs_f64();
    backend
        .device_loop()
        .end_call(state, plan.t_end, steps, full_sync, times)?;
    Ok(broken)
}

/// Force-kernel parameters of a step with the fused explicit update: accelerate and kick
/// only on the `last` step of a call, else also the next step's kick and drift.
fn step_params<T: Real>(gl: &GpuLoop<T>, ex: &Explicit, sp: &StepParams, last: bool) -> BondParams {
    let dl = &gl.stepper;
    let g = &dl.gpu;
    let u_next = dl.state.u_next.as_ref().expect("a fused loop has u_next");
    BondParams {
        v: sp.v,
        a: sp.a,
        b: sp.b,
        vhalf: sp.vhalf,
        u_next: addr(g, u_next),
        dt: sp.dt,
        half: sp.half,
        inv_density: sp.inv_density,
        damping: sp.damping,
        update: if last { UPDATE_END } else { UPDATE_DRIFT },
        ..gl.bond_params(addr(g, &dl.state.u), sp.f, ex.damage)
    }
}
