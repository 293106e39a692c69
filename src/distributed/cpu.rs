//! `cpu-loop` on one rank's part: the rank's subdomain (owned nodes with their families,
//! ghosts without) run by two [`CpuLoop`]s, one for the interior nodes and one for the
//! boundary nodes (`split.rs`), the explicit update fused into the scatter of its forces as
//! the partitioned backends do (`partitioned/fused.rs`).
//!
//! The driver's `State` keeps the global length on every rank; a rank computes and updates
//! only its owned dofs there (the rest goes stale between gathers). Per force evaluation the
//! owned displacements are gathered into the local array, the ghosts' come from their owners
//! ([`Halo`]), and for the state-based laws the ghosts' dilatations follow in a second
//! exchange. The interior's bond work runs while the ghosts' values travel (the messages are
//! posted first, waited for after it), the boundary's once they are in. Each owned node sums
//! its bonds in the global CSR order with the in-core
//! arithmetic, so forces, bond breaking (a bond cut by the partition is evaluated on both
//! sides from the same two displacements), damage and the fused update equal the
//! single-process run bit for bit. The driver's state holds the owned values current after
//! every call; a snapshot's piece is written from them and from the part's own damage and
//! dilatation (`RankOutputs`), with no gather; the whole state is gathered where an output
//! needs it (a checkpoint: to rank 0; the end: to every rank), a probe row's nodes to
//! every rank (`collect.rs`). The energy is a sum over ranks (to round-off). At each call's end
//! the ranks agree on the stop flag (a signal on one rank stops all at the same step).
//! With contact or impactors the step is the host leapfrog (`Explicit::step`), each rank
//! the contact forces of its owned nodes (`contact.rs`), bitwise the one-process run too.
//!
//! Units: m, N/m^3, J.

use super::collect::{
    adr_on_ranks, explicit_on_ranks, gather_bonds, gather_bonds_to, gather_node_damage,
    owned_bond_count_damage, rank_reports, HaloTimes, OwnedValues, ProbeCache, StopFlags,
};
use super::contact::{pairs_broken_on_rank, RankContact};
use super::halo::HaloBuffers;
use super::split::{Split, SplitParts};
use super::{Comm, RankPlan, RankSetup};
use crate::backend::partitioned::emulate::history_timing;
use crate::backend::partitioned::exchange::gather_into;
use crate::backend::partitioned::fused::{self, scatter_forces, Carry, FusedForces, Update};
use crate::backend::{check_material, Backend, CpuLoop, Footprint, Gather, RankOutputs, Scheme};
use crate::dynamics::forces::PartOfBody;
use crate::dynamics::{Adr, AdrCall, ExplicitCall, Forces, State};
use crate::material::{FailureHistory, Law};
use crate::model::BreakTiming;
use crate::output::{ProbeRegions, ProbeValues};
use crate::partition::RankReport;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;
use std::time::Instant;

/// `cpu-loop` on one rank's part of the problem.
pub struct DistributedCpu<T: Real> {
    comm: Arc<dyn Comm>,
    plan: RankPlan,
    split: Split<T>,
    dim: usize,
    /// What contact needs of the rank, where the model has contact or an impactor
    /// (`contact.rs`).
    contact: Option<RankContact>,
    lps: bool,
    u_local: Vec<T>,
    f_local: Vec<T>,
    f_edge: Vec<T>,
    theta_local: Vec<T>,
    theta_edge: Vec<T>,
    buf: HaloBuffers<T>,
    buf_theta: HaloBuffers<T>,
    carry: Carry<T>,
    /// Bonds break with each node's history (`MaterialConstants::history_breaking`, a
    /// brittle law): the breaking passes run here, around the force pass.
    history: Option<BreakTiming>,
    /// Each local node's critical stretch from the previous breaking evaluation (owned
    /// computed here, ghosts' from their owners; empty before the first).
    node_s0: Vec<T>,
    stop: Option<StopFlags>,
    probes: ProbeCache<T>,
    pub times: HaloTimes,
    /// The seconds of this backend's creation by phase.
    pub setup: RankSetup,
}

