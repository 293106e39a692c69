//! Helpers of the tests of checkpoints across ranks: a run's end in one process or across
//! thread ranks, resumed or not, and a folder's checkpoints cut back to one step.

use peridot::backend::BackendKind;
use peridot::setup::Problem;
use peridot::solver::distributed::simulate_distributed_from;
use peridot::solver::run::simulate_from;
use peridot::solver::{Outcome, Ranks};
use std::path::Path;

/// What a run in `out` on `backend` in f64 (one process where `p` = 0, else across `p`
/// thread ranks; resumed from the latest checkpoint in `restart`) ends with, as rank 0 sees
/// it (every rank's displacement and bond status checked equal to rank 0's): displacement,
/// velocity, bond status, the step it resumed from.
pub fn end_in(
    (problem, backend): (&Problem, BackendKind),
    p: usize,
    out: &Path,
    restart: Option<&Path>,
) -> (Vec<f64>, Vec<f64>, Vec<u8>, Option<usize>) {
    let opts = super::options(backend, peridot::Precision::F64, Some(out));
    let end = |o: Outcome<f64>| {
        let status = o.backend.bond_status().expect("bond status");
        (o.state.u, o.state.v, status, o.summary.restarted_from_step)
    };
    if p == 0 {
        return end(simulate_from::<f64>(problem.clone(), &opts, restart).unwrap());
    }
    let ends = peridot::distributed::run_ranks(p, |comm| {
        let ranks = Ranks { comm, stop: None };
        let o = simulate_distributed_from::<f64>(problem.clone(), &opts, restart, ranks);
        end(o.unwrap_or_else(|e| panic!("distributed run: {e}")))
    });
    for (r, e) in ends.iter().enumerate() {
        super::assert_bitwise(&e.0, &ends[0].0, &format!("rank {r} of {p}: displacement"));
        assert!(e.2 == ends[0].2, "rank {r} of {p}: bond status");
    }
    ends.into_iter().next().unwrap()
}

/// Remove the checkpoints in `dir` of steps after `half` (of a run of `steps` steps), so a
/// restart takes the one of step `half`, which must be there (`what` names the run).
pub fn back_to_checkpoint(dir: &Path, half: usize, steps: usize, what: &str) {
    let ckpts = peridot::output::checkpoint::list(dir).unwrap();
    let steps_of: Vec<usize> = ckpts.iter().map(|c| c.0).collect();
    assert!(
        steps_of.contains(&half),
        "{what}: a checkpoint at {half}: {steps_of:?}"
    );
    for (step, path) in &ckpts {
        assert!(path.exists() && *step <= steps, "{what}: {path:?}");
        if *step > half {
            std::fs::remove_file(path).unwrap();
        }
    }
}
