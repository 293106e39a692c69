//! Initial fields on the GPU backends: a run with an `[[initial]]` velocity on a region and a
//! displacement on another starts from the host's initial state, which each device backend
//! uploads on its first call (not zeros): after 30 steps with the time loop on the device,
//! `gpu-loop` and `gpu-matrix` end where `cpu-loop` does (displacement and velocity, normwise
//! relative difference below 1e-11 in f64: the kernels' fused multiply-adds are the only
//! difference). A device backend that started from zeros would end 100% away.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::BackendKind;
use peridot::solver::simulate;
use peridot::Precision;

fn model() -> String {
    common::small_model("pmb", "3d", false, "").replace(
        "[solver]",
        "[[region]]\nname = \"hit\"\nshape = \"box\"\nmin = [-1.0, -1.0, -1.0]\nmax = [0.002, 1.0, 1.0]\n\n\
         [[initial]]\nregion = \"hit\"\nvelocity = [5.0, -1.0, 0.5]\n\n\
         [[initial]]\ndisplacement = [1e-7, 0.0, 0.0]\n\n[solver]",
    )
}

#[test]
fn gpu_backends_start_from_the_initial_fields() {
    if !have_gpu() {
        return;
    }
    let text = model();
    let run = |backend| {
        let problem = common::problem(&text, &["solver.steps=30", "solver.damage=false"]);
        let opts = common::options(backend, Precision::F64, None);
        simulate::<f64>(problem, &opts).expect("run succeeds")
    };
    let reference = run(BackendKind::CpuLoop);
    let v0: f64 = reference.state.v.iter().map(|x| x.abs()).sum();
    assert!(v0 > 0.0, "the reference run moves");
    for backend in [BackendKind::GpuLoop, BackendKind::GpuMatrix] {
        let out = run(backend);
        let du = common::rel_f64(&out.state.u, &reference.state.u);
        let dv = common::rel_f64(&out.state.v, &reference.state.v);
        assert!(du < 1e-11 && dv < 1e-11, "{backend:?}: u {du:e}, v {dv:e}");
    }
}
