//! Adaptive dynamic relaxation (Kilic and Madenci 2010; `theory.md` section 5): a damped
//! fictitious dynamics with a diagonal density from Gerschgorin row sums of the stiffness and
//! a damping coefficient from the Rayleigh quotient of a diagonal local stiffness. The
//! fictitious time step is 1, so "time" counts iterations.
//!
//! The iteration's global sums (the residual's norms, the Rayleigh quotient) are exact until
//! one rounding (`exact_sum.rs`): the same bits in any order, over threads' blocks of dofs
//! or over the ranks of a distributed run, each updating its owned dofs ([`AdrPart`]), so
//! ADR across ranks equals the one-process ADR bit for bit.

use super::exact_sum::ExactSum;
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
    /// Components per node.
    dim: usize,
    /// `F^{n-1}` (free dofs; constrained ones zero).
    f_prev: Vec<T>,
    /// The array the next free force is written into (the one before `f_prev`).
    f_next: Vec<T>,
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
            dim,
            f_prev: vec![T::zero(); n],
            f_next: vec![T::zero(); n],
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
        self.iterate_part(state, loads, forces, h, AdrPart::whole())
    }

    /// [`Adr::iterate`] on the dofs of `part` (a rank's owned nodes; the forces give those),
    /// the global sums completed by `part` (merged over the ranks): each sum is exact until
    /// one rounding ([`ExactSum`]), so any part of the nodes, merged, gives the one-process
    /// value bit for bit. The other dofs of `state` are left as they were (the loads' kinematic
    /// conditions excepted).
    pub fn iterate_part(
        &mut self,
        state: &mut State<T>,
        loads: &Loads,
        forces: &mut dyn Forces<T>,
        h: f64,
        part: AdrPart<'_>,
    ) -> Result<usize> {
        let broken = evaluate(forces, self.damage, &state.u, &mut state.f)?;
        loads.body_force(state.time, &mut state.b);
        let mask = loads.constrained();
        let n = self.lambda.len();
        let mut force = std::mem::take(&mut self.f_next);
        force.resize(n, T::zero());
        let dofs = Dofs::of(part.nodes, n / self.dim.max(1), self.dim);
        dofs.for_each(|k| {
            force[k] = match mask[k] {
                true => T::zero(),
                false => state.f[k] + state.b[k],
            }
        });
        let mut sums = self.sums(&dofs, state, &force);
        if let Some(complete) = part.complete {
            complete(&mut sums)?;
        }
        let [free, internal, body, den, num] = sums.map(|s| s.value());
        self.residual = relative(free, internal, body);
        let two = T::of(2.0);
        if !self.started {
            self.started = true;
            dofs.for_each(|k| state.v[k] = force[k] / (two * self.lambda[k]));
        } else {
            let c = T::of(damping(num, den));
            dofs.for_each(|k| {
                state.v[k] = ((two - c) * state.v[k] + two * force[k] / self.lambda[k]) / (two + c)
            });
        }
        let t1 = state.time + h;
        loads.step_velocity(state.time, t1, &state.u, &mut state.v);
        // Free dofs move by the fictitious step 1; constrained ones over the load interval.
        let hh = T::of(h);
        dofs.for_each(|k| state.u[k] += if mask[k] { hh * state.v[k] } else { state.v[k] });
        loads.impose(t1, &mut state.u, &mut state.v);
        state.time = t1;
        state.step += 1;
        std::mem::swap(&mut self.f_prev, &mut force);
        self.f_next = force;
        Ok(broken)
    }

    /// The exact sums over `dofs` of an iteration: `|F_free|^2`, `|L|^2`, `|b|^2`, and the
    /// Rayleigh quotient's denominator `u^T u` and numerator `u^T K1 u` (with the local
    /// stiffness `K1 = -(F/lambda - F^{n-1}/lambda) / v` of each dof whose velocity is not
    /// zero), in parallel over blocks of dofs (exact: the blocks do not change the sums).
    fn sums(&self, dofs: &Dofs<'_>, state: &State<T>, force: &[T]) -> [ExactSum; 5] {
        let term = |k: usize, s: &mut [ExactSum; 5]| {
            let sq = |x: T| x.f64() * x.f64();
            s[0].add(sq(force[k]));
            s[1].add(sq(state.f[k]));
            s[2].add(sq(state.b[k]));
            let (u, v) = (state.u[k].f64(), state.v[k].f64());
            s[3].add(u * u);
            if v != 0.0 {
                let l = self.lambda[k].f64();
                let k1 = -(force[k].f64() / l - self.f_prev[k].f64() / l) / v;
                s[4].add(u * u * k1);
            }
        };
        const BLOCK: usize = 4096;
        let blocks = dofs.len().div_ceil(BLOCK);
        (0..blocks)
            .into_par_iter()
            .map(|b| {
                let mut s: [ExactSum; 5] = Default::default();
                dofs.range(b * BLOCK..((b + 1) * BLOCK).min(dofs.len()))
                    .for_each(|k| term(k, &mut s));
                s
            })
            .reduce(Default::default, |mut a, b| {
                a.iter_mut().zip(&b).for_each(|(a, b)| a.merge(b));
                a
            })
    }
}

