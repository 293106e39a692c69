//! Explicit leapfrog in velocity-Verlet form (`theory.md` section 5), with optional viscous
//! damping on the half-step velocity. Velocities are kept at whole steps for output and
//! energy; the update is the same leapfrog as the seeds' central-difference schemes.

use super::forces::{evaluate, Forces};
use super::loads::Loads;
use super::state::State;
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// `*x = value` where the bits differ (an exact comparison: `-0` and `+0` differ, a NaN is
/// written over another NaN of other bits); an unchanged value is not written. On a rank of a
/// distributed run the driver's state holds every node, and the dofs of other ranks' nodes,
/// `+0` and never written, stay in pages the process never makes resident
/// (`docs/distributed.md`, "what a rank holds whole"); the host leapfrog's passes over every
/// dof leave them so.
#[inline(always)]
fn set_if_changed<T: Real>(x: &mut T, value: T) {
    if value.f64().to_bits() != x.f64().to_bits() {
        *x = value;
    }
}

/// Explicit integrator settings.
#[derive(Debug, Clone)]
pub struct Explicit {
    /// Time step, s.
    pub dt: f64,
    /// Mass density, kg/m^3 (of every node, unless `node_density` is given).
    pub density: f64,
    /// Each node's mass density, kg/m^3, where several materials differ in density (`None`:
    /// `density` everywhere): the host leapfrog, the device loop and the subdomains' fused
    /// update (`partitioned/fused.rs`) read it.
    pub node_density: Option<Arc<[f64]>>,
    /// Viscous damping coefficient, N s/m^4.
    pub damping: f64,
    /// Whether bonds may break.
    pub damage: bool,
}

/// One call that advances the explicit leapfrog by `steps` steps: the integrator, the loads,
/// the state it advances, where the phase times go, and whether the whole state must be
/// current on return (`full_sync`; without it the vectors may be stale where a backend keeps
/// them on a device).
pub struct ExplicitCall<'a, T: Real> {
    pub integrator: &'a Explicit,
    pub loads: &'a Loads,
    pub state: &'a mut State<T>,
    pub times: &'a mut StepTimes,
    pub steps: usize,
    pub full_sync: bool,
}

impl<T: Real> ExplicitCall<'_, T> {
    /// The call run on the host by [`Explicit::step`], forces from `forces`: the reference
    /// every backend's own loop is tested against. Returns the bonds broken.
    pub fn on_host(self, forces: &mut dyn Forces<T>) -> Result<usize> {
        let mut broken = 0;
        for _ in 0..self.steps {
            broken += self
                .integrator
                .step(self.state, self.loads, forces, self.times)?;
        }
        Ok(broken)
    }
}

/// Seconds spent in each phase of a step.
#[derive(Debug, Clone, Copy, Default)]
pub struct StepTimes {
    pub forces: f64,
    pub update: f64,
    /// Host-device copies inside the loop (GPU backends).
    pub transfers: f64,
}

impl Explicit {
    /// The leapfrog of `problem` with time step `dt` (s), viscous damping `damping`
    /// (N s/m^4) and bond breaking where `damage`: its material's density, or each node's
    /// where several materials differ in it.
    pub fn of(problem: &Problem, dt: f64, damping: f64, damage: bool) -> Explicit {
        Explicit {
            dt,
            density: problem.material.density,
            node_density: problem.node_densities().map(Arc::from),
            damping,
            damage,
        }
    }

    /// The mass density of node `i`, kg/m^3.
    pub fn density_of(&self, i: usize) -> f64 {
        self.node_density
            .as_ref()
            .map_or(self.density, |rho| rho[i])
    }

    /// The inverse mass density of dof `k` (of a body in `d` dimensions).
    #[inline(always)]
    fn inv_density_of<T: Real>(&self, uniform: T, k: usize, d: usize) -> T {
        match &self.node_density {
            Some(rho) => T::of(1.0 / rho[k / d]),
            None => uniform,
        }
    }

    /// Prepare the state at t = 0: initial velocities, forces and accelerations.
    pub fn start<T: Real>(
        &self,
        state: &mut State<T>,
        loads: &Loads,
        forces: &mut dyn Forces<T>,
    ) -> Result<()> {
        loads.initial_velocity(&mut state.v);
        loads.impose(0.0, &mut state.u, &mut state.v);
        self.accelerate(state, loads, forces, None, None)?;
        Ok(())
    }

