//! The explicit time step of a partitioned backend with the update fused into the scatter of
//! its forces: per owned dof, as its subdomain's forces arrive, the step's accelerate and
//! kick and the next step's kick and drift, in the arithmetic of `Explicit::step`
//! (undamped), so the results equal the host loop's bitwise while the host update overlaps
//! the next subdomains' work (`stream/`; the CPU emulation, `emulate.rs`, runs the same
//! code so CI checks it).

use super::exchange::{for_each_node, scatter, SendPtr};
use crate::dynamics::{Explicit, ExplicitCall, Forces, Loads, State, StepTimes};
use crate::{Real, Result};
use std::time::Instant;

/// A backend whose force evaluation can fuse the update into its scatter.
pub trait FusedForces<T: Real>: Forces<T> {
    /// Forces at `u` into `force` (breaking bonds first with `check`), with `update` done
    /// per owned dof as its force is written; the bonds broken.
    fn forces_with(
        &mut self,
        u: &[T],
        force: &mut [T],
        check: bool,
        update: Option<&mut Update<'_, T>>,
    ) -> Result<usize>;

    /// What the fused loop keeps between calls ([`Carry`]; taken at the start of a call,
    /// put back at its end).
    fn carry(&mut self) -> &mut Carry<T>;

    /// Where the force pass updates a part of the body only (a rank's owned nodes, in one
    /// scatter), those nodes (global, distinct) and the dofs per node: the loop's second
    /// arrays ([`Carry`]) then hold those nodes' dofs alone, in their order, instead of
    /// every dof. `None` (the default): every node.
    fn owned_nodes(&self) -> Option<(&[usize], usize)> {
        None
    }
}

/// What a partitioned backend keeps between calls of the fused explicit loop: the second
/// displacement array the update drifts into and, from a call's last step, the next step's
/// kick and drift of every dof without a kinematic condition already done (velocity in
/// `v_next`, displacement in `u_next`), valid for the state at `ready` = (step, time bits)
/// the call ended with (the run loop only reads the state between calls). The next call
/// then starts without a pass over the whole state. Of every dof, or where the backend
/// updates a part of the body ([`FusedForces::owned_nodes`]) of its nodes alone, in their
/// order: the drift is then copied into the state's dofs of those nodes after each pass
/// instead of the arrays swapped.
#[derive(Debug, Default)]
pub struct Carry<T> {
    pub u_next: Vec<T>,
    pub v_next: Vec<T>,
    pub ready: Option<(usize, u64)>,
}

/// `Backend::state_changed` of a partitioned backend: the carried half step was made from
/// the old state, so the next call starts without it.
pub fn state_changed<T: Real, B: FusedForces<T>>(backend: &mut B) {
    backend.carry().ready = None;
}

/// `Backend::advance_explicit` of a partitioned backend: [`advance`], or the plain host
/// loop for a damped run (its step needs every dof's half-step velocity first) and a run
/// with contact (the contact forces and the impactors' motion, `dynamics/contact/`).
pub fn advance_explicit<T: Real, B: FusedForces<T>>(
    backend: &mut B,
    call: ExplicitCall<'_, T>,
) -> Result<usize> {
    if call.integrator.damping > 0.0 || call.state.contact.is_some() {
        return call.on_host(backend.as_forces());
    }
    let ExplicitCall {
        integrator,
        loads,
        state,
        times,
        steps,
        ..
    } = call;
    advance(backend, integrator, loads, state, steps, times)
}

