//! The run driver: picks the time step, creates the backend, runs the explicit or ADR loop,
//! writes VTK snapshots, probes, the damage picture and `summary.json`, and reports progress.
//! An unstable run stops with the step and a suggestion, keeping what was written; a
//! cancelled one (`RunOptions::cancel`, `cancel.rs`) stops at a step boundary, writes a
//! restart checkpoint and then that step's outputs. Checkpoints are also written every
//! `output.checkpoint_every` steps, and [`run_restarted`] resumes from the latest one
//! (`restart.rs`). `summary.json`'s `status` says which way a run ended.

use super::cancel::Cancel;
use super::outputs::{self, initial_summary};
use super::ranks::{self, Ranks};
use super::restart::{self, Saver};
use super::snapshot_thread::SnapshotThread;
use super::time_step::check_stability;
pub use super::time_step::{choose_dt, DEFAULT_SAFETY};
use super::tips::TipOutput;
use crate::backend::partitioned::SubdomainRequest;
use crate::backend::{self, Backend, BackendKind};
use crate::dynamics::{Adr, AdrCall, Explicit, ExplicitCall, Loads, State, StepTimes};
use crate::gpu::Gpu;
use crate::model::SolverKind;
use crate::output::checkpoint::{AdrPlace, Checkpoint};
use crate::output::{
    peak_rss_bytes, OutputFolder, OutputSeconds, ProbeRegions, ProbeWriter, Progress, RunStatus,
    Summary,
};
use crate::setup::{since, timed, Problem};
use crate::{Error, Precision, Real, Result};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// How to run a problem.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub backend: BackendKind,
    pub precision: Precision,
    /// Output folder (created if missing); `None` writes nothing (library use, tests).
    pub out_dir: Option<PathBuf>,
    /// Suppress the progress display.
    pub quiet: bool,
    /// Run in subdomains (`--subdomains`, `--gpu-memory-budget`); `None`: in core unless
    /// the model sets `solver.gpu_memory_budget`.
    pub subdomains: Option<crate::backend::partitioned::SubdomainRequest>,
    /// A flag that stops the run at the next step boundary when set (from another thread or
    /// a signal handler); the run then writes that step's outputs and a summary with
    /// `status` `interrupted`, and returns `Ok`. `None`: the run cannot be cancelled.
    pub cancel: Option<Cancel>,
    /// When the process started (the command line takes it first thing): the summary then
    /// has `process_seconds` and `setup.to_first_step`. `None`: both left out.
    pub process_start: Option<Instant>,
}

/// Steps between stability checks; also the longest chunk the driver hands a backend, so a
/// cancel is seen within this many steps.
const STABILITY_EVERY: usize = 10;
/// Default ADR tolerance on the relative residual.
pub const DEFAULT_TOLERANCE: f64 = 1e-8;

/// Run `problem` and write its outputs; returns the summary (also in `summary.json`).
pub fn run(problem: Problem, opts: &RunOptions) -> Result<Summary> {
    match opts.precision {
        Precision::F32 => simulate::<f32>(problem, opts).map(|o| o.summary),
        Precision::F64 => simulate::<f64>(problem, opts).map(|o| o.summary),
    }
}

/// Resume a run of `problem` from the latest checkpoint in `from` (the output folder of an
/// earlier run of the same model: `from/checkpoints/`) and run on to `solver.steps`, writing
/// into `opts.out_dir` (which may be `from`). A checkpoint of another model, precision or
/// version is refused naming what differs; a damaged newest one is passed over, with a
/// warning, for the one before. Returns the summary, with `restarted_from_step`.
pub fn run_restarted(problem: Problem, opts: &RunOptions, from: &Path) -> Result<Summary> {
    match opts.precision {
        Precision::F32 => simulate_from::<f32>(problem, opts, Some(from)).map(|o| o.summary),
        Precision::F64 => simulate_from::<f64>(problem, opts, Some(from)).map(|o| o.summary),
    }
}

