//! Boundary conditions in time: body forces, prescribed displacements and velocities, fixed
//! nodes and initial velocities, with linear or smooth (5th-order) ramps.
//!
//! Units: body force density N/m^3, displacement m, velocity m/s, time s (ADR counts
//! iterations as time with the fictitious step 1).

use crate::model::{Boundary, BoundaryKind, Ramp};
use crate::setup::Problem;
use crate::Real;

/// Ramp factor in [0, 1] at the fraction `r` of the ramp duration.
pub fn ramp_factor(ramp: Ramp, r: f64) -> f64 {
    let r = r.clamp(0.0, 1.0);
    match ramp {
        Ramp::None => 1.0,
        Ramp::Linear => r,
        Ramp::Smooth => r * r * r * (10.0 - 15.0 * r + 6.0 * r * r),
    }
}

/// One boundary condition resolved to node indices and a ramp duration in seconds.
#[derive(Debug, Clone)]
struct Condition {
    kind: BoundaryKind,
    nodes: Vec<usize>,
    values: [Option<f64>; 3],
    ramp: Ramp,
    duration: f64,
}

impl Condition {
    fn factor(&self, t: f64) -> f64 {
        if self.ramp == Ramp::None || self.duration <= 0.0 {
            1.0
        } else {
            ramp_factor(self.ramp, t / self.duration)
        }
    }
}

/// A boundary condition as plain data, for backends that apply conditions on a device.
#[derive(Debug, Clone, Copy)]
pub struct ConditionData<'a> {
    /// Kind (traction already turned into a body force).
    pub kind: BoundaryKind,
    /// Nodes it acts on.
    pub nodes: &'a [usize],
    /// Value per component (m, m/s or N/m^3), `None` where it does not act.
    pub values: [Option<f64>; 3],
}

/// All boundary conditions of a problem.
#[derive(Debug, Clone)]
pub struct Loads {
    dim: usize,
    conditions: Vec<Condition>,
    /// Per dof: whether its displacement is prescribed (displacement, velocity or fixed).
    constrained: Vec<bool>,
    /// The prescribed dofs as a list.
    constrained_dofs: Vec<usize>,
    /// Identity of these conditions ([`Loads::id`]).
    id: u64,
}

/// A fresh identity for a [`Loads`] just made.
fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

impl Loads {
    /// Resolve the problem's boundary conditions; `dt` converts `ramp_steps` into seconds.
    pub fn new(problem: &Problem, dt: f64) -> Self {
        let dim = problem.dim();
        let conditions: Vec<Condition> = problem
            .model
            .boundary
            .iter()
            .filter(|b| b.kind != BoundaryKind::NoFail)
            .map(|b| resolve(problem, b, dt))
            .collect();
        let mut constrained = vec![false; problem.body.len() * dim];
        for c in &conditions {
            if matches!(
                c.kind,
                BoundaryKind::Displacement | BoundaryKind::Velocity | BoundaryKind::Fixed
            ) {
                for &i in &c.nodes {
                    for k in 0..dim {
                        if c.values[k].is_some() {
                            constrained[dim * i + k] = true;
                        }
                    }
                }
            }
        }
        let constrained_dofs = (0..constrained.len()).filter(|&k| constrained[k]).collect();
        Loads {
            dim,
            conditions,
            constrained,
            constrained_dofs,
            id: next_id(),
        }
    }

    /// These conditions on a part of the nodes (a rank's, `distributed/gpu/`): `local[i]` is
    /// node `i`'s index in the part, or `u32::MAX` where it is not in it; `n` the part's
    /// nodes. Every condition stays, at its place (the factor table's columns), with the
    /// nodes of the part in its own order.
    pub fn on_part(&self, local: &[u32], n: usize) -> Loads {
        let dim = self.dim;
        let conditions: Vec<Condition> = (self.conditions.iter())
            .map(|c| Condition {
                nodes: (c.nodes.iter())
                    .filter_map(|&i| (local[i] != u32::MAX).then_some(local[i] as usize))
                    .collect(),
                ..c.clone()
            })
            .collect();
        // (from the constrained dofs' list, not the whole model's flags: a distributed run
        // calls this once per call of its time loop)
        let mut constrained = vec![false; n * dim];
        let mut constrained_dofs: Vec<usize> = (self.constrained_dofs.iter())
            .filter_map(|&k| {
                let i = local[k / dim];
                (i != u32::MAX).then(|| dim * i as usize + k % dim)
            })
            .collect();
        constrained_dofs.sort_unstable();
        for &q in &constrained_dofs {
            constrained[q] = true;
        }
        Loads {
            dim,
            conditions,
            constrained,
            constrained_dofs,
            id: next_id(),
        }
    }