/// The explicit update fused into the scatter of a force pass ([`advance`]): per dof of an
/// owned node, the step's accelerate and kick, and the next step's kick and drift into
/// `u_next` for dofs without a kinematic condition, in the arithmetic of `Explicit::step`
/// (undamped). With `drift` (within a call) the kicked velocity goes to `v` and the force
/// and acceleration are not stored (the step after uses neither); on a call's last step
/// they are stored and `v` keeps the full-step velocity, as the host loop leaves them, and
/// the next step's kicked velocity goes to `v_next` (for the next call, [`Carry`]).
pub struct Update<'a, T> {
    pub v: &'a mut [T],
    pub v_next: &'a mut [T],
    pub a: &'a mut [T],
    /// The body force density, `None` where none acts (zero: not read).
    pub b: Option<&'a [T]>,
    pub u: &'a [T],
    pub u_next: &'a mut [T],
    pub constrained: &'a [bool],
    pub half: T,
    pub dt: T,
    /// The inverse mass density `1 / rho`, m^3/kg, of every node, or of each (global index)
    /// where several materials differ in density (`Explicit::node_density`).
    pub inv_rho: InvDensity<'a, T>,
    pub drift: bool,
    /// `u_next` and `v_next` hold the dofs of the scattered nodes alone, in their order
    /// (`d k + c` for the `k`-th node: [`FusedForces::owned_nodes`]), not every dof.
    pub compact: bool,
}

/// The inverse mass density the fused update multiplies the force by, rounded to `T` from
/// the f64 quotient as the host leapfrog rounds it (`Explicit::accelerate`).
#[derive(Clone, Copy)]
pub enum InvDensity<'a, T> {
    /// One density for every node.
    Uniform(T),
    /// Per node, global index.
    PerNode(&'a [T]),
}

impl<T: Real> InvDensity<'_, T> {
    /// Node `g`'s inverse density.
    #[inline(always)]
    fn of(&self, g: usize) -> T {
        match self {
            InvDensity::Uniform(r) => *r,
            InvDensity::PerNode(r) => r[g],
        }
    }
}

/// Each node's inverse mass density in `T` where `integrator` has one per node
/// (`T::of(1 / rho_i)`, the host leapfrog's rounding), else `None` (one density).
pub fn inverse_densities<T: Real>(integrator: &Explicit) -> Option<Vec<T>> {
    (integrator.node_density.as_ref()).map(|rho| rho.iter().map(|&r| T::of(1.0 / r)).collect())
}

/// The scatter of the forces of owned `nodes` (`d` values each, from `local`) into `f`:
/// plain ([`scatter`]), or with the update `up` of the same dofs ([`scatter_update`]).
pub fn scatter_forces<T: Real>(
    local: &[T],
    nodes: &[usize],
    d: usize,
    f: &mut [T],
    update: Option<&mut Update<'_, T>>,
) {
    match update {
        Some(up) => scatter_update(local, nodes, d, f, up),
        None => scatter(local, nodes, d, f),
    }
}

/// The scatter of forces of owned `nodes` (`d` values each, from `local`) into `f`, with the
/// update `up` of the same dofs.
fn scatter_update<T: Real>(
    local: &[T],
    nodes: &[usize],
    d: usize,
    f: &mut [T],
    up: &mut Update<'_, T>,
) {
    let n = f.len();
    let next = if up.compact { d * nodes.len() } else { n };
    assert!(up.v.len() == n && up.a.len() == n && up.u_next.len() == next);
    assert!(up.v_next.len() == next && up.b.is_none_or(|b| b.len() == n));
    let out = (
        SendPtr(f.as_mut_ptr()),
        SendPtr(up.v.as_mut_ptr()),
        SendPtr(up.a.as_mut_ptr()),
        SendPtr(up.u_next.as_mut_ptr()),
        SendPtr(up.v_next.as_mut_ptr()),
    );
    let (b, u, fixed) = (up.b, up.u, up.constrained);
    let (half, dt, inv_rho, drift) = (up.half, up.dt, up.inv_rho, up.drift);
    let compact = up.compact;
    if let InvDensity::PerNode(r) = inv_rho {
        assert!(r.len() * d == n, "one inverse density per node");
    }
    for_each_node(local, nodes, d, n, |vals, g, k| {
        let (f, v, a, u_next, v_next) = (&out.0, &out.1, &out.2, &out.3, &out.4);
        let rho = inv_rho.of(g);
        for (c, &fi) in vals.iter().enumerate() {
            let i = d * g + c;
            // (the dof's place in `u_next` and `v_next`)
            let j = if compact { d * k + c } else { i };
            // SAFETY: owned nodes are distinct, so each dof is written by one thread; the
            // index is checked by `for_each_node` (`j`: `k` is below `nodes.len()`).
            unsafe {
                // (f + 0) rounds as the host's f + b with b = 0 does
                let bi = b.map_or(T::zero(), |b| b[i]);
                let ai = (fi + bi) * rho;
                let mut vi = *v.0.add(i);
                vi += half * ai;
                if !drift {
                    *f.0.add(i) = fi;
                    *a.0.add(i) = ai;
                    *v.0.add(i) = vi;
                }
                if !fixed[i] {
                    vi += half * ai;
                    *u_next.0.add(j) = u[i] + dt * vi;
                }
                match drift {
                    true => *v.0.add(i) = vi,
                    false => *v_next.0.add(j) = vi,
                }
            }
        }
    });
}

