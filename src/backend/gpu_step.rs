//! The explicit time loop of [`GpuLoop`] on the device: the leapfrog of
//! `src/solver/explicit.rs` step for step (kick, step velocity, drift, impose, fused bond
//! breaking and forces, body force, accelerate and kick, impose), with the state resident on
//! the device. The host prepares one table of ramp factors per call, launches the kernels,
//! reads the count of broken bonds, and copies the state back only when asked (outputs, the
//! end); the stability check reads one reduced number (`max_abs`).
//!
//! One full pass over the nodes per step: the first step of a call runs kick and drift as
//! their own kernels; after that the force kernel of step s also does step s's accelerate
//! and kick and step s+1's kick and drift (`BondParams::update`), drifting into a second
//! displacement buffer that is swapped with `u` (the neighbours still read step s's `u`).
//! Only the dofs of kinematic conditions are then fixed by a small kernel (`apply_conditions`
//! mode 3: step velocity, drift, impose). The last step of a call stores `f`, `a` and `v`
//! and ends with the impose, as the host loop does.

use super::gpu_loop::GpuLoop;
use crate::gpu::conditions::{
    addr, dof_lists, push_table_row, table_stride, DeviceDofList, DofList, MODE_BETWEEN_STEPS,
    MODE_BODY_FORCE, MODE_IMPOSE, MODE_STEP_VELOCITY,
};
use crate::gpu::device::driver_error;
use crate::gpu::params::{
    BondParams, ConditionParams, ReduceParams, StepParams, UPDATE_DRIFT, UPDATE_END,
};
use crate::solver::explicit::{Explicit, StepTimes};
use crate::solver::loads::Loads;
use crate::solver::State;
use crate::{Real, Result};
use std::time::Instant;

/// The condition lists on the device, with the host lists they were made from (uploaded
/// again only when the loads change).
pub(super) struct Lists {
    host: (DofList, DofList),
    kinematic: DeviceDofList,
    body: DeviceDofList,
    conditions: usize,
    stride: usize,
}

impl Lists {
    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> usize {
        self.kinematic.bytes() + self.body.bytes()
    }
}

impl<T: Real> GpuLoop<T> {
    /// Copy the host state to the device.
    fn upload_state(&mut self, state: &State<T>) -> Result<()> {
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
    fn download_state(&self, state: &mut State<T>) -> Result<()> {
        let d = &self.state;
        self.download(&d.u, &mut state.u)?;
        self.download(&d.v, &mut state.v)?;
        self.download(&d.a, &mut state.a)?;
        self.download(&d.f, &mut state.f)?;
        self.download(&d.b, &mut state.b)
    }

    /// Largest |u| of the resident displacement (`ndof` values), `None` if not finite.
    pub(super) fn device_max_abs(&mut self, ndof: usize) -> Result<Option<f64>> {
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
    fn update_lists(&mut self, loads: &Loads) -> Result<()> {
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

    /// Launch `apply_conditions` over `list` in `mode` with the table row at `row` (mode
    /// [`MODE_BETWEEN_STEPS`] drifts into `u_next` by `dt`).
    fn apply(
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
            u_next: addr(g, &self.state.u_next),
            // (mode 3 also writes the half-step velocity without damping, where nothing
            // reads it)
            vhalf: addr(g, &self.state.vhalf),
            dt,
            ..list.params(g, lists.conditions, mode)
        };
        // SAFETY: the list's dofs are below `d n`, the size of `u`, `v`, `b`, `u_next` and
        // `vhalf`; `row` addresses one table row of `1 + 2 conditions` doubles.
        unsafe { g.launch(&self.k.apply_conditions, list.count, &p) }
    }

    /// Force-kernel parameters of a step with the fused explicit update: accelerate and kick
    /// only on the `last` step of a call, else also the next step's kick and drift.
    fn step_params(&self, ex: &Explicit, sp: &StepParams, last: bool) -> BondParams {
        let g = &self.gpu;
        BondParams {
            v: sp.v,
            a: sp.a,
            b: sp.b,
            vhalf: sp.vhalf,
            u_next: addr(g, &self.state.u_next),
            dt: sp.dt,
            half: sp.half,
            inv_density: sp.inv_density,
            damping: sp.damping,
            update: if last { UPDATE_END } else { UPDATE_DRIFT },
            ..self.bond_params(addr(g, &self.state.u), sp.f, ex.damage)
        }
    }

    /// Run `steps` explicit steps on the device (see [`super::Backend::advance_explicit`]).
    pub(super) fn advance(
        &mut self,
        ex: &Explicit,
        loads: &Loads,
        state: &mut State<T>,
        steps: usize,
        full_sync: bool,
        times: &mut StepTimes,
    ) -> Result<usize> {
        let t_start = Instant::now();
        if self.resident_step != Some(state.step) {
            self.upload_state(state)?;
        }
        self.update_lists(loads)?;
        let (table, t_end) = self.upload_table(loads, state.time, ex.dt, steps)?;
        let lists = self.lists.as_ref().expect("made by update_lists");
        let g = self.gpu.clone();
        let ndof = state.u.len();
        let sp = StepParams {
            u: addr(&g, &self.state.u),
            v: addr(&g, &self.state.v),
            a: addr(&g, &self.state.a),
            f: addr(&g, &self.state.f),
            b: addr(&g, &self.state.b),
            vhalf: if ex.damping > 0.0 {
                addr(&g, &self.state.vhalf)
            } else {
                0
            },
            dt: ex.dt,
            half: 0.5 * ex.dt,
            inv_density: 1.0 / ex.density,
            damping: ex.damping,
            ndof: ndof as u64,
        };
        let k = &self.k;
        let row = |s: usize| table + (s * lists.stride * std::mem::size_of::<f64>()) as u64;
        if steps > 0 {
            // SAFETY: `sp` addresses the resident state of `ndof` values per vector.
            unsafe { g.launch(&k.kick, ndof, &sp)? };
            self.apply(&lists.kinematic, lists, MODE_STEP_VELOCITY, row(0), ex.dt)?;
            // SAFETY: as above.
            unsafe { g.launch(&k.drift, ndof, &sp)? };
            self.apply(&lists.kinematic, lists, MODE_IMPOSE, row(0), ex.dt)?;
        }
        for s in 0..steps {
            let last = s + 1 == steps;
            self.apply(&lists.body, lists, MODE_BODY_FORCE, row(s), ex.dt)?;
            self.launch_force_kernels(&self.step_params(ex, &sp, last))?;
            if last {
                self.apply(&lists.kinematic, lists, MODE_IMPOSE, row(s), ex.dt)?;
            } else {
                self.apply(
                    &lists.kinematic,
                    lists,
                    MODE_BETWEEN_STEPS,
                    row(s + 1),
                    ex.dt,
                )?;
                std::mem::swap(&mut self.state.u, &mut self.state.u_next);
            }
        }
        let broken = self.read_broken()?;
        times.forces += t_start.elapsed().as_secs_f64();
        if full_sync {
            let t_copy = Instant::now();
            self.download_state(state)?;
            times.transfers += t_copy.elapsed().as_secs_f64();
        }
        state.time = t_end;
        state.step += steps;
        self.resident_step = Some(state.step);
        Ok(broken)
    }
}
