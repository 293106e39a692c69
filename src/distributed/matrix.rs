//! The matrix scheme on one rank's part: the rows of the sparse operators for the rank's
//! owned nodes' bonds, with ghost columns, assembled from the local problem the matrix scheme in
//! subdomains assembles (the owned nodes with their families, the ghosts with only their
//! bonds into owned nodes, each family sorted by local index), made here from the rank's
//! subdomain alone, so from a lean problem too (`part::matrix_problem`: no rank holds the
//! whole body's bonds), run by one [`MatrixPart`]: a [`CpuMatrix`] (`cpu-matrix` across ranks, this
//! file's explicit loop on the host) or a [`GpuMatrix`](crate::backend::GpuMatrix) on the
//! rank's device (`gpu-matrix` across ranks, whose explicit loop runs on the device:
//! `gpu/matrix.rs`).
//!
//! The part's operators are in half storage (`docs/matrix-formulation.md`): one row per
//! pair of the local problem, ordered by its lower local end, which is always an owned node
//! (owned nodes come first and a ghost's bonds all lead to owned nodes). A pair of two owned
//! nodes is one row, as in core, and sends its force to both ends; a pair cut by the
//! partition (one end a ghost) is one row on each of the two ranks, whose force is kept for
//! the owned end only (the ghost's share is its owner's, from its own row). So a rank holds
//! its owned pairs plus its cut pairs, about half the rows of both directions. A cut row
//! breaks on both ranks at the same step: the criterion is symmetric bit for bit and both
//! see the same two displacements. What a rank counts is what leaves its owned nodes: of a
//! cut row, the owned end's direction (bonds broken, bond status; the energy: LPS the owned
//! end's `a_ij` term, PMB half the row), so every sum over the ranks counts each directed
//! bond once.
//!
//! The local problem has its ghosts last (`Problem::ghosts_from`), so its pairs that reach
//! a ghost take the last rows and the rows `0..early` read none (`operators/pattern.rs`).
//! Per force evaluation the owned displacements go into the local array and the ghosts'
//! come from their owners ([`Halo`](super::Halo)) while the early rows run (their
//! differences, breaking and force scalars; `cpu-matrix`: [`CpuMatrix::bond_rows`]); then
//! the rest. For LPS the owned dilatations (rows of `Theta` of the owned nodes, complete)
//! are exchanged the same way while the early rows' force scalars run: the cut rows read
//! the ghost's too. (A device part exchanges before whole passes here; its explicit loop
//! is `gpu/matrix.rs`'s.) The local families run in local order, so the sums of a row run in
//! another order than in core: forces agree with the in-core `cpu-matrix` to round-off
//! (1e-12), not bitwise. The explicit step is the host's
//! (`Explicit::step`) on the driver's global arrays, whose owned entries are current (the
//! rest goes stale, as on `cpu-loop`); ADR, outputs (a snapshot's piece from the owned
//! values, no gather), checkpoints and reductions as `DistributedCpu`.
//!
//! Units: m, N/m^3, J.

use super::collect::{
    adr_on_ranks, agree_on_stop, gather_bonds, gather_bonds_to, gather_node_damage,
    owned_bond_count_damage, rank_reports, HaloTimes, OwnedValues, ProbeCache, StopFlags,
};
use super::halo::HaloBuffers;
use super::part::matrix_problem;
use super::{Comm, RankPlan, RankSetup};
use crate::backend::partitioned::exchange::{gather_into, scatter};
use crate::backend::partitioned::matrix::{MatrixPart, Slots};
use crate::backend::{check_contact, check_material, Backend, CpuMatrix, Footprint};
use crate::backend::{Gather, RankOutputs};
use crate::backend::{Placement, Scheme};
use crate::dynamics::{Adr, AdrCall, ExplicitCall, Forces, State};
use crate::material::{FailureHistory, Law};
use crate::operators::Storage;
use crate::output::{ProbeRegions, ProbeValues};
use crate::setup::{timed, Problem};
use crate::{Real, Result};
use std::sync::Arc;
use std::time::Instant;