    /// An identity of these conditions: two values with the same id hold the same
    /// conditions (a clone keeps its id; a `Loads` is never changed after it is made, and
    /// each constructor gives a new id). A device time loop keeps what it built from the
    /// conditions while the id stays (`backend/gpu/time_loop.rs`).
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Components per node.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The conditions in the order they are applied (no-fail zones excluded).
    pub fn conditions(&self) -> impl Iterator<Item = ConditionData<'_>> {
        self.conditions.iter().map(|c| ConditionData {
            kind: c.kind,
            nodes: &c.nodes,
            values: c.values,
        })
    }

    /// The ramp factor of each condition at time `t`, in the order of [`Loads::conditions`].
    pub fn factors(&self, t: f64) -> Vec<f64> {
        self.conditions.iter().map(|c| c.factor(t)).collect()
    }

    /// Per dof, whether its displacement is prescribed.
    pub fn constrained(&self) -> &[bool] {
        &self.constrained
    }

    /// The dofs whose displacement is prescribed, ascending.
    pub fn constrained_dofs(&self) -> &[usize] {
        &self.constrained_dofs
    }

    /// Whether any body force acts.
    pub fn has_body_force(&self) -> bool {
        self.conditions
            .iter()
            .any(|c| c.kind == BoundaryKind::BodyForce)
    }

    /// Body force density at time `t` into `b` (zeroed first), N/m^3. An entry that is
    /// +0 already is not written: a state's zeroed `b` of a run without body forces stays
    /// untouched memory (the allocator's zero pages, not resident).
    pub fn body_force<T: Real>(&self, t: f64, b: &mut [T]) {
        (b.iter_mut())
            .filter(|x| x.f64().to_bits() != 0)
            .for_each(|x| *x = T::zero());
        for c in self.of_kind(BoundaryKind::BodyForce) {
            let f = c.factor(t);
            self.for_dofs(c, |dof, val| b[dof] += T::of(val * f));
        }
    }

    /// Set the initial velocities (`initial-velocity` and prescribed velocities at t = 0).
    pub fn initial_velocity<T: Real>(&self, v: &mut [T]) {
        for c in self.of_kind(BoundaryKind::InitialVelocity) {
            self.set(c, v, |x| x);
        }
        for c in self.of_kind(BoundaryKind::Velocity) {
            let f = c.factor(0.0);
            self.set(c, v, |x| x * f);
        }
    }

    /// Before a position update `u += (t1 - t0) v` over the interval `t0 -> t1`: set the
    /// velocity of every constrained dof so that the update lands on its prescribed value
    /// (displacement conditions at `t1`, velocity conditions integrated at mid-interval,
    /// fixed dofs at zero). An empty interval (an ADR iteration within a load step) gives
    /// displacement-controlled dofs zero velocity: they do not move, and a velocity of
    /// `0 / 0` would poison ADR's damping estimate.
    pub fn step_velocity<T: Real>(&self, t0: f64, t1: f64, u: &[T], v: &mut [T]) {
        let h = T::of(t1 - t0);
        for c in &self.conditions {
            let target = |dof: usize, val: f64| -> Option<T> {
                match c.kind {
                    BoundaryKind::Displacement | BoundaryKind::Fixed if h == T::zero() => {
                        Some(T::zero())
                    }
                    BoundaryKind::Displacement | BoundaryKind::Fixed => {
                        Some((T::of(val * c.factor(t1)) - u[dof]) / h)
                    }
                    BoundaryKind::Velocity => Some(T::of(val * c.factor(0.5 * (t0 + t1)))),
                    _ => None,
                }
            };
            self.for_dofs(c, |dof, val| {
                if let Some(x) = target(dof, val) {
                    v[dof] = x;
                }
            });
        }
    }

    /// After a position update to time `t1`: put displacement-controlled and fixed dofs exactly
    /// on their values (removing round-off) and give velocity-controlled dofs their velocity
    /// at `t1`.
    pub fn impose<T: Real>(&self, t1: f64, u: &mut [T], v: &mut [T]) {
        for c in &self.conditions {
            let f = c.factor(t1);
            match c.kind {
                BoundaryKind::Displacement | BoundaryKind::Fixed => {
                    self.for_dofs(c, |dof, val| u[dof] = T::of(val * f))
                }
                BoundaryKind::Velocity => self.for_dofs(c, |dof, val| v[dof] = T::of(val * f)),
                _ => {}
            }
        }
    }

    fn for_dofs(&self, c: &Condition, mut f: impl FnMut(usize, f64)) {
        for &i in &c.nodes {
            for k in 0..self.dim {
                if let Some(val) = c.values[k] {
                    f(self.dim * i + k, val);
                }
            }
        }
    }

    fn of_kind(&self, kind: BoundaryKind) -> impl Iterator<Item = &Condition> {
        self.conditions.iter().filter(move |c| c.kind == kind)
    }

    fn set<T: Real>(&self, c: &Condition, v: &mut [T], f: impl Fn(f64) -> f64) {
        self.for_dofs(c, |dof, val| v[dof] = T::of(f(val)));
    }
}