/// The end of a run: final state, the backend (bond status, damage), the summary and the
/// problem it ran.
pub struct Outcome<T: Real> {
    pub state: State<T>,
    pub backend: Box<dyn Backend<T>>,
    pub summary: Summary,
    pub problem: Arc<Problem>,
}

/// Run `problem` in precision `T` (ignoring `opts.precision`) and return the final state.
/// An error that leaves the output folder empty (before the first step: the time step, a
/// backend that fails to start) removes it again where this run created it.
pub fn simulate<T: Real>(problem: Problem, opts: &RunOptions) -> Result<Outcome<T>> {
    simulate_from(problem, opts, None)
}

/// [`simulate`], or with `restart` a run resumed from the latest checkpoint in that folder
/// (see [`run_restarted`]).
pub fn simulate_from<T: Real>(
    problem: Problem,
    opts: &RunOptions,
    restart: Option<&Path>,
) -> Result<Outcome<T>> {
    simulate_from_in(problem, opts, restart, None, true)
}

/// [`simulate_from`], of this rank's part with `ranks` (`distributed.rs`), ending with the
/// whole state on every rank where `whole_end_state` says (else each rank's owned values).
pub(super) fn simulate_from_in<T: Real>(
    problem: Problem,
    opts: &RunOptions,
    restart: Option<&Path>,
    ranks: Option<Ranks>,
    whole_end_state: bool,
) -> Result<Outcome<T>> {
    let dir = opts.out_dir.as_deref();
    OutputFolder::around(dir, || {
        simulate_in::<T>(problem, opts, restart, ranks, whole_end_state)
    })
}

/// [`simulate_from`] once the output folder exists.
fn simulate_in<T: Real>(
    problem: Problem,
    opts: &RunOptions,
    restart: Option<&Path>,
    ranks: Option<Ranks>,
    whole_end_state: bool,
) -> Result<Outcome<T>> {
    let mut runner = Runner::start(problem, opts, restart, ranks)?;
    runner.whole_end_state = whole_end_state;
    let outcome = match runner.problem.model.solver.kind {
        SolverKind::Explicit => runner.run_explicit(),
        SolverKind::Adr => runner.run_adr(),
    };
    runner.finish(outcome)
}

impl<T: Real> Runner<T> {
    /// The time step, the backend and the outputs of a run of `problem` (resumed from the
    /// latest checkpoint in `restart`; this rank's part with `ranks`), with the setup's times
    /// in the summary.
    pub(super) fn start(
        mut problem: Problem,
        opts: &RunOptions,
        restart: Option<&Path>,
        ranks: Option<Ranks>,
    ) -> Result<Self> {
        let (chosen, seconds) = timed(|| choose_dt(&problem));
        let (dt, _stable, warnings) = chosen?;
        // (a rank's shared setup computed the stable step already, and timed it there)
        problem.setup.time_step = Some(problem.setup.time_step.unwrap_or(0.0) + seconds);
        for w in &warnings {
            eprintln!("warning: {w}");
        }
        let compiled = || Gpu::opened().map_or(0.0, |g| g.compile_seconds());
        let compiled_before = compiled();
        let resume = match restart {
            Some(from) => {
                let mut ckpt = restart::load_latest::<T>(&problem, from)?;
                let status = std::mem::take(&mut ckpt.bond_status);
                restart::adopt_bond_status(&mut problem, status, ranks.is_some())?;
                problem.restored = std::mem::take(&mut ckpt.history).convert::<f64>();
                Some((ckpt, from))
            }
            None => None,
        };
        let t_setup = Instant::now();
        let mut problem = Arc::new(problem);
        let subdomains = SubdomainRequest::resolve(
            opts.subdomains.clone(),
            &problem,
            opts.backend,
            T::PRECISION,
        );
        let (backend, ranks, rank_setup) = match ranks {
            Some(ranks) => {
                let made = ranks::backend::<T>(&problem, opts.backend, ranks)?;
                // (the part holds its bonds' status: a lean problem's held one goes)
                Arc::get_mut(&mut problem).map(restart::release_held_status);
                made
            }
            None => (
                backend::create::<T>(opts.backend, problem.clone(), subdomains.as_ref())?,
                None,
                Default::default(),
            ),
        };
        let assembly = since(t_setup);
        let compilation = compiled() - compiled_before;
        let (runner, outputs_seconds) =
            timed(|| Runner::new(problem, backend, dt, opts, resume, ranks));
        let mut runner = runner?;
        runner.summary.warnings = warnings;
        runner.summary.setup.outputs = Some(outputs_seconds);
        runner.summary.phase_seconds.assembly = Some(assembly);
        let setup = &mut runner.summary.setup;
        setup.add_compilation(compilation);
        // (a rank's cut, subdomain, part; then a GPU's kernels and upload, a CPU's assembly)
        let own = assembly - ranks::record_setup(setup, rank_setup);
        match runner.backend.name().starts_with("gpu") {
            true => setup.upload = Some((own - compilation).max(0.0)),
            false => setup.assembly = Some(own.max(0.0)),
        }
        Ok(runner)
    }
}

