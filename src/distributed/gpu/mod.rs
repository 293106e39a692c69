//! `gpu-loop` on one rank's part, one GPU per rank: the rank's subdomain (owned nodes with
//! their families in the global CSR order, ghosts one family radius deep, from
//! [`RankPlan`]) resident on the rank's device as a [`GpuLoop`] of its own (the neighbour
//! list form), in the order of `order.rs` (interior, boundary, ghosts). The explicit loop
//! runs on the device as in core (`backend/gpu/time_loop.rs`, the update fused into the
//! force kernel, `bond_loop/fused.rs`); the state (u, v, a, the bond status) stays there.
//!
//! Each step the force kernels run in two launches around the ghost exchange
//! (`halo.rs`): the owned values other ranks need are packed on the device and copied to a
//! page-locked buffer, the interior's kernel (which reads no ghost) is enqueued, the
//! messages are exchanged (`Comm::exchange`) while it runs, the ghosts' values are copied
//! up and scattered, and the boundary's kernel is enqueued. LPS does this twice: the
//! displacement before the dilatation kernels, then the ghosts' `(alpha, p theta)` pairs
//! (what the force kernel reads of a neighbour) before the force kernels. Per step only the
//! halo crosses PCIe: `d` values per ghost received and per sent node sent, `d + 2` for LPS.
//!
//! Several densities: the rank's problem (device order) gives each local node its own
//! material's density, which the device loop's update reads (`Explicit::node_density` of the
//! call, made for the part). Bond failure with a history runs the in-core failure pass
//! (`bond_loop/failure.rs`) before or after the force kernels as in one process, the ghosts'
//! displacement current: a softening law's damage per bond is the part's own (a cut bond's two
//! copies evolve from the same two displacements); each node's critical stretch, where the pass
//! writes it, is exchanged for the ghosts through a third device halo (1 value per node).
//!
//! Each owned node sums its bonds in the global order with the in-core kernel's arithmetic
//! and the same values, so the run equals the one-GPU `gpu-loop` run in its neighbour-list
//! form bit for bit (the lattice slot-table kernel of a full box lattice, which a one-GPU
//! run takes by default, agrees with the list to 1e-12 only: `docs/distributed.md`).
//!
//! Collective as [`super::DistributedCpu`]: the stop flag agreed at each call's end, the
//! largest displacement and the probe rows reduced over the ranks, the owned state
//! downloaded for a snapshot's piece (no gather; its damage and dilatation from the device's
//! part), the whole state, damage and bond status gathered where the driver asks
//! (`collect.rs`: a checkpoint's to rank 0). Several ranks
//! may share one device (threads of one process with [`super::ThreadComm`], or processes).
//!
//! ADR runs on the host as on a CPU rank (`collect::adr_on_ranks`: the owned dofs, the
//! global sums exact), each iteration's forces a trait call on the device (`trait_forces`),
//! so ADR on P ranks is the host ADR over the one-GPU list form's forces bit for bit (not
//! `gpu-loop`'s device ADR in one process, which sums in a tree order: `backend.rs`).
//! Checkpoints gather what a CPU rank's do (the state, the bond status and the failure
//! history from the devices, ADR's last free force); a restart's bond status and failure
//! history reach the device as the initial ones, through the part built from the problem that
//! holds them (`order.rs`, `DeviceOrder::problem`).
//!
//! Contact and impactors (`[contact]`, `[[impactor]]`) run as `gpu-loop` runs them in one
//! process: the host leapfrog (`Explicit::step` over the driver's global state), each force
//! evaluation a trait call on the device (`trait_forces`: the owned displacement up, the
//! ghosts' exchanged on the device around the split launches, the owned forces down), then
//! the owned nodes' contact forces on the host from the rank's contact part
//! (`super::contact::RankContact`, which `cpu-loop`'s ranks hold too: the contact halo, the
//! impactors' reaction terms merged in node order). A crack face's bond is read from the
//! part's status downloaded from the device, found in its owned end's family, whose
//! neighbour indices the rank keeps on the host for it (dropped without crack faces). The
//! device's bond forces are the one-GPU list form's and the host arithmetic is the one
//! process's, so the run equals the one-GPU run with contact bit for bit.
//!
//! Files: `order.rs` (the device order and the rank's problem in it), `halo.rs` (the
//! exchange on the device), this file (setup, the split launches, the time loop),
//! `backend.rs` (the `Forces` and `Backend` impls).
//!
//! Units: m, m/s, N/m^3, s; bytes.

mod backend;
mod halo;
mod matrix;
mod order;
mod probes;

