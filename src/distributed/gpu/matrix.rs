//! `gpu-matrix` on one rank's part, one GPU per rank: the rows of the sparse operators of
//! the rank's owned nodes with ghost columns ([`DistributedMatrix`] over a
//! [`GpuMatrix`] on the rank's device, half storage: the owned pairs and the cut pairs, the
//! plan's order: owned nodes, then ghosts), with the explicit loop on the device as `gpu-matrix` runs it in core
//! (`backend/gpu/time_loop.rs`): the state (u, v, a, f) and the row status stay there.
//!
//! In each force evaluation the ghosts' displacements are brought in on the device
//! (`halo.rs`: the owned values other ranks need packed by a kernel, copied to a page-locked
//! buffer, exchanged, copied up and scattered) while the device runs the rows that read no
//! ghost (the local problem's pairs that reach a ghost are its last rows); then the rest.
//! For LPS the ghosts' dilatations likewise, while the early rows' force scalars run
//! (`GpuMatrix::forces_split`). A bond cut by the partition is a pair row on both sides,
//! whose force each keeps for its owned end, and breaks on both at the same step, from the
//! same two displacements. (The device loop's count of bonds broken per call, which the
//! driver does not use, counts both directions of a cut row; the bonds broken the run
//! reports are the owned ends', [`DistributedMatrix`]'s.) Per step only the halo
//! crosses PCIe: `d` values per ghost (and one more for LPS).
//!
//! The rows of a part run in local order, so forces agree with the in-core `gpu-matrix` to
//! round-off (1e-12), not bitwise. The calls on the driver's global arrays (the start of a
//! run, outputs, ADR's iterations) are [`DistributedMatrix`]'s: the displacement uploaded,
//! the ghosts exchanged on the host, the owned results gathered.
//!
//! Units: m, m/s, N/m^3, s; bytes.

use super::super::collect::{largest, owned_max_abs, HaloTimes, OwnedValues};
use super::super::{Comm, DistributedMatrix, StopFlags};
use super::halo::DeviceHalo;
use super::order::DeviceOrder;
use super::probes::DeviceProbeRows;
use crate::backend::gpu::buffers::addr;
use crate::backend::gpu::device_fault;
use crate::backend::gpu::matrix::Ghosts;
use crate::backend::gpu::time_loop::{self, DeviceForces, DeviceLoop};
use crate::backend::{Backend, Footprint, Gather, GpuMatrix, RankOutputs};
use crate::dynamics::{Adr, AdrCall, ExplicitCall, Forces, State};
use crate::material::FailureHistory;
use crate::output::{ProbeRegions, ProbeValues};
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;

/// The backend's name in errors.
const NAME: &str = "gpu-matrix (distributed)";

/// A rank's exchanges on its device: the displacement (`d` per node) and, LPS, the
/// dilatation (1 per node); their timings.
struct Halos<T> {
    u: DeviceHalo<T>,
    theta: Option<DeviceHalo<T>>,
}

/// The device time loop's force evaluation of a rank's part: the ghosts brought in around
/// the products of [`GpuMatrix`].
struct Exchanging<'a, T: Real> {
    matrix: &'a mut GpuMatrix<T>,
    halos: &'a mut Halos<T>,
    comm: &'a dyn Comm,
    times: &'a mut HaloTimes,
}

impl<T: Real> DeviceForces<T> for Exchanging<'_, T> {
    fn loop_if_made(&mut self) -> Option<&mut DeviceLoop<T>> {
        self.matrix.loop_if_made()
    }

    fn make_loop(&mut self) -> Result<()> {
        self.matrix.make_loop()
    }

    /// The owned displacements packed, the rows that read no ghost enqueued while they
    /// travel, the ghosts' brought in, the rest of the rows; LPS the same around the
    /// dilatation ([`GpuMatrix::forces_split`]).
    fn launch_forces(&mut self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        let gpu = self.matrix.gpu().clone();
        let (halos, comm, times) = (&mut *self.halos, self.comm, &mut *self.times);
        halos.u.post(&gpu, u)?;
        let (u_halo, theta) = (&mut halos.u, &mut halos.theta);
        self.matrix.forces_split(
            u,
            force,
            check_bonds,
            &mut |at| match (at, theta.as_mut()) {
                (Ghosts::Displacement, _) => u_halo.complete_counted(&gpu, comm, u, times),
                (Ghosts::DilatationFormed(at), Some(halo)) => halo.post(&gpu, at),
                (Ghosts::Dilatation(at), Some(halo)) => {
                    halo.complete_counted(&gpu, comm, at, times)
                }
                (_, None) => unreachable!("only LPS forms a dilatation, and it exchanges it"),
            },
        )
    }

    fn read_broken(&mut self) -> Result<usize> {
        self.matrix.read_broken()
    }
}

