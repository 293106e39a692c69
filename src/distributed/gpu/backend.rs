//! The traits the distributed GPU loop implements: `Forces` (the calls on the driver's
//! global arrays: the start of a run, ADR's iterations, the host leapfrog of a run with
//! contact and the outputs; each gathers or sums over the ranks; with contact, the rank's
//! part of the body and a crack face's bond) and `Backend` (the explicit loop on the device,
//! or on the host with contact, ADR on the host with the
//! forces from the device, the stability check and the probe rows reduced over the ranks,
//! the state and ADR's history gathered for a snapshot or a checkpoint, the footprint with
//! every rank's report).
//!
//! ADR iterates on the host as on a CPU rank (`collect::adr_on_ranks`: the owned dofs, the
//! global sums exact and merged over the ranks), each iteration's forces a trait call on the
//! device (`trait_forces`: the owned displacement up, the ghosts' exchanged on the device, the
//! owned forces down), which are the one-GPU list form's bit for bit: so ADR on P ranks is
//! the host ADR over the one-GPU list form's forces bit for bit, for any P. It is not
//! `gpu-loop`'s own ADR in one process, which iterates on the device and sums in a tree
//! order (`backend/gpu/adr.rs`): the two agree to the ADR tolerance only.
//!
//! Units: m, N/m^3, J; bytes.

use super::super::collect::{
    adr_on_ranks, gather_bonds_to, gather_node_damage, gather_owned_to, largest, owned_max_abs,
    rank_reports, OwnedValues,
};
use super::super::contact::pairs_broken_on_rank;
use super::super::{Comm, RankPlan};
use super::probes::DeviceProbeRows;
use super::{DistributedGpu, NAME};
use crate::backend::gpu::buffers::addr;
use crate::backend::gpu::device_fault;
use crate::backend::partitioned::exchange::gather_into;
use crate::backend::{Backend, Footprint};
use crate::backend::{Gather, RankOutputs};
use crate::dynamics::forces::PartOfBody;
use crate::dynamics::{Adr, AdrCall, ExplicitCall, Forces, State};
use crate::gpu::pinned::copy_out;
use crate::material::FailureHistory;
use crate::output::{ProbeRegions, ProbeValues};
use crate::{Real, Result};

impl<T: Real> DistributedGpu<T> {
    /// The local displacement (device order) at the global `u`: owned from `u`, ghosts from
    /// their owners (exchanged on the host: the trait calls that read ghosts on the host's
    /// side).
    fn local_displacement(&self, u: &[T]) -> Result<Vec<T>> {
        let (d, sub) = (self.dim, &self.plan.sub);
        let mut plan_order = vec![T::zero(); d * sub.nodes.len()];
        gather_into(u, sub.owned_nodes(), d, &mut plan_order[..d * sub.owned]);
        let mut buf = Default::default();
        let halo = &self.plan.halo;
        halo.refresh(&*self.comm, &mut plan_order, d, &mut buf)?;
        let mut local = vec![T::zero(); plan_order.len()];
        for (k, &p) in self.order.to_plan.iter().enumerate() {
            local[d * k..d * (k + 1)].copy_from_slice(&plan_order[d * p..d * (p + 1)]);
        }
        Ok(local)
    }

    /// The owned nodes' values of the device array at `src` (`per` per node, device order),
    /// gathered into `global` on every rank.
    fn gather_device(&self, src: u64, per: usize, global: &mut [T]) -> Result<()> {
        let gpu = self.gl.gpu();
        let mut local = vec![T::zero(); per * self.order.len()];
        // SAFETY: `src` addresses `per` values for each of the part's nodes; waited for
        // right away.
        unsafe { copy_out(gpu.stream(), &mut local, src)? };
        gpu.synchronize()?;
        self.gather_device_order(&local, per, global)
    }

    /// The owned nodes' values of a per-bond array of the part (its families' order, device
    /// order), gathered into the global CSR order on the ranks `to` names (empty on the
    /// others).
    fn gather_per_bond<V: Copy + Default>(&self, local: &[V], to: Gather) -> Result<Vec<V>> {
        let families = &self.gl.problem().families;
        let mine = self.order.per_bond_in_plan_order(local, families);
        gather_bonds_to(&*self.comm, &self.plan, &mine, to)
    }