/// How the time loop of a run ended, when no error stopped it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    /// It ran all its steps (or an ADR run converged).
    Completed,
    /// A session (`session.rs`) has steps to go.
    Running,
    /// The cancel flag stopped it at the current step.
    Interrupted,
}

/// Everything a run carries between steps.
pub(super) struct Runner<T: Real> {
    pub(super) problem: Arc<Problem>,
    pub(super) backend: Box<dyn Backend<T>>,
    pub(super) loads: Loads,
    pub(super) state: State<T>,
    dt: f64,
    opts: RunOptions,
    /// The snapshots' writer (a thread of its own).
    pub(super) vtk: Option<SnapshotThread>,
    pub(super) probes: Option<ProbeWriter>,
    /// Whether probe rows are written (on every rank of a distributed run, which computes
    /// them together; rank 0 holds the writer).
    probes_on: bool,
    /// The ranks of a distributed run.
    ranks: Option<Ranks>,
    /// Across ranks: whether the run ends with the whole state on every rank (the outcome's).
    pub(super) whole_end_state: bool,
    /// The regions of the probe file's columns (empty without probes).
    probe_regions: ProbeRegions,
    progress: Progress,
    times: StepTimes,
    /// The output phase by kind of output (`summary.json` `output_seconds`).
    pub(super) out_times: OutputSeconds,
    summary: Summary,
    summary_start: Instant,
    /// The last steps a probe row and a snapshot were written at.
    probe_step: Option<usize>,
    snapshot_step: Option<usize>,
    /// `crack_tips.csv` and its tracker, where the body can crack.
    pub(super) tips: Option<TipOutput>,
    /// Writes the checkpoints (where there is an output folder).
    pub(super) saver: Option<Saver>,
    /// The step a restarted run resumed from.
    resumed: Option<usize>,
    /// Where a restarted ADR run's loop stood, until `run_adr` takes it up.
    resume_adr: Option<AdrPlace<T>>,
}

