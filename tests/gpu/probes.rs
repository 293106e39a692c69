//! Probe rows reduced on the device (`Backend::probe_values` of the GPU backends) against the
//! CPU loop's host sums: a damaging LPS run with a probe row every 7 steps, most of them at
//! steps where the state stays on the device, and snapshots every 40. Every value must agree
//! to 1e-9 of the largest magnitude its vector (a region's u or f) reaches in the run: the device adds in another order (relative
//! 1e-15 per row) and the runs themselves agree to 1e-10 (`damaging_runs`); a row taken from
//! a stale host state would be off by the motion of 7 steps, orders of magnitude more.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::{have_gpu, say, LPS_BLOCK};
use crate::common;
use peridot::backend::BackendKind;
use peridot::solver::{simulate, RunOptions};
use peridot::Precision;
use std::path::Path;

/// The probe rows of a run of `text` on `backend`, written under `dir`.
fn probe_rows(text: &str, backend: BackendKind, dir: &Path) -> Vec<Vec<f64>> {
    let opts = RunOptions {
        process_start: None,
        cancel: None,
        subdomains: None,
        backend,
        precision: Precision::F64,
        out_dir: Some(dir.to_path_buf()),
        quiet: true,
    };
    simulate::<f64>(common::problem(text, &[]), &opts).expect("run succeeds");
    let csv = std::fs::read_to_string(dir.join("probes.csv")).expect("probes.csv");
    csv.lines()
        .skip(1)
        .map(|l| l.split(',').map(|x| x.parse().expect("a number")).collect())
        .collect()
}

fn rows_agree(kind: BackendKind) {
    if !have_gpu() {
        return;
    }
    let text = format!(
        "{LPS_BLOCK}[output]\nprobes = [\"left\", \"right\"]\nprobe_every = 7\nvtk_every = 40\n\
         image = false\n"
    );
    let tmp = tempfile::tempdir().expect("temp dir");
    let cpu = probe_rows(&text, BackendKind::CpuLoop, &tmp.path().join("cpu"));
    let gpu = probe_rows(&text, kind, &tmp.path().join("gpu"));
    assert_eq!(cpu.len(), gpu.len(), "rows");
    assert!(cpu.len() > 15, "a row every 7 of 120 steps and the last");
    // Columns after step and time come in vectors of three (u or f of one region); each is
    // compared against its vector's largest magnitude over the run (a component that is
    // zero by symmetry holds only rounding noise).
    let columns = cpu[0].len();
    let mut worst: f64 = 0.0;
    for c in 0..columns {
        let group = if c < 2 {
            c..c + 1
        } else {
            2 + 3 * ((c - 2) / 3)..5 + 3 * ((c - 2) / 3)
        };
        let scale = cpu
            .iter()
            .flat_map(|r| r[group.clone()].iter().map(|x| x.abs()))
            .fold(0.0, f64::max);
        for (a, b) in cpu.iter().zip(&gpu) {
            let e = (a[c] - b[c]).abs() / scale.max(f64::MIN_POSITIVE);
            assert!(
                e < 1e-9,
                "{}: column {c} step {}: {} vs {}",
                kind.name(),
                a[0],
                a[c],
                b[c]
            );
            worst = worst.max(e);
        }
    }
    say(&format!(
        "{}: {} probe rows agree with cpu-loop to {worst:.1e}",
        kind.name(),
        cpu.len()
    ));
}

#[test]
fn gpu_loop_probe_rows_agree_with_cpu_loop() {
    rows_agree(BackendKind::GpuLoop);
}

#[test]
fn gpu_matrix_probe_rows_agree_with_cpu_loop() {
    rows_agree(BackendKind::GpuMatrix);
}
