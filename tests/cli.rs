//! The command line as users meet it (`contract.md`): outputs of `run`, one-line errors with
//! a non-zero exit status for bad input, a time step above the stable one refused, and an
//! unstable run stopped with its step named while the outputs written so far are kept, and a
//! run stopped by SIGTERM or SIGINT after a step with that step's outputs and exit status
//! 143 or 130. `summary.json`'s `status` says which way each ended.

mod common;

use common::cli::{peridot, stderr, write_model, TINY};

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn run_writes_every_output() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let out = dir.path().join("out");
    let o = peridot(&["run", &model, "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in [
        "summary.json",
        "damage.png",
        "probes.csv",
        "tiny.pvd",
        "tiny_000040.vtu",
    ] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    for key in common::SUMMARY_KEYS {
        assert!(summary.get(key).is_some(), "summary.json lacks {key}");
    }
    assert_eq!(summary["nodes"], 200);
    assert_eq!(summary["steps"], 40);
    assert_eq!(summary["status"], "completed");
    assert!(summary.get("stopped_early").is_none() && summary.get("stopped_at_step").is_none());
    // the default backend is `auto`: what this machine resolves it to (cpu-loop without a GPU)
    let (auto, _) = peridot::backend::resolve_auto(peridot::Precision::F64);
    assert_eq!(summary["backend"], auto.name());
}

/// `summary.json` breaks the setup into phases (issue 23): a CPU run has parse, body,
/// neighbours, bonds, regions, time step and assembly, and no kernel compilation or upload;
/// the phases fit inside the time from process start to the first step, which fits inside
/// `process_seconds`; `phase_seconds.neighbors` is the breakdown's `neighbors`.
#[test]
fn summary_breaks_the_setup_into_phases() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let out = dir.path().join("out");
    let o = peridot(&[
        "run",
        &model,
        "--out",
        out.to_str().unwrap(),
        "--quiet",
        "--backend",
        "cpu-loop",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let setup = &summary["setup"];
    let seconds = |v: &serde_json::Value, key: &str| {
        v.get(key)
            .and_then(|x| x.as_f64())
            .unwrap_or_else(|| panic!("summary lacks {key}: {summary}"))
    };
    let mut sum = 0.0;
    for key in [
        "parse",
        "body",
        "neighbors",
        "bonds",
        "regions",
        "time_step",
        "assembly",
    ] {
        let s = seconds(setup, key);
        assert!(s >= 0.0, "{key} {s}");
        sum += s;
    }
    for absent in ["kernel_compilation", "upload"] {
        assert!(setup.get(absent).is_none(), "a CPU run has no {absent}");
    }
    assert_eq!(
        seconds(setup, "neighbors"),
        seconds(&summary["phase_seconds"], "neighbors")
    );
    assert_eq!(
        seconds(setup, "assembly"),
        seconds(&summary["phase_seconds"], "assembly")
    );
    let first = seconds(setup, "to_first_step");
    let process = seconds(&summary, "process_seconds");
    assert!(sum <= first && first <= process, "{sum} {first} {process}");
}

#[test]
fn info_and_validate_describe_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let o = peridot(&["info", &model]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(text.contains("nodes        200"), "{text}");
    assert!(text.contains("time step"), "{text}");
    assert!(text.contains("cpu-matrix f64 half"), "{text}");
    assert!(text.contains("gpu-matrix f64 half"), "{text}");
    assert!(peridot(&["validate", &model]).status.success());
}

/// `info` plans subdomains for a count or a GPU memory budget; a malformed size or an
/// impossible count is a one-line error naming the option.
#[test]
fn info_plans_subdomains_for_a_count_or_a_budget() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let o = peridot(&["info", &model, "--subdomains", "2"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(text.contains("count 2"), "{text}");
    assert!(text.contains("bytes per node: gpu-loop f32"), "{text}");
    assert!(text.contains("streamed (two slots)"), "{text}");
    let o = peridot(&["info", &model, "--gpu-memory-budget", "120KiB"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        text.contains("two streaming slots fit") && text.contains("of 0.117 MiB"),
        "{text}"
    );
    let o = peridot(&["info", &model, "--gpu-memory-budget", "70%"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(text.contains("two streaming slots fit"), "{text}");
    for (option, value) in [
        ("--gpu-memory-budget", "2XB"),
        ("--gpu-memory-budget", "0%"),
        ("--subdomains", "0"),
    ] {
        let o = peridot(&["info", &model, option, value]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(option), "{}", stderr(&o));
    }
}

/// An explicit GPU backend runs where a GPU is; elsewhere it is a one-line error naming the
/// backend and the alternative, never a panic.
#[test]
fn an_explicit_gpu_backend_runs_or_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    for backend in ["gpu-loop", "gpu-matrix"] {
        for precision in ["f64", "f32"] {
            let out = dir.path().join(format!("out-{backend}-{precision}"));
            let o = peridot(&[
                "run",
                &model,
                "--backend",
                backend,
                "--precision",
                precision,
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ]);
            let err = stderr(&o);
            assert!(!err.contains("panicked"), "{backend}: {err}");
            if o.status.success() {
                let summary: serde_json::Value = serde_json::from_str(
                    &std::fs::read_to_string(out.join("summary.json")).unwrap(),
                )
                .unwrap();
                assert_eq!(summary["backend"], backend);
            } else {
                assert_eq!(err.trim().lines().count(), 1, "{backend}: {err}");
                assert!(err.contains(&format!("backend {backend}")), "{err}");
                assert!(err.contains("--backend"), "{backend}: {err}");
            }
        }
    }
}

#[test]
fn bad_input_is_one_line_and_a_failure_status() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(
        dir.path(),
        &TINY.replace("youngs_modulus = 200e9", "youngs_modulus = -1"),
    );
    for cmd in ["validate", "run", "info"] {
        let o = peridot(&[cmd, &model, "--quiet"][..if cmd == "run" { 3 } else { 2 }]);
        assert!(!o.status.success(), "{cmd} accepted a negative modulus");
        let err = stderr(&o);
        assert_eq!(err.trim().lines().count(), 1, "{cmd}: {err}");
        assert!(err.contains("material.youngs_modulus"), "{cmd}: {err}");
        assert!(!err.contains("panicked"), "{cmd}: {err}");
    }
    let o = peridot(&["run", "no/such/model.toml"]);
    assert!(!o.status.success() && stderr(&o).contains("no/such/model.toml"));
}

#[test]
fn a_time_step_above_the_stable_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let o = peridot(&["run", &model, "--quiet", "--set", "solver.dt=1e-5"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("solver.dt"), "{}", stderr(&o));
    assert!(stderr(&o).contains("stable"), "{}", stderr(&o));
}

#[test]
fn an_unstable_run_stops_naming_the_step_and_keeps_its_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), &TINY.replace("steps = 40", "steps = 400"));
    let out = dir.path().join("out");
    let o = peridot(&[
        "run",
        &model,
        "--quiet",
        "--out",
        out.to_str().unwrap(),
        "--set",
        "solver.dt=1e-6",
        "--set",
        "solver.force_dt=true",
        "--set",
        "solver.damage=false",
    ]);
    assert!(!o.status.success(), "a 10x too large dt ran to the end");
    let err = stderr(&o);
    assert!(err.contains("unstable at step"), "{err}");
    assert!(err.contains("smaller solver.dt"), "{err}");
    let summary = std::fs::read_to_string(out.join("summary.json")).expect("summary kept");
    assert!(summary.contains("stopped_early"), "{summary}");
    assert!(out.join("tiny_000000.vtu").is_file(), "first snapshot kept");
    let summary: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(summary["status"], "unstable");
    let step = summary["stopped_at_step"]
        .as_u64()
        .expect("the step is recorded");
    assert!(err.contains(&format!("unstable at step {step} ")), "{err}");
}

