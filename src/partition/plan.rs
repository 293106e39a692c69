//! The subdomain plan: how many subdomains, from a count (`--subdomains N`) or from a GPU
//! memory budget in bytes (`--gpu-memory-budget 2GiB`), and the bytes each one needs.
//!
//! From a budget: `max_nodes = a * budget / bytes_per_node` with [`BUDGET_FRACTION`]
//! `a = 0.4`: two subdomain buffers are on the device at once (double buffering: one
//! computes while the next one's data copies in), each with its halo, which we allow to add
//! up to a quarter of the owned nodes (`2 x 1.25 = 2.5 = 1 / a`). The count is then
//! `ceil(nodes / max_nodes)`; should a subdomain's owned plus halo nodes still not fit (thin
//! slabs have relatively more halo), the count grows until every one does, or the plan is an
//! error naming the budget. `bytes_per_node` is a backend's own estimate of its device memory
//! divided by the node count (bonds included, at this model's family size).

use super::{partition, usage, Subdomain};
use crate::backend::{GpuLoop, GpuMatrix};
use crate::model::size::parse_byte_size;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::Result;

/// Fraction `a` of the budget one subdomain's owned nodes may take (see the module docs).
pub const BUDGET_FRACTION: f64 = 0.4;

/// Subdomain buffers on the device at once (double buffering).
pub const BUFFERS: usize = 2;

/// What fixes the number of subdomains.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PlanRequest {
    /// Exactly this many.
    Count(usize),
    /// As few as fit `budget` bytes at `bytes_per_node`.
    Budget { budget: u64, bytes_per_node: f64 },
}

/// A partition with the bytes it needs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub subdomains: Vec<Subdomain>,
    /// Device bytes per node (bonds included) the plan is sized with.
    pub bytes_per_node: f64,
    /// The budget, where one was given.
    pub budget: Option<u64>,
}

impl Plan {
    /// Partition `problem` as `request` asks; `bytes_per_node` sizes the report of a count.
    pub fn new(problem: &Problem, request: PlanRequest, bytes_per_node: f64) -> Result<Plan> {
        match request {
            PlanRequest::Count(count) => Ok(Plan {
                subdomains: partition(problem, count)?,
                bytes_per_node,
                budget: None,
            }),
            PlanRequest::Budget {
                budget,
                bytes_per_node,
            } => Plan::for_budget(problem, budget, bytes_per_node),
        }
    }

    fn for_budget(problem: &Problem, budget: u64, bytes_per_node: f64) -> Result<Plan> {
        let n = problem.body.len().max(1);
        let max_nodes = (BUDGET_FRACTION * budget as f64 / bytes_per_node).floor() as usize;
        let mut count = n.div_ceil(max_nodes.max(1));
        loop {
            let plan = Plan {
                subdomains: partition(problem, count)
                    .map_err(|e| too_small(budget, bytes_per_node, e))?,
                bytes_per_node,
                budget: Some(budget),
            };
            if plan.fits() {
                return Ok(plan);
            }
            count += 1;
        }
    }

    /// Device bytes of subdomain `s` (owned and halo nodes).
    pub fn bytes(&self, s: usize) -> f64 {
        self.subdomains[s].nodes.len() as f64 * self.bytes_per_node
    }

    /// Largest subdomain's bytes times the buffers on the device at once.
    pub fn peak_bytes(&self) -> f64 {
        let largest = (0..self.subdomains.len())
            .map(|s| self.bytes(s))
            .fold(0.0, f64::max);
        BUFFERS as f64 * largest
    }

    /// Whether the peak fits the budget (always, without one).
    pub fn fits(&self) -> bool {
        self.budget.is_none_or(|b| self.peak_bytes() <= b as f64)
    }
}

/// The error of a budget too small for any partition.
fn too_small(budget: u64, bytes_per_node: f64, cause: crate::Error) -> crate::Error {
    usage(
        "--gpu-memory-budget",
        format!(
            "{budget} bytes is too small for this model at {bytes_per_node:.1} B/node \
             ({cause})"
        ),
    )
}

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