use super::contact::RankContact;
use super::{Comm, RankPlan, RankSetup};
use super::{HaloTimes, StopFlags};
use crate::backend::gpu::bond_loop::{full_volume, FailurePass, FailureStep};
use crate::backend::gpu::buffers::addr;
use crate::backend::gpu::time_loop::run_call_timed;
use crate::backend::{check_material, GpuLoop, Scheme};
use crate::dynamics::contact::crack_faces_on;
use crate::dynamics::{Explicit, ExplicitCall, State};
use crate::gpu::device::driver_error;
use crate::gpu::params::BondParams;
use crate::gpu::Gpu;
use crate::material::Law;
use crate::model::BreakTiming;
use crate::setup::Problem;
use crate::{Real, Result};
use cudarc::driver::CudaSlice;
use halo::DeviceHalo;
use probes::DeviceProbeRows;

pub use matrix::DistributedGpuMatrix;
use order::DeviceOrder;
use std::sync::Arc;
use std::time::Instant;

/// The backend's name in errors and summaries.
const NAME: &str = "gpu-loop (distributed)";

/// A rank's exchanges on its device and the split of its owned nodes.
struct Halos<T> {
    /// The displacement (`d` per node).
    u: DeviceHalo<T>,
    /// LPS: the `(alpha, p theta)` pairs (2 per node).
    pair: Option<DeviceHalo<T>>,
    /// Breaking with each node's history: each node's critical stretch (1 per node).
    s0: Option<DeviceHalo<T>>,
    interior: usize,
    owned: usize,
    times: HaloTimes,
}

/// An exchange posted on the device and not yet completed (the device address of the values
/// whose ghosts it fills).
enum Pending {
    /// The displacement.
    U(u64),
    /// Each node's critical stretch.
    S0(u64),
}

impl<T: Real> Halos<T> {
    /// Launch the force evaluation of `params` (its `u`, `force`, checks and fused update)
    /// over the owned nodes, with the failure pass of a model whose bonds fail with a history
    /// where `params` checks bonds, in the in-core order (`GpuLoop::forces_in_order`): before
    /// the force kernels (the ghosts' displacement exchanged while the pass's first kernel
    /// runs over the interior; the force kernels then in one launch) or after them
    /// (`break_timing`). Each node's critical stretch, where the pass writes it, is exchanged
    /// for the ghosts while the next kernel runs over the interior, or the force kernels, or
    /// at the end (`failure_pass`). `forces`: false stops after LPS's dilatation (its pairs
    /// then are not exchanged).
    fn launch(
        &mut self,
        gl: &mut GpuLoop<T>,
        comm: &dyn Comm,
        params: &BondParams,
        forces: bool,
    ) -> Result<()> {
        let pass = match params.check_bonds {
            0 => None,
            _ => gl.history_pass(),
        };
        let Some(pass) = pass else {
            return self.force_kernels(gl, comm, params, forces, false);
        };
        let forces_only = BondParams {
            check_bonds: 0,
            ..*params
        };
        let mut pending = Vec::new();
        match gl.problem().material.break_timing {
            BreakTiming::BeforeForce => {
                self.u.post(gl.gpu(), params.u)?;
                pending.push(Pending::U(params.u));
                self.failure_pass(gl, comm, pass, params, &mut pending)?;
                self.force_kernels(gl, comm, &forces_only, forces, true)?;
            }
            BreakTiming::AfterForce => {
                self.force_kernels(gl, comm, &forces_only, forces, false)?;
                self.failure_pass(gl, comm, pass, params, &mut pending)?;
            }
        }
        self.complete(comm, gl.gpu(), &mut pending)
    }

    /// The failure `pass` of `params` over the part's nodes, each kernel in two launches:
    /// over the interior (which reads no ghost's value), then, the `pending` exchanges
    /// completed, over the boundary and the ghosts; where the pass has written each node's
    /// critical stretch, its exchange is posted and left pending.
    fn failure_pass(
        &mut self,
        gl: &mut GpuLoop<T>,
        comm: &dyn Comm,
        pass: FailurePass,
        params: &BondParams,
        pending: &mut Vec<Pending>,
    ) -> Result<()> {
        let (interior, nodes) = (self.interior as u32, gl.problem().body.len());
        gl.failure_pass_with(pass, params, |gpu, step| match step {
            FailureStep::Kernel(k, p) => {
                let part = |first: u32, n: u32| BondParams { first, n, ..*p };
                // SAFETY: `p` holds the rank's `GpuLoop` buffers, sized for its local nodes
                // and their bonds (the history's per slot and per node); each launch runs
                // nodes `first .. n` of them and writes only `mu`, the counter and the
                // history.
                unsafe { gpu.launch(k, interior as usize, &part(0, interior))? };
                self.complete(comm, gpu, pending)?;
                // SAFETY: as above.
                unsafe { gpu.launch(k, nodes - interior as usize, &part(interior, nodes as u32)) }
            }
            FailureStep::Written(node_s0) => match self.s0.as_mut() {
                Some(halo) => {
                    halo.post(gpu, node_s0)?;
                    pending.push(Pending::S0(node_s0));
                    Ok(())
                }
                None => Ok(()),
            },
        })
    }