impl<T: Real> DistributedCpu<T> {
    /// This rank's part of `problem` (stored, or lean: the part searches its own families)
    /// over `comm`. Runs what `cpu-loop` in subdomains runs: the explicit solver, every law
    /// and failure option, several materials (each owned node's density in the fused
    /// update), contact and impactors (`contact.rs`; then the host leapfrog).
    pub fn new(problem: &Problem, comm: Arc<dyn Comm>, stop: Option<StopFlags>) -> Result<Self> {
        check_material(problem, "cpu-loop (distributed)", Scheme::CpuLoopParts)?;
        let mut times = RankSetup::default();
        let mut plan = RankPlan::timed(problem, comm.size(), comm.rank(), &mut times)?;
        let (dim, n) = (problem.dim(), plan.sub.nodes.len());
        let parts = SplitParts::new(problem, &plan.sub, plan.on_edge(), &mut times);
        // (the loops hold their own families: the plan's go before the loops' arrays come)
        plan.release_families();
        let split = Split::new(parts);
        // (a restart's history: each local node's critical stretch)
        let node_s0 = match problem.restored.node_s0.is_empty() {
            true => Vec::new(),
            false => (plan.sub.nodes.iter())
                .map(|&i| T::of(problem.restored.node_s0[i]))
                .collect(),
        };
        Ok(DistributedCpu {
            contact: RankContact::of(problem, &plan, &comm),
            split,
            dim,
            lps: matches!(problem.material.law, Law::Lps { .. }),
            u_local: vec![T::zero(); dim * n],
            f_local: vec![T::zero(); dim * n],
            f_edge: vec![T::zero(); dim * n],
            theta_local: vec![T::zero(); n],
            theta_edge: vec![T::zero(); n],
            buf: HaloBuffers::default(),
            buf_theta: HaloBuffers::default(),
            carry: Carry::default(),
            history: history_timing(problem),
            node_s0,
            comm,
            plan,
            stop,
            probes: ProbeCache::default(),
            times: HaloTimes {
                device: -1,
                ..HaloTimes::default()
            },
            setup: times,
        })
    }

    /// This rank's part.
    pub fn plan(&self) -> &RankPlan {
        &self.plan
    }

    /// The local displacement from the global `u`: the owned nodes' from `u`, the ghosts'
    /// from their owners (no work overlapped).
    fn local_displacement(&mut self, u: &[T]) -> Result<()> {
        self.overlapped(u, false, |_, _, _| Ok(0)).map(|_| ())
    }

    /// The owned displacements from the global `u` into the local array, their exchange
    /// posted, `work` (given the split, the local displacement with stale ghosts, the local
    /// forces) run while they travel, the ghosts unpacked; what `work` returns. With
    /// `u_current` (the local displacement already `u`'s, ghosts included: the breaking pass
    /// before the force brought them in) `work` runs alone.
    fn overlapped(
        &mut self,
        u: &[T],
        u_current: bool,
        mut work: impl FnMut(&mut Split<T>, &[T], &mut [T]) -> Result<usize>,
    ) -> Result<usize> {
        if u_current {
            return work(&mut self.split, &self.u_local, &mut self.f_local);
        }
        let t0 = Instant::now();
        let (d, owned) = (self.dim, self.plan.sub.owned);
        gather_into(
            u,
            self.plan.sub.owned_nodes(),
            d,
            &mut self.u_local[..d * owned],
        );
        let halo = &self.plan.halo;
        halo.pack(&self.u_local, d, &mut self.buf);
        let (split, u_local, f_local) = (&mut self.split, &self.u_local, &mut self.f_local);
        let (mut out, mut busy) = (0, 0.0);
        halo.exchange(&*self.comm, &mut self.buf, &mut || {
            let t1 = Instant::now();
            out = work(split, u_local, f_local)?;
            busy = t1.elapsed().as_secs_f64();
            Ok(())
        })?;
        halo.unpack(&self.buf, d, &mut self.u_local);
        self.times
            .count_host_exchange::<T>(&self.plan.halo, d, t0.elapsed().as_secs_f64(), busy);
        Ok(out)
    }

