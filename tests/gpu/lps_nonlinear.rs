//! The nonlinear state-based model (`lps-nonlinear`) on the GPU against `cpu-loop`: forces,
//! dilatation, energy, bond breaking and damage of a pre-cracked plate and block (f64 to
//! 1e-12, the same bonds broken; f32 to 1e-5), a damaging explicit run with the time loop on
//! the device (the same bonds broken, the state to 1e-10), and subdomains on the GPU equal
//! to in-core `gpu-loop` bitwise.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::{compare, have_gpu, model, rel, run, say, LPS_BLOCK};
use crate::common;
use peridot::backend::partitioned::GpuStreamed;
use peridot::backend::{BackendKind, GpuLoop};
use peridot::partition::ResidencyRequest;
use std::sync::Arc;

const MATERIAL: &str = "model = \"lps-nonlinear\"\npoisson_ratio = 0.3\ncritical_stretch = 0.004";

#[test]
fn lps_nonlinear_forces_damage_and_energy_agree_with_cpu_loop() {
    if !have_gpu() {
        return;
    }
    for dim in ["plane-stress", "3d"] {
        for (extra, pv) in [("", "none"), ("influence = \"one\"", "linear")] {
            let material = format!("{MATERIAL}\n{extra}");
            let text = model(dim, &material, &format!("partial_volume = \"{pv}\""));
            let p = Arc::new(common::problem(&text, &[]));
            let name = format!("{dim} lps-nonlinear {pv}");
            compare::<f64>(
                BackendKind::GpuLoop,
                &format!("{name} f64"),
                p.clone(),
                1e-12,
            );
            compare::<f32>(BackendKind::GpuLoop, &format!("{name} f32"), p, 1e-5);
        }
    }
}

#[test]
fn lps_nonlinear_damaging_run_breaks_the_same_bonds() {
    if !have_gpu() {
        return;
    }
    let text = LPS_BLOCK.replace("model = \"lps\"", "model = \"lps-nonlinear\"");
    let cpu = run::<f64>(&text, BackendKind::CpuLoop);
    let gpu = run::<f64>(&text, BackendKind::GpuLoop);
    let precracked = common::problem(&text, &[]).precracked_bonds();
    assert!(
        cpu.summary.broken_bonds > precracked,
        "the run breaks bonds"
    );
    assert_eq!(
        gpu.backend.bond_status().unwrap(),
        cpu.backend.bond_status().unwrap(),
        "bond status"
    );
    let e = rel(&gpu.state.u, &cpu.state.u);
    assert!(e < 1e-10, "u relative difference {e:.3e}");
    say(&format!(
        "gpu-loop lps-nonlinear block: {} bonds broken on both, u agrees to {e:.1e}",
        gpu.summary.broken_bonds
    ));
}

#[test]
fn lps_nonlinear_subdomains_on_the_gpu_equal_in_core_bitwise() {
    if !have_gpu() {
        return;
    }
    for dim in ["plane-strain", "3d"] {
        let problem = common::partition_bar("lps-nonlinear", dim, 1);
        let shared = Arc::new(problem.clone());
        for count in [2, 5] {
            for request in [ResidencyRequest::Auto, ResidencyRequest::Streamed] {
                let mut core = GpuLoop::<f64>::new(shared.clone()).unwrap();
                let mut part =
                    GpuStreamed::<f64>::new(shared.clone(), count, None, request).unwrap();
                let case = format!("lps-nonlinear {dim}, {count} subdomains, {request:?}");
                common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
            }
        }
    }
}