impl<T: Real> Runner<T> {
    fn new(
        problem: Arc<Problem>,
        backend: Box<dyn Backend<T>>,
        dt: f64,
        opts: &RunOptions,
        resume: Option<(Checkpoint<T>, &Path)>,
        ranks: Option<(Ranks, crate::output::Pieces)>,
    ) -> Result<Self> {
        let dir = opts.out_dir.as_deref();
        let ((vtk, probes), ranks) = match (&resume, ranks) {
            (r, Some((ranks, pieces))) => {
                let resume = r.as_ref().map(|(c, from)| (c, *from));
                let opened = ranks::open_outputs(&problem, dir, &ranks, pieces, resume)?;
                (opened, Some(ranks))
            }
            (Some((ckpt, from)), _) => (restart::resume_outputs(&problem, ckpt, from, dir)?, None),
            (None, None) => (outputs::open_outputs(&problem, dir)?, None),
        };
        let probes_on = probes.is_some() || (ranks.is_some() && ranks::probes_on(&problem, dir));
        let resumed = resume.as_ref().map(|(ckpt, _)| ckpt.state.step);
        let tips_place = resume.as_ref().and_then(|(ckpt, _)| ckpt.tips.as_ref());
        let writes = ranks.as_ref().is_none_or(Ranks::writes);
        let tips = TipOutput::open(&problem, dir, tips_place, writes)?;
        let (state, resume_adr) = match resume {
            Some((ckpt, _)) => (ckpt.state, ckpt.adr),
            None => (State::initial(&problem), None),
        };
        let saver = (dir.filter(|_| ranks::checkpoints(ranks.as_ref(), backend.name())))
            .map(|d| Saver::new(&problem, d, resumed.unwrap_or(0), writes));
        let mut summary = initial_summary(&problem, backend.name(), T::NAME, dt);
        summary.restarted_from_step = resumed;
        let steps = problem.model.solver.steps as u64;
        let quiet = opts.quiet || ranks.as_ref().is_some_and(|r| !r.writes());
        let progress = if quiet || dir.is_none() {
            Progress::hidden(steps)
        } else {
            Progress::new(steps, &problem.name)
        };
        let probe_regions = outputs::probe_regions(&problem);
        let vtk = vtk
            .map(|series| SnapshotThread::start(series, problem.clone()))
            .transpose()?;
        Ok(Runner {
            loads: Loads::new(&problem, dt),
            state,
            summary,
            dt,
            opts: opts.clone(),
            vtk,
            probes,
            probes_on,
            ranks,
            whole_end_state: true,
            probe_regions,
            progress,
            times: StepTimes::default(),
            out_times: OutputSeconds::default(),
            summary_start: Instant::now(),
            probe_step: None,
            snapshot_step: None,
            tips,
            saver,
            resumed,
            resume_adr,
            backend,
            problem,
        })
    }

    /// The explicit leapfrog of the model's solver.
    pub(super) fn integrator(&self) -> Explicit {
        let s = &self.problem.model.solver;
        Explicit::of(&self.problem, self.dt, s.damping.unwrap_or(0.0), s.damage)
    }

    fn run_explicit(&mut self) -> Result<Stop> {
        self.start_explicit()?;
        self.advance_to(self.problem.model.solver.steps)
    }

    /// The state at t = 0 with its forces, and its outputs (a resumed run goes on from the
    /// checkpoint's state, whose outputs are written).
    pub(super) fn start_explicit(&mut self) -> Result<()> {
        if self.resumed.is_none() {
            let t0 = Instant::now();
            let integrator = self.integrator();
            integrator.start(&mut self.state, &self.loads, self.backend.as_forces())?;
            self.observe(true)?;
            self.summary.setup.step_zero = Some(since(t0));
        }
        self.mark_first_step();
        Ok(())
    }