    /// PMB forces of the owned nodes into `f_local` (breaking first with `check`): the
    /// interior's while the ghosts travel (none with `u_current`), then the boundary's; the
    /// bonds broken.
    fn pmb_forces(&mut self, u: &[T], check: bool, u_current: bool) -> Result<usize> {
        let pass = |b: &mut CpuLoop<T>, u: &[T], f: &mut [T]| match check {
            true => b.break_bonds_and_force(u, f),
            false => b.internal_force(u, f).map(|()| 0),
        };
        let inner = self.overlapped(u, u_current, |s, u, f| pass(&mut s.inner, u, f))?;
        let edge = pass(&mut self.split.edge, &self.u_local, &mut self.f_edge)?;
        self.split.merge(&mut self.f_local, &self.f_edge, self.dim);
        Ok(inner + edge)
    }

    /// The dilatation of the local nodes (owned computed, breaking first with `breaking`,
    /// the interior's while the displacements travel; ghosts' from their owners, exchanged
    /// while `forces` (LPS forces of the interior, which read no ghost) runs); the bonds
    /// broken. `u_current`: as [`DistributedCpu::overlapped`]'s.
    fn lps_forces(
        &mut self,
        u: &[T],
        breaking: bool,
        forces: bool,
        u_current: bool,
    ) -> Result<usize> {
        let mut theta = std::mem::take(&mut self.theta_local);
        let inner = self.overlapped(u, u_current, |s, u, _| {
            Ok(s.inner.dilatation_and_breaks(u, breaking, &mut theta))
        })?;
        self.theta_local = theta;
        let s = &mut self.split;
        let edge = s
            .edge
            .dilatation_and_breaks(&self.u_local, breaking, &mut self.theta_edge);
        s.merge(&mut self.theta_local, &self.theta_edge, 1);
        let t0 = Instant::now();
        let halo = &self.plan.halo;
        halo.pack(&self.theta_local, 1, &mut self.buf_theta);
        let (u_local, theta) = (&self.u_local, &self.theta_local);
        let (f_local, mut busy) = (&mut self.f_local, 0.0);
        halo.exchange(&*self.comm, &mut self.buf_theta, &mut || {
            let t1 = Instant::now();
            if forces {
                s.inner.lps_forces_with(u_local, theta, f_local);
            }
            busy = t1.elapsed().as_secs_f64();
            Ok(())
        })?;
        halo.unpack(&self.buf_theta, 1, &mut self.theta_local);
        self.times
            .count_host_exchange::<T>(&self.plan.halo, 1, t0.elapsed().as_secs_f64(), busy);
        if forces {
            let (s, f_edge) = (&mut self.split, &mut self.f_edge);
            (s.edge).lps_forces_with(&self.u_local, &self.theta_local, f_edge);
            s.merge(&mut self.f_local, &self.f_edge, self.dim);
        }
        Ok(inner + edge)
    }

    /// Bond breaking with each node's history before the force at `u`: the displacement's
    /// exchange overlapped with the interior's next critical stretches, then the boundary's
    /// and the breaking ([`DistributedCpu::breaks_with`]); the force pass that follows finds
    /// the ghosts current (`u_current`). Returns the bonds this rank broke.
    fn history_before_force(&mut self, u: &[T]) -> Result<usize> {
        let mut next = Vec::new();
        self.overlapped(u, false, |s, u, _| {
            next = s.inner.next_critical_stretches(u);
            Ok(0)
        })?;
        let edge = self.split.edge.next_critical_stretches(&self.u_local);
        self.split.merge(&mut next, &edge, 1);
        self.breaks_with(next)
    }