    /// Complete the `pending` exchanges in the order they were posted (the ghosts' values
    /// scattered on the device after the work enqueued since).
    fn complete(&mut self, comm: &dyn Comm, gpu: &Gpu, pending: &mut Vec<Pending>) -> Result<()> {
        for p in pending.drain(..) {
            let (halo, values) = match p {
                Pending::U(u) => (Some(&mut self.u), u),
                Pending::S0(s0) => (self.s0.as_mut(), s0),
            };
            if let Some(halo) = halo {
                halo.complete_counted(gpu, comm, values, &mut self.times)?;
            }
        }
        Ok(())
    }

    /// Launch the force kernels of `params` over the owned nodes in two parts around each
    /// exchange: the interior's kernel while the ghosts' values travel, the boundary's after
    /// (`u_current`: the ghosts' displacement already exchanged, the first kernel in one
    /// launch).
    fn force_kernels(
        &mut self,
        gl: &GpuLoop<T>,
        comm: &dyn Comm,
        params: &BondParams,
        forces: bool,
        u_current: bool,
    ) -> Result<()> {
        let gpu = gl.gpu().clone();
        let (dilatation, force) = gl.force_kernels(params);
        let part = |first: usize, end: usize| BondParams {
            first: first as u32,
            n: end as u32,
            ..*params
        };
        let (inner, edge) = (part(0, self.interior), part(self.interior, self.owned));
        let run = |k, p: &BondParams| {
            // SAFETY: `params` holds the rank's `GpuLoop` buffers, sized for its nodes (owned
            // and ghosts) and bonds; the launch runs nodes `first .. n` of them.
            unsafe { gpu.launch(k, (p.n - p.first) as usize, p) }
        };
        let first = dilatation.unwrap_or(force);
        if u_current {
            run(first, &part(0, self.owned))?;
        } else {
            self.u.post(&gpu, params.u)?;
            run(first, &inner)?;
            (self.u).complete_counted(&gpu, comm, params.u, &mut self.times)?;
            run(first, &edge)?;
        }
        let (Some(pair), true) = (self.pair.as_mut(), dilatation.is_some() && forces) else {
            return Ok(());
        };
        pair.post(&gpu, params.lps_pair)?;
        run(force, &inner)?;
        pair.complete_counted(&gpu, comm, params.lps_pair, &mut self.times)?;
        run(force, &edge)
    }

    /// Values per ghost and step: `d`, the pair for LPS, the critical stretch for breaking
    /// with each node's history.
    fn per(&self, dim: usize) -> usize {
        dim + if self.pair.is_some() { 2 } else { 0 } + usize::from(self.s0.is_some())
    }
}

/// `gpu-loop` on one rank's part of the problem, on the rank's device.
pub struct DistributedGpu<T: Real> {
    comm: Arc<dyn Comm>,
    plan: RankPlan,
    order: DeviceOrder,
    gl: GpuLoop<T>,
    halos: Halos<T>,
    dim: usize,
    /// The state in device order, between the driver's global state and the device.
    local: State<T>,
    /// The trait calls' displacement and force (device order), allocated by the first.
    scratch: Option<(CudaSlice<T>, CudaSlice<T>)>,
    stop: Option<StopFlags>,
    /// The probe regions' nodes on the ranks and this rank's on the device (made by the first
    /// probe row).
    probes: Option<DeviceProbeRows<T>>,
    /// Each local node's density in device order (owned and ghosts, each its own material's)
    /// where several materials differ in density: the device loop's `Explicit::node_density`.
    node_density: Option<Arc<[f64]>>,
    /// What contact needs of the rank, where the model has contact or an impactor
    /// (`super::contact`; the explicit calls then run the host leapfrog).
    contact: Option<RankContact>,
    /// The seconds of this backend's creation by phase.
    pub setup: RankSetup,
}

/// Refuse what the distributed GPU loop does not run, naming what does.
fn check(problem: &Problem) -> Result<()> {
    check_material(problem, NAME, Scheme::GpuLoop)
}

