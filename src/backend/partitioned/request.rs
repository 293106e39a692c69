//! Choosing and building a subdomain backend for a run (`peridot run --subdomains N` or
//! `--gpu-memory-budget SIZE`, or the model key `solver.gpu_memory_budget`): `gpu-loop`
//! runs on the GPU in subdomains ([`GpuStreamed`]); `cpu-loop` and `cpu-matrix` run the CPU
//! emulations of the loop and matrix schemes ([`PartitionedCpu`], [`PartitionedMatrix`]),
//! which give the same partition on a machine without a GPU; `gpu-matrix` runs the matrix
//! scheme's subdomains with all their operator blocks resident on the device
//! (`--subdomains N`), or streamed two at a time (under a budget, or with `--streamed`:
//! [`StreamedPart`]).

use super::parse_bytes;
use crate::backend::{resolve_auto, BackendKind, GpuLoop, GpuMatrix};
use crate::operators::Storage;
use crate::partition::usage;
use crate::setup::Problem;
use crate::{Real, Result};

/// What the run asks of subdomains.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SubdomainRequest {
    /// `--subdomains N`.
    pub count: Option<usize>,
    /// `--gpu-memory-budget SIZE`: bytes with a unit, or `P%` of this model's in-core
    /// footprint on the run's backend (`gpu-loop`, or `gpu-matrix` in half storage: what
    /// `peridot info` prints) in the run's precision.
    pub budget: Option<String>,
    /// Stream through two slots even when every subdomain would fit on the device at once
    /// (to measure streaming on a model that fits).
    pub streamed: bool,
}

impl SubdomainRequest {
    /// The request of the options, or of the model key `solver.gpu_memory_budget` where the
    /// options say nothing and the run is on `gpu-loop` (`auto` on a GPU); `None` for an
    /// in-core run.
    pub fn resolve(
        options: Option<SubdomainRequest>,
        problem: &Problem,
        kind: BackendKind,
        precision: crate::Precision,
    ) -> Option<Self> {
        let streamed = options.as_ref().is_some_and(|r| r.streamed);
        options
            .filter(|r| r.count.is_some() || r.budget.is_some())
            .or_else(|| {
                let key = problem.model.solver.gpu_memory_budget.as_ref()?;
                let on_gpu_loop = match kind {
                    BackendKind::Auto => resolve_auto(precision).0 == BackendKind::GpuLoop,
                    other => other == BackendKind::GpuLoop,
                };
                if !on_gpu_loop {
                    return None;
                }
                Some(SubdomainRequest {
                    budget: Some(key.raw()),
                    count: None,
                    streamed,
                })
            })
    }
}

/// Budget bytes of `text` for `problem` in precision `T`: a size, or a percentage of the
/// in-core `gpu-loop` footprint.
pub fn budget_bytes<T: Real>(text: &str, problem: &Problem) -> Result<u64> {
    budget_bytes_for::<T>(text, problem, BackendKind::GpuLoop)
}

/// [`budget_bytes`] for backend `kind`: a percentage is of that backend's in-core footprint
/// (`gpu-matrix`: its default half storage; else `gpu-loop`'s).
pub fn budget_bytes_for<T: Real>(text: &str, problem: &Problem, kind: BackendKind) -> Result<u64> {
    let option = "--gpu-memory-budget";
    match text.trim().strip_suffix('%') {
        Some(p) => {
            let share: f64 = p
                .trim()
                .parse()
                .ok()
                .filter(|s: &f64| *s > 0.0 && *s <= 100.0)
                .ok_or_else(|| {
                    usage(
                        option,
                        format!("`{text}`: a percentage must be in (0, 100]"),
                    )
                })?;
            let t = std::mem::size_of::<T>();
            let in_core = match kind {
                BackendKind::GpuMatrix => {
                    GpuMatrix::<T>::memory_estimate(problem, Storage::Half, t)
                }
                _ => GpuLoop::<T>::device_bytes_with_list(problem),
            } as f64;
            Ok((share / 100.0 * in_core).ceil() as u64)
        }
        None => parse_bytes(option, text),
    }
}
