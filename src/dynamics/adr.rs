//! Adaptive dynamic relaxation (Kilic and Madenci 2010; `theory.md` section 5): a damped
//! fictitious dynamics with a diagonal density from Gerschgorin row sums of the stiffness and
//! a damping coefficient from the Rayleigh quotient of a diagonal local stiffness. The
//! fictitious time step is 1, so "time" counts iterations.

use super::forces::{evaluate, Forces};
use super::loads::Loads;
use super::state::State;
use crate::{Real, Result};
use rayon::prelude::*;

/// One call of an ADR iteration: the iteration state, the loads, the body's state and the
/// load increment `h` (the iteration goes towards the load at `state.time + h`).
pub struct AdrCall<'a, T: Real> {
    pub adr: &'a mut Adr<T>,
    pub loads: &'a Loads,
    pub state: &'a mut State<T>,
    pub h: f64,
}

impl<T: Real> AdrCall<'_, T> {
    /// The iteration on the host ([`Adr::iterate`]), forces from `forces`: the reference
    /// every backend's own iteration is tested against. Returns the bonds broken.
    pub fn on_host(self, forces: &mut dyn Forces<T>) -> Result<usize> {
        self.adr.iterate(self.state, self.loads, forces, self.h)
    }
}

/// What an ADR iteration carries from one iteration to the next beyond the body's [`State`]
/// (the density `lambda` is made again from the problem): a restart checkpoint stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct AdrHistory<T> {
    /// `F^{n-1}`, the last iteration's free force.
    pub f_prev: Vec<T>,
    /// Whether the first iteration (velocity start rule) has run.
    pub started: bool,
    /// Relative residual of the last iteration.
    pub residual: f64,
}

/// ADR iteration state beyond the body's [`State`].
pub struct Adr<T: Real> {
    /// Fictitious density per dof (force density per displacement), N/m^4.
    lambda: Vec<T>,
    /// `F^{n-1}` (free dofs; constrained ones zero).
    f_prev: Vec<T>,
    /// Whether bonds may break.
    damage: bool,
    started: bool,
    /// Relative residual of the last iteration.
    pub residual: f64,
}

impl<T: Real> Adr<T> {
    /// `row_bounds`: Gerschgorin row sums per node (N/m^4); `dim` components per node.
    pub fn new(row_bounds: &[f64], dim: usize, damage: bool) -> Self {
        let lambda = row_bounds
            .iter()
            .flat_map(|&r| std::iter::repeat_n(T::of(0.25 * r.max(f64::MIN_POSITIVE)), dim))
            .collect::<Vec<_>>();
        let n = lambda.len();
        Adr {
            lambda,
            f_prev: vec![T::zero(); n],
            damage,
            started: false,
            residual: f64::INFINITY,
        }
    }

    /// Fictitious density per dof, N/m^4.
    pub fn lambda(&self) -> &[T] {
        &self.lambda
    }

    /// Whether bonds may break.
    pub fn damage(&self) -> bool {
        self.damage
    }

    /// What the next iteration needs of the past ones.
    pub fn history(&self) -> AdrHistory<T> {
        AdrHistory {
            f_prev: self.f_prev.clone(),
            started: self.started,
            residual: self.residual,
        }
    }

    /// Take up the iteration from `history` (of an ADR of the same size; a backend that
    /// iterates on a device reads it when it makes its buffers). Panics on a size mismatch:
    /// the caller checks the checkpoint's node count first.
    pub fn restore(&mut self, history: AdrHistory<T>) {
        assert_eq!(history.f_prev.len(), self.f_prev.len(), "ADR history size");
        self.f_prev = history.f_prev;
        self.started = history.started;
        self.residual = history.residual;
    }

    /// One iteration towards the load at time `t1 = state.time + h` (`h` = 1, or a whole load
    /// step). Returns the bonds broken in it.
    pub fn iterate(
        &mut self,
        state: &mut State<T>,
        loads: &Loads,
        forces: &mut dyn Forces<T>,
        h: f64,
    ) -> Result<usize> {
        let broken = evaluate(forces, self.damage, &state.u, &mut state.f)?;
        loads.body_force(state.time, &mut state.b);
        let mask = loads.constrained();
        let mut force: Vec<T> = (0..state.f.len())
            .into_par_iter()
            .map(|k| {
                if mask[k] {
                    T::zero()
                } else {
                    state.f[k] + state.b[k]
                }
            })
            .collect();
        self.residual = residual(&force, &state.f, &state.b);
        let two = T::of(2.0);
        if !self.started {
            self.started = true;
            for k in 0..force.len() {
                state.v[k] = force[k] / (two * self.lambda[k]);
            }
        } else {
            let c = T::of(self.damping_coefficient(state, &force));
            for k in 0..force.len() {
                state.v[k] = ((two - c) * state.v[k] + two * force[k] / self.lambda[k]) / (two + c);
            }
        }
        let t1 = state.time + h;
        loads.step_velocity(state.time, t1, &state.u, &mut state.v);
        // Free dofs move by the fictitious step 1; constrained ones over the load interval.
        let hh = T::of(h);
        state
            .u
            .par_iter_mut()
            .zip(&state.v)
            .zip(mask)
            .for_each(|((u, &v), &fixed)| *u += if fixed { hh * v } else { v });
        loads.impose(t1, &mut state.u, &mut state.v);
        state.time = t1;
        state.step += 1;
        std::mem::swap(&mut self.f_prev, &mut force);
        Ok(broken)
    }

    /// `c = 2 sqrt(u^T K1 u / u^T u)`, 0 where the quotient is not positive, below 2.
    fn damping_coefficient(&self, state: &State<T>, force: &[T]) -> f64 {
        let mut num = 0.0;
        let mut den = 0.0;
        for k in 0..force.len() {
            let u = state.u[k].f64();
            let v = state.v[k].f64();
            den += u * u;
            if v != 0.0 {
                let l = self.lambda[k].f64();
                let k1 = -(force[k].f64() / l - self.f_prev[k].f64() / l) / v;
                num += u * u * k1;
            }
        }
        if den > 0.0 && num > 0.0 {
            (2.0 * (num / den).sqrt()).min(1.99)
        } else {
            0.0
        }
    }
}

/// `|F_free| / max(|b|, |L|)` (norms over all dofs; 0 when nothing is loaded).
pub fn residual<T: Real>(free: &[T], internal: &[T], body: &[T]) -> f64 {
    let n2 = |v: &[T]| v.iter().map(|x| x.f64() * x.f64()).sum::<f64>().sqrt();
    let scale = n2(internal).max(n2(body));
    if scale > 0.0 {
        n2(free) / scale
    } else {
        0.0
    }
}
