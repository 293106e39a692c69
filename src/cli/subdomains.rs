//! The subdomain plan of `peridot info` (`--gpu-memory-budget`, `--subdomains`): how
//! `peridot run` with the same option would split the model (`peridot::partition`,
//! `docs/subdomains.md`), sized for `gpu-loop` in f64.

use super::MIB;
use peridot::backend::partitioned::budget_bytes;
use peridot::backend::partitioned::plan::gpu_bytes_per_node;
use peridot::backend::partitioned::plan::{plan_for_budget, slot_bound};
use peridot::partition::Cuts;
use peridot::setup::Problem;

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
    let count = match (budget, count) {
        (Some(b), _) => plan_for_budget::<f64>(problem, b)?,
        (None, Some(n)) => n,
        (None, None) => return Ok(()),
    };
    // Nothing is built: counts from the cut, the halo and the slot bytes as upper bounds
    // (the halo by the cell slab on each side), as the budget plan sizes them.
    let cuts = Cuts::new(problem, count)?;
    println!("subdomains (as `peridot run` makes them for gpu-loop in f64):");
    let sizes: Vec<String> = gpu_bytes_per_node(problem)
        .iter()
        .map(|(name, b)| format!("{name} {b:.1}"))
        .collect();
    println!("  in-core bytes per node: {}", sizes.join(", "));
    if let Some(b) = budget {
        println!(
            "  budget {:.3} MiB: two streaming slots fit, as many subdomains resident beside \
             them as fit",
            b as f64 / MIB
        );
    }
    println!("  count {count}");
    println!(
        "  {:>4} {:>11} {:>10} {:>10} {:>12} {:>12}",
        "#", "cell slabs", "owned", "halo <=", "bonds", "slot MiB <="
    );
    let slots: Vec<f64> = (0..count)
        .map(|s| slot_bound::<f64>(problem, &cuts, s))
        .collect();
    for (s, slot) in slots.iter().enumerate() {
        let owned = cuts.owned(s);
        let bonds: usize = owned.iter().map(|&i| problem.families.range(i).len()).sum();
        let cells = cuts.cells(s);
        println!(
            "  {s:>4} {:>11} {:>10} {:>10} {bonds:>12} {:>12.3}",
            format!("{}..{}", cells.start, cells.end),
            owned.len(),
            cuts.halo_bound(s),
            slot / MIB
        );
    }
    let two = 2.0 * slots.iter().copied().fold(0.0, f64::max);
    let all: f64 = slots.iter().sum();
    let of = budget.map_or(String::new(), |b| format!(" of {:.3} MiB", b as f64 / MIB));
    println!(
        "  on the device: streamed (two slots) {:.3} MiB, resident (every slot) {:.3} MiB{of}; \
         a run keeps as many resident as fit",
        two / MIB,
        all / MIB
    );
    Ok(())
}
