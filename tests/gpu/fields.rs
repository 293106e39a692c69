//! The snapshot fields of `[output] fields` (`docs/models.md`) from `gpu-loop`: computed on
//! the host from the downloaded displacement and bond status, so they follow the device
//! run. A short damaging run on `gpu-loop` in f64 writes the same broken bonds per node as
//! `cpu-loop` and a stress and force density within 1e-8 of the largest value (the device
//! run's displacement differs from the CPU's by fused multiply-adds, about 1e-13 relative;
//! a bond the two runs break at different steps would show as a broken-bond difference
//! first); on a lean problem (no bonds on the host: the fields search the families again)
//! every field is bitwise the stored problem's.

use super::have_gpu;
use crate::common;
use peridot::backend::BackendKind;
use peridot::setup::Problem;
use peridot::solver::simulate;
use peridot::Precision;
use std::path::{Path, PathBuf};

/// Every bond field and the stress.
const FIELDS: &str =
    "output.fields=[\"force_density\", \"stress\", \"broken_bonds\", \"strain_energy_density\"]";

/// The model text: a pre-cracked 2D box pulled apart for 40 steps.
fn text() -> String {
    let extra = "[[region]]\nname = \"l\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 2\n\
        [[region]]\nname = \"r\"\nshape = \"edge\"\nside = \"+x\"\ndepth_dx = 2\n\
        [[boundary]]\nregion = \"l\"\nkind = \"velocity\"\nx = -2.0\n\
        [[boundary]]\nregion = \"r\"\nkind = \"velocity\"\nx = 2.0\n\
        [solver]\nkind = \"explicit\"\nsteps = 40\n";
    common::small_model("pmb", "plane-stress", true, extra)
}

/// The last snapshot of a run of `problem` on `backend` in f64, in `dir`.
fn snapshot(problem: Problem, backend: BackendKind, dir: &Path) -> PathBuf {
    let opts = common::options(backend, Precision::F64, Some(dir));
    simulate::<f64>(problem, &opts).expect("run succeeds");
    common::snapshots(dir).pop().expect("a snapshot")
}

#[test]
fn gpu_loop_snapshot_fields_follow_cpu_loop() {
    if !have_gpu() {
        return;
    }
    let overrides = ["output.image=false", FIELDS];
    let stored = common::problem(&text(), &overrides);
    let (cpu, gpu) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = snapshot(stored.clone(), BackendKind::CpuLoop, cpu.path());
    let b = snapshot(stored, BackendKind::GpuLoop, gpu.path());
    let broken = common::vtu_ints(&b, "broken_bonds");
    assert_eq!(broken, common::vtu_ints(&a, "broken_bonds"), "broken bonds");
    assert!(broken.iter().any(|&n| n > 0), "the run breaks bonds");
    for name in [
        "stress_Pa",
        "force_density_N_m3",
        "strain_energy_density_J_m3",
    ] {
        let e = common::rel_max(&common::vtu_array(&b, name), &common::vtu_array(&a, name));
        println!("gpu-loop vs cpu-loop {name}: {e:.2e}");
        assert!(e < 1e-8, "{name}: {e:e}");
    }

    let model = peridot::model::parse(&text(), "t.toml", &overrides.map(String::from)).unwrap();
    let lean = Problem::build_lean(model, Path::new(".")).unwrap();
    let thin = tempfile::tempdir().unwrap();
    let c = snapshot(lean, BackendKind::GpuLoop, thin.path());
    let (bytes_b, bytes_c) = (std::fs::read(&b).unwrap(), std::fs::read(&c).unwrap());
    assert!(
        bytes_b == bytes_c,
        "lean and stored gpu-loop snapshots differ"
    );
}
