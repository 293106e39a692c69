//! Backends: the executions of one physics, each implementing [`Backend`] (the force
//! evaluation of [`Forces`] plus the time-loop hooks a backend may take over, and its
//! footprint). Made by one factory, [`create`] (`factory.rs`), in core or in subdomains.
//!
//! - `cpu/`: the CPU loop over each node's bonds ([`CpuLoop`], the reference every other
//!   backend is tested against) and the matrix formulation on the operators of
//!   `crate::operators` ([`CpuMatrix`]);
//! - `gpu/`: their GPU counterparts ([`GpuLoop`]: NVRTC kernels; [`GpuMatrix`]: cuSPARSE
//!   products), which share the device time loop of `gpu/time_loop.rs`;
//! - `partitioned/`: the same physics run subdomain by subdomain (a model larger than the
//!   GPU's memory), on the CPU or streamed through the GPU;
//! - `rank_outputs.rs`: what a rank of a distributed run gives the outputs from its own part
//!   ([`RankOutputs`]: its owned nodes' fields, the whole state gathered where needed);
//! - `estimate.rs`: what each backend kind will hold on the host and the device, from a
//!   model's numbers before any node is placed, and the memory guard on them
//!   (`estimate/ranks.rs`: one rank of a run across ranks).
//!
//! Units: displacement in m, force density in N/m^3 (`rho a = L + b`), energy in J.
//! Vectors are flat, node-major: component `k` of node `i` is at `d * i + k`.

pub mod coefficients;
pub mod cpu;
pub mod estimate;
mod factory;
pub mod gpu;
mod kind;
pub mod partitioned;
mod rank_outputs;
mod support;

pub use cpu::{CpuLoop, CpuMatrix};
pub use factory::create;
pub use gpu::{GpuLoop, GpuMatrix};
pub use kind::{resolve_auto, BackendKind};
pub use rank_outputs::{Gather, RankOutputs};
pub use support::{check_contact, check_material, Placement, Scheme};

use crate::dynamics::{Adr, AdrCall, ExplicitCall, Forces, State};
use crate::output::{ProbeRegions, ProbeValues};
use crate::partition::StreamReport;
use crate::{Real, Result};

/// What a backend holds and moves, for `summary.json`, `peridot info` and `bench.json`.
#[derive(Debug, Clone, Default)]
pub struct Footprint {
    /// Bytes this backend holds for the model (operators, families, bond data, scratch).
    pub memory_bytes: usize,
    /// Minimal bytes one explicit step (force evaluation with damage check) must move by this
    /// backend's own count: each input read once, each output written once (`contract.md`).
    pub bytes_per_step: usize,
    /// Non-zeros per sparse operator (`("B", nnz)`, ...); empty for loop backends.
    pub operator_nnz: Vec<(&'static str, usize)>,
    /// How a subdomain execution ran (counts, residency, traffic and timings); `None` for
    /// in-core backends.
    pub subdomains: Option<StreamReport>,
    /// Each rank's share and exchanges, on every rank of a distributed run (gathered:
    /// asking is collective there); `None` in one process.
    pub ranks: Option<Vec<crate::partition::RankReport>>,
}

impl Footprint {
    /// A footprint of `memory_bytes` held and `bytes_per_step` moved, nothing else.
    pub fn new(memory_bytes: usize, bytes_per_step: usize) -> Self {
        Footprint {
            memory_bytes,
            bytes_per_step,
            ..Footprint::default()
        }
    }
}

/// One physics, several executions (CPU loop, CPU matrix, GPU loop, GPU matrix, in core or
/// in subdomains): a force evaluation ([`Forces`]) and the hooks through which a backend
/// that keeps the state on a device, or fuses the update into its bond pass, runs the time
/// loop itself. The defaults are the host reference of `crate::dynamics`.
pub trait Backend<T: Real>: Forces<T> {
    /// The name the CLI uses (`cpu-loop`, ...).
    fn name(&self) -> &'static str;

