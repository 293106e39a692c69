//! Benchmarks of the explicit step (`peridot bench`, `contract.md`): for each backend x
//! precision x size, time explicit steps (force, bond-break check, leapfrog update) of a model
//! and report one [`BenchRecord`] per combination, written as `bench.json`.
//!
//! What is timed is `Backend::advance_explicit` (the explicit leapfrog: forces, bond-break
//! check, update; a device backend runs it on the device) and nothing else: setup, the
//! neighbour search, backend creation and output are outside the clock. Damage checking is
//! always on (bonds break where the model has a critical stretch). A few warm-up steps run
//! first; then steps are timed in calls of `batch` steps (one step per call on CPU backends)
//! and `seconds_per_step` is the median over the calls, so a step slowed by another process
//! on a shared machine does not move it much.
//!
//! Units: seconds, bytes, GB = 1e9 bytes.

mod sizes;

pub use sizes::{scaled_problem, ScaledProblem};

use crate::backend::{self, BackendKind};
use crate::dynamics::{Explicit, ExplicitCall, Loads, State, StepTimes};
use crate::model::SolverKind;
use crate::setup::Problem;
use crate::solver::run::DEFAULT_SAFETY;
use crate::{Error, Precision, Real, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// One line of `bench.json`: one backend x precision x size. The first keys are the
/// contract's; the others say how the figure was taken.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct BenchRecord {
    /// Backend that ran (`auto` resolved to the one chosen).
    pub backend: String,
    /// `f32` or `f64`.
    pub precision: String,
    /// Spatial dimension (2 or 3).
    pub dim: usize,
    pub nodes: usize,
    /// Directed bonds (sum of family sizes).
    pub bonds: usize,
    /// Timed steps (warm-up steps not included).
    pub steps: usize,
    /// Median wall time of one explicit step, s (median over the timed calls, each call's
    /// time divided by its steps).
    pub seconds_per_step: f64,
    /// `nodes / seconds_per_step`: node-steps per second of the time-stepping loop (setup and
    /// output excluded, damage checking on).
    pub node_steps_per_second: f64,
    /// Minimal bytes a step moves by the backend's own count (`Backend::bytes_per_step`).
    pub bytes_per_step: usize,
    /// `bytes_per_step / seconds_per_step`, GB/s.
    pub achieved_gb_per_s: f64,
    /// Device-to-device copy bandwidth measured in the same run, GB/s (GPU backends; `null`
    /// on CPU backends).
    pub copy_gb_per_s: Option<f64>,
    /// `achieved_gb_per_s` over the copy bandwidth: `copy_gb_per_s` on a GPU,
    /// `host_copy_gb_per_s` on the CPU.
    pub fraction_of_copy: Option<f64>,
    /// Bytes the backend holds for the model (`Backend::memory_bytes`).
    pub memory_bytes: usize,
    /// Non-zeros per sparse operator (matrix backends; empty for loop backends).
    pub nnz: BTreeMap<String, usize>,
    /// Model name.
    pub model: String,
    /// Lattice spacing the model ran at, m.
    pub dx: f64,
    /// Time step, s.
    pub dt: f64,
    /// Fastest and mean timed step, s.
    pub min_seconds_per_step: f64,
    pub mean_seconds_per_step: f64,
    /// Warm-up steps run before timing.
    pub warmup_steps: usize,
    /// Steps per timed call (`seconds_per_step` is the median over calls of call time /
    /// `batch_steps`).
    pub batch_steps: usize,
    /// Parallel host memory copy bandwidth of this machine (read + write bytes of a large
    /// `copy_from_slice` on all threads), GB/s; CPU backends only.
    pub host_copy_gb_per_s: Option<f64>,
    /// Threads of the CPU pool.
    pub threads: usize,
    /// CPU seconds this process used per timed step (all threads; Linux only). Compared with
    /// `threads x mean_seconds_per_step` it shows whether other processes took the cores.
    pub cpu_seconds_per_step: Option<f64>,
    /// Directed bonds broken when the timing ended.
    pub broken_bonds: usize,
}

/// What to run for one problem.
#[derive(Debug, Clone)]
pub struct BenchSettings {
    pub steps: usize,
    pub warmup: usize,
    /// Steps per timed call of `Backend::advance_explicit`; `None`: 1 on CPU backends (every
    /// step timed on its own), [`DEVICE_BATCH`] on the others (a device backend runs the loop
    /// on the device and synchronizes once per call).
    pub batch: Option<usize>,
    /// Host copy bandwidth to compare CPU backends with (see [`host_copy_gb_per_s`]).
    pub host_copy_gb_per_s: Option<f64>,
    /// Device-to-device copy bandwidth to compare GPU backends with (see
    /// [`device_copy_gb_per_s`]); `None` where no GPU backend runs.
    pub device_copy_gb_per_s: Option<f64>,
}

