//! Helpers shared by the integration tests: build problems from TOML text, run them in memory.
#![allow(dead_code)]

use peridot::backend::BackendKind;
use peridot::setup::Problem;
use peridot::solver::{simulate, Outcome, RunOptions};
use peridot::{Precision, Real};
use std::path::Path;

/// The keys `contract.md` requires in every `summary.json`.
pub const SUMMARY_KEYS: [&str; 13] = [
    "model",
    "nodes",
    "bonds",
    "steps",
    "backend",
    "precision",
    "dt",
    "wall_seconds",
    "phase_seconds",
    "node_steps_per_second",
    "peak_rss_bytes",
    "broken_bonds",
    "max_damage",
];

/// Parse, validate (with `--set` overrides) and discretize a model given as TOML text.
pub fn problem(text: &str, overrides: &[&str]) -> Problem {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let model = peridot::model::parse(text, "test.toml", &overrides).expect("valid test model");
    Problem::build(model, Path::new(".")).expect("test model discretizes")
}

/// Run a problem in memory on the CPU loop backend (no files).
pub fn run<T: Real>(problem: Problem) -> Outcome<T> {
    let opts = RunOptions {
        backend: BackendKind::CpuLoop,
        precision: Precision::F64,
        out_dir: None,
        quiet: true,
    };
    simulate::<T>(problem, &opts).expect("run succeeds")
}

/// Least-squares slope of `y` against `x`.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

/// Material table for tests.
pub fn material(law: &str, nu: Option<f64>) -> String {
    let nu = nu
        .map(|v| format!("poisson_ratio = {v}\n"))
        .unwrap_or_default();
    format!("[material]\nmodel = \"{law}\"\nyoungs_modulus = 200e9\ndensity = 8000\n{nu}")
}
