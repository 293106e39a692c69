//! The subdomain plan of `peridot info` (`--gpu-memory-budget`, `--subdomains`): how
//! `peridot run` with the same option would split the model (`peridot::partition`,
//! `docs/subdomains.md`), sized for `gpu-loop` in f64.

use peridot::partition::backend::budget_bytes;
use peridot::partition::plan::gpu_bytes_per_node;
use peridot::partition::plan::{plan_for_budget, slot_bytes_of};
use peridot::partition::{partition, Subdomain};
use peridot::setup::Problem;

const MIB: f64 = (1 << 20) as f64;

/// Print the bytes per node of each GPU backend and, with a budget or a count, the plan: the
/// options first, else the model's `solver.gpu_memory_budget`.
pub fn print_plan(
    problem: &Problem,
    budget: Option<&str>,
    count: Option<usize>,
) -> anyhow::Result<()> {
    let from_model = problem.model.solver.gpu_memory_budget.as_ref();
    let budget = match (budget, count, from_model) {
        (Some(text), _, _) => Some(budget_bytes::<f64>(text, problem)?),
        (None, None, Some(key)) => Some(budget_bytes::<f64>(&key.raw(), problem)?),
        _ => None,
    };
    let subdomains: Vec<Subdomain> = match (budget, count) {
        (Some(b), _) => partition(problem, plan_for_budget::<f64>(problem, b)?)?,
        (None, Some(n)) => partition(problem, n)?,
        (None, None) => return Ok(()),
    };
    println!("subdomains (as `peridot run` makes them for gpu-loop in f64):");
    let sizes: Vec<String> = gpu_bytes_per_node(problem)
        .iter()
        .map(|(name, b)| format!("{name} {b:.1}"))
        .collect();
    println!("  in-core bytes per node: {}", sizes.join(", "));
    if let Some(b) = budget {
        println!(
            "  budget {:.3} MiB: the fewest subdomains whose two streaming slots fit",
            b as f64 / MIB
        );
    }
    println!("  count {}", subdomains.len());
    println!(
        "  {:>4} {:>11} {:>10} {:>10} {:>12} {:>12}",
        "#", "cell slabs", "owned", "halo", "bonds", "slot MiB"
    );
    let slots: Vec<f64> = subdomains
        .iter()
        .map(|s| slot_bytes_of::<f64>(problem, s))
        .collect();
    for (s, sub) in subdomains.iter().enumerate() {
        println!(
            "  {s:>4} {:>11} {:>10} {:>10} {:>12} {:>12.3}",
            format!("{}..{}", sub.cells.start, sub.cells.end),
            sub.owned,
            sub.halo(),
            sub.bonds(),
            slots[s] / MIB
        );
    }
    let two = 2.0 * slots.iter().copied().fold(0.0, f64::max);
    let all: f64 = slots.iter().sum();
    let of = budget.map_or(String::new(), |b| format!(" of {:.3} MiB", b as f64 / MIB));
    println!(
        "  on the device: streamed (two slots) {:.3} MiB, resident (every slot) {:.3} MiB{of}; \
         a run keeps them resident where that fits",
        two / MIB,
        all / MIB
    );
    Ok(())
}
