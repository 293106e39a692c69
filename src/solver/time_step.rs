//! The time step of an explicit run: the stable step of the problem (`theory.md`, the
//! per-node bound) times the safety factor, or the model's own `solver.dt` checked against
//! it. Seconds.

use crate::model::SolverKind;
use crate::setup::Problem;
use crate::{Error, Result};

/// Default factor on the stable time step.
pub const DEFAULT_SAFETY: f64 = 0.8;

/// Time step of a problem: `(dt, stable_dt, warnings)`. An explicit `solver.dt` above the
/// stable step is an error unless `solver.force_dt`.
pub fn choose_dt(problem: &Problem) -> Result<(f64, f64, Vec<String>)> {
    let s = &problem.model.solver;
    if s.kind == SolverKind::Adr {
        return Ok((1.0, 1.0, Vec::new()));
    }
    let stable = problem.stable_time_step();
    let safety = s.safety_factor.unwrap_or(DEFAULT_SAFETY);
    match s.dt {
        None => Ok((stable * safety, stable, Vec::new())),
        Some(dt) if dt <= stable => Ok((dt, stable, Vec::new())),
        Some(dt) if s.force_dt => {
            // The key that lets this run go on is solver.force_dt, already set: the warning
            // names it and does not suggest setting it again.
            let warning = format!(
                "solver.force_dt: solver.dt = {dt:.4e} s is above the stable time step \
                 {stable:.4e} s and is used anyway; the run may become unstable (remove \
                 solver.dt to use {:.4e} s, safety factor {safety})",
                stable * safety
            );
            Ok((dt, stable, vec![warning]))
        }
        Some(dt) => Err(Error::model(
            "solver.dt",
            format!(
                "{dt:.4e} s is above the stable time step {stable:.4e} s; lower it, remove it \
                 to use {:.4e} s (safety factor {safety}), or set solver.force_dt = true",
                stable * safety
            ),
        )),
    }
}

/// The stability check of a run at `step` (time `time`, s): an error where the largest
/// absolute displacement (`largest`, m; `None`: not a finite number) exceeds 10x the body's
/// diagonal.
pub(super) fn check_stability(
    problem: &Problem,
    step: usize,
    time: f64,
    largest: Option<f64>,
) -> Result<()> {
    let b = &problem.body;
    let size = (0..3)
        .map(|k| (b.bbox_max[k] - b.bbox_min[k]).powi(2))
        .sum::<f64>()
        .sqrt()
        .max(b.dx);
    let reason = match largest {
        None => "displacement is not a finite number".to_string(),
        Some(m) if m > 10.0 * size => {
            format!("displacement {m:.3e} m exceeds 10x the body size {size:.3e} m")
        }
        Some(_) => return Ok(()),
    };
    Err(Error::Unstable {
        step,
        time,
        reason,
        adr: problem.model.solver.kind == SolverKind::Adr,
    })
}
