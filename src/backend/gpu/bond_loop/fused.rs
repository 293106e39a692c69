//! `gpu-loop`'s explicit steps with the update fused into the force kernel: one full pass
//! over the nodes per step, on the shared device time loop (`time_loop.rs`, [`run_call`]).
//!
//! The first step of a call runs kick and drift as their own kernels; after that the force
//! kernel of step s also does step s's accelerate and kick and step s+1's kick and drift
//! (`BondParams::update`), drifting into a second displacement buffer that is swapped with
//! `u` (the neighbours still read step s's `u`). Only the dofs of kinematic conditions are
//! then fixed by a small kernel (`apply_conditions` mode 3: step velocity, drift, impose).
//! The last step of a call stores `f`, `a` and `v` and ends with the impose, as the host
//! loop does.
//!
//! Units as in [`crate::backend::gpu`]: m, m/s, m/s^2, N/m^3, s.

use super::GpuLoop;
use crate::backend::gpu::buffers::addr;
use crate::backend::gpu::time_loop::{run_call, Plan};
use crate::dynamics::{Explicit, ExplicitCall};
use crate::gpu::params::{BondParams, StepParams, UPDATE_DRIFT, UPDATE_END};
use crate::{Real, Result};

/// Run `steps` explicit steps of `gpu-loop` on the device with the fused force and update
/// kernel (see the module notes and [`crate::backend::Backend::advance_explicit`]).
pub(super) fn advance_fused<T: Real>(
    backend: &mut GpuLoop<T>,
    call: ExplicitCall<'_, T>,
) -> Result<usize> {
    run_call(backend, call, |gl, ex, plan, steps| {
        gl.fused_steps(ex, plan, steps)
    })
}

impl<T: Real> GpuLoop<T> {
    /// The `steps` steps of one call, launched with `plan`.
    fn fused_steps(&mut self, ex: &Explicit, plan: &Plan, steps: usize) -> Result<()> {
        self.fused_steps_with(ex, plan, steps, |gl, params| gl.forces_in_order(params))
    }

    /// The `steps` steps of one call, launched with `plan`, each step's force kernels (with
    /// the fused update) by `forces(self, params)`: the distributed run's launches them in
    /// two parts around its ghost exchange (`distributed/gpu/`).
    pub(crate) fn fused_steps_with(
        &mut self,
        ex: &Explicit,
        plan: &Plan,
        steps: usize,
        mut forces: impl FnMut(&mut Self, &BondParams) -> Result<()>,
    ) -> Result<()> {
        let sp = plan.sp;
        if steps > 0 {
            self.stepper.before_forces(&sp, plan.row(0))?;
        }
        for s in 0..steps {
            let last = s + 1 == steps;
            self.stepper.body_force(plan.row(s))?;
            // (with a failure pass before or after the force kernels where the model has one)
            let params = self.step_params(ex, &sp, last);
            forces(self, &params)?;
            if last {
                self.stepper.impose(plan.row(s))?;
            } else {
                self.stepper.between_steps(plan.row(s + 1), ex.dt)?;
            }
        }
        Ok(())
    }

    /// Force-kernel parameters of a step with the fused explicit update: accelerate and
    /// kick only on the `last` step of a call, else also the next step's kick and drift.
    fn step_params(&self, ex: &Explicit, sp: &StepParams, last: bool) -> BondParams {
        let dl = &self.stepper;
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
            inv_density_node: sp.inv_density_node,
            damping: sp.damping,
            update: if last { UPDATE_END } else { UPDATE_DRIFT },
            ..self.bond_params(addr(g, &dl.state.u), sp.f, ex.damage)
        }
    }
}
