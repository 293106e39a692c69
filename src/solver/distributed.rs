//! A run across ranks (`docs/distributed.md`): the same driver (`run.rs`) on every rank with
//! the same decisions, the backend a rank's part (`distributed::DistributedCpu`,
//! `DistributedMatrix`, `DistributedGpu`), the
//! snapshots written in pieces (one `.vtu` per rank, rank 0 the `.pvtu` and `.pvd`),
//! `probes.csv`, `crack_tips.csv`, `summary.json`, the damage picture and the checkpoints
//! written by rank 0 from the values gathered there (`ranks.rs`; a checkpoint is the
//! one-process file, so a restart may take another number of ranks, or one process). What
//! does not run across ranks yet is refused here, naming what does.

use super::ranks::Ranks;
use super::run::{simulate_from_in, Outcome, RunOptions};
use crate::backend::partitioned::SubdomainRequest;
use crate::backend::BackendKind;
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
    // (the summary alone: no rank gathers the end state whole)
    let (r, from) = (Some(ranks), restart);
    match opts.precision {
        Precision::F32 => simulate_from_in::<f32>(problem, opts, from, r, false).map(|o| o.summary),
        Precision::F64 => simulate_from_in::<f64>(problem, opts, from, r, false).map(|o| o.summary),
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
    simulate_from_in::<T>(problem, opts, restart, Some(ranks), true)
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
                 ADR on cpu-loop and cpu-matrix, and on gpu-loop (PMB, LPS, several materials \
                 of any densities, pre-cracks, bond failure with a history: softening damage \
                 laws, critical_stretch_alpha, after-force breaking; damping, probes, \
                 snapshots) and gpu-matrix with one GPU per rank, with checkpoints and \
                 --restart; contact and impactors on cpu-loop and gpu-loop; run it in one \
                 process instead"
            ),
        })
    };
    // (every solver, and checkpoints with --restart, run on each backend named below)
    let _ = (problem, restart);
    if !matches!(
        backend,
        BackendKind::CpuLoop
            | BackendKind::CpuMatrix
            | BackendKind::GpuLoop
            | BackendKind::GpuMatrix
            | BackendKind::Auto
    ) {
        return refuse(&format!("--backend {}", backend.name()));
    }
    if subdomains.is_some_and(|s| s.count.is_some() || s.budget.is_some()) {
        return refuse("--subdomains / --gpu-memory-budget");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::SolverKind;

    /// What `supported` lets through and what it refuses: ADR, checkpoints and `--restart`
    /// on every backend that runs across ranks (`gpu-loop` included); subdomains refused with
    /// a message naming what runs (ADR on `gpu-loop` too, with checkpoints and `--restart`;
    /// contact and impactors on both loops).
    #[test]
    fn what_runs_across_ranks_and_what_is_refused() {
        let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
             critical_stretch = 0.004\n[discretization]\ndimension = \"plane-stress\"\n\
             thickness = 1e-3\ndx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
             box = [{ min = [0, 0], max = [0.009, 0.004] }]\n\
             [solver]\nkind = \"explicit\"\nsteps = 1\n";
        let model = crate::model::parse(text, "test.toml", &[]).expect("valid model");
        let mut problem = Problem::build_lean(model, Path::new(".")).expect("builds");
        let runs = [
            BackendKind::CpuLoop,
            BackendKind::CpuMatrix,
            BackendKind::GpuLoop,
            BackendKind::GpuMatrix,
        ];
        for kind in [SolverKind::Explicit, SolverKind::Adr] {
            problem.model.solver.kind = kind;
            for checkpoints in [None, Some(10)] {
                problem.model.output.checkpoint_every = checkpoints;
                for (backend, restart) in runs.iter().flat_map(|&b| [(b, false), (b, true)]) {
                    let r = supported(&problem, backend, None, restart);
                    assert!(
                        r.is_ok(),
                        "{kind:?} on {} (checkpoints {checkpoints:?}, restart {restart}): {r:?}",
                        backend.name()
                    );
                }
            }
        }
        let subdomains = SubdomainRequest {
            count: Some(2),
            ..SubdomainRequest::default()
        };
        for backend in [BackendKind::CpuLoop, BackendKind::GpuLoop] {
            let r = supported(&problem, backend, Some(&subdomains), false);
            let e = r.unwrap_err().to_string();
            for part in [
                "--subdomains",
                "does not run across MPI ranks",
                "ADR on cpu-loop and cpu-matrix",
                "and on gpu-loop",
                "several materials of any densities",
                "bond failure with a history: softening damage laws, critical_stretch_alpha",
                "gpu-matrix with one GPU per rank",
                "with checkpoints and --restart",
                "contact and impactors on cpu-loop and gpu-loop",
            ] {
                assert!(e.contains(part), "{part:?} missing from: {e}");
            }
        }
    }
}