    /// The damage per bond and each node's critical stretch for the next evaluation (empty
    /// before the first), on the ranks `to` names (empty on the others).
    fn history_to(&self, to: Gather) -> Result<FailureHistory<T>> {
        let local = self.gl.failure_history()?;
        // (every rank has made the first evaluation, or none: the same calls on all)
        let mut node_s0 = Vec::new();
        if !local.node_s0.is_empty() {
            let receives = to == Gather::Every || self.plan.rank == 0;
            let nodes = self.plan.owned_of.iter().map(Vec::len).sum();
            node_s0 = vec![T::zero(); if receives { nodes } else { 0 }];
            let mine = self.order.owned_in_plan_order(&local.node_s0, 1);
            let owned_of = &self.plan.owned_of;
            gather_owned_to(&*self.comm, owned_of, &mine, 1, &mut node_s0, to)?;
        }
        let bond_damage = match local.bond_damage.is_empty() {
            true => Vec::new(),
            false => self.gather_per_bond(&local.bond_damage, to)?,
        };
        Ok(FailureHistory {
            bond_damage,
            node_s0,
        })
    }
}

/// The driver's global arrays hold this rank's owned values where ADR has run (on the host);
/// the gathers of `collect.rs` over them. (`gather_local` reads a local array in the plan's
/// order, which a device-order array is not: not used here.)
impl<T: Real> OwnedValues<T> for DistributedGpu<T> {
    fn parts(&self) -> (&dyn Comm, &RankPlan, usize) {
        (&*self.comm, &self.plan, self.dim)
    }
}

impl<T: Real> Forces<T> for DistributedGpu<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.trait_forces(u, Some(force), false, true)
            .map(|_| ())
            .map_err(device_fault(NAME, "force evaluation"))
    }

    /// Break the owned nodes' over-stretched bonds; the bonds this rank broke.
    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.trait_forces(u, None, true, true)
            .map_err(device_fault(NAME, "bond breaking"))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.trait_forces(u, Some(force), true, true)
            .map_err(device_fault(NAME, "bond breaking and force evaluation"))
    }

    /// The damage of every node, on every rank.
    fn damage(&self, phi: &mut [T]) -> Result<()> {
        let mut local = vec![T::zero(); self.order.len()];
        self.gl.damage(&mut local)?;
        self.gather_device_order(&local, 1, phi)
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if self.halos.pair.is_none() {
            return Ok(false);
        }
        self.trait_forces(u, None, false, false)
            .map_err(device_fault(NAME, "dilatation"))?;
        let at = self.gl.bond_params(0, 0, false).theta;
        self.gather_device(at, 1, theta)?;
        Ok(true)
    }

    /// The strain energy summed over the ranks (in rank order).
    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let local = self.local_displacement(u)?;
        let mine = self.gl.strain_energy(&local)?;
        Ok(self.comm.sum_f64(mine))
    }

    /// The bonds broken on every rank (pre-cracks included).
    fn broken_bonds(&self) -> usize {
        self.comm.sum_u64(self.gl.broken_bonds() as u64) as usize
    }

    /// Counted on each rank's device over its owned nodes' bonds, gathered per node.
    fn bond_count_damage(&self, _offsets: &[usize]) -> Result<Vec<f64>> {
        let mine = self.owned_bond_count_damage()?;
        gather_node_damage(&*self.comm, &self.plan.owned_of, &mine)
    }

    /// The bond status of every bond, on every rank.
    fn bond_status(&self) -> Result<Vec<u8>> {
        self.gather_per_bond(&self.gl.bond_status()?, Gather::Every)
    }

    /// A softening law's damage per bond, on every rank (each owned node's from its device).
    fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        let local = self.gl.bond_damage()?;
        (local.map(|local| self.gather_per_bond(&local, Gather::Every))).transpose()
    }

    /// The damage per bond and each node's critical stretch for the next evaluation (empty
    /// before the first), on every rank: what a checkpoint keeps, as in one process.
    fn failure_history(&self) -> Result<FailureHistory<T>> {
        self.history_to(Gather::Every)
    }

    /// For each pair `[i, j]` with an owned end, whether its bond is broken: the bond of its
    /// owned end in the part's status from the device, found in that end's family (its
    /// neighbour indices kept on the host for crack-face contact; `contact.rs`).
    fn bonds_broken(&self, pairs: &[[u32; 2]]) -> Result<Vec<bool>> {
        let status = self.gl.bond_status()?;
        let families = &self.gl.problem().families;
        let of_plan = &self.order.of_plan;
        Ok(pairs_broken_on_rank(&self.plan, pairs, |a, b| {
            let (a, b) = (of_plan[a], of_plan[b] as u32);
            (families.family(a).iter().position(|&j| j == b))
                .is_some_and(|k| status[families.offsets[a] + k] == 0)
        }))
    }

    fn part_of_body(&self) -> Option<&dyn PartOfBody<T>> {
        self.contact.as_ref().map(|c| c as &dyn PartOfBody<T>)
    }
}