    /// After the caller changed the state between steps (a library user writing the
    /// displacement or velocity): impose the conditions at the state's time, then the
    /// forces and accelerations of the new displacement (bonds past their critical stretch
    /// break as in a step). Returns the bonds broken.
    pub fn refresh<T: Real>(
        &self,
        state: &mut State<T>,
        loads: &Loads,
        forces: &mut dyn Forces<T>,
    ) -> Result<usize> {
        loads.impose(state.time, &mut state.u, &mut state.v);
        self.accelerate(state, loads, forces, None, None)
    }

    /// Advance one step; returns the new broken bonds.
    ///
    /// The half-step kicks are fused with the neighbouring passes over the state (the first
    /// with the position update, the second with the accelerations); the arithmetic per dof
    /// is that of the plain sequence kick, drift, forces, kick.
    pub fn step<T: Real>(
        &self,
        state: &mut State<T>,
        loads: &Loads,
        forces: &mut dyn Forces<T>,
        times: &mut StepTimes,
    ) -> Result<usize> {
        let t0 = std::time::Instant::now();
        let t1 = self.kick_drift(state, loads);
        let vhalf = (self.damping > 0.0).then(|| state.v.clone());
        loads.impose(t1, &mut state.u, &mut state.v);
        times.update += t0.elapsed().as_secs_f64();
        let t1w = std::time::Instant::now();
        let half = T::of(0.5 * self.dt);
        let broken = self.accelerate(state, loads, forces, vhalf.as_deref(), Some(half))?;
        times.forces += t1w.elapsed().as_secs_f64();
        let t2 = std::time::Instant::now();
        loads.impose(state.time, &mut state.u, &mut state.v);
        times.update += t2.elapsed().as_secs_f64();
        Ok(broken)
    }

    /// The first half of a step: constrained dofs get their velocity from the boundary
    /// conditions (from `u` alone), the others the half kick; then every dof drifts and the
    /// clock advances. Returns the new time (the caller imposes the conditions at it).
    pub fn kick_drift<T: Real>(&self, state: &mut State<T>, loads: &Loads) -> f64 {
        let (dt, half) = (T::of(self.dt), T::of(0.5 * self.dt));
        let (t, t1) = (state.time, state.time + self.dt);
        loads.step_velocity(t, t1, &state.u, &mut state.v);
        state
            .u
            .par_iter_mut()
            .zip(state.v.par_iter_mut())
            .zip(state.a.par_iter().zip(loads.constrained()))
            .for_each(|((u, v), (&a, &fixed))| {
                let v1 = if fixed { *v } else { *v + half * a };
                set_if_changed(v, v1);
                set_if_changed(u, *u + dt * v1);
            });
        if let Some(c) = state.contact.as_mut() {
            c.kick_drift(self.dt);
        }
        state.time = t1;
        state.step += 1;
        t1
    }

    /// Break bonds and compute forces and accelerations at the current state; with
    /// `kick = Some(h)`, also `v += h a` in the same pass.
    fn accelerate<T: Real>(
        &self,
        state: &mut State<T>,
        loads: &Loads,
        forces: &mut dyn Forces<T>,
        vhalf: Option<&[T]>,
        kick: Option<T>,
    ) -> Result<usize> {
        let broken = evaluate(forces, self.damage, &state.u, &mut state.f)?;
        if let Some(c) = state.contact.as_mut() {
            c.evaluate(&state.u, &*forces)?;
        }
        // Without body forces `b` stays as the first call left it: zero.
        if state.step == 0 || loads.has_body_force() {
            loads.body_force(state.time, &mut state.b);
        }
        let (rho, eta) = (T::of(1.0 / self.density), T::of(self.damping));
        let d = match &self.node_density {
            Some(n) => state.a.len() / n.len().max(1),
            None => 1,
        };
        let damped = self.damping > 0.0;
        let (f, b) = (&state.f, &state.b);
        let touch = state.contact.as_ref().map(|c| c.force.as_slice());
        state
            .a
            .par_iter_mut()
            .zip(state.v.par_iter_mut())
            .enumerate()
            .for_each(|(k, (a, v))| {
                let drag = match (damped, vhalf) {
                    (true, Some(vh)) => eta * vh[k],
                    _ => T::zero(),
                };
                let rho = self.inv_density_of(rho, k, d);
                set_if_changed(
                    a,
                    match touch {
                        Some(c) => (f[k] + b[k] + T::of(c[k]) - drag) * rho,
                        None => (f[k] + b[k] - drag) * rho,
                    },
                );
                if let Some(h) = kick {
                    set_if_changed(v, *v + h * *a);
                }
            });
        if let (Some(c), Some(_)) = (state.contact.as_mut(), kick) {
            c.kick(0.5 * self.dt);
        }
        Ok(broken)
    }
}