impl<T: Real> DistributedGpu<T> {
    /// This rank's part of `problem` (stored or lean) over `comm`, on this process's device
    /// (`Gpu::get`: the one `gpu::select_device` chose for the rank). Runs what `gpu-loop` in
    /// core runs, contact and impactors included (the host leapfrog over the device's forces,
    /// as in core).
    pub fn new(problem: &Problem, comm: Arc<dyn Comm>, stop: Option<StopFlags>) -> Result<Self> {
        check(problem)?;
        let mut times = RankSetup::default();
        let mut plan = RankPlan::timed(problem, comm.size(), comm.rank(), &mut times)?;
        let t0 = Instant::now();
        let order = DeviceOrder::new(&plan.sub, problem.body.len(), &plan.on_edge());
        let local = Arc::new(order.problem(problem, &plan.sub));
        // (each local node's own material's density, device order: ghosts' well-defined too)
        let local_densities = local.node_densities().map(Arc::from);
        plan.release_families();
        times.part = Some(t0.elapsed().as_secs_f64());
        let mut gl = GpuLoop::<T>::with_neighbour_list(local)
            .map_err(|e| crate::backend::gpu::rename(e, NAME))?;
        gl.set_full_volume(full_volume(problem));
        // (uploaded: the host keeps the part's family sizes, no per-bond array; with
        // crack-face contact its owned nodes' neighbour indices, where a pair's bond is found)
        gl.release_host_bonds(crack_faces_on(&problem.model));
        let gpu = gl.gpu().clone();
        let dim = problem.dim();
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let halos = Halos {
            u: DeviceHalo::new(&gpu, &*comm, &plan.halo, &order, dim)?,
            pair: match lps {
                true => Some(DeviceHalo::new(&gpu, &*comm, &plan.halo, &order, 2)?),
                false => None,
            },
            s0: match gl.history_pass() {
                Some(FailurePass::History) => {
                    Some(DeviceHalo::new(&gpu, &*comm, &plan.halo, &order, 1)?)
                }
                _ => None,
            },
            interior: order.interior,
            owned: order.owned,
            times: HaloTimes {
                device: gpu.ordinal as i64,
                device_buffers: comm.device_buffers(),
                ..HaloTimes::default()
            },
        };
        gpu.synchronize()?;
        let contact = RankContact::of(problem, &plan, &comm);
        Ok(DistributedGpu {
            local: State::at_rest(dim * order.len()),
            dim,
            gl,
            halos,
            order,
            comm,
            plan,
            scratch: None,
            stop,
            probes: None,
            node_density: local_densities,
            contact,
            setup: times,
        })
    }

    /// This rank's part.
    pub fn plan(&self) -> &RankPlan {
        &self.plan
    }

    /// Whether the device holds the state of step `step`.
    fn resident(&mut self, step: usize) -> bool {
        self.gl.stepper().resident_step == Some(step)
    }

    /// The owned entries of the driver's `state` into the local state (device order), for
    /// the upload a call makes where the device does not hold the state.
    fn local_from(&mut self, state: &State<T>) {
        (self.order).owned_state_of(state, &self.plan.sub, self.dim, &mut self.local);
    }

    /// The owned entries of the local state (just downloaded) into the driver's `state`
    /// (no gather: `RankOutputs::gather_state` brings the whole where an output needs it).
    fn state_to_owned(&self, state: &mut State<T>) {
        (self.order).owned_into_state(&self.local, &self.plan.sub, self.dim, state);
    }

    /// The owned values of a device-order array (`per` per node) gathered into `global` on
    /// every rank.
    fn gather_device_order(&self, local: &[T], per: usize, global: &mut [T]) -> Result<()> {
        let mine = self.order.owned_in_plan_order(local, per);
        super::collect::gather_owned(&*self.comm, &self.plan.owned_of, &mine, per, global)
    }