    /// Bond breaking with each node's history at the local displacement (ghosts current,
    /// after the force pass that brought them in); returns the bonds this rank broke.
    fn history_after_force(&mut self) -> Result<usize> {
        let next = self.split.next_critical_stretches(&self.u_local);
        self.breaks_with(next)
    }

    /// As `CpuLoop` in core: the owned bonds past the smaller critical stretch of their ends
    /// from the previous evaluation (at the first, from `next`, this one's) break, and
    /// `next` (the owned nodes' critical stretches) is kept for the next evaluation, its
    /// ghosts' entries from their owners. That exchange travels while the interior breaks
    /// (an interior node and its neighbours are owned: their entries are in `next` before
    /// it), the boundary once it is in. Returns the bonds this rank broke.
    fn breaks_with(&mut self, mut next: Vec<T>) -> Result<usize> {
        let previous = std::mem::take(&mut self.node_s0);
        let t0 = Instant::now();
        let halo = &self.plan.halo;
        halo.pack(&next, 1, &mut self.buf_theta);
        let (split, u_local) = (&mut self.split, &self.u_local);
        let (mut inner, mut busy) = (0, 0.0);
        halo.exchange(&*self.comm, &mut self.buf_theta, &mut || {
            let t1 = Instant::now();
            let s0 = if previous.is_empty() {
                &next
            } else {
                &previous
            };
            inner = split.inner.breaks_past(u_local, s0);
            busy = t1.elapsed().as_secs_f64();
            Ok(())
        })?;
        halo.unpack(&self.buf_theta, 1, &mut next);
        self.times
            .count_host_exchange::<T>(&self.plan.halo, 1, t0.elapsed().as_secs_f64(), busy);
        let s0 = if previous.is_empty() {
            &next
        } else {
            &previous
        };
        let edge = self.split.edge.breaks_past(&self.u_local, s0);
        self.node_s0 = next;
        Ok(inner + edge)
    }

    /// The damage per bond and each node's critical stretch on the ranks `to` names (empty
    /// on the others).
    fn history_to(&self, to: Gather) -> Result<FailureHistory<T>> {
        let node_s0 = match self.node_s0.is_empty() {
            true => Vec::new(),
            false => self.local_to(&self.node_s0, 1, to)?,
        };
        let bond_damage = match self.split.bond_damage()? {
            Some(mine) => gather_bonds_to(&*self.comm, &self.plan, &mine, to)?,
            None => Vec::new(),
        };
        Ok(FailureHistory {
            bond_damage,
            node_s0,
        })
    }

    /// Every rank's report, gathered.
    fn rank_reports(&self) -> Result<Vec<RankReport>> {
        let per = self.dim + usize::from(self.lps);
        rank_reports::<T>(&*self.comm, &self.plan, per, &self.times)
    }
}

impl<T: Real> FusedForces<T> for DistributedCpu<T> {
    /// Forces of the owned nodes into `force` (breaking bonds first with `check`), the
    /// update fused into the scatter; the bonds this rank broke.
    fn forces_with(
        &mut self,
        u: &[T],
        force: &mut [T],
        check: bool,
        update: Option<&mut Update<'_, T>>,
    ) -> Result<usize> {
        let t0 = Instant::now();
        let history = self.history.filter(|_| check);
        let mut broken = 0;
        // (the breaking pass before the force brings the ghosts in: the force pass does not)
        let u_current = history == Some(BreakTiming::BeforeForce);
        if u_current {
            broken += self.history_before_force(u)?;
        }
        // (with history the force pass breaks nothing)
        let check = check && history.is_none();
        broken += match self.lps {
            true => self.lps_forces(u, check, true, u_current)?,
            false => self.pmb_forces(u, check, u_current)?,
        };
        if history == Some(BreakTiming::AfterForce) {
            // (the force pass brought the ghosts' displacements in)
            broken += self.history_after_force()?;
        }
        let owned = self.plan.sub.owned_nodes();
        scatter_forces(&self.f_local, owned, self.dim, force, update);
        self.times.forces_seconds += t0.elapsed().as_secs_f64();
        Ok(broken)
    }