/// The backend's name in `summary.json`.
const NAME: &str = "cpu-matrix-mpi";

/// The matrix scheme on one rank's part of the problem, its operators' rows held by `M`.
pub struct DistributedMatrix<T: Real, M = CpuMatrix<T>> {
    pub(super) comm: Arc<dyn Comm>,
    pub(super) plan: RankPlan,
    pub(super) matrix: M,
    /// Bond rows of the part (half storage: its owned pairs and its cut pairs).
    rows: usize,
    /// Directed bonds of the owned nodes (the first ones of the local CSR order).
    owned_bonds: usize,
    /// Per owned bond (local CSR order), its place among the rank's owned bonds in the
    /// global CSR order (the order [`gather_bonds`] takes).
    csr_place: Vec<usize>,
    pub(super) dim: usize,
    pub(super) lps: bool,
    u_local: Vec<T>,
    f_local: Vec<T>,
    theta_local: Vec<T>,
    buf: HaloBuffers<T>,
    buf_theta: HaloBuffers<T>,
    pub(super) stop: Option<StopFlags>,
    pub(super) probes: ProbeCache<T>,
    pub times: HaloTimes,
    /// The seconds of this backend's creation by phase (`part`: the local problem the
    /// operators are assembled from).
    pub setup: RankSetup,
}

impl<T: Real, M: MatrixPart<T>> DistributedMatrix<T, M> {
    /// This rank's part of `problem` (stored or lean: the rows come from the part's own
    /// bonds, `part::matrix_problem`) over `comm`: the explicit solver and
    /// ADR, what the matrix scheme runs (no failure history, no contact); `name` the
    /// backend's in errors.
    pub fn new(problem: &Problem, comm: Arc<dyn Comm>, stop: Option<StopFlags>) -> Result<Self> {
        Self::named(problem, comm, stop, "cpu-matrix (distributed)")
    }

    /// [`DistributedMatrix::new`], errors naming backend `name`.
    pub(super) fn named(
        problem: &Problem,
        comm: Arc<dyn Comm>,
        stop: Option<StopFlags>,
        name: &str,
    ) -> Result<Self> {
        check_material(problem, name, Scheme::MatrixParts)?;
        check_contact(problem, name, Placement::Ranks)?;
        let mut setup = RankSetup::default();
        let plan = RankPlan::timed(problem, comm.size(), comm.rank(), &mut setup)?;
        let ((mut local, csr_place), seconds) = timed(|| matrix_problem(problem, &plan.sub));
        setup.part = Some(seconds);
        // (the pairs that reach a ghost last: the rows before them run while ghosts travel)
        local.ghosts_from = Some(plan.sub.owned);
        let owned_bonds = local.families.offsets[plan.sub.owned];
        let (dim, n) = (problem.dim(), plan.sub.nodes.len());
        let local = Arc::new(local);
        let matrix = M::assemble(local, 0, owned_bonds, &Slots::default(), Storage::Half)?;
        Ok(DistributedMatrix {
            rows: matrix.row_count(),
            matrix,
            owned_bonds,
            csr_place,
            dim,
            lps: matches!(problem.material.law, Law::Lps { .. }),
            u_local: vec![T::zero(); dim * n],
            f_local: vec![T::zero(); dim * n],
            theta_local: vec![T::zero(); n],
            buf: HaloBuffers::default(),
            buf_theta: HaloBuffers::default(),
            comm,
            plan,
            stop,
            probes: ProbeCache::default(),
            times: HaloTimes::default(),
            setup,
        })
    }

    /// This rank's part.
    pub fn plan(&self) -> &RankPlan {
        &self.plan
    }

    /// Bond rows of this rank's operators.
    pub fn bond_rows(&self) -> usize {
        self.matrix.row_count()
    }

