//! Sizes for subdomain plans: the in-core device bytes per node of each GPU backend (what
//! `peridot info` prints next to a plan) and the parsing of a byte count. The plan of a budget
//! itself is `stream::plan_for_budget`: sized by what a streaming slot holds.

use super::usage;
use crate::backend::{GpuLoop, GpuMatrix};
use crate::model::size::parse_byte_size;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::Result;

/// Device bytes per node of each GPU backend and precision for `problem`:
/// `(label, bytes)` for gpu-loop and gpu-matrix (half storage), f32 and f64.
pub fn gpu_bytes_per_node(problem: &Problem) -> Vec<(&'static str, f64)> {
    let n = problem.body.len().max(1) as f64;
    let matrix = |p| GpuMatrix::<f64>::memory_estimate(problem, Storage::Half, p) as f64 / n;
    vec![
        (
            "gpu-loop f32",
            GpuLoop::<f32>::device_bytes(problem) as f64 / n,
        ),
        (
            "gpu-loop f64",
            GpuLoop::<f64>::device_bytes(problem) as f64 / n,
        ),
        ("gpu-matrix f32 half", matrix(4)),
        ("gpu-matrix f64 half", matrix(8)),
    ]
}

/// Parse a byte count for `option`: a number with an optional unit, `1.5e9`, `2GiB`,
/// `512MiB`, `64KiB`, `2GB`, `500MB`, `1024B` ([`crate::model::size`]). At least one byte.
pub fn parse_bytes(option: &str, text: &str) -> Result<u64> {
    parse_byte_size(text).ok_or_else(|| {
        usage(
            option,
            format!("`{text}` is not a memory size (bytes, at least 1: 1.5e9, 512MiB, 2GiB, 2GB)"),
        )
    })
}
