//! The subdomain plan of `peridot info` (`--gpu-memory-budget`, `--subdomains`): how a model
//! too large for one GPU would be split (`peridot::partition`, `docs/subdomains.md`).

use peridot::partition::plan::{gpu_bytes_per_node, BUDGET_FRACTION, BUFFERS};
use peridot::partition::{parse_bytes, Plan, PlanRequest};
use peridot::setup::Problem;

const MIB: f64 = (1 << 20) as f64;

/// The backend whose device bytes size the plan: the one `auto` picks on a GPU, in f64.
const PLAN_BACKEND: &str = "gpu-loop f64";

/// Print the bytes per node of each GPU backend and, with a budget or a count, the plan: the
/// options first, else the model's `solver.gpu_memory_budget`.
pub fn print_plan(
    problem: &Problem,
    budget: Option<&str>,
    count: Option<usize>,
) -> anyhow::Result<()> {
    let per_backend = gpu_bytes_per_node(problem);
    let per_node = per_backend
        .iter()
        .find(|(name, _)| *name == PLAN_BACKEND)
        .map_or(0.0, |(_, b)| *b);
    let from_model = problem.model.solver.gpu_memory_budget.as_ref();
    let request = match (budget, count, from_model.and_then(|b| b.bytes())) {
        (Some(text), _, _) => PlanRequest::Budget {
            budget: parse_bytes("--gpu-memory-budget", text)?,
            bytes_per_node: per_node,
        },
        (None, Some(n), _) => PlanRequest::Count(n),
        (None, None, Some(bytes)) => PlanRequest::Budget {
            budget: bytes,
            bytes_per_node: per_node,
        },
        (None, None, None) => return Ok(()),
    };
    let plan = Plan::new(problem, request, per_node)?;
    println!("subdomains (sized with {PLAN_BACKEND}, {BUFFERS} buffers on the device):");
    let sizes: Vec<String> = per_backend
        .iter()
        .map(|(name, b)| format!("{name} {b:.1}"))
        .collect();
    println!("  bytes per node: {}", sizes.join(", "));
    if let Some(b) = plan.budget {
        let max_nodes = BUDGET_FRACTION * b as f64 / per_node;
        println!(
            "  budget {:.1} MiB: max_nodes = {BUDGET_FRACTION} x budget / bytes per node = {max_nodes:.0}",
            b as f64 / MIB
        );
    }
    println!("  count {}", plan.subdomains.len());
    println!(
        "  {:>4} {:>11} {:>10} {:>10} {:>12} {:>12}",
        "#", "cell slabs", "owned", "halo", "bonds", "MiB"
    );
    for (s, sub) in plan.subdomains.iter().enumerate() {
        println!(
            "  {s:>4} {:>11} {:>10} {:>10} {:>12} {:>12.3}",
            format!("{}..{}", sub.cells.start, sub.cells.end),
            sub.owned,
            sub.halo(),
            sub.bonds(),
            plan.bytes(s) / MIB
        );
    }
    let budget = plan
        .budget
        .map_or(String::new(), |b| format!(" of {:.3} MiB", b as f64 / MIB));
    println!(
        "  peak on the device {:.3} MiB{budget}",
        plan.peak_bytes() / MIB
    );
    Ok(())
}
