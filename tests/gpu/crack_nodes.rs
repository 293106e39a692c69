//! The nodes of a crack-tip sample thresholded on the device (`Forces::nodes_at_or_above`
//! on `gpu-loop`): after a damaging run, exactly the nodes whose damage, read whole from the
//! same backend and compared on the host, is at or above the threshold, in f64 and f32 (the
//! kernel compares the damage in double as the host does: no tolerance).
//!
//! Without a CUDA device the test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::BackendKind;
use peridot::solver::simulate;
use peridot::{Precision, Real};

fn check<T: Real>(precision: Precision) {
    let problem = common::partition_bar("pmb", "plane-stress", 200);
    let opts = common::options(BackendKind::GpuLoop, precision, None);
    let mut out = simulate::<T>(problem, &opts).expect("run succeeds");
    assert!(out.summary.broken_bonds > 0, "the bar cracks");
    let n = out.problem.body.len();
    let mut phi = vec![T::zero(); n];
    out.backend.damage(&mut phi).expect("damage");
    for threshold in [0.2, 0.38, 0.5] {
        let host: Vec<usize> = (0..n).filter(|&i| phi[i].f64() >= threshold).collect();
        let device = out
            .backend
            .nodes_at_or_above(threshold)
            .expect("crack nodes")
            .expect("gpu-loop thresholds on the device");
        assert!(!host.is_empty() || threshold > 0.4);
        assert_eq!(device, host, "{precision:?}, threshold {threshold}");
    }
}

#[test]
fn device_threshold_equals_the_whole_field() {
    if !have_gpu() {
        return;
    }
    check::<f64>(Precision::F64);
    check::<f32>(Precision::F32);
}
