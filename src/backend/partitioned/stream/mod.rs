//! Subdomain execution on the GPU (`docs/subdomains.md`): the `gpu-loop` kernels run one
//! subdomain at a time on device *slots*, with the copies of one subdomain overlapping the
//! computation of another.
//!
//! - **Slots.** A slot is one set of device buffers sized for the largest subdomain: its
//!   static block, bond status, displacement, and outputs. *Resident*: one slot per
//!   subdomain, so the static data and bond status are uploaded once and only node state
//!   moves. *Streamed* (the model does not fit): two slots, alternating, so everything a
//!   subdomain needs moves each pass (double buffering).
//! - **Streams.** Three streams and events order each subdomain's work: copies in (static
//!   block and status when the slot does not hold the subdomain, then the displacement of the
//!   owned and halo nodes, and for the LPS force pass their dilatations), the kernel of the
//!   pass over the owned nodes, copies out (the owned results, and the bond status when the
//!   slot will be reused). While subdomain `s` computes, `s + 1` copies in and `s - 1` copies
//!   out; the host gathers and scatters from page-locked staging buffers meanwhile.
//! - **Passes.** A force evaluation is one pass (PMB, damage check fused) or two (LPS: the
//!   dilatation of owned nodes, their exchange on the host, then forces), as in the CPU
//!   emulation (`emulate.rs`). Halo values are those the caller passed: the same step's,
//!   read-only; owned results are written back. Failure with a history adds a pass of its
//!   own before or after the force pass (`break_timing`), as `gpu-loop` in core does: a
//!   softening law's damage update (each subdomain's damage per slot travels with its
//!   status bits), or breaking with each node's critical stretch (the local nodes' in, the
//!   owned nodes' next out, exchanged through a global array).
//! - **Exactness.** Each owned node runs the in-core kernel's arithmetic over its family in
//!   the global order, so forces, bond status, damage and dilatation equal `gpu-loop`'s
//!   bitwise (tests/gpu/stream.rs); the strain energy is summed per subdomain.
//!
//! The time loop runs on the host (`Explicit::step`, with rayon, or fused into the scatter
//! of the forces: `fused.rs`); the state lives in host memory, which is what lets the model
//! exceed the device.
//!
//! Files: `placement.rs` (slot sizes; which subdomains keep a slot, which stream),
//! `slot.rs` (one slot's buffers, staging and events; the copies around one subdomain's
//! kernel), `engine.rs` (setup, and a pass over the subdomains: gather, enqueue, finish and
//! scatter), this file (the backend: force evaluations as passes, the trait impls).

mod engine;
mod placement;
mod slot;

use super::emulate::history_timing;
use super::fused::{self, Carry, FusedForces, Update};
use super::parts::Part;
use crate::backend::coefficients::lps_coefficients;
use crate::backend::gpu::device_fault;
use crate::backend::{Backend, Footprint};
use crate::dynamics::{ExplicitCall, Forces, State};
use crate::gpu::Gpu;
use crate::material::{FailureHistory, Law};
use crate::model::BreakTiming;
use crate::partition::Cuts;
use crate::partition::{Residency, ResidencyRequest, StreamReport, StreamTimes};
use crate::setup::Problem;
use crate::{Real, Result};
use engine::Engine;
use rayon::prelude::*;
use slot::Pass;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// `gpu-loop` executed subdomain by subdomain ([`partition`]), overlapping copies with
/// computation; a [`Backend`] whose time loop runs on the host.
pub struct GpuStreamed<T: Real> {
    engine: Mutex<Engine<T>>,
}