/// Steps per timed call on a device backend unless `--batch` says otherwise.
pub const DEVICE_BATCH: usize = 10;

/// Whether a backend kind runs on the CPU (its figures compare with the host copy).
fn on_cpu(name: &str) -> bool {
    name.starts_with("cpu")
}

/// Time step for benchmarking `problem` explicitly, and a note when it is not the model's:
/// the model's own `solver.dt` where it is explicit and stable at this size, else the stable
/// step times the safety factor (ADR models step by 1, which is not an explicit time step;
/// a model scaled by `--sizes` may have a `dt` above the stable step of the finer lattice).
pub fn bench_dt(problem: &Problem) -> (f64, Option<String>) {
    let p = problem;
    let s = &p.model.solver;
    let stable = p.stable_time_step();
    let auto = s.safety_factor.unwrap_or(DEFAULT_SAFETY) * stable;
    match (s.kind, s.dt) {
        (SolverKind::Explicit, Some(dt)) if dt <= stable || s.force_dt => (dt, None),
        (SolverKind::Explicit, Some(dt)) => (
            auto,
            Some(format!(
                "solver.dt = {dt:.4e} s is above the stable step {stable:.4e} s at this size; \
                 timing with {auto:.4e} s"
            )),
        ),
        _ => (auto, None),
    }
}

/// Benchmark one backend kind in one precision on `problem`. An error means the backend is
/// not available (or the model cannot be stepped); the caller reports it and goes on.
pub fn bench_one(
    problem: &Arc<Problem>,
    kind: BackendKind,
    precision: Precision,
    settings: &BenchSettings,
) -> Result<BenchRecord> {
    match precision {
        Precision::F32 => bench_typed::<f32>(problem, kind, settings),
        Precision::F64 => bench_typed::<f64>(problem, kind, settings),
    }
}

fn bench_typed<T: Real>(
    problem: &Arc<Problem>,
    kind: BackendKind,
    settings: &BenchSettings,
) -> Result<BenchRecord> {
    if settings.steps == 0 {
        return Err(Error::Usage {
            option: "--steps".into(),
            message: "must be at least 1".into(),
        });
    }
    let (dt, _) = bench_dt(problem);
    let mut backend = backend::create::<T>(kind, problem.clone(), None)?;
    let p = &**problem;
    let (n, d) = (p.body.len(), p.dim());
    let loads = Loads::new(p, dt);
    let mut state = State::<T>::at_rest(n * d);
    let damping = match p.model.solver.kind {
        SolverKind::Explicit => p.model.solver.damping.unwrap_or(0.0),
        SolverKind::Adr => 0.0,
    };
    let integrator = Explicit::of(p, dt, damping, true);
    let mut times = StepTimes::default();
    integrator.start(&mut state, &loads, backend.as_forces())?;
    let host_side = on_cpu(backend.name());
    let batch = settings
        .batch
        .unwrap_or(if host_side { 1 } else { DEVICE_BATCH })
        .max(1);
    if settings.warmup > 0 {
        backend.advance_explicit(ExplicitCall {
            integrator: &integrator,
            loads: &loads,
            state: &mut state,
            times: &mut times,
            steps: settings.warmup,
            full_sync: false,
        })?;
    }
    // Whole batches, at least one: `steps` rounded up to a multiple of `batch`.
    let batches = settings.steps.div_ceil(batch);
    let mut seconds = Vec::with_capacity(batches);
    let cpu0 = process_cpu_seconds();
    for _ in 0..batches {
        let t0 = Instant::now();
        backend.advance_explicit(ExplicitCall {
            integrator: &integrator,
            loads: &loads,
            state: &mut state,
            times: &mut times,
            steps: batch,
            full_sync: false,
        })?;
        seconds.push(t0.elapsed().as_secs_f64() / batch as f64);
    }
    let timed = batches * batch;
    let cpu = process_cpu_seconds()
        .zip(cpu0)
        .map(|(b, a)| (b - a) / timed as f64);
    if backend.max_abs_displacement(&state)?.is_none() {
        eprintln!(
            "warning: {} {}: the displacement became NaN while timing; the figures stand but \
             the model is unstable at dt = {dt:.4e} s",
            backend.name(),
            T::NAME
        );
    }
    let (median, min, mean) = stats(&mut seconds);
    let footprint = backend.footprint();
    let bytes = footprint.bytes_per_step;
    let achieved = bytes as f64 / median / 1e9;
    let copy = if host_side {
        None
    } else {
        settings.device_copy_gb_per_s
    };
    let host = if host_side {
        settings.host_copy_gb_per_s
    } else {
        None
    };
    let reference = if host_side { host } else { copy };
    Ok(BenchRecord {
        backend: backend.name().to_string(),
        precision: T::NAME.to_string(),
        dim: d,
        nodes: n,
        bonds: p.families.bonds(),
        steps: timed,
        seconds_per_step: median,
        node_steps_per_second: n as f64 / median,
        bytes_per_step: bytes,
        achieved_gb_per_s: achieved,
        copy_gb_per_s: copy,
        fraction_of_copy: reference.map(|c| achieved / c),
        memory_bytes: footprint.memory_bytes,
        nnz: footprint
            .operator_nnz
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        model: p.name.clone(),
        dx: p.body.dx,
        dt,
        min_seconds_per_step: min,
        mean_seconds_per_step: mean,
        warmup_steps: settings.warmup,
        batch_steps: batch,
        host_copy_gb_per_s: host,
        threads: rayon::current_num_threads(),
        cpu_seconds_per_step: cpu,
        broken_bonds: backend.broken_bonds(),
    })
}