    /// `local` (`per` per local node) with the ghosts' values from their owners.
    fn refresh(&mut self, per: usize, theta: bool) -> Result<()> {
        let t0 = Instant::now();
        let (halo, comm) = (&self.plan.halo, &*self.comm);
        match theta {
            false => halo.refresh(comm, &mut self.u_local, per, &mut self.buf)?,
            true => halo.refresh(comm, &mut self.theta_local, per, &mut self.buf_theta)?,
        }
        self.times
            .count_host_exchange::<T>(&self.plan.halo, per, t0.elapsed().as_secs_f64(), 0.0);
        Ok(())
    }

    /// The local displacement from the global `u`: owned from `u`, ghosts from their owners.
    fn local_displacement(&mut self, u: &[T]) -> Result<()> {
        let (d, owned) = (self.dim, self.plan.sub.owned);
        let local = &mut self.u_local[..d * owned];
        gather_into(u, self.plan.sub.owned_nodes(), d, local);
        self.refresh(d, false)
    }

    /// The owned nodes' dilatation at the local displacement, the ghosts' from their owners.
    fn local_dilatation(&mut self) -> Result<()> {
        let mut theta = std::mem::take(&mut self.theta_local);
        self.matrix.dilatation(&self.u_local, &mut theta)?;
        self.theta_local = theta;
        self.refresh(1, true)
    }