/// The steps of the rows of `probes.csv` (none while it is missing).
fn probe_steps(path: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect()
}

/// Start `peridot run` on a tiny model given ten million steps (minutes of stepping), send
/// it `signal` once `probes.csv` has a row past step 0, and check what it leaves: the exit
/// status 128 + `signal`, one line on stderr, and the outputs of the step it stopped at.
fn assert_stopped_by(signal: i32, name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let out = dir.path().join("out");
    let mut child = Command::new(env!("CARGO_BIN_EXE_peridot"))
        .args(["run", &model, "--quiet", "--out", out.to_str().unwrap()])
        .args(["--backend", "cpu-loop", "--set", "solver.steps=10000000"])
        .args([
            "--set",
            "output.vtk_every=0",
            "--set",
            "output.probe_every=50",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // a bound on the waits below, for a machine that has stopped: not a timing assertion
    let patience = Duration::from_secs(600);
    let start = Instant::now();
    while !probe_steps(&out.join("probes.csv")).iter().any(|&s| s > 0) {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before it was sent {name}");
        }
        assert!(start.elapsed() < patience, "no step written");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: sends a signal to the child this test started and has not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > patience {
            child.kill().unwrap();
            panic!("the run went on after {name}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(128 + signal), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("interrupted by {name} at step")),
        "{err}"
    );
    let text = std::fs::read_to_string(out.join("summary.json")).expect("summary written");
    let summary: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(summary["status"], "interrupted", "{text}");
    let step = summary["stopped_at_step"]
        .as_u64()
        .expect("the step is recorded");
    assert_eq!(summary["steps"], step);
    assert!(step >= 50 && step < 10_000_000, "stopped at {step}");
    assert!(
        out.join(format!("tiny_{step:06}.vtu")).is_file(),
        "snapshot of the step"
    );
    assert!(out.join("damage.png").is_file());
    let rows = probe_steps(&out.join("probes.csv"));
    assert_eq!(rows.last(), Some(&step), "probe row of the step");
}

#[test]
fn sigterm_stops_a_run_after_a_step_with_its_outputs_and_status_143() {
    assert_stopped_by(libc::SIGTERM, "SIGTERM");
}

#[test]
fn sigint_stops_a_run_after_a_step_with_its_outputs_and_status_130() {
    assert_stopped_by(libc::SIGINT, "SIGINT");
}

#[test]
fn a_closed_output_pipe_ends_the_run_without_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let out = dir.path().join("out");
    // `peridot run ... | head -0`: the reader is gone before the first line is written
    let mut child = Command::new(env!("CARGO_BIN_EXE_peridot"))
        .args(["run", &model, "--out", out.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let err = stderr(&o);
    assert!(!err.contains("panicked"), "{err}");
}

/// `run` in subdomains: on `cpu-loop` (the CPU emulation) it runs and writes its outputs;
/// `gpu-loop` and `gpu-matrix` under a budget run where a GPU is and are a one-line error
/// elsewhere; `--streamed` without subdomains and a malformed budget are one-line errors
/// naming the option.
#[test]
fn run_in_subdomains_or_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let out = dir.path().join("out-sub");
    let run = |extra: &[&str]| {
        let mut args = vec!["run", &model, "--quiet", "--out", out.to_str().unwrap()];
        args.extend_from_slice(extra);
        peridot(&args)
    };
    for backend in ["cpu-loop", "cpu-matrix"] {
        let o = run(&["--backend", backend, "--subdomains", "2"]);
        assert!(o.status.success(), "{backend}: {}", stderr(&o));
        assert!(out.join("summary.json").exists());
    }
    for backend in ["gpu-loop", "gpu-matrix"] {
        let o = run(&["--backend", backend, "--gpu-memory-budget", "60%"]);
        let err = stderr(&o);
        assert!(!err.contains("panicked"), "{backend}: {err}");
        if !o.status.success() {
            assert_eq!(err.trim().lines().count(), 1, "{backend}: {err}");
            continue;
        }
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        let peak = summary["peak_gpu_bytes"].as_u64().unwrap_or(0);
        assert!(peak > 0, "{backend}: {summary}");
    }
    for (extra, option) in [
        (&["--backend", "cpu-loop", "--streamed"][..], "--streamed"),
        (
            &["--backend", "cpu-loop", "--gpu-memory-budget", "lots"][..],
            "--gpu-memory-budget",
        ),
    ] {
        let o = run(extra);
        let err = stderr(&o);
        assert!(!o.status.success(), "{extra:?}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains(option), "{extra:?}: {err}");
    }
}

/// The model key `solver.gpu_memory_budget` (a size or a share of the in-core footprint)
/// gives `info` its plan, as the option does.
#[test]
fn info_plans_subdomains_for_the_model_key() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["\"70%\"", "\"120KiB\""] {
        let text = TINY.replace(
            "steps = 40\n",
            &format!("steps = 40\ngpu_memory_budget = {value}\n"),
        );
        let model = write_model(dir.path(), &text);
        let o = peridot(&["info", &model]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{value}: {}", stderr(&o));
        assert!(out.contains("two streaming slots fit"), "{value}: {out}");
    }
}

/// `validate`, `info` and `run` make the same setup checks (`setup::checked_body`): a
/// pre-crack entirely outside the body is refused by all three, naming it.
#[test]
fn validate_info_and_run_refuse_the_same_setup_problems() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(
        dir.path(),
        &TINY
            .replace("start = [0.0, 0.005]", "start = [0.5, 0.005]")
            .replace("end = [0.006, 0.005]", "end = [0.6, 0.005]"),
    );
    for cmd in ["validate", "info", "run"] {
        let o = peridot(&[cmd, &model, "--quiet"][..if cmd == "run" { 3 } else { 2 }]);
        assert!(
            !o.status.success(),
            "{cmd} accepted a pre-crack outside the body"
        );
        let err = stderr(&o);
        assert!(
            err.contains("precrack.0") && err.contains("entirely outside"),
            "{cmd}: {err}"
        );
    }
    let o = peridot(&["validate", &write_model(dir.path(), TINY)]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("valid (200 nodes"),
        "{o:?}"
    );
}