    /// Run one call of the driver's explicit loop on the device (see
    /// [`crate::backend::Backend::advance_explicit`]): the state uploaded from the driver's
    /// where the device does not hold it, the steps with the split launches, the owned
    /// state downloaded into the driver's where `full_sync` asks. The steps are timed as the rank's
    /// `forces_seconds`, the rest of the call but the stop flag's agreement as its
    /// `state_seconds`.
    fn advance(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        let t0 = Instant::now();
        let ExplicitCall {
            integrator,
            loads,
            state,
            times,
            steps,
            full_sync,
        } = call;
        if !self.resident(state.step) {
            self.local_from(state);
        }
        (self.local.step, self.local.time) = (state.step, state.time);
        let loads = self.order.part_loads(loads);
        // (several densities: each local node's, in device order, for the fused update)
        let local_integrator;
        let integrator = match &self.node_density {
            Some(rho) => {
                local_integrator = Explicit {
                    node_density: Some(rho.clone()),
                    ..integrator.clone()
                };
                &local_integrator
            }
            None => integrator,
        };
        let call = ExplicitCall {
            integrator,
            loads: &loads,
            state: &mut self.local,
            times,
            steps,
            full_sync,
        };
        let (halos, comm) = (&mut self.halos, &*self.comm);
        let (broken, steps_seconds) = run_call_timed(&mut self.gl, call, |gl, ex, plan, steps| {
            gl.fused_steps_with(ex, plan, steps, |gl, params| {
                halos.launch(gl, comm, params, true)
            })
        })
        .map_err(|e| crate::backend::gpu::rename(e, NAME))?;
        (state.step, state.time) = (self.local.step, self.local.time);
        if full_sync {
            self.state_to_owned(state);
        }
        self.halos.times.add_device_call(t0, steps_seconds);
        super::collect::agree_on_stop(&*self.comm, self.stop.as_ref());
        Ok(broken)
    }

    /// Run one call of the driver's explicit loop with contact or impactors: the host
    /// leapfrog (`Explicit::step`, as `gpu-loop` in core runs contact) over the driver's
    /// global state, each force evaluation a trait call on the device (`trait_forces`: the
    /// owned displacement up, the ghosts' exchanged on the device, the owned forces down),
    /// the owned nodes' contact forces on the host (`super::contact`), the owned state
    /// current on the host after each step; the stop flag agreed.
    fn advance_on_host(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        // (the device's explicit state is not the run's from here on)
        self.gl.stepper().resident_step = None;
        let stop = self.stop.clone();
        super::collect::explicit_on_ranks(self, call, stop.as_ref(), |b, call| call.on_host(b))
    }

    /// The trait calls' device buffers: the displacement `u` (owned entries from the global
    /// array, ghosts exchanged by the launch) and the force, as addresses.
    fn upload_u(&mut self, u: &[T]) -> Result<(u64, u64)> {
        let gpu = self.gl.gpu().clone();
        let len = self.dim * self.order.len();
        if self.scratch.is_none() {
            let zeros = || gpu.stream().alloc_zeros::<T>(len.max(1));
            let pair = (
                zeros().map_err(driver_error)?,
                zeros().map_err(driver_error)?,
            );
            self.scratch = Some(pair);
        }
        let mut host = vec![T::zero(); len];
        self.order
            .owned_of_global(u, &self.plan.sub, self.dim, &mut host);
        let (u_dev, f_dev) = self.scratch.as_mut().expect("allocated above");
        gpu.stream()
            .memcpy_htod(&host, u_dev)
            .map_err(driver_error)?;
        Ok((addr(&gpu, u_dev), addr(&gpu, f_dev)))
    }

    /// A force evaluation of a trait call at the global `u` (breaking first with `check`;
    /// `forces` false: LPS's dilatation only): the owned forces scattered into `force` where
    /// given; the bonds this rank broke. The launch to the bonds broken read back (which
    /// waits for the device) is timed as `forces_seconds`, the upload of `u` and the
    /// download of the forces as `state_seconds`.
    fn trait_forces(
        &mut self,
        u: &[T],
        force: Option<&mut [T]>,
        check: bool,
        forces: bool,
    ) -> Result<usize> {
        let t0 = Instant::now();
        let (u_dev, f_dev) = self.upload_u(u)?;
        let t_launch = Instant::now();
        let params = self.gl.bond_params(u_dev, f_dev, check);
        self.halos
            .launch(&mut self.gl, &*self.comm, &params, forces)?;
        let broken = self.gl.read_broken()?;
        let launch_seconds = t_launch.elapsed().as_secs_f64();
        if let Some(force) = force {
            let mut local = vec![T::zero(); self.dim * self.order.len()];
            let (_, f) = self.scratch.as_ref().expect("allocated by upload_u");
            crate::backend::gpu::buffers::download(self.gl.gpu(), f, &mut local)?;
            let (d, sub) = (self.dim, &self.plan.sub);
            for (k, &p) in self.order.to_plan[..self.order.owned].iter().enumerate() {
                let i = sub.nodes[p];
                force[d * i..d * (i + 1)].copy_from_slice(&local[d * k..d * (k + 1)]);
            }
        }
        self.halos.times.add_device_call(t0, launch_seconds);
        Ok(broken)
    }
}