/// `gpu-matrix` on one rank's part of the problem, on the rank's device.
pub struct DistributedGpuMatrix<T: Real> {
    part: DistributedMatrix<T, GpuMatrix<T>>,
    order: DeviceOrder,
    halos: Halos<T>,
    /// The part's state (plan order), between the driver's global state and the device.
    local: State<T>,
    probes: Option<DeviceProbeRows<T>>,
}

impl<T: Real> DistributedGpuMatrix<T> {
    /// This rank's part of `problem` (stored or lean) over `comm`, on this process's device:
    /// the explicit solver and ADR, what `gpu-matrix` runs in core (no failure history, no
    /// contact).
    pub fn new(problem: &Problem, comm: Arc<dyn Comm>, stop: Option<StopFlags>) -> Result<Self> {
        let mut part = DistributedMatrix::<T, GpuMatrix<T>>::named(problem, comm, stop, NAME)?;
        let order = DeviceOrder::of_plan(&part.plan.sub, problem.body.len());
        let gpu = part.matrix.gpu().clone();
        let (halo, d, comm) = (&part.plan.halo, part.dim, &*part.comm);
        let halos = Halos {
            u: DeviceHalo::new(&gpu, comm, halo, &order, d)?,
            theta: match part.lps {
                true => Some(DeviceHalo::new(&gpu, comm, halo, &order, 1)?),
                false => None,
            },
        };
        part.times.device = gpu.ordinal as i64;
        part.times.device_buffers = part.comm.device_buffers();
        Ok(DistributedGpuMatrix {
            local: State::at_rest(d * order.len()),
            part,
            order,
            halos,
            probes: None,
        })
    }

    /// This rank's part.
    pub fn plan(&self) -> &super::super::RankPlan {
        &self.part.plan
    }

    /// The seconds of this backend's creation by phase (the cut, the subdomain, the local
    /// problem; the device's assembly and upload are the run's `upload`).
    pub fn setup(&self) -> super::super::RankSetup {
        self.part.setup
    }

    /// Whether the device holds the state of step `step`.
    fn resident(&mut self, step: usize) -> bool {
        let held = self
            .part
            .matrix
            .loop_if_made()
            .and_then(|l| l.resident_step);
        held == Some(step)
    }

    /// The owned entries of the driver's `state` into the local state, for the upload a call
    /// makes where the device does not hold the state.
    fn local_from(&mut self, state: &State<T>) {
        let (sub, d) = (&self.part.plan.sub, self.part.dim);
        self.order.owned_state_of(state, sub, d, &mut self.local);
    }

    /// The owned entries of the local state (just downloaded) into the driver's `state`
    /// (no gather: `RankOutputs::gather_state` brings the whole where an output needs it).
    fn state_to_owned(&self, state: &mut State<T>) {
        let (sub, d) = (&self.part.plan.sub, self.part.dim);
        (self.order).owned_into_state(&self.local, sub, d, state);
    }

    /// One call of the driver's explicit loop on the device: the state uploaded where the
    /// device does not hold it, the steps with the ghosts exchanged before each force
    /// evaluation, the owned state downloaded into the driver's where `full_sync` asks. The steps are
    /// timed as the rank's `forces_seconds`, the rest of the call but the stop flag's
    /// agreement as its `state_seconds`.
    fn advance(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        let t0 = std::time::Instant::now();
        let ExplicitCall {
            integrator,
            loads,
            state,
            times,
            steps,
            full_sync,
        } = call;
        // (no time loop yet: not resident; `advance_explicit` makes it)
        if !self.resident(state.step) {
            self.local_from(state);
        }
        (self.local.step, self.local.time) = (state.step, state.time);
        let loads = self.order.part_loads(loads);
        let mut forces = Exchanging {
            matrix: &mut self.part.matrix,
            halos: &mut self.halos,
            comm: &*self.part.comm,
            times: &mut self.part.times,
        };
        let call = ExplicitCall {
            integrator,
            loads: &loads,
            state: &mut self.local,
            times,
            steps,
            full_sync,
        };
        let (broken, steps_seconds) = time_loop::advance_explicit_timed(&mut forces, NAME, call)?;
        (state.step, state.time) = (self.local.step, self.local.time);
        if full_sync {
            self.state_to_owned(state);
        }
        self.part.times.add_device_call(t0, steps_seconds);
        super::super::collect::agree_on_stop(&*self.part.comm, self.part.stop.as_ref());
        Ok(broken)
    }
}

impl<T: Real> Forces<T> for DistributedGpuMatrix<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.part.internal_force(u, force)
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.part.break_bonds(u)
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.part.break_bonds_and_force(u, force)
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        self.part.damage(phi)
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        self.part.dilatation(u, theta)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.part.strain_energy(u)
    }

    fn broken_bonds(&self) -> usize {
        self.part.broken_bonds()
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        self.part.bond_status()
    }
}