    /// Advance the explicit run to step `target` (at most the model's `solver.steps`),
    /// writing the outputs due on the way.
    pub(super) fn advance_to(&mut self, target: usize) -> Result<Stop> {
        let integrator = self.integrator();
        let steps = self.problem.model.solver.steps;
        let target = target.min(steps);
        // Advance to the next step where the host looks at the state (a stability check,
        // an output, the end), so a backend may run the steps in between on its own; only a
        // snapshot and the end need the whole state back (a probe row is reduced where the
        // state is, `Backend::probe_values`). The cancel flag is read before each call: once
        // it is set, a run whose host state is current stops there; otherwise one more step
        // brings the whole state back first.
        let mut synced = true;
        while self.state.step < target {
            let cancelled = self.cancelled();
            if cancelled && synced {
                return self.interrupt();
            }
            let step = self.state.step;
            let writes = |s: usize| self.writes_at(s, s == steps);
            let (stop, full_sync) = if cancelled {
                (step + 1, true)
            } else {
                let stop = (step + 1..=target)
                    .find(|&s| s % STABILITY_EVERY == 0 || s == target || writes(s))
                    .unwrap_or(target);
                (stop, stop == target || self.whole_state_due(stop, false))
            };
            synced = full_sync;
            self.backend.advance_explicit(ExplicitCall {
                integrator: &integrator,
                loads: &self.loads,
                state: &mut self.state,
                times: &mut self.times,
                steps: stop - step,
                full_sync,
            })?;
            self.check_stability()?;
            self.observe(self.state.step == steps)?;
            self.checkpoint_if_due(None)?;
        }
        Ok(Stop::Completed)
    }

    fn run_adr(&mut self) -> Result<Stop> {
        let p = &self.problem;
        let s = &p.model.solver;
        let bounds = p.row_bounds();
        let mut adr = Adr::<T>::new(&bounds, p.dim(), s.damage);
        let tol = s.tolerance.unwrap_or(DEFAULT_TOLERANCE);
        let (steps, load_steps) = (s.steps, s.load_steps);
        let mut place = (0, 0);
        if let Some(resumed) = self.resume_adr.take() {
            adr.restore(resumed.history);
            place = (resumed.load_step, resumed.iteration);
        } else {
            self.loads.initial_velocity(&mut self.state.v);
            // Start from the boundary values at t = 0 (the full value of an unramped
            // prescribed displacement), so that the first residual sees them: otherwise a
            // body loaded only by an unramped displacement has zero force at u = 0 and
            // "converges" at once.
            self.loads.impose(0.0, &mut self.state.u, &mut self.state.v);
            self.state.v.iter_mut().for_each(|v| *v = T::zero());
            self.observe(true)?;
        }
        let stopped = match load_steps {
            None => self.adr_iterations(&mut adr, tol, steps)?,
            Some(l) => self.adr_load_steps(&mut adr, tol, (steps, l), place)?,
        };
        self.backend.sync_state(&mut self.state)?;
        self.summary.converged = Some(adr.residual < tol);
        self.summary.static_residual = Some(adr.residual);
        match stopped {
            Some(place) => {
                self.save_checkpoint(Some((&mut adr, place)))?;
                self.interrupt()
            }
            None => Ok(Stop::Completed),
        }
    }

    /// Record the time from process start to here, where the time loop begins.
    fn mark_first_step(&mut self) {
        self.summary.setup.to_first_step = self.opts.process_start.map(since);
    }

    /// ADR without load steps: one iteration per increment of the load, up to `steps`
    /// iterations or convergence once the load is static. Returns where a cancel stopped it.
    fn adr_iterations(
        &mut self,
        adr: &mut Adr<T>,
        tol: f64,
        steps: usize,
    ) -> Result<Option<(usize, usize)>> {
        while self.state.step < steps {
            if self.cancelled() {
                return Ok(Some((0, 0)));
            }
            self.timed_iteration(adr, 1.0)?;
            self.check_stability()?;
            let converged = adr.residual < tol;
            let done = converged && self.loads.is_static_after(self.state.time);
            self.observe_adr(done || self.state.step == steps)?;
            self.checkpoint_if_due(Some((adr, (0, 0))))?;
            if done {
                break;
            }
        }
        Ok(None)
    }