impl<T: Real> Backend<T> for DistributedGpu<T> {
    /// The device loop, or with contact or impactors the host leapfrog over the device's
    /// forces (`mod.rs`, [`DistributedGpu::advance_on_host`]).
    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        match call.state.contact.is_some() {
            true => self.advance_on_host(call),
            false => self.advance(call),
        }
    }

    fn state_changed(&mut self, _state: &State<T>) -> Result<()> {
        self.gl.stepper().resident_step = None;
        Ok(())
    }

    /// One ADR iteration on the host over the owned dofs, the forces from the device (each
    /// owned node's the one-GPU list form's bit for bit), the global sums merged over the
    /// ranks (exact); the ranks then agree on the stop flag.
    fn advance_adr(&mut self, call: AdrCall<'_, T>) -> Result<usize> {
        // (the device's explicit state is not the run's from here on)
        self.gl.stepper().resident_step = None;
        let (owned, comm) = (self.plan.sub.owned_nodes().to_vec(), self.comm.clone());
        let stop = self.stop.clone();
        adr_on_ranks(call, self, &owned, &*comm, stop.as_ref())
    }

    /// The owned entries of the driver's state: from the device where it holds the state
    /// (an explicit call's), else already there (ADR's iterations on the host).
    fn sync_state(&mut self, state: &mut State<T>) -> Result<()> {
        if !self.resident(state.step) {
            return Ok(());
        }
        self.gl
            .stepper()
            .download_state(&mut self.local)
            .map_err(device_fault(NAME, "state download"))?;
        self.state_to_owned(state);
        Ok(())
    }

    /// ADR's last free force of every dof on every rank (for a checkpoint).
    fn sync_adr(&mut self, adr: &mut Adr<T>) -> Result<()> {
        self.gather_adr(adr)
    }

    /// The largest over the ranks' owned dofs (`None` where any is not finite): from the
    /// device where it holds `state`.
    fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        let d = self.dim;
        let mine = match self.resident(state.step) {
            true => (self.gl.stepper().device_max_abs(d * self.order.owned))
                .map_err(device_fault(NAME, "displacement check"))?
                .unwrap_or(f64::INFINITY),
            false => owned_max_abs(state, self.plan.sub.owned_nodes(), d),
        };
        Ok(largest(&*self.comm, mine))
    }

    /// The probe rows from the regions' owned nodes (packed on the device where it holds
    /// `state`, else from `state`) gathered to every rank, the sums in the order of a single
    /// process.
    fn probe_values(
        &mut self,
        state: &State<T>,
        regions: &ProbeRegions,
    ) -> Result<Vec<ProbeValues>> {
        let (d, gpu) = (self.dim, self.gl.gpu().clone());
        if self.probes.is_none() {
            let local = &self.order.owned_local;
            let rows = DeviceProbeRows::new(&gpu, regions, &self.plan, local, d)?;
            self.probes = Some(rows);
        }
        let resident = self.resident(state.step);
        let s = &self.gl.stepper().state;
        let at = resident.then(|| (addr(&gpu, &s.u), addr(&gpu, &s.f)));
        let (comm, rank) = (&*self.comm, self.plan.rank);
        let probes = self.probes.as_mut().expect("made above");
        probes.rows(&gpu, comm, rank, state, regions, at, d, NAME)
    }

    /// This rank's bytes (its `GpuLoop` and exchange buffers) and every rank's report
    /// (collective).
    fn footprint(&self) -> Footprint {
        let h = &self.halos;
        let halo_bytes = h.u.bytes() + h.pair.as_ref().map_or(0, |p| p.bytes());
        let per = h.per(self.dim);
        Footprint {
            ranks: rank_reports::<T>(&*self.comm, &self.plan, per, &h.times).ok(),
            ..Footprint::new(
                self.gl.memory_bytes() + halo_bytes,
                self.gl.bytes_per_step(),
            )
        }
    }

    fn name(&self) -> &'static str {
        "gpu-loop-mpi"
    }
    fn rank_outputs(&mut self) -> Option<&mut dyn RankOutputs<T>> {
        Some(self)
    }
}