fn resolve(problem: &Problem, b: &Boundary, dt: f64) -> Condition {
    let fixed = b.kind == BoundaryKind::Fixed;
    let mut values = if fixed {
        [Some(0.0); 3]
    } else {
        [b.x, b.y, b.z]
    };
    let mut kind = b.kind;
    if kind == BoundaryKind::Traction {
        let scale = traction_scale(problem, &b.region);
        values = values.map(|v| v.map(|t| t * scale));
        kind = BoundaryKind::BodyForce;
    }
    let duration = b
        .ramp_time
        .or(b.ramp_steps.map(|s| s as f64 * dt))
        .unwrap_or(0.0);
    Condition {
        kind,
        nodes: problem.region(&b.region).to_vec(),
        values,
        ramp: b.ramp,
        duration,
    }
}

impl Loads {
    /// Whether no boundary value changes after time `t` (all ramps done, no non-zero
    /// prescribed velocity), so a converged relaxation may stop.
    pub fn is_static_after(&self, t: f64) -> bool {
        self.conditions.iter().all(|c| {
            let moving = c.kind == BoundaryKind::Velocity
                && c.values.iter().any(|v| v.is_some_and(|x| x != 0.0));
            let ramping = c.ramp != Ramp::None && c.duration > t;
            !moving && !ramping
        })
    }
}

/// Factor turning a traction (Pa) on the face of the `edge` or `layer` region `name` into a
/// body force density (N/m^3): face area over the region's volume. An edge's face spans the
/// bounding box of the body without its layers, a layer's the bounding box of its own nodes,
/// plus one spacing on each other axis (and the thickness in 2D).
fn traction_scale(problem: &Problem, name: &str) -> f64 {
    let body = &problem.body;
    let nodes = problem.region(name);
    let (axis, span) = match problem
        .model
        .region
        .iter()
        .find(|r| r.name == name)
        .map(|r| &r.shape)
    {
        Some(crate::model::Shape::Edge { side, .. }) => {
            (side_axis(side), (body.core_min, body.core_max))
        }
        Some(crate::model::Shape::Layer { side, .. }) => {
            let mut lo = [f64::INFINITY; 3];
            let mut hi = [f64::NEG_INFINITY; 3];
            for &i in nodes {
                for a in 0..3 {
                    lo[a] = lo[a].min(body.positions[i][a]);
                    hi[a] = hi[a].max(body.positions[i][a]);
                }
            }
            (side_axis(side), (lo, hi))
        }
        _ => (None, (body.bbox_min, body.bbox_max)),
    };
    let axis = axis.unwrap_or(0);
    let mut area = if body.dim() == 2 { body.thickness } else { 1.0 };
    for k in 0..body.dim() {
        if k != axis {
            area *= span.1[k] - span.0[k] + body.dx;
        }
    }
    let volume: f64 = nodes.iter().map(|&i| body.volumes[i]).sum();
    if volume > 0.0 {
        area / volume
    } else {
        0.0
    }
}

/// Axis index of an edge side (`-x` -> 0, `+y` -> 1, ...).
pub fn side_axis(side: &str) -> Option<usize> {
    match side.trim_start_matches(['+', '-']) {
        "x" => Some(0),
        "y" => Some(1),
        "z" => Some(2),
        _ => None,
    }
}

/// `integral_0^t ramp_factor(ramp, s / duration) ds`: the displacement per unit velocity a
/// velocity condition has reached at time `t`.
pub fn ramp_integral(ramp: Ramp, duration: f64, t: f64) -> f64 {
    let t = t.max(0.0);
    if ramp == Ramp::None || duration <= 0.0 {
        return t;
    }
    let r = (t / duration).min(1.0);
    // Integrals over [0, r] of r and of 10 r^3 - 15 r^4 + 6 r^5, times the duration; both
    // reach duration / 2 at r = 1, after which the factor is 1.
    let ramped = match ramp {
        Ramp::None => unreachable!("handled above"),
        Ramp::Linear => 0.5 * r * r,
        Ramp::Smooth => r.powi(4) * (2.5 - 3.0 * r + r * r),
    };
    duration * ramped + (t - duration).max(0.0)
}

impl Loads {
    /// The prescribed displacement of every constrained dof for a static solve, `(dof, m)`,
    /// sorted by dof: displacement conditions at their full value, fixed dofs at zero, and
    /// velocity conditions at the displacement they reach at `t_end` (the end of the run the
    /// model describes). Where conditions overlap, the later one wins, as in a run.
    pub fn static_displacements(&self, t_end: f64) -> Vec<(usize, f64)> {
        let mut value = vec![None; self.constrained.len()];
        for c in &self.conditions {
            let scale = match c.kind {
                BoundaryKind::Displacement | BoundaryKind::Fixed => 1.0,
                BoundaryKind::Velocity => ramp_integral(c.ramp, c.duration, t_end),
                _ => continue,
            };
            self.for_dofs(c, |dof, val| value[dof] = Some(val * scale));
        }
        value
            .into_iter()
            .enumerate()
            .filter_map(|(dof, v)| v.map(|v| (dof, v)))
            .collect()
    }

    /// Whether any velocity condition prescribes a non-zero velocity.
    pub fn has_moving_velocity(&self) -> bool {
        self.of_kind(BoundaryKind::Velocity)
            .any(|c| c.values.iter().any(|v| v.is_some_and(|x| x != 0.0)))
    }
}