    /// ADR in `l` load steps of `steps / l` iterations at most, from `place` (load steps
    /// done, iterations done in the next): each relaxed to the tolerance. Returns where a
    /// cancel stopped it.
    fn adr_load_steps(
        &mut self,
        adr: &mut Adr<T>,
        tol: f64,
        (steps, l): (usize, usize),
        place: (usize, usize),
    ) -> Result<Option<(usize, usize)>> {
        let per = (steps / l).max(1);
        let h = steps as f64 / l as f64;
        let (mut j, mut i) = place;
        while j < l {
            while i < per {
                if self.cancelled() {
                    return Ok(Some((j, i)));
                }
                self.timed_iteration(adr, if i == 0 { h } else { 0.0 })?;
                i += 1;
                if i > 1 && adr.residual < tol {
                    break;
                }
            }
            self.check_stability()?;
            self.observe_adr(true)?;
            (j, i) = (j + 1, 0);
            self.checkpoint_if_due(Some((adr, (j, 0))))?;
        }
        Ok(None)
    }

    /// Whether the run's cancel flag is set.
    pub(super) fn cancelled(&self) -> bool {
        self.opts.cancel.as_ref().is_some_and(Cancel::is_cancelled)
    }

    /// Stop a cancelled run at the current step, whose state is on the host: write the
    /// step's probe row and snapshot where they are not written yet (the picture and the
    /// summary follow in [`Runner::finish`]). The checkpoint of the step comes first (an
    /// ADR run writes its own, with its history, before calling this).
    fn interrupt(&mut self) -> Result<Stop> {
        if self.problem.model.solver.kind == SolverKind::Explicit {
            self.save_checkpoint(None)?;
        }
        let step = self.state.step;
        self.progress.set(step as u64);
        if self.probe_step != Some(step) {
            self.write_probes()?;
        }
        if self.snapshot_step != Some(step) {
            self.write_snapshot()?;
        }
        Ok(Stop::Interrupted)
    }

    /// One ADR iteration, by the backend (on a device the state stays there).
    fn timed_iteration(&mut self, adr: &mut Adr<T>, h: f64) -> Result<()> {
        let t0 = Instant::now();
        self.backend.advance_adr(AdrCall {
            adr,
            loads: &self.loads,
            state: &mut self.state,
            h,
        })?;
        self.times.forces += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// [`Runner::observe`] after an ADR iteration, bringing the state to the host first
    /// when a snapshot is written.
    fn observe_adr(&mut self, last: bool) -> Result<()> {
        if self.whole_state_due(self.state.step, last) {
            let t0 = Instant::now();
            self.backend.sync_state(&mut self.state)?;
            self.times.transfers += t0.elapsed().as_secs_f64();
        }
        self.observe(last)
    }

    /// Stop with a clear error on NaN or blow-up (`time_step::check_stability`) at the
    /// steps of a stability check.
    fn check_stability(&mut self) -> Result<()> {
        let step = self.state.step;
        if !step.is_multiple_of(STABILITY_EVERY) && step != self.problem.model.solver.steps {
            return Ok(());
        }
        let largest = self.backend.max_abs_displacement(&self.state)?;
        check_stability(&self.problem, step, self.state.time, largest)
    }
}

impl<T: Real> Runner<T> {
    /// Whether [`Runner::observe`] writes anything (probes, crack tips or a snapshot) or a
    /// checkpoint is due after `step`.
    fn writes_at(&self, step: usize, last: bool) -> bool {
        let tips_due = self.tips.as_ref().is_some_and(|t| t.due(step, last));
        self.whole_state_due(step, last) || self.probe_due(step, last) || tips_due
    }

    /// Whether the host needs the whole state after `step`: a snapshot or a checkpoint is
    /// due (probe rows and crack tips are read where the state is).
    fn whole_state_due(&self, step: usize, last: bool) -> bool {
        self.snapshot_due(step, last) || self.saver.as_ref().is_some_and(|s| s.due(step))
    }

    /// Whether a snapshot is written after `step` (`last`: the run's last step).
    fn snapshot_due(&self, step: usize, last: bool) -> bool {
        let every = self.problem.model.output.vtk_every;
        self.vtk.is_some() && (step == 0 || last || (every > 0 && step.is_multiple_of(every)))
    }