/// A snapshot's piece from the device's part (damage, bond-count damage, dilatation of the
/// owned nodes, in the plan's order); the whole state gathered from the owned entries the
/// driver's state holds after a `full_sync` or [`Backend::sync_state`].
impl<T: Real> RankOutputs<T> for DistributedGpu<T> {
    fn rank(&self) -> usize {
        self.plan.rank
    }

    fn owned(&self) -> &[usize] {
        self.plan.sub.owned_nodes()
    }

    fn owned_damage(&self) -> Result<Vec<T>> {
        let mut local = vec![T::zero(); self.order.len()];
        self.gl.damage(&mut local)?;
        Ok(self.order.owned_in_plan_order(&local, 1))
    }

    fn owned_bond_count_damage(&self) -> Result<Vec<f64>> {
        let offsets = &self.gl.problem().families.offsets;
        let local = self.gl.bond_count_damage(offsets)?;
        Ok(self.order.owned_in_plan_order(&local, 1))
    }

    /// LPS: the owned dilatations at `u` from the device (a trait call: the ghosts'
    /// displacement exchanged, collective).
    fn owned_dilatation(&mut self, u: &[T]) -> Result<Option<Vec<T>>> {
        if self.halos.pair.is_none() {
            return Ok(None);
        }
        self.trait_forces(u, None, false, false)
            .map_err(device_fault(NAME, "dilatation"))?;
        let at = self.gl.bond_params(0, 0, false).theta;
        let gpu = self.gl.gpu();
        let mut local = vec![T::zero(); self.order.len()];
        // SAFETY: `at` addresses one value for each of the part's nodes; waited for right
        // away.
        unsafe { copy_out(gpu.stream(), &mut local, at)? };
        gpu.synchronize()?;
        Ok(Some(self.order.owned_in_plan_order(&local, 1)))
    }

    /// `u`, `v`, `a`, `f` and the part's body force `b` (the device's loads).
    fn gather_state(&mut self, state: &mut State<T>, to: Gather) -> Result<()> {
        let d = self.dim;
        for v in [
            &mut state.u,
            &mut state.v,
            &mut state.a,
            &mut state.f,
            &mut state.b,
        ] {
            self.gather_global_to(v, d, to)?;
        }
        Ok(())
    }

    fn bonds_to(&self, to: Gather) -> Result<(Vec<u8>, FailureHistory<T>)> {
        let status = self.gather_per_bond(&self.gl.bond_status()?, to)?;
        Ok((status, self.history_to(to)?))
    }

    fn adr_to(&mut self, adr: &mut Adr<T>, to: Gather) -> Result<()> {
        self.gather_adr_to(adr, to)
    }

    fn owned_to(&self, mine: &[T], per: usize, to: Gather) -> Result<Vec<T>> {
        self.local_to(mine, per, to)
    }
}
