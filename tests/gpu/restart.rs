//! Restarts on the GPU backends: a run resumed from a checkpoint equals the uninterrupted
//! run bit for bit (displacement, velocity, bond status) on `gpu-loop` and `gpu-matrix`,
//! explicit (f64 and f32, bonds breaking, the time loop on the device) and ADR (the history
//! downloaded into the checkpoint and uploaded again by the resumed run).
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use crate::common::cli::{TINY, TINY_ADR};
use peridot::backend::BackendKind;
use peridot::output::checkpoint;
use peridot::solver::run::simulate_from;
use peridot::solver::RunOptions;
use peridot::Real;
use std::path::Path;

/// The end of a run of `text` on `backend` in `T` into `out`, resumed from `restart` if
/// given: displacement and velocity as bits, and the bond status.
fn end<T: Real>(
    text: &str,
    overrides: &[&str],
    backend: BackendKind,
    out: &Path,
    restart: Option<&Path>,
) -> (Vec<u64>, Vec<u64>, Vec<u8>) {
    let opts = RunOptions {
        process_start: None,
        backend,
        precision: T::PRECISION,
        out_dir: Some(out.to_path_buf()),
        quiet: true,
        subdomains: None,
        cancel: None,
    };
    let problem = common::problem(text, overrides);
    let o = simulate_from::<T>(problem, &opts, restart).expect("the run ends");
    let bits = |v: &[T]| v.iter().map(|x| x.f64().to_bits()).collect::<Vec<u64>>();
    let status = o.backend.bond_status().unwrap();
    (bits(&o.state.u), bits(&o.state.v), status)
}

/// 60 steps at once against the same run resumed from its first checkpoint (the later
/// ones removed).
fn resumes_bitwise<T: Real>(text: &str, extra: &[&str], backend: BackendKind) {
    let tmp = tempfile::tempdir().unwrap();
    let (full, part) = (tmp.path().join("full"), tmp.path().join("part"));
    let long: Vec<&str> = [extra, &["solver.steps=60"]].concat();
    let every = ["output.checkpoint_every=4", "output.checkpoint_keep=100"];
    let checkpointed: Vec<&str> = [&long[..], &every[..]].concat();
    let a = end::<T>(text, &long, backend, &full, None);
    end::<T>(text, &checkpointed, backend, &part, None);
    for (_, path) in checkpoint::list(&part).unwrap().into_iter().skip(1) {
        std::fs::remove_file(path).unwrap();
    }
    let b = end::<T>(text, &long, backend, &part, Some(&part));
    assert!(
        a == b,
        "{} {}: the resumed run differs",
        backend.name(),
        T::NAME
    );
}

#[test]
fn gpu_explicit_restart_is_bitwise() {
    if !have_gpu() {
        return;
    }
    for backend in [BackendKind::GpuLoop, BackendKind::GpuMatrix] {
        resumes_bitwise::<f64>(TINY, &["boundary.0.y=60.0"], backend);
        resumes_bitwise::<f32>(TINY, &["boundary.0.y=60.0"], backend);
    }
}

/// The failure history crosses a restart on `gpu-loop` (`bond_loop/failure.rs`): each node's
/// critical stretch with `critical_stretch_alpha`, breaking after the force, and a softening
/// law's damage per bond (bilinear, softening between stretches 0.01 and 0.03), downloaded
/// into the checkpoint and uploaded by the resumed run, which equals the uninterrupted one
/// bit for bit.
#[test]
fn gpu_loop_restart_with_failure_history_is_bitwise() {
    if !have_gpu() {
        return;
    }
    let pull = "boundary.0.y=60.0";
    for extra in [
        &[pull, "material.critical_stretch_alpha=0.25"][..],
        &[pull, "material.break_timing=\"after-force\""],
        &[
            pull,
            "material.damage_law=\"bilinear\"",
            "material.final_stretch=0.03",
        ],
    ] {
        resumes_bitwise::<f64>(TINY, extra, BackendKind::GpuLoop);
        resumes_bitwise::<f32>(TINY, extra, BackendKind::GpuLoop);
    }
}

#[test]
fn gpu_adr_restart_is_bitwise() {
    if !have_gpu() {
        return;
    }
    for backend in [BackendKind::GpuLoop, BackendKind::GpuMatrix] {
        resumes_bitwise::<f64>(TINY_ADR, &[], backend);
        resumes_bitwise::<f64>(TINY_ADR, &["solver.load_steps=6"], backend);
    }
}