    /// Forces of the owned nodes at the local displacement into `force` (global).
    fn forces_into(&mut self, force: &mut [T]) -> Result<()> {
        let t0 = Instant::now();
        match self.lps {
            true => {
                self.local_dilatation()?;
                let (u, theta) = (&self.u_local, &self.theta_local);
                self.matrix.force_with_theta(u, theta, &mut self.f_local)?;
            }
            false => self
                .matrix
                .internal_force(&self.u_local, &mut self.f_local)?,
        }
        self.scatter_forces(force);
        self.times.forces_seconds += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// The owned nodes' forces of `f_local` into `force` (global).
    fn scatter_forces(&self, force: &mut [T]) {
        let d = self.dim;
        let owned = &self.f_local[..d * self.plan.sub.owned];
        scatter(owned, self.plan.sub.owned_nodes(), d, force);
    }

    /// Forces of the owned nodes at the global `u` into `force`, breaking first with
    /// `check`, the exchanges overlapped where the part runs its rows in ranges
    /// (`cpu-matrix`, [`CpuMatrix::bond_rows`]): the rows that read no ghost while the
    /// ghosts' displacements travel, the rest once they are in; LPS, the same around the
    /// ghosts' dilatations. Elsewhere the ghosts come first and the passes are whole. The
    /// owned directed bonds broken: with ghosts last, an early row joins two owned nodes
    /// and a late row one owned node to a ghost, so that is twice the early rows broken
    /// plus the late ones.
    fn forces_at(&mut self, u: &[T], force: &mut [T], check: bool) -> Result<usize> {
        if self.matrix.host_rows().is_none() {
            self.local_displacement(u)?;
            let before = self.owned_broken()?;
            if check {
                self.matrix.break_bonds(&self.u_local)?;
            }
            let broken = self.owned_broken()? - before;
            self.forces_into(force)?;
            return Ok(broken);
        }
        let t0 = Instant::now();
        let (d, owned) = (self.dim, self.plan.sub.owned);
        gather_into(
            u,
            self.plan.sub.owned_nodes(),
            d,
            &mut self.u_local[..d * owned],
        );
        let (halo, comm) = (&self.plan.halo, &*self.comm);
        let m = self.matrix.host_rows().expect("a part of row ranges");
        let (early, rows) = (m.early_rows(), m.row_count());
        let t1 = Instant::now();
        halo.pack(&self.u_local, d, &mut self.buf);
        let (u_local, mut busy, mut early_broken) = (&self.u_local, 0.0, 0);
        halo.exchange(comm, &mut self.buf, &mut || {
            let t2 = Instant::now();
            early_broken = m.bond_rows(u_local, 0..early, check);
            busy += t2.elapsed().as_secs_f64();
            Ok(())
        })?;
        halo.unpack(&self.buf, d, &mut self.u_local);
        let mut waits = vec![(t1.elapsed().as_secs_f64(), busy, d)];
        let late_broken = m.bond_rows(&self.u_local, early..rows, check);
        if self.lps {
            m.theta_product();
            let (t1, mut busy) = (Instant::now(), 0.0);
            halo.pack(m.theta_mut(), 1, &mut self.buf_theta);
            halo.exchange(comm, &mut self.buf_theta, &mut || {
                let t2 = Instant::now();
                m.lps_force_scalars(0..early);
                busy += t2.elapsed().as_secs_f64();
                Ok(())
            })?;
            halo.unpack(&self.buf_theta, 1, m.theta_mut());
            waits.push((t1.elapsed().as_secs_f64(), busy, 1));
            m.lps_force_scalars(early..rows);
        }
        m.transposed_product(&mut self.f_local);
        self.scatter_forces(force);
        for (wall, busy, per) in waits {
            self.times
                .count_host_exchange::<T>(&self.plan.halo, per, wall, busy);
        }
        self.times.forces_seconds += t0.elapsed().as_secs_f64();
        Ok(2 * early_broken + late_broken)
    }

    /// The status of the owned nodes' directed bonds (of a cut row, the owned end's), in
    /// the order of the owned nodes, each family in the global CSR order.
    fn owned_status(&self) -> Result<Vec<u8>> {
        let local = self.matrix.bond_status()?;
        let mut mine = vec![0u8; self.owned_bonds];
        for (b, &place) in self.csr_place.iter().enumerate() {
            mine[place] = local[b];
        }
        Ok(mine)
    }

    /// Directed bonds of the owned nodes broken so far (of a cut row, the owned end's).
    fn owned_broken(&self) -> Result<usize> {
        self.matrix.broken_of(self.rows, self.plan.sub.owned)
    }
}

impl<T: Real, M: MatrixPart<T>> OwnedValues<T> for DistributedMatrix<T, M> {
    fn parts(&self) -> (&dyn Comm, &RankPlan, usize) {
        (&*self.comm, &self.plan, self.dim)
    }
}

impl<T: Real, M: MatrixPart<T>> Forces<T> for DistributedMatrix<T, M> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.forces_at(u, force, false).map(|_| ())
    }

    /// Break the over-stretched rows (owned and cut pairs) at `u`; the owned nodes' directed
    /// bonds broken.
    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.local_displacement(u)?;
        let before = self.owned_broken()?;
        self.matrix.break_bonds(&self.u_local)?;
        Ok(self.owned_broken()? - before)
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.forces_at(u, force, true)
    }

    /// The damage of every node, on every rank.
    fn damage(&self, phi: &mut [T]) -> Result<()> {
        let mut local = vec![T::zero(); self.plan.sub.nodes.len()];
        self.matrix.damage(&mut local)?;
        self.gather_local(&local, 1, phi)
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if !self.lps {
            return Ok(false);
        }
        self.local_displacement(u)?;
        self.local_dilatation()?;
        self.gather_local(&self.theta_local, 1, theta)?;
        Ok(true)
    }

    /// The strain energy of the owned nodes (of a cut row, the owned end's share), summed
    /// over the ranks.
    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.local_displacement(u)?;
        let (rows, nodes) = (self.rows, self.plan.sub.owned);
        let mine = self.matrix.energy_of(&self.u_local, rows, nodes)?;
        Ok(self.comm.sum_f64(mine))
    }

    /// The bonds broken on every rank.
    fn broken_bonds(&self) -> usize {
        let mine = self.owned_broken().unwrap_or(0) as u64;
        self.comm.sum_u64(mine) as usize
    }

    /// The bond status of every bond, on every rank.
    fn bond_status(&self) -> Result<Vec<u8>> {
        let mine = self.owned_status()?;
        gather_bonds(&*self.comm, &self.plan, &mine)
    }

    /// Counted on each rank over its owned nodes' bonds, gathered per node.
    fn bond_count_damage(&self, _offsets: &[usize]) -> Result<Vec<f64>> {
        let mine = self.owned_bond_count_damage()?;
        gather_node_damage(&*self.comm, &self.plan.owned_of, &mine)
    }
}

