//! Explicit leapfrog in velocity-Verlet form (`theory.md` section 5), with optional viscous
//! damping on the half-step velocity. Velocities are kept at whole steps for output and
//! energy; the update is the same leapfrog as the seeds' central-difference schemes.

use super::loads::Loads;
use super::state::State;
use crate::backend::Backend;
use crate::Real;
use rayon::prelude::*;

/// Explicit integrator settings.
#[derive(Debug, Clone, Copy)]
pub struct Explicit {
    /// Time step, s.
    pub dt: f64,
    /// Mass density, kg/m^3.
    pub density: f64,
    /// Viscous damping coefficient, N s/m^4.
    pub damping: f64,
    /// Whether bonds may break.
    pub damage: bool,
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
    /// Prepare the state at t = 0: initial velocities, forces and accelerations.
    pub fn start<T: Real>(
        &self,
        state: &mut State<T>,
        loads: &Loads,
        backend: &mut dyn Backend<T>,
    ) {
        loads.initial_velocity(&mut state.v);
        loads.impose(0.0, &mut state.u, &mut state.v);
        self.accelerate(state, loads, backend, None);
    }

    /// Advance one step; returns the new broken bonds.
    pub fn step<T: Real>(
        &self,
        state: &mut State<T>,
        loads: &Loads,
        backend: &mut dyn Backend<T>,
        times: &mut StepTimes,
    ) -> usize {
        let t0 = std::time::Instant::now();
        let (dt, half) = (T::of(self.dt), T::of(0.5 * self.dt));
        kick(&mut state.v, &state.a, half);
        let (t, t1) = (state.time, state.time + self.dt);
        loads.step_velocity(t, t1, &state.u, &mut state.v);
        state
            .u
            .par_iter_mut()
            .zip(&state.v)
            .for_each(|(u, &v)| *u += dt * v);
        state.time = t1;
        state.step += 1;
        let vhalf = (self.damping > 0.0).then(|| state.v.clone());
        loads.impose(t1, &mut state.u, &mut state.v);
        times.update += t0.elapsed().as_secs_f64();
        let t1w = std::time::Instant::now();
        let broken = self.accelerate(state, loads, backend, vhalf.as_deref());
        times.forces += t1w.elapsed().as_secs_f64();
        let t2 = std::time::Instant::now();
        kick(&mut state.v, &state.a, half);
        loads.impose(state.time, &mut state.u, &mut state.v);
        times.update += t2.elapsed().as_secs_f64();
        broken
    }

    /// Break bonds and compute forces and accelerations at the current state.
    fn accelerate<T: Real>(
        &self,
        state: &mut State<T>,
        loads: &Loads,
        backend: &mut dyn Backend<T>,
        vhalf: Option<&[T]>,
    ) -> usize {
        let broken = if self.damage {
            backend.break_bonds(&state.u)
        } else {
            0
        };
        backend.internal_force(&state.u, &mut state.f);
        loads.body_force(state.time, &mut state.b);
        let (rho, eta) = (T::of(1.0 / self.density), T::of(self.damping));
        let damped = self.damping > 0.0;
        state.a.par_iter_mut().enumerate().for_each(|(k, a)| {
            let drag = match (damped, vhalf) {
                (true, Some(v)) => eta * v[k],
                _ => T::zero(),
            };
            *a = (state.f[k] + state.b[k] - drag) * rho;
        });
        broken
    }
}

fn kick<T: Real>(v: &mut [T], a: &[T], h: T) {
    v.par_iter_mut().zip(a).for_each(|(v, &a)| *v += h * a);
}
