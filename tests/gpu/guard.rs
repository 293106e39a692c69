//! The memory guard's device side on a real device (`backend/estimate.rs`): a small plate's
//! estimate fits the free memory and covers what `gpu-loop` then allocates; the same plate's
//! numbers grown to twice the free memory are refused naming the device, both numbers and a
//! subdomain count whose two slots fit.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use peridot::backend::estimate::{estimate, guard_device, RunShape};
use peridot::backend::{BackendKind, GpuLoop};
use peridot::setup::memory::ModelCounts;
use peridot::setup::Problem;
use peridot::Precision;
use std::path::Path;

const PLATE: &str = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 72e9\ndensity = 2440\n\
    critical_stretch = 0.01\n[discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\n\
    dx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
    box = [{ min = [0, 0], max = [0.1995, 0.0995] }]\n[solver]\nkind = \"explicit\"\nsteps = 1\n";

#[test]
fn the_device_guard_compares_with_the_free_device_memory() {
    if !have_gpu() {
        return;
    }
    let gpu = peridot::gpu::Gpu::get().unwrap();
    let model = peridot::model::parse(PLATE, "plate", &[]).unwrap();
    let counts = ModelCounts::of(&model, Path::new("."), Precision::F64);
    let shape = RunShape::in_core(BackendKind::GpuLoop);
    let free_total = gpu.memory_info().unwrap();
    guard_device(&counts, &shape, free_total, &gpu.name).expect("20,000 nodes fit");
    // the estimate (list form) covers the exact bytes the backend counts and allocates
    let problem = Problem::build(model, Path::new(".")).unwrap();
    let exact = GpuLoop::<f64>::device_bytes_for(&problem, None) as f64;
    let estimated = estimate(&counts, &shape).device.unwrap();
    assert!(
        estimated >= exact,
        "estimate {estimated} below the exact {exact}"
    );
    // grown to twice the free memory: refused, naming the device and a subdomain count
    let per_node = estimated / counts.nodes;
    let grown = ModelCounts {
        nodes: 2.0 * free_total.0 as f64 / per_node,
        ..counts
    };
    let err = guard_device(&grown, &shape, gpu.memory_info().unwrap(), &gpu.name)
        .unwrap_err()
        .to_string();
    for part in [
        gpu.name.as_str(),
        "GiB",
        "--subdomains",
        "discretization.dx >=",
    ] {
        assert!(err.contains(part), "{part:?} missing from: {err}");
    }
}
