//! Cancelling a run through the library's flag (`solver::Cancel`, `RunOptions::cancel`): the
//! run stops at a step boundary, writes that step's snapshot, probe row, `damage.png` and a
//! `summary.json` with `status` `interrupted` and the step, and returns `Ok`. No signal is
//! involved (the command line's handlers are tested in `tests/cli.rs`).

mod common;

use common::cli::TINY;
use peridot::backend::BackendKind;
use peridot::output::{RunStatus, Summary};
use peridot::solver::{run, Cancel, RunOptions};
use peridot::Precision;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The tiny model's snapshots only at the first and last step (and where a run stops).
const NO_SNAPSHOTS: &str = "output.vtk_every=0";

fn options(out: &Path, cancel: &Cancel) -> RunOptions {
    RunOptions {
        backend: BackendKind::CpuLoop,
        precision: Precision::F64,
        out_dir: Some(out.to_path_buf()),
        quiet: true,
        subdomains: None,
        cancel: Some(cancel.clone()),
        process_start: None,
    }
}

/// The steps of the rows of `probes.csv` (none while it is missing).
fn probe_steps(path: &Path) -> Vec<usize> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect()
}

/// Run `text` (with `overrides`) into `out`, setting the cancel flag once `probes.csv` has a
/// row past step 0 (the run has stepped); returns the summary the run returned.
fn run_cancelled_while_stepping(text: &str, overrides: &[&str], out: &Path) -> Summary {
    let problem = common::problem(text, overrides);
    let cancel = Cancel::new();
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if probe_steps(&out.join("probes.csv")).iter().any(|&s| s > 0) {
                    cancel.cancel();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        let summary = run(problem, &options(out, &cancel));
        done.store(true, Ordering::SeqCst);
        summary.expect("a cancelled run returns Ok")
    })
}

/// What every interrupted run leaves: the status and step in the returned and the written
/// summary, the step's snapshot, its probe row (once), and the picture.
fn assert_interrupted(summary: &Summary, out: &Path, stem: &str) -> usize {
    assert_eq!(summary.status, RunStatus::Interrupted, "{summary:?}");
    let step = summary.stopped_at_step.expect("the step is recorded");
    assert_eq!(summary.steps, step);
    let written = Summary::read(&out.join("summary.json")).unwrap();
    assert_eq!(written.status, RunStatus::Interrupted);
    assert_eq!(written.stopped_at_step, Some(step));
    assert!(written.stopped_early.unwrap().contains("interrupted"));
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(text.contains("\"status\": \"interrupted\""), "{text}");
    assert!(out.join(format!("{stem}_{step:06}.vtu")).is_file());
    assert!(out.join("damage.png").is_file());
    let rows = probe_steps(&out.join("probes.csv"));
    assert_eq!(rows.last(), Some(&step), "the probe row of the step");
    assert_eq!(rows.iter().filter(|&&s| s == step).count(), 1, "{rows:?}");
    step
}

/// A flag set before the run: it stops at step 0, after step 0's outputs.
#[test]
fn a_run_cancelled_before_it_starts_stops_at_step_zero_with_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cancel = Cancel::new();
    cancel.cancel();
    let summary = run(
        common::problem(TINY, &[NO_SNAPSHOTS]),
        &options(&out, &cancel),
    )
    .unwrap();
    assert_eq!(assert_interrupted(&summary, &out, "tiny"), 0);
    assert!(!out.join("tiny_000040.vtu").exists());
}

/// A flag set from another thread while the explicit loop runs: the run stops within a
/// chunk, at a step past 0 and before its end, with that step's outputs.
#[test]
fn an_explicit_run_cancelled_while_stepping_stops_at_a_step_with_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let steps = 10_000_000;
    let summary = run_cancelled_while_stepping(
        TINY,
        &[
            &format!("solver.steps={steps}"),
            "output.probe_every=50",
            NO_SNAPSHOTS,
        ],
        &out,
    );
    let step = assert_interrupted(&summary, &out, "tiny");
    assert!(step >= 50 && step < steps, "stopped at {step}");
}

/// The same for adaptive dynamic relaxation, which reads the flag every iteration.
#[test]
fn an_adr_run_cancelled_while_iterating_stops_at_a_step_with_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let text = common::adr_strip(
        &common::material("pmb", None),
        "1e-5",
        "steps = 10000000\ntolerance = 1e-300",
        false,
    );
    let summary = run_cancelled_while_stepping(
        &text,
        &["output.probes=[\"right\"]", "output.probe_every=20"],
        &out,
    );
    let step = assert_interrupted(&summary, &out, "strip");
    assert!(step >= 20, "stopped at {step}");
    assert_eq!(summary.converged, Some(false));
}

/// Without a cancel the same model runs to its end: `status` `completed`, no step recorded.
#[test]
fn a_run_not_cancelled_is_completed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let summary = run(
        common::problem(TINY, &[NO_SNAPSHOTS]),
        &options(&out, &Cancel::new()),
    )
    .unwrap();
    assert_eq!(summary.status, RunStatus::Completed);
    assert_eq!(summary.stopped_at_step, None);
    assert_eq!(summary.stopped_early, None);
    let text = std::fs::read_to_string(out.join("summary.json")).unwrap();
    assert!(text.contains("\"status\": \"completed\""), "{text}");
}