/// The dofs an ADR iteration updates and how its global sums are completed: in one process
/// every dof and nothing to complete; on a rank of a distributed run the dofs of its owned
/// nodes, the sums merged over the ranks.
pub struct AdrPart<'a> {
    /// The nodes whose dofs are updated (ascending), `None` for every node.
    pub nodes: Option<&'a [usize]>,
    /// Completes this part's sums into the whole body's (collective on the ranks); `None`
    /// where the part is the whole.
    pub complete: Option<CompleteSums<'a>>,
}

/// What completes a part's exact sums into the whole body's, in place.
pub type CompleteSums<'a> = &'a mut dyn FnMut(&mut [ExactSum]) -> Result<()>;

impl AdrPart<'_> {
    /// Every dof, in one process.
    pub fn whole() -> AdrPart<'static> {
        AdrPart {
            nodes: None,
            complete: None,
        }
    }
}

/// The dofs of every node, or of some nodes (`dim` per node).
enum Dofs<'a> {
    All(usize),
    Nodes(&'a [usize], usize),
}

impl<'a> Dofs<'a> {
    fn of(nodes: Option<&'a [usize]>, n: usize, dim: usize) -> Self {
        match nodes {
            None => Dofs::All(n * dim),
            Some(nodes) => Dofs::Nodes(nodes, dim),
        }
    }

    fn len(&self) -> usize {
        match self {
            Dofs::All(n) => *n,
            Dofs::Nodes(nodes, d) => nodes.len() * d,
        }
    }

    /// The dofs of positions `r` in this list.
    fn range(&self, r: std::ops::Range<usize>) -> impl Iterator<Item = usize> + '_ {
        let (all, nodes) = match self {
            Dofs::All(_) => (Some(r.clone()), None),
            Dofs::Nodes(nodes, d) => (None, Some(r.map(move |p| d * nodes[p / d] + p % d))),
        };
        all.into_iter().flatten().chain(nodes.into_iter().flatten())
    }

    fn for_each(&self, f: impl FnMut(usize)) {
        self.range(0..self.len()).for_each(f)
    }
}

/// `c = 2 sqrt(num / den)` (the Rayleigh quotient `u^T K1 u / u^T u`), 0 where the quotient
/// is not positive, below 2.
fn damping(num: f64, den: f64) -> f64 {
    if den > 0.0 && num > 0.0 {
        (2.0 * (num / den).sqrt()).min(1.99)
    } else {
        0.0
    }
}

/// `free / max(internal, body)` of the square norms' square roots (0 when nothing is
/// loaded).
fn relative(free2: f64, internal2: f64, body2: f64) -> f64 {
    let scale = internal2.sqrt().max(body2.sqrt());
    if scale > 0.0 {
        free2.sqrt() / scale
    } else {
        0.0
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
