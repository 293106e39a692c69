//! The in-core `gpu-loop` backend on a lean problem (`Problem::build_lean`: no bond held on
//! the host; the backend searches each family again as it fills its device arrays) against
//! the same backend on the stored problem: forces, bonds broken, bond status, damage and
//! dilatation BITWISE in f64, 40 damaging explicit steps (host loop) ending in the same
//! displacement and bond status, and a whole run with the time loop on the device
//! (`simulate`) ending bitwise equal in f64 and f32.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::{BackendKind, GpuLoop};
use peridot::dynamics::Forces;
use peridot::setup::Problem;
use peridot::solver::{simulate, RunOptions};
use peridot::{Precision, Real};
use std::sync::Arc;

/// A whole run of `problem` on the in-core `gpu-loop` in precision `T`: final displacement
/// (as f64) and bonds broken.
fn device_run<T: Real>(problem: Problem) -> (Vec<f64>, usize) {
    let opts = RunOptions {
        cancel: None,
        process_start: None,
        subdomains: None,
        backend: BackendKind::GpuLoop,
        // (`simulate` runs in `T`)
        precision: Precision::F64,
        out_dir: None,
        quiet: true,
    };
    let out = simulate::<T>(problem, &opts).expect("run succeeds");
    let u = out.state.u.iter().map(|x| x.f64()).collect();
    (u, out.summary.broken_bonds)
}

#[test]
fn in_core_gpu_loop_on_a_lean_problem_equals_the_stored_one_bitwise() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d"), ("pmb-linear", "3d")] {
        let stored = common::partition_bar(law, dim, 40);
        let lean = common::partition_bar_lean(law, dim, 40);
        let case = format!("lean {law} {dim}, in core");
        let mut core = GpuLoop::<f64>::new(Arc::new(stored.clone())).unwrap();
        let mut thin = GpuLoop::<f64>::new(Arc::new(lean.clone())).unwrap();
        assert_eq!(
            thin.bond_status().unwrap(),
            core.bond_status().unwrap(),
            "{case}: initial status"
        );
        assert_eq!(thin.broken_bonds(), core.broken_bonds(), "{case}");
        common::check_partitioned(&stored, &mut core, &mut thin, common::BITWISE, &case);

        let mut core = GpuLoop::<f64>::new(Arc::new(stored.clone())).unwrap();
        let (s_core, b_core) = common::explicit_run(&stored, &mut core);
        let mut thin = GpuLoop::<f64>::new(Arc::new(lean.clone())).unwrap();
        let (s_thin, b_thin) = common::explicit_run(&stored, &mut thin);
        let steps = format!("{case}, 40 steps");
        assert!(b_core > 0, "{steps}: the run breaks bonds");
        assert_eq!(b_thin, b_core, "{steps}: bonds broken");
        assert_eq!(
            thin.bond_status().unwrap(),
            core.bond_status().unwrap(),
            "{steps}"
        );
        common::assert_bitwise(&s_thin.u, &s_core.u, &format!("{steps}: displacement"));

        let (u_core, b_core) = device_run::<f64>(stored.clone());
        let (u_thin, b_thin) = device_run::<f64>(lean.clone());
        let run = format!("{case}, device loop f64");
        assert!(
            b_core > stored.precracked_bonds(),
            "{run}: the run breaks bonds"
        );
        assert_eq!(b_thin, b_core, "{run}: bonds broken");
        common::assert_bitwise(&u_thin, &u_core, &format!("{run}: displacement"));
        let (u_core, b_core) = device_run::<f32>(stored);
        let (u_thin, b_thin) = device_run::<f32>(lean);
        let run = format!("{case}, device loop f32");
        assert_eq!(b_thin, b_core, "{run}: bonds broken");
        common::assert_bitwise(&u_thin, &u_core, &format!("{run}: displacement"));
    }
}
