//! The time-stepping state: nodal displacement, velocity, acceleration, internal and external
//! force densities, flat and node-major (`d * i + k`). SI units.

use crate::Real;

/// State of the body at time `time`.
#[derive(Debug, Clone)]
pub struct State<T: Real> {
    /// Displacement, m.
    pub u: Vec<T>,
    /// Velocity, m/s (ADR: fictitious velocity, m per iteration).
    pub v: Vec<T>,
    /// Acceleration, m/s^2 (explicit only).
    pub a: Vec<T>,
    /// Internal force density `L`, N/m^3, at `u`.
    pub f: Vec<T>,
    /// Body force density `b`, N/m^3, at `time`.
    pub b: Vec<T>,
    /// Time, s (ADR: iteration count).
    pub time: f64,
    /// Steps or iterations done.
    pub step: usize,
}

impl<T: Real> State<T> {
    /// A body at rest, undeformed, with `dofs` degrees of freedom.
    pub fn at_rest(dofs: usize) -> Self {
        State {
            u: vec![T::zero(); dofs],
            v: vec![T::zero(); dofs],
            a: vec![T::zero(); dofs],
            f: vec![T::zero(); dofs],
            b: vec![T::zero(); dofs],
            time: 0.0,
            step: 0,
        }
    }

    /// Largest absolute displacement, or `None` if any entry is not finite.
    pub fn max_abs_displacement(&self) -> Option<f64> {
        let mut m = 0.0f64;
        for x in &self.u {
            let x = x.f64();
            if !x.is_finite() {
                return None;
            }
            m = m.max(x.abs());
        }
        Some(m)
    }

    /// Kinetic energy `sum 1/2 rho V |v|^2`, J.
    pub fn kinetic_energy(&self, density: f64, volumes: &[f64], dim: usize) -> f64 {
        volumes
            .iter()
            .enumerate()
            .map(|(i, vol)| {
                let v2: f64 = (0..dim).map(|k| self.v[dim * i + k].f64().powi(2)).sum();
                0.5 * density * vol * v2
            })
            .sum()
    }
}
