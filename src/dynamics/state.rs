//! The time-stepping state: nodal displacement, velocity, acceleration, internal and external
//! force densities, flat and node-major (`d * i + k`), and the initial fields a run starts
//! from (`[[initial]]` tables, a point cloud's columns). SI units.

use super::contact::Contact;
use crate::setup::Problem;
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
    /// Contact and impactors (`contact/`), where the model has them: the impactors' motion
    /// is state, the pair list a cache.
    pub contact: Option<Box<Contact>>,
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
            contact: None,
        }
    }

    /// The state of `problem` at t = 0 ([`initial_fields`]): at rest and undeformed but for
    /// its initial fields. Boundary conditions act after it (`Explicit::start`).
    pub fn initial(problem: &Problem) -> Self {
        let mut state = State::at_rest(problem.body.len() * problem.dim());
        state.contact = Contact::of(problem).map(Box::new);
        let (u, v) = initial_fields(problem);
        for (to, from) in [(&mut state.u, u), (&mut state.v, v)] {
            if let Some(from) = from {
                to.iter_mut().zip(from).for_each(|(t, f)| *t = T::of(f));
            }
        }
        state
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

    /// Kinetic energy `sum 1/2 rho_i V_i |v_i|^2`, J, with `density(i)` node i's mass
    /// density (kg/m^3; [`Explicit::density_of`](super::Explicit::density_of)).
    pub fn kinetic_energy(
        &self,
        density: impl Fn(usize) -> f64,
        volumes: &[f64],
        dim: usize,
    ) -> f64 {
        volumes
            .iter()
            .enumerate()
            .map(|(i, vol)| {
                let v2: f64 = (0..dim).map(|k| self.v[dim * i + k].f64().powi(2)).sum();
                0.5 * density(i) * vol * v2
            })
            .sum()
    }
}

/// The initial displacement (m) and velocity (m/s) of `problem`, flat (`d * i + k`), where it
/// has any: a point cloud's `ux, uy, uz` / `vx, vy, vz` columns, then each `[[initial]]`
/// table in order, setting its fields on its region (every node without one).
pub fn initial_fields(problem: &Problem) -> (Option<Vec<f64>>, Option<Vec<f64>>) {
    let (d, n) = (problem.dim(), problem.body.len());
    let from_columns = |c: &Option<Vec<[f64; 3]>>| {
        c.as_ref()
            .map(|c| c.iter().flat_map(|x| x[..d].to_vec()).collect::<Vec<f64>>())
    };
    let mut u = from_columns(&problem.body.initial_displacement);
    let mut v = from_columns(&problem.body.initial_velocity);
    let all: Vec<usize> = (0..n).collect();
    for init in &problem.model.initial {
        let nodes = match &init.region {
            Some(r) => problem.region(r),
            None => &all[..],
        };
        for (field, value) in [(&mut u, &init.displacement), (&mut v, &init.velocity)] {
            let Some(value) = value else { continue };
            let field = field.get_or_insert_with(|| vec![0.0; n * d]);
            for &i in nodes {
                field[d * i..d * i + d].copy_from_slice(&value[..d]);
            }
        }
    }
    (u, v)
}