    /// What the backend holds and moves.
    fn footprint(&self) -> Footprint;

    /// Advance the explicit leapfrog (`dynamics/explicit.rs`) by `call.steps` steps. On
    /// return `state.time` and `state.step` are current, and with `call.full_sync` the whole
    /// state is (on a rank of a distributed run, the entries of its owned nodes: its
    /// [`RankOutputs::gather_state`] brings the rest; without `full_sync` the vectors may be
    /// stale: ask [`Backend::max_abs_displacement`]).
    /// Between calls the caller leaves the state alone. Returns the bonds broken.
    ///
    /// The default runs [`Explicit::step`](crate::dynamics::Explicit::step) on the host ([`ExplicitCall::on_host`]), calling
    /// this backend for forces and damage; a GPU backend keeps the state on the device and
    /// runs the loop there, a partitioned one fuses the update into its scatter.
    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        call.on_host(self.as_forces())
    }

    /// One iteration of adaptive dynamic relaxation (`dynamics/adr.rs`) towards the load at
    /// `state.time + h`: sets `adr.residual`, advances `state.time` and `state.step`, and
    /// returns the bonds broken. The default runs [`Adr::iterate`](crate::dynamics::Adr::iterate)
    /// on the host ([`AdrCall::on_host`]); a GPU backend keeps the state on the device, where
    /// the state's vectors go stale until [`Backend::sync_state`].
    fn advance_adr(&mut self, call: AdrCall<'_, T>) -> Result<usize> {
        call.on_host(self.as_forces())
    }

    /// Bring `state`'s vectors up to date after [`Backend::advance_adr`] where the backend
    /// holds them elsewhere (a device; on a rank of a distributed run, the entries of its
    /// owned nodes). The default has nothing to do.
    fn sync_state(&mut self, state: &mut State<T>) -> Result<()> {
        let _ = state;
        Ok(())
    }

    /// Bring `adr`'s history (the last free force, whether it has started) up to date where
    /// the backend iterates ADR elsewhere (a device), for a restart checkpoint. A backend
    /// makes its device buffers from the `Adr` of its first iteration, so one restored from
    /// a checkpoint reaches the device that way. The default has nothing to do.
    fn sync_adr(&mut self, adr: &mut Adr<T>) -> Result<()> {
        let _ = adr;
        Ok(())
    }

    /// The caller changed `state`'s vectors between calls of [`Backend::advance_explicit`]
    /// (a library user writing the displacement or velocity, forces and accelerations
    /// computed again): the next call starts from `state`, not from what the backend kept of
    /// the last one (a device's copy, a fused loop's carried half step). The default keeps
    /// nothing between calls.
    fn state_changed(&mut self, _state: &State<T>) -> Result<()> {
        Ok(())
    }

    /// Largest absolute displacement of `state` for the stability check, `None` if any entry
    /// is not finite. The default reads `state.u`; a backend whose `advance_explicit` keeps
    /// the state on a device answers from there.
    fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        Ok(state.max_abs_displacement())
    }

    /// The probe values of `regions` (mean displacement, summed force) at `state`'s step.
    /// The default reads `state.u` and `state.f` ([`ProbeRegions::on_host`]); a backend
    /// whose `advance_explicit` keeps the state on a device reduces them there, so a probe
    /// row needs a few numbers copied back, not the state.
    fn probe_values(
        &mut self,
        state: &State<T>,
        regions: &ProbeRegions,
    ) -> Result<Vec<ProbeValues>> {
        Ok(regions.on_host(&state.u, &state.f))
    }

    /// Where this backend runs one rank's part of a distributed run: its part of the
    /// outputs (its owned nodes' fields, the whole state gathered where an output needs it).
    /// `None` (the default): the backend holds the whole body.
    fn rank_outputs(&mut self) -> Option<&mut dyn RankOutputs<T>> {
        None
    }
}
