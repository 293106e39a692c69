//! A run across ranks (`docs/distributed.md`): the same driver (`run.rs`) on every rank with
//! the same decisions, the backend a rank's part (`distributed::DistributedCpu`), the
//! snapshots written in pieces (one `.vtu` per rank, rank 0 the `.pvtu` and `.pvd`),
//! `probes.csv`, `crack_tips.csv`, `summary.json`, the damage picture and the checkpoints
//! written by rank 0 from the values gathered there (`ranks.rs`; a checkpoint is the
//! one-process file, so a restart may take another number of ranks, or one process). What
//! does not run across ranks yet is refused here, naming what does.

use super::ranks::Ranks;
use super::run::{simulate_from_in, Outcome, RunOptions};
use crate::backend::partitioned::SubdomainRequest;
use crate::backend::BackendKind;
use crate::model::SolverKind;
use crate::output::Summary;
use crate::setup::Problem;
use crate::{Error, Precision, Real, Result};
use std::path::Path;

/// Run this rank's part of a distributed run of `problem` (resumed from the latest
/// checkpoint in `restart`), every rank calling this with the same problem and options;
/// returns the summary (on every rank; rank 0 writes it).
pub fn run_distributed(
    problem: Problem,
    opts: &RunOptions,
    restart: Option<&Path>,
    ranks: Ranks,
) -> Result<Summary> {
    let s = opts.subdomains.as_ref();
    supported(&problem, opts.backend, s, restart.is_some())?;
    let (r, from) = (Some(ranks), restart);
    match opts.precision {
        Precision::F32 => simulate_from_in::<f32>(problem, opts, from, r).map(|o| o.summary),
        Precision::F64 => simulate_from_in::<f64>(problem, opts, from, r).map(|o| o.summary),
    }
}

/// [`run_distributed`] in precision `T` (ignoring `opts.precision`), returning the outcome:
/// the final state gathered on every rank, and the rank's backend, whose reports (bond
/// status, damage) are collective (every rank asks, in the same order).
pub fn simulate_distributed<T: Real>(
    problem: Problem,
    opts: &RunOptions,
    ranks: Ranks,
) -> Result<Outcome<T>> {
    simulate_distributed_from(problem, opts, None, ranks)
}

/// [`simulate_distributed`] resumed from the latest checkpoint in `restart` (a checkpoint of
/// a run in one process or across any number of ranks).
pub fn simulate_distributed_from<T: Real>(
    problem: Problem,
    opts: &RunOptions,
    restart: Option<&Path>,
    ranks: Ranks,
) -> Result<Outcome<T>> {
    let s = opts.subdomains.as_ref();
    supported(&problem, opts.backend, s, restart.is_some())?;
    simulate_from_in::<T>(problem, opts, restart, Some(ranks))
}

/// Refuse what does not run across ranks yet, naming what does.
fn supported(
    problem: &Problem,
    backend: BackendKind,
    subdomains: Option<&SubdomainRequest>,
    restart: bool,
) -> Result<()> {
    let refuse = |what: &str| {
        Err(Error::Backend {
            backend: format!("{} (distributed)", backend.name()),
            message: format!(
                "{what} does not run across MPI ranks yet; what does: the explicit solver and \
                 ADR on cpu-loop and cpu-matrix, with checkpoints and --restart, or the \
                 explicit solver on gpu-loop with one GPU per rank (PMB, LPS, several \
                 materials of one density, pre-cracks, damping, probes, snapshots); run it in \
                 one process instead"
            ),
        })
    };
    let m = &problem.model;
    if m.solver.kind == SolverKind::Adr && backend == BackendKind::GpuLoop {
        return refuse("solver.kind = \"adr\" on gpu-loop");
    }
    if !matches!(
        backend,
        BackendKind::CpuLoop | BackendKind::CpuMatrix | BackendKind::GpuLoop | BackendKind::Auto
    ) {
        return refuse(&format!("--backend {}", backend.name()));
    }
    if subdomains.is_some_and(|s| s.count.is_some() || s.budget.is_some()) {
        return refuse("--subdomains / --gpu-memory-budget");
    }
    let gpu = backend == BackendKind::GpuLoop;
    if gpu && (m.output.checkpoint_every.is_some() || restart) {
        return refuse("output.checkpoint_every or --restart on gpu-loop");
    }
    Ok(())
}