/// The first step's kick and drift of [`advance`] (with the kinematic conditions imposed):
/// from `carry` where the last call left it ready for `state` (then only the dofs with
/// kinematic conditions are stepped here), else on the host (`Explicit::kick_drift`). The
/// second displacement and velocity arrays of the fused loop, `(u_next, v_next)`: of every
/// dof, or with `owned` (nodes, dofs per node) of those nodes' alone.
fn first_step<T: Real>(
    mut carry: Carry<T>,
    integrator: &Explicit,
    loads: &Loads,
    state: &mut State<T>,
    owned: Option<(&[usize], usize)>,
) -> (Vec<T>, Vec<T>) {
    let n = owned.map_or(state.u.len(), |(nodes, d)| d * nodes.len());
    let ready = carry.ready.take() == Some((state.step, state.time.to_bits()))
        && carry.u_next.len() == n
        && carry.v_next.len() == n;
    let Carry {
        mut u_next,
        mut v_next,
        ..
    } = carry;
    if !ready && u_next.len() != n {
        // (zeroed pages from the allocator; the scatter threads touch them first)
        u_next = vec![T::zero(); n];
        v_next = vec![T::zero(); n];
    }
    let t1 = match ready {
        true => {
            // `Explicit::kick_drift` for the dofs with kinematic conditions; the others'
            // kick and drift are in `v_next` and `u_next`
            let dt = T::of(integrator.dt);
            let t1 = state.time + integrator.dt;
            loads.step_velocity(state.time, t1, &state.u, &mut state.v);
            match owned {
                None => {
                    for &k in loads.constrained_dofs() {
                        v_next[k] = state.v[k];
                        u_next[k] = state.u[k] + dt * state.v[k];
                    }
                    std::mem::swap(&mut state.u, &mut u_next);
                    std::mem::swap(&mut state.v, &mut v_next);
                }
                Some((nodes, d)) => {
                    drift_constrained(loads, dt, state);
                    let free = loads.constrained();
                    scatter_free(&u_next, nodes, d, free, &mut state.u);
                    scatter_free(&v_next, nodes, d, free, &mut state.v);
                }
            }
            state.time = t1;
            state.step += 1;
            t1
        }
        false => integrator.kick_drift(state, loads),
    };
    loads.impose(t1, &mut state.u, &mut state.v);
    (u_next, v_next)
}

