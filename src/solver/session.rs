//! A run advanced step by step by a library caller (the Python package): the driver of
//! `peridot run` (`run.rs`: the time step, the backend, the outputs due on the way, the
//! stability checks, the summary), taken a chunk of steps at a time, with the state read and
//! written between chunks. The steps are those of `peridot run` on the same model, so a
//! session stepped to the end gives the run's result bit for bit. Explicit runs only: an ADR
//! run decides its own iterations (`run::run`).

use super::run::{Runner, Stop};
use super::RunOptions;
use crate::dynamics::State;
use crate::model::SolverKind;
use crate::output::{OutputFolder, Summary};
use crate::setup::Problem;
use crate::{Error, Real, Result};
use std::sync::Arc;

/// A run of one problem in precision `T`, stepped by the caller.
pub struct Session<T: Real> {
    runner: Runner<T>,
    /// Set when the run stopped early (cancelled at a step boundary).
    interrupted: bool,
}

impl<T: Real> Session<T> {
    /// Set up the run of `problem` as `peridot run` does (time step, backend, output folder
    /// and the outputs of step 0) and stop before its first step. An ADR model is refused.
    pub fn start(problem: Problem, opts: &RunOptions) -> Result<Self> {
        if problem.model.solver.kind == SolverKind::Adr {
            return Err(Error::model(
                "solver.kind",
                "\"adr\": a session steps explicit runs; run an ADR model to its end with \
                 solver::run (Python: peridot.run) or solve it with solve-static",
            ));
        }
        let runner = OutputFolder::around(opts.out_dir.as_deref(), || {
            let mut runner = Runner::start(problem, opts, None, None)?;
            runner.start_explicit()?;
            Ok(runner)
        })?;
        Ok(Session {
            runner,
            interrupted: false,
        })
    }

    /// Advance by `steps` steps, or fewer at the model's last step (`solver.steps`) or where
    /// the cancel flag stops it; returns the steps taken. The state is current on return. An
    /// unstable run returns its error and stays where it stopped.
    pub fn step(&mut self, steps: usize) -> Result<usize> {
        let before = self.runner.state.step;
        if self.interrupted {
            return Ok(0);
        }
        let target = before.saturating_add(steps);
        if self.runner.advance_to(target)? == Stop::Interrupted {
            self.interrupted = true;
        }
        Ok(self.runner.state.step - before)
    }

    /// Steps done so far.
    pub fn steps_done(&self) -> usize {
        self.runner.state.step
    }

    /// The model's number of steps (`solver.steps`).
    pub fn steps_total(&self) -> usize {
        self.runner.problem.model.solver.steps
    }

    /// Whether the run is at its last step or was stopped there by its cancel flag.
    pub fn finished(&self) -> bool {
        self.interrupted || self.steps_done() >= self.steps_total()
    }

    /// The time step, s.
    pub fn dt(&self) -> f64 {
        self.runner.integrator().dt
    }

    /// The problem being run.
    pub fn problem(&self) -> &Arc<Problem> {
        &self.runner.problem
    }

    /// The state after the last step (displacement, velocity, acceleration, force density).
    pub fn state(&self) -> &State<T> {
        &self.runner.state
    }

    /// Change the state between steps with `edit` (a displacement or velocity written by
    /// the caller); then the conditions are imposed at the state's time and the forces and
    /// accelerations computed again from the new displacement (`Explicit::refresh`), so the
    /// next step starts from it on any backend. Returns the bonds broken by the new
    /// displacement.
    pub fn edit_state(&mut self, edit: impl FnOnce(&mut State<T>)) -> Result<usize> {
        let r = &mut self.runner;
        edit(&mut r.state);
        let integrator = r.integrator();
        let broken = integrator.refresh(&mut r.state, &r.loads, r.backend.as_forces())?;
        r.backend.state_changed(&r.state)?;
        Ok(broken)
    }

    /// Each bond's status in CSR order of the families: 1 intact, 0 broken.
    pub fn bond_status(&self) -> Result<Vec<u8>> {
        self.runner.backend.bond_status()
    }

    /// The local damage (the `beta V`-weighted fraction of each node's bonds lost).
    pub fn damage(&mut self) -> Result<Vec<f64>> {
        let mut phi = vec![T::zero(); self.runner.problem.body.len()];
        self.runner.backend.as_forces().damage(&mut phi)?;
        Ok(phi.into_iter().map(|x| x.f64()).collect())
    }

    /// The summary of the run so far, as `summary.json` would have it if the run ended
    /// here (status `completed` once all its steps are done); nothing is written.
    pub fn summary(&mut self) -> Result<Summary> {
        let status = self.stop();
        self.runner.tally(status)
    }

    /// End the run: the damage picture, the last snapshot's write and `summary.json`, as at
    /// the end of `peridot run`; returns the summary.
    pub fn finish(self) -> Result<Summary> {
        let stop = self.stop();
        self.runner.finish(Ok(stop)).map(|o| o.summary)
    }

    fn stop(&self) -> Stop {
        match self.interrupted {
            true => Stop::Interrupted,
            false if self.finished() => Stop::Completed,
            false => Stop::Running,
        }
    }
}