impl<T: Real> GpuStreamed<T> {
    /// Partition `problem` into `count` subdomains and set them up on the GPU, resident when
    /// they fit `budget` (bytes; the free device memory without one) and `request` allows,
    /// else streamed through two slots; an error naming the budget when even two slots do
    /// not fit. The subdomains are packed in parallel where the problem stores its families,
    /// and one after the other (each searched, packed, its families dropped) for a lean
    /// problem, whose host memory then holds the pinned blocks and one subdomain's families.
    pub fn new(
        problem: Arc<Problem>,
        count: usize,
        budget: Option<u64>,
        request: ResidencyRequest,
    ) -> Result<Self> {
        crate::backend::check_material(&problem, "gpu-loop", crate::backend::Scheme::GpuLoopParts)?;
        crate::backend::check_contact(&problem, "gpu-loop", crate::backend::Placement::Subdomains)?;
        let cuts = Cuts::new(&problem, count)?;
        let gpu = Gpu::get()?;
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let coefficients = lps.then(|| lps_coefficients(&problem));
        let pack = |s: usize| {
            let sub = cuts.subdomain(&problem, s);
            Part::new::<T>(&gpu, &problem, sub, coefficients.as_ref())
        };
        let parts = match problem.bonds_stored {
            true => (0..count)
                .into_par_iter()
                .map(pack)
                .collect::<Result<_>>()?,
            false => (0..count).map(pack).collect::<Result<_>>()?,
        };
        let engine = Engine::new(problem, parts, budget, request)?;
        Ok(GpuStreamed {
            engine: Mutex::new(engine),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Engine<T>> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn engine_mut(&mut self) -> &mut Engine<T> {
        self.engine.get_mut().unwrap_or_else(|p| p.into_inner())
    }

    /// How the subdomains run, what they allocated, and what moved per force evaluation.
    pub fn report(&self) -> StreamReport {
        self.lock().report()
    }

    /// Timings and traffic so far.
    pub fn times(&self) -> StreamTimes {
        self.lock().times
    }

    /// Residency chosen.
    pub fn residency(&self) -> Residency {
        self.lock().place.residency
    }
}

impl<T: Real> FusedForces<T> for GpuStreamed<T> {
    /// Forces at `u` into `force`, breaking bonds first with `check` (LPS: the dilatation
    /// pass, then the force pass), with `update` fused into the scatter; the bonds broken.
    fn forces_with(
        &mut self,
        u: &[T],
        force: &mut [T],
        check: bool,
        update: Option<&mut Update<'_, T>>,
    ) -> Result<usize> {
        let e = self.engine_mut();
        let t0 = Instant::now();
        // (a softening law: the damage update is a pass of its own, before or after the
        // force pass as `break_timing` says, and the force pass breaks nothing)
        // (breaking with history likewise: `Engine::history_breaks`)
        let soften = check && e.problem.material.softening.is_some();
        let history = check && history_timing(&e.problem).is_some();
        let timing = e.problem.material.break_timing;
        let check = check && !soften && !history;
        if soften && timing == BreakTiming::BeforeForce {
            e.pass(Pass::Soften, u, &mut [])?;
        }
        if history && timing == BreakTiming::BeforeForce {
            e.history_breaks(u)?;
        }
        if e.lps {
            e.pass(Pass::Dilatation { check }, u, force)?;
        }
        e.pass_with(Pass::Forces { check }, u, force, update)?;
        if soften && timing == BreakTiming::AfterForce {
            e.pass(Pass::Soften, u, &mut [])?;
        }
        if history && timing == BreakTiming::AfterForce {
            e.history_breaks(u)?;
        }
        let broken = e.read_broken()?;
        e.times.force_evaluations += 1;
        e.times.wall += t0.elapsed().as_secs_f64();
        Ok(broken)
    }

    fn carry(&mut self) -> &mut Carry<T> {
        &mut self.engine_mut().carry
    }
}

/// The backend's name in device errors.
const NAME: &str = "gpu-loop (subdomains)";

impl<T: Real> Forces<T> for GpuStreamed<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.forces_with(u, force, false, None)
            .map(|_| ())
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        let mut e = self.lock();
        if e.problem.material.critical_stretch.is_none() {
            return Ok(0);
        }
        // (a softening law: each bond's damage at `u`, as cpu-loop's `break_bonds`)
        let pass = match e.problem.material.softening {
            Some(_) => Pass::Soften,
            None => Pass::Break,
        };
        e.pass(pass, u, &mut [])
            .and_then(|_| e.read_broken())
            .map_err(device_fault(NAME, "bond breaking"))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.forces_with(u, force, true, None)
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        let mut e = self.lock();
        e.pass(Pass::Damage, &[], phi)
            .map_err(device_fault(NAME, "damage"))
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        let mut e = self.lock();
        if !e.lps {
            return Ok(false);
        }
        e.pass(Pass::Dilatation { check: false }, u, &mut [])
            .map_err(device_fault(NAME, "dilatation"))?;
        theta.copy_from_slice(&e.theta);
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let mut e = self.lock();
        let run = |e: &mut Engine<T>| -> Result<f64> {
            if e.lps {
                e.pass(Pass::Dilatation { check: false }, u, &mut [])?;
            }
            e.pass(Pass::Energy, u, &mut [])?;
            Ok(e.energy)
        };
        run(&mut e).map_err(device_fault(NAME, "strain energy"))
    }

    fn broken_bonds(&self) -> usize {
        let e = self.lock();
        e.precracked + e.broken_seen as usize
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        self.lock()
            .bond_status()
            .map_err(device_fault(NAME, "bond status download"))
    }

    fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        self.lock()
            .bond_damage()
            .map_err(device_fault(NAME, "bond damage download"))
    }

    /// A softening law's damage per bond, each node's critical stretch with history.
    fn failure_history(&self) -> Result<FailureHistory<T>> {
        Ok(FailureHistory {
            bond_damage: self.bond_damage()?.unwrap_or_default(),
            node_s0: self.lock().node_s0.clone(),
        })
    }
}

impl<T: Real> GpuStreamed<T> {
    pub fn memory_bytes(&self) -> usize {
        self.lock().memory.allocated
    }

    pub fn bytes_per_step(&self) -> usize {
        let e = self.lock();
        let t = e.times;
        if t.force_evaluations == 0 {
            return 0;
        }
        ((t.bytes_in + t.bytes_out) / t.force_evaluations as u64) as usize
    }

    pub fn stream_report(&self) -> Option<StreamReport> {
        Some(self.report())
    }
}

impl<T: Real> Backend<T> for GpuStreamed<T> {
    fn name(&self) -> &'static str {
        "gpu-loop"
    }

    fn footprint(&self) -> Footprint {
        Footprint {
            subdomains: self.stream_report(),
            ..Footprint::new(self.memory_bytes(), self.bytes_per_step())
        }
    }

    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        // (the state is always on the host)
        fused::advance_explicit(self, call)
    }

    fn state_changed(&mut self, _state: &State<T>) -> Result<()> {
        fused::state_changed(self);
        Ok(())
    }
}