    /// Whether a probe row is written after `step` (`last`: the run's last step).
    fn probe_due(&self, step: usize, last: bool) -> bool {
        let steps = self.problem.model.solver.steps;
        let every = (self.problem.model.output.probe_every).unwrap_or((steps / 100).max(1));
        self.probes_on && (step.is_multiple_of(every) || last)
    }

    /// Progress, probes and snapshots after a step; `last` forces a snapshot.
    fn observe(&mut self, last: bool) -> Result<()> {
        let step = self.state.step;
        self.progress.set(step as u64);
        let (vtk_due, probe_due) = (self.snapshot_due(step, last), self.probe_due(step, last));
        let tips_due = self.tips.as_ref().is_some_and(|t| t.due(step, last));
        if !vtk_due && !probe_due && !tips_due {
            return Ok(());
        }
        if let (Some(tips), true) = (self.tips.as_mut(), tips_due) {
            let t0 = Instant::now();
            tips.sample(&self.problem, step, self.state.time, self.backend.as_mut())?;
            self.out_times.crack_tips += since(t0);
        }
        if probe_due {
            self.write_probes()?;
        }
        if vtk_due {
            self.write_snapshot()?;
        }
        Ok(())
    }

    fn write_probes(&mut self) -> Result<()> {
        if !self.probes_on {
            return Ok(());
        }
        let t0 = Instant::now();
        let values = self
            .backend
            .probe_values(&self.state, &self.probe_regions)?;
        let impactors = outputs::impactor_values(&self.state);
        if let Some(writer) = self.probes.as_mut() {
            writer.write_row_with(self.state.step, self.state.time, &values, &impactors)?;
        }
        self.probe_step = Some(self.state.step);
        self.out_times.probes += since(t0);
        Ok(())
    }

    /// The snapshot of the current step (on a rank: its piece, `ranks.rs`) to the writer.
    fn write_snapshot(&mut self) -> Result<()> {
        if self.vtk.is_none() {
            return Ok(());
        }
        let t0 = Instant::now();
        let (backend, state) = (self.backend.as_mut(), &mut self.state);
        let snapshot = match self.ranks.is_some() {
            true => ranks::snapshot_piece(backend, state, &self.problem)?,
            false => outputs::snapshot(backend.as_forces(), state, &self.problem)?,
        };
        if let Some(vtk) = self.vtk.as_mut() {
            vtk.send(snapshot)?;
        }
        self.snapshot_step = Some(self.state.step);
        self.out_times.snapshots += since(t0);
        Ok(())
    }

    /// The summary of the run so far, as if it ended here with `stop` (nothing written).
    pub(super) fn tally(&mut self, stop: Stop) -> Result<Summary> {
        let (state, problem) = (&mut self.state, &self.problem);
        let end = (self.ranks.as_ref(), (false, false));
        let (_, max_damage) =
            ranks::end_damage(self.backend.as_mut(), (state, problem), end.0, end.1)?;
        self.fill_summary(max_damage, &Ok(stop));
        Ok(self.summary.clone())
    }