/// Median, minimum and mean of `x` (sorted in place; not empty).
fn stats(x: &mut [f64]) -> (f64, f64, f64) {
    x.sort_by(f64::total_cmp);
    let k = x.len();
    let median = if k % 2 == 1 {
        x[k / 2]
    } else {
        0.5 * (x[k / 2 - 1] + x[k / 2])
    };
    (median, x[0], x.iter().sum::<f64>() / k as f64)
}

/// CPU time of this process so far, s: the sum over its threads of the time on a CPU from
/// `/proc/self/task/*/schedstat` (nanoseconds). `None` where that is not readable.
fn process_cpu_seconds() -> Option<f64> {
    let mut ns = 0u64;
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let path = entry.ok()?.path().join("schedstat");
        // A thread may end between listing and reading: skip it.
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        ns += text.split_whitespace().next()?.parse::<u64>().ok()?;
    }
    Some(ns as f64 * 1e-9)
}

/// Bandwidth of a parallel host memory copy of `bytes` bytes, GB/s, counting each byte read
/// once and written once (as `bytes_per_step` counts): the best of `repeats` copies after one
/// untimed copy that faults the pages in.
pub fn host_copy_gb_per_s(bytes: usize, repeats: usize) -> f64 {
    use rayon::prelude::*;
    const CHUNK: usize = 1 << 18;
    let len = (bytes / 8).max(CHUNK);
    let src: Vec<f64> = (0..len).into_par_iter().map(|k| k as f64).collect();
    let mut dst = vec![0.0f64; len];
    let mut best = f64::INFINITY;
    for r in 0..=repeats.max(1) {
        let t0 = Instant::now();
        dst.par_chunks_mut(CHUNK)
            .zip(src.par_chunks(CHUNK))
            .for_each(|(d, s)| d.copy_from_slice(s));
        let t = t0.elapsed().as_secs_f64();
        if r > 0 {
            best = best.min(t);
        }
    }
    std::hint::black_box(&dst);
    2.0 * (len * 8) as f64 / best / 1e9
}

/// Bandwidth of a device-to-device copy of `bytes` bytes on the GPU, GB/s, counting each
/// byte read once and written once: the best of `repeats` copies after one untimed copy.
/// An error where no GPU can be opened.
pub fn device_copy_gb_per_s(bytes: usize, repeats: usize) -> Result<f64> {
    use crate::gpu::{device::driver_error, Gpu};
    let gpu = Gpu::get()?;
    let stream = gpu.stream();
    let len = (bytes / 8).max(1);
    let src = stream.alloc_zeros::<f64>(len).map_err(driver_error)?;
    let mut dst = stream.alloc_zeros::<f64>(len).map_err(driver_error)?;
    let mut best = f64::INFINITY;
    for r in 0..=repeats.max(1) {
        gpu.synchronize()?;
        let t0 = Instant::now();
        stream.memcpy_dtod(&src, &mut dst).map_err(driver_error)?;
        gpu.synchronize()?;
        if r > 0 {
            best = best.min(t0.elapsed().as_secs_f64());
        }
    }
    Ok(2.0 * (len * 8) as f64 / best / 1e9)
}

/// Write `records` as `bench.json` (a JSON list) in `dir`, creating it.
pub fn write_json(dir: &Path, records: &[BenchRecord]) -> Result<std::path::PathBuf> {
    // a failed write removes the folders it created (`OutputFolder`)
    crate::output::OutputFolder::around(Some(dir), || {
        let path = dir.join("bench.json");
        let text = serde_json::to_string_pretty(records).expect("records serialize");
        std::fs::write(&path, text + "\n").map_err(|e| Error::io(&path, e))?;
        Ok(path)
    })
}
