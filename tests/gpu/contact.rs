//! Contact and impactors on `gpu-loop` (`docs/contact.md`): two 2D blocks colliding at
//! 100 m/s with node contact on, and a free disc hitting the right one, run by `cpu-loop` and
//! `gpu-loop` through the whole collision. `gpu-loop` runs the host leapfrog with its bond
//! forces from the device, so the runs differ only by the kernels' fused multiply-adds:
//! displacement, velocity and the disc's velocity within 1e-11 normwise relative in f64 (the
//! initial-field test's bound). A
//! device run that ignored contact would leave the blocks interpenetrating and the disc
//! untouched (100% off).
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::BackendKind;
use peridot::solver::simulate;
use peridot::Precision;

fn model() -> String {
    format!(
        "{}[discretization]\ndimension = \"plane-strain\"\nthickness = 1e-3\ndx = 0.5e-3\n\
         horizon_factor = 3.015\n[geometry]\nbox = [{{ min = [0, 0], max = [0.008, 0.006] }}, \
         {{ min = [0.0095, 0], max = [0.0175, 0.006] }}]\n\
         [[region]]\nname = \"left\"\nshape = \"box\"\nmin = [-1, -1]\nmax = [0.009, 1]\n\
         [[initial]]\nregion = \"left\"\nvelocity = [100, 0]\n\
         [[impactor]]\nshape = \"sphere\"\ncenter = [0.0135, 0.00876]\nradius = 0.003\n\
         mass = 2e-4\nvelocity = [0, -30]\n\
         [contact]\n[solver]\nkind = \"explicit\"\nsteps = 400\ndamage = false\n",
        common::material("pmb", None)
    )
}

#[test]
fn gpu_loop_runs_contact_as_cpu_loop() {
    if !have_gpu() {
        return;
    }
    let text = model();
    let run = |backend| {
        let problem = common::problem(&text, &[]);
        let opts = common::options(backend, Precision::F64, None);
        simulate::<f64>(problem, &opts).expect("run succeeds")
    };
    let reference = run(BackendKind::CpuLoop);
    let out = run(BackendKind::GpuLoop);
    let imp =
        |o: &peridot::solver::Outcome<f64>| o.state.contact.as_ref().unwrap().impactors[0].clone();
    let (a, b) = (imp(&reference), imp(&out));
    assert!(
        a.velocity[1] > -30.0,
        "the disc was slowed ({})",
        a.velocity[1]
    );
    let du = common::rel_f64(&out.state.u, &reference.state.u);
    let dv = common::rel_f64(&out.state.v, &reference.state.v);
    let dimp = common::rel_f64(&b.velocity, &a.velocity);
    assert!(
        du < 1e-11 && dv < 1e-11 && dimp < 1e-11,
        "u {du:e}, v {dv:e}, disc {dimp:e}"
    );
}