    fn carry(&mut self) -> &mut Carry<T> {
        &mut self.carry
    }

    /// The owned nodes: the fused loop keeps its second arrays for their dofs alone.
    fn owned_nodes(&self) -> Option<(&[usize], usize)> {
        Some((self.plan.sub.owned_nodes(), self.dim))
    }
}

impl<T: Real> OwnedValues<T> for DistributedCpu<T> {
    fn parts(&self) -> (&dyn Comm, &RankPlan, usize) {
        (&*self.comm, &self.plan, self.dim)
    }
}

impl<T: Real> Forces<T> for DistributedCpu<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.forces_with(u, force, false, None).map(|_| ())
    }

    /// Break the owned nodes' over-stretched bonds; the bonds this rank broke.
    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.local_displacement(u)?;
        let s = &mut self.split;
        Ok(s.inner.break_bonds(&self.u_local)? + s.edge.break_bonds(&self.u_local)?)
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.forces_with(u, force, true, None)
    }

    /// The damage of every node, on every rank.
    fn damage(&self, phi: &mut [T]) -> Result<()> {
        let mut local = vec![T::zero(); self.plan.sub.nodes.len()];
        self.split.damage(&mut local)?;
        self.gather_local(&local, 1, phi)
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if !self.lps {
            return Ok(false);
        }
        self.lps_forces(u, false, false, false)?;
        self.gather_local(&self.theta_local, 1, theta)?;
        Ok(true)
    }

    /// The strain energy summed over the ranks.
    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.local_displacement(u)?;
        let s = &mut self.split;
        let mine = s.inner.strain_energy(&self.u_local)? + s.edge.strain_energy(&self.u_local)?;
        Ok(self.comm.sum_f64(mine))
    }

    /// The bonds broken on every rank.
    fn broken_bonds(&self) -> usize {
        self.comm.sum_u64(self.split.broken_bonds() as u64) as usize
    }

    /// The bond status of every bond, on every rank.
    fn bond_status(&self) -> Result<Vec<u8>> {
        let mine = self.split.bond_status()?;
        gather_bonds(&*self.comm, &self.plan, &mine)
    }

    /// Counted on each rank over its owned nodes' bonds, gathered per node.
    fn bond_count_damage(&self, _offsets: &[usize]) -> Result<Vec<f64>> {
        let mine = self.owned_bond_count_damage()?;
        gather_node_damage(&*self.comm, &self.plan.owned_of, &mine)
    }

    /// A softening law's damage per bond, on every rank.
    fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        let Some(mine) = self.split.bond_damage()? else {
            return Ok(None);
        };
        gather_bonds(&*self.comm, &self.plan, &mine).map(Some)
    }

    /// The damage per bond and each node's critical stretch, on every rank.
    fn failure_history(&self) -> Result<FailureHistory<T>> {
        self.history_to(Gather::Every)
    }

    /// For each pair `[i, j]` with an owned end, whether its bond is broken (`contact.rs`).
    fn bonds_broken(&self, pairs: &[[u32; 2]]) -> Result<Vec<bool>> {
        let split = &self.split;
        Ok(pairs_broken_on_rank(&self.plan, pairs, |a, b| {
            split.bond_broken(a, b as u32)
        }))
    }

    fn part_of_body(&self) -> Option<&dyn PartOfBody<T>> {
        self.contact.as_ref().map(|c| c as &dyn PartOfBody<T>)
    }
}