impl<T: Real, M: MatrixPart<T>> Backend<T> for DistributedMatrix<T, M> {
    /// The host's explicit steps, the forces of the owned nodes (the owned entries of the
    /// driver's state current after each: `full_sync` asks nothing more); then the ranks
    /// agree on the stop flag.
    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        let broken = call.on_host(self)?;
        agree_on_stop(&*self.comm, self.stop.as_ref());
        Ok(broken)
    }

    /// One ADR iteration on the owned dofs, its sums merged over the ranks.
    fn advance_adr(&mut self, call: AdrCall<'_, T>) -> Result<usize> {
        let (owned, comm) = (self.plan.sub.owned_nodes().to_vec(), self.comm.clone());
        let stop = self.stop.clone();
        adr_on_ranks(call, self, &owned, &*comm, stop.as_ref())
    }

    /// Nothing to do: the owned entries of the driver's state are current
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

    /// The probe values from the regions' values gathered to every rank.
    fn probe_values(
        &mut self,
        state: &State<T>,
        regions: &ProbeRegions,
    ) -> Result<Vec<ProbeValues>> {
        (self.probes).rows(&*self.comm, &self.plan, state, regions, self.dim)
    }

    /// This rank's bytes, and every rank's report (collective).
    fn footprint(&self) -> Footprint {
        let per = self.dim + usize::from(self.lps);
        let mine = self.matrix.footprint();
        Footprint {
            ranks: rank_reports::<T>(&*self.comm, &self.plan, per, &self.times).ok(),
            ..Footprint::new(mine.memory_bytes, mine.bytes_per_step)
        }
    }

    fn name(&self) -> &'static str {
        match self.matrix.name() {
            "gpu-matrix" => "gpu-matrix-mpi",
            _ => NAME,
        }
    }

    fn rank_outputs(&mut self) -> Option<&mut dyn RankOutputs<T>> {
        Some(self)
    }
}

impl<T: Real, M: MatrixPart<T>> RankOutputs<T> for DistributedMatrix<T, M> {
    fn rank(&self) -> usize {
        self.plan.rank
    }

    fn owned(&self) -> &[usize] {
        self.plan.sub.owned_nodes()
    }

    /// From the owned rows of `Phi`, which are whole.
    fn owned_damage(&self) -> Result<Vec<T>> {
        let mut local = vec![T::zero(); self.plan.sub.nodes.len()];
        self.matrix.damage(&mut local)?;
        Ok(self.owned_of_local(&local, 1))
    }

    fn owned_bond_count_damage(&self) -> Result<Vec<f64>> {
        let status = self.owned_status()?;
        Ok(owned_bond_count_damage::<T>(&self.plan, &status, None))
    }

    /// LPS: the owned rows of `Theta` at `u`, the ghosts' displacement exchanged
    /// (collective).
    fn owned_dilatation(&mut self, u: &[T]) -> Result<Option<Vec<T>>> {
        if !self.lps {
            return Ok(None);
        }
        self.local_displacement(u)?;
        self.local_dilatation()?;
        Ok(Some(self.owned_of_local(&self.theta_local, 1)))
    }

    fn gather_state(&mut self, state: &mut State<T>, to: Gather) -> Result<()> {
        self.gather_state_to(state, to)
    }

    /// The bond status; no failure history (the matrix scheme runs none).
    fn bonds_to(&self, to: Gather) -> Result<(Vec<u8>, FailureHistory<T>)> {
        let mine = self.owned_status()?;
        let status = gather_bonds_to(&*self.comm, &self.plan, &mine, to)?;
        Ok((status, FailureHistory::default()))
    }

    fn adr_to(&mut self, adr: &mut Adr<T>, to: Gather) -> Result<()> {
        self.gather_adr_to(adr, to)
    }

    fn owned_to(&self, mine: &[T], per: usize, to: Gather) -> Result<Vec<T>> {
        self.local_to(mine, per, to)
    }
}