impl<T: Real> Backend<T> for DistributedGpuMatrix<T> {
    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        self.advance(call)
    }

    /// ADR on the host ([`DistributedMatrix`]'s), its forces on the device.
    fn advance_adr(&mut self, call: AdrCall<'_, T>) -> Result<usize> {
        self.state_changed_on_device();
        self.part.advance_adr(call)
    }

    /// The owned entries of the driver's state: from the device where it holds them.
    fn sync_state(&mut self, state: &mut State<T>) -> Result<()> {
        if !self.resident(state.step) {
            return self.part.sync_state(state);
        }
        let dl = self.part.matrix.loop_if_made().expect("resident");
        dl.download_state(&mut self.local)
            .map_err(device_fault(NAME, "state download"))?;
        self.state_to_owned(state);
        Ok(())
    }

    fn sync_adr(&mut self, adr: &mut Adr<T>) -> Result<()> {
        self.part.sync_adr(adr)
    }

    fn state_changed(&mut self, _state: &State<T>) -> Result<()> {
        self.state_changed_on_device();
        Ok(())
    }

    /// The largest over the ranks' owned dofs (`None` where any is not finite): from the
    /// device where it holds `state`.
    fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        let (d, owned) = (self.part.dim, self.part.plan.sub.owned);
        let mine = match self.resident(state.step) {
            true => {
                let dl = self.part.matrix.loop_if_made().expect("resident");
                (dl.device_max_abs(d * owned))
                    .map_err(device_fault(NAME, "displacement check"))?
                    .unwrap_or(f64::INFINITY)
            }
            false => owned_max_abs(state, self.part.plan.sub.owned_nodes(), d),
        };
        Ok(largest(&*self.part.comm, mine))
    }

    /// The probe rows from the regions' owned nodes (packed on the device where it holds
    /// `state`, else from `state`) gathered to every rank.
    fn probe_values(
        &mut self,
        state: &State<T>,
        regions: &ProbeRegions,
    ) -> Result<Vec<ProbeValues>> {
        let (d, gpu) = (self.part.dim, self.part.matrix.gpu().clone());
        if self.probes.is_none() {
            let local = &self.order.owned_local;
            let rows = DeviceProbeRows::new(&gpu, regions, &self.part.plan, local, d)?;
            self.probes = Some(rows);
        }
        let at = match self.resident(state.step) {
            true => {
                let dl = self.part.matrix.loop_if_made().expect("resident");
                Some((addr(&gpu, &dl.state.u), addr(&gpu, &dl.state.f)))
            }
            false => None,
        };
        let (comm, rank) = (&*self.part.comm, self.part.plan.rank);
        let probes = self.probes.as_mut().expect("made above");
        probes.rows(&gpu, comm, rank, state, regions, at, d, NAME)
    }

    /// This rank's bytes (its operators, state and exchange buffers) and every rank's report
    /// (collective).
    fn footprint(&self) -> Footprint {
        let h = &self.halos;
        let halo = h.u.bytes() + h.theta.as_ref().map_or(0, |t| t.bytes());
        let part = self.part.footprint();
        Footprint {
            memory_bytes: part.memory_bytes + halo,
            ..part
        }
    }

    fn name(&self) -> &'static str {
        "gpu-matrix-mpi"
    }

    fn rank_outputs(&mut self) -> Option<&mut dyn RankOutputs<T>> {
        Some(self)
    }
}

/// [`DistributedMatrix`]'s (its damage and dilatation from the device's rows), the state's
/// body force `b` gathered too (the device loop's loads).
impl<T: Real> RankOutputs<T> for DistributedGpuMatrix<T> {
    fn rank(&self) -> usize {
        self.part.plan.rank
    }

    fn owned(&self) -> &[usize] {
        self.part.plan.sub.owned_nodes()
    }

    fn owned_damage(&self) -> Result<Vec<T>> {
        self.part.owned_damage()
    }

    fn owned_bond_count_damage(&self) -> Result<Vec<f64>> {
        self.part.owned_bond_count_damage()
    }

    fn owned_dilatation(&mut self, u: &[T]) -> Result<Option<Vec<T>>> {
        self.part.owned_dilatation(u)
    }

    fn gather_state(&mut self, state: &mut State<T>, to: Gather) -> Result<()> {
        self.part.gather_state(state, to)?;
        self.part.gather_global_to(&mut state.b, self.part.dim, to)
    }

    fn bonds_to(&self, to: Gather) -> Result<(Vec<u8>, FailureHistory<T>)> {
        self.part.bonds_to(to)
    }

    fn adr_to(&mut self, adr: &mut Adr<T>, to: Gather) -> Result<()> {
        self.part.adr_to(adr, to)
    }

    fn owned_to(&self, mine: &[T], per: usize, to: Gather) -> Result<Vec<T>> {
        self.part.owned_to(mine, per, to)
    }
}

impl<T: Real> DistributedGpuMatrix<T> {
    /// The device's copy of the state is no longer current: the next call uploads the
    /// driver's.
    fn state_changed_on_device(&mut self) {
        if let Some(dl) = self.part.matrix.loop_if_made() {
            dl.resident_step = None;
        }
    }
}