    /// Fill the summary's counts and times from the run so far and its `outcome`;
    /// `max_damage` is the final damage's largest (0 where it could not be read).
    fn fill_summary(&mut self, max_damage: f64, outcome: &Result<Stop>) {
        let loop_seconds = self.times.forces + self.times.update + self.times.transfers;
        let footprint = self.backend.footprint();
        let on_gpu = self.backend.name().starts_with("gpu");
        let s = &mut self.summary;
        s.peak_gpu_bytes = on_gpu.then_some(footprint.memory_bytes as u64);
        (s.subdomains, s.ranks) = (footprint.subdomains, footprint.ranks);
        if self.times.transfers > 0.0 {
            s.phase_seconds.transfers = Some(self.times.transfers);
        }
        s.steps = self.state.step;
        s.final_time = self.state.time;
        s.last_checkpoint = self
            .saver
            .as_ref()
            .and_then(|c| c.written.as_ref())
            .map(|p| p.display().to_string());
        s.broken_bonds = self.backend.broken_bonds();
        s.max_damage = max_damage;
        s.crack_tips = self.tips.as_ref().map(TipOutput::summary);
        s.phase_seconds.forces = Some(self.times.forces);
        s.phase_seconds.update = Some(self.times.update);
        s.node_steps_per_second = if loop_seconds > 0.0 {
            (self.problem.body.len() * self.state.step) as f64 / loop_seconds
        } else {
            0.0
        };
        (s.status, s.stopped_at_step) = match outcome {
            Ok(Stop::Completed) => (RunStatus::Completed, None),
            Ok(Stop::Running) => (RunStatus::Running, None),
            Ok(Stop::Interrupted) => (RunStatus::Interrupted, Some(self.state.step)),
            Err(Error::Unstable { step, .. }) => (RunStatus::Unstable, Some(*step)),
            Err(_) => (RunStatus::Failed, None),
        };
        s.stopped_early = match outcome {
            Ok(Stop::Completed | Stop::Running) => None,
            Ok(Stop::Interrupted) => Some(format!(
                "interrupted at step {} (t = {:.4e} s)",
                self.state.step, self.state.time
            )),
            Err(e) => Some(e.to_string()),
        };
        s.phase_seconds.output = Some(self.out_times.on_run_thread());
        s.output_seconds = self.opts.out_dir.is_some().then_some(self.out_times);
        s.wall_seconds = self.summary_start.elapsed().as_secs_f64();
        s.peak_rss_bytes = peak_rss_bytes();
        s.process_seconds = self.opts.process_start.map(since);
    }

    /// Write the picture and the summary, whatever the outcome; return the outcome (or,
    /// after a run that went well, the fault that kept the damage from being read).
    pub(super) fn finish(mut self, outcome: Result<Stop>) -> Result<Outcome<T>> {
        self.progress.finish();
        if let (Some(ranks), Err(e)) = (&self.ranks, &outcome) {
            ranks::abort_unless_collective(ranks, e);
        }
        let writes = self.ranks.as_ref().is_none_or(Ranks::writes);
        let t0 = Instant::now();
        // (across ranks the end state whole on every rank where the caller reads it; the
        // damage whole where the picture is drawn: `ranks::end_damage`)
        let picture = self.opts.out_dir.is_some() && self.problem.model.output.image;
        let (state, problem) = (&mut self.state, &self.problem);
        let end = (self.ranks.as_ref(), (self.whole_end_state, picture));
        let damage = ranks::end_damage(self.backend.as_mut(), (state, problem), end.0, end.1);
        let (phi, max_damage, outcome) = match (damage, outcome) {
            (Ok((phi, max)), outcome) => (phi, max, outcome),
            (Err(e), Ok(_)) => (Vec::new(), 0.0, Err(e)),
            (Err(_), outcome) => (Vec::new(), 0.0, outcome),
        };
        if let (Some(dir), false, true) = (&self.opts.out_dir, phi.is_empty(), writes) {
            outputs::write_picture(&self.problem, dir, &phi)?;
        }
        self.out_times.picture += since(t0);
        // Every snapshot on disk before the summary says the run ended.
        let t0 = Instant::now();
        let written = match self.vtk.as_mut() {
            Some(vtk) => vtk
                .finish()
                .map(|busy| self.out_times.snapshot_writer = busy),
            None => Ok(()),
        };
        self.out_times.snapshots += since(t0);
        let outcome = match (written, outcome) {
            (Err(e), Ok(_)) => Err(e),
            (_, outcome) => outcome,
        };
        self.fill_summary(max_damage, &outcome);
        if let (Some(dir), true) = (&self.opts.out_dir, writes) {
            self.summary.write(&dir.join("summary.json"))?;
        }
        outcome.map(|_| Outcome {
            state: self.state,
            backend: self.backend,
            summary: self.summary,
            problem: self.problem,
        })
    }
}
