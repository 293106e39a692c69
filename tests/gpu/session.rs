//! A run stepped by a library caller (`solver::Session`) on the GPU backends: a velocity
//! written between steps reaches the device (`Backend::state_changed`), so after 10 steps,
//! a new velocity on every node, and 20 more steps, `gpu-loop` and `gpu-matrix` end where
//! `cpu-loop` does (displacement and velocity, normwise relative difference below 1e-11 in
//! f64: fused multiply-adds are the only difference). A device that kept its old state would
//! end far away (the written velocity is 10 m/s on a body moving at micrometres per second).
//!
//! Without a CUDA device the test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::BackendKind;
use peridot::solver::Session;
use peridot::Precision;

#[test]
fn written_state_reaches_the_device() {
    if !have_gpu() {
        return;
    }
    let text = common::partition_bar_text("pmb", "3d", 40);
    let end = |backend| {
        let opts = common::options(backend, Precision::F64, None);
        let problem = common::problem(&text, &["solver.damage=false"]);
        let mut s = Session::<f64>::start(problem, &opts).expect("session starts");
        s.step(10).expect("steps");
        s.edit_state(|st| {
            for (k, v) in st.v.iter_mut().enumerate() {
                *v += if k % 3 == 1 { 10.0 } else { 0.0 };
            }
        })
        .expect("edit");
        s.step(20).expect("steps");
        (s.state().u.clone(), s.state().v.clone())
    };
    let (u_ref, v_ref) = end(BackendKind::CpuLoop);
    for backend in [BackendKind::GpuLoop, BackendKind::GpuMatrix] {
        let (u, v) = end(backend);
        let du = common::rel_f64(&u, &u_ref);
        let dv = common::rel_f64(&v, &v_ref);
        assert!(du < 1e-11 && dv < 1e-11, "{backend:?}: u {du:e}, v {dv:e}");
    }
}