/// `steps` undamped explicit steps (`Explicit::step`, bitwise): the first step's kick
/// and drift (from the last call's [`Carry`] where it is ready: then only the dofs with
/// kinematic conditions are stepped; else on the host), then per step one force evaluation
/// whose scatter also does, per owned dof, the accelerate and kick and the next step's
/// kick and drift (into a second displacement array: later subdomains of the pass still
/// read this step's values), so the host update runs while the GPU streams; after the pass
/// only the dofs with kinematic conditions are stepped, and the arrays swap.
fn advance<T: Real, B: FusedForces<T> + ?Sized>(
    backend: &mut B,
    integrator: &Explicit,
    loads: &Loads,
    state: &mut State<T>,
    steps: usize,
    times: &mut StepTimes,
) -> Result<usize> {
    if steps == 0 {
        return Ok(0);
    }
    let t0 = Instant::now();
    let (dt, half) = (T::of(integrator.dt), T::of(0.5 * integrator.dt));
    let per_node = inverse_densities::<T>(integrator);
    let inv_rho = match &per_node {
        Some(r) => InvDensity::PerNode(r),
        None => InvDensity::Uniform(T::of(1.0 / integrator.density)),
    };
    let fixed = loads.constrained_dofs();
    let carry = std::mem::take(backend.carry());
    // (a rank's owned nodes, copied: the backend is borrowed again at each pass)
    let owned = backend.owned_nodes().map(|(nodes, d)| (nodes.to_vec(), d));
    let owned = owned.as_ref().map(|(nodes, d)| (&nodes[..], *d));
    let (mut u_next, mut v_next) = first_step(carry, integrator, loads, state, owned);
    times.update += t0.elapsed().as_secs_f64();
    let mut broken = 0;
    for step in 0..steps {
        let drift = step + 1 < steps;
        let t0 = Instant::now();
        if loads.has_body_force() {
            loads.body_force(state.time, &mut state.b);
        }
        let mut update = Update {
            v: &mut state.v,
            v_next: &mut v_next,
            a: &mut state.a,
            b: loads.has_body_force().then_some(&state.b[..]),
            u: &state.u,
            u_next: &mut u_next,
            constrained: loads.constrained(),
            half,
            dt,
            inv_rho,
            drift,
            compact: owned.is_some(),
        };
        broken +=
            backend.forces_with(&state.u, &mut state.f, integrator.damage, Some(&mut update))?;
        times.forces += t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        loads.impose(state.time, &mut state.u, &mut state.v);
        if drift {
            let (t, t1) = (state.time, state.time + integrator.dt);
            loads.step_velocity(t, t1, &state.u, &mut state.v);
            match owned {
                None => {
                    for &k in fixed {
                        u_next[k] = state.u[k] + dt * state.v[k];
                    }
                    std::mem::swap(&mut state.u, &mut u_next);
                }
                Some((nodes, d)) => {
                    drift_constrained(loads, dt, state);
                    scatter_free(&u_next, nodes, d, loads.constrained(), &mut state.u);
                }
            }
            state.time = t1;
            state.step += 1;
            loads.impose(t1, &mut state.u, &mut state.v);
        }
        times.update += t0.elapsed().as_secs_f64();
    }
    *backend.carry() = Carry {
        u_next,
        v_next,
        ready: Some((state.step, state.time.to_bits())),
    };
    Ok(broken)
}

/// The drift `u + dt v` of the dofs with kinematic conditions, in place (each reads its own
/// values only: the arithmetic the swapped arrays of [`advance`] get).
fn drift_constrained<T: Real>(loads: &Loads, dt: T, state: &mut State<T>) {
    for &k in loads.constrained_dofs() {
        state.u[k] = state.u[k] + dt * state.v[k];
    }
}

/// The values `local` (`d` per node of `nodes`, in their order) into `global`'s dofs of those
/// nodes that have no kinematic condition (`fixed` per dof: stepped by
/// [`drift_constrained`] instead).
fn scatter_free<T: Real>(local: &[T], nodes: &[usize], d: usize, fixed: &[bool], global: &mut [T]) {
    let to = SendPtr(global.as_mut_ptr());
    assert!(fixed.len() == global.len(), "one flag per dof");
    for_each_node(local, nodes, d, global.len(), |vals, g, _| {
        let to = &to;
        for (c, &x) in vals.iter().enumerate() {
            let i = d * g + c;
            if !fixed[i] {
                // SAFETY: the nodes are distinct, so no two writes alias; in bounds (checked
                // by `for_each_node`).
                unsafe { *to.0.add(i) = x };
            }
        }
    });
}