impl<T: Real> Backend<T> for DistributedCpu<T> {
    /// The fused loop, or the host leapfrog with damping or contact (`fused.rs`).
    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        let stop = self.stop.clone();
        explicit_on_ranks(self, call, stop.as_ref(), fused::advance_explicit)
    }

    fn state_changed(&mut self, _state: &State<T>) -> Result<()> {
        fused::state_changed(self);
        Ok(())
    }

    /// One ADR iteration on the owned dofs, its global sums merged over the ranks (exact, so
    /// the one-process iteration's bit for bit); the ranks then agree on the stop flag.
    fn advance_adr(&mut self, call: AdrCall<'_, T>) -> Result<usize> {
        let (owned, comm) = (self.plan.sub.owned_nodes().to_vec(), self.comm.clone());
        let stop = self.stop.clone();
        adr_on_ranks(call, self, &owned, &*comm, stop.as_ref())
    }

    /// Nothing to do: ADR's iterations update the owned dofs of the driver's state
    /// ([`RankOutputs::gather_state`] brings the whole).
    fn sync_state(&mut self, _state: &mut State<T>) -> Result<()> {
        Ok(())
    }

    /// The last free force of every dof on every rank (for a checkpoint).
    fn sync_adr(&mut self, adr: &mut Adr<T>) -> Result<()> {
        self.gather_adr(adr)
    }

    /// The largest over the ranks' owned dofs (`None` where any is not finite).
    fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        Ok(self.largest_owned(state))
    }

    /// The probe values from the regions' displacements and forces gathered to every rank
    /// (the sums in the order of a single process).
    fn probe_values(
        &mut self,
        state: &State<T>,
        regions: &ProbeRegions,
    ) -> Result<Vec<ProbeValues>> {
        (self.probes).rows(&*self.comm, &self.plan, state, regions, self.dim)
    }

    /// This rank's bytes, and every rank's report (collective).
    fn footprint(&self) -> Footprint {
        Footprint {
            ranks: self.rank_reports().ok(),
            ..Footprint::new(self.split.memory_bytes(), self.split.bytes_per_step())
        }
    }

    fn name(&self) -> &'static str {
        "cpu-loop-mpi"
    }

    fn rank_outputs(&mut self) -> Option<&mut dyn RankOutputs<T>> {
        Some(self)
    }
}

impl<T: Real> RankOutputs<T> for DistributedCpu<T> {
    fn rank(&self) -> usize {
        self.plan.rank
    }

    fn owned(&self) -> &[usize] {
        self.plan.sub.owned_nodes()
    }

    fn owned_damage(&self) -> Result<Vec<T>> {
        let mut local = vec![T::zero(); self.plan.sub.nodes.len()];
        self.split.damage(&mut local)?;
        Ok(self.owned_of_local(&local, 1))
    }

    fn owned_bond_count_damage(&self) -> Result<Vec<f64>> {
        let status = self.split.bond_status()?;
        let damage = self.split.bond_damage()?;
        Ok(owned_bond_count_damage(
            &self.plan,
            &status,
            damage.as_deref(),
        ))
    }

    /// LPS: the owned dilatations at `u`, the ghosts' displacement exchanged (collective).
    fn owned_dilatation(&mut self, u: &[T]) -> Result<Option<Vec<T>>> {
        if !self.lps {
            return Ok(None);
        }
        self.lps_forces(u, false, false, false)?;
        Ok(Some(self.owned_of_local(&self.theta_local, 1)))
    }

    fn gather_state(&mut self, state: &mut State<T>, to: Gather) -> Result<()> {
        self.gather_state_to(state, to)
    }

    fn bonds_to(&self, to: Gather) -> Result<(Vec<u8>, FailureHistory<T>)> {
        let mine = self.split.bond_status()?;
        let status = gather_bonds_to(&*self.comm, &self.plan, &mine, to)?;
        Ok((status, self.history_to(to)?))
    }

    fn adr_to(&mut self, adr: &mut Adr<T>, to: Gather) -> Result<()> {
        self.gather_adr_to(adr, to)
    }

    fn owned_to(&self, mine: &[T], per: usize, to: Gather) -> Result<Vec<T>> {
        self.local_to(mine, per, to)
    }
}
