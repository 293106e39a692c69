//! `peridot run`.

use super::{load_model, ModelArgs};
use peridot::backend::BackendKind;
use peridot::partition::SubdomainRequest;
use peridot::setup::{NeighborSearch, Problem};
use peridot::solver::run::run_and_export_stiffness;
use peridot::solver::{run as simulate, RunOptions};
use peridot::Precision;
use std::path::PathBuf;

const MIB: f64 = (1u64 << 20) as f64;

pub fn run(
    args: &ModelArgs,
    out: Option<PathBuf>,
    backend: BackendKind,
    precision: Precision,
    quiet: bool,
    export_stiffness: bool,
    subdomains: SubdomainRequest,
) -> anyhow::Result<()> {
    let (model, dir) = load_model(args)?;
    let nothing_to_stream = subdomains.count.is_none()
        && subdomains.budget.is_none()
        && model.solver.gpu_memory_budget.is_none();
    if subdomains.streamed && nothing_to_stream {
        anyhow::bail!(
            "--streamed: only with --subdomains N, --gpu-memory-budget SIZE or the model key \
             solver.gpu_memory_budget"
        );
    }
    let backend = if backend == BackendKind::Auto {
        let (chosen, why) = peridot::backend::resolve_auto(precision);
        eprintln!("backend auto: {why}; using {}", chosen.name());
        chosen
    } else {
        backend
    };
    // gpu-loop in subdomains keeps no bond on the host (its kernels recompute every bond
    // factor, and each subdomain searches its own families): a lean problem, so a model
    // larger than the GPU is not first held whole in host memory. A GPU backend otherwise
    // gets its families from the device search (the same families).
    let problem = if backend == BackendKind::GpuLoop && !nothing_to_stream && !export_stiffness {
        Problem::build_lean(model, &dir)?
    } else {
        Problem::build_with(model, &dir, NeighborSearch::for_backend(backend, precision))?
    };
    let out_dir = out.unwrap_or_else(|| PathBuf::from("out").join(&problem.name));
    let opts = RunOptions {
        backend,
        precision,
        out_dir: Some(out_dir.clone()),
        quiet,
        subdomains: Some(subdomains),
    };
    let s = if export_stiffness {
        run_and_export_stiffness(problem, &opts)?
    } else {
        simulate(problem, &opts)?
    };
    println!(
        "{}: {} nodes, {} bonds, {} steps of {:.4e} s in {:.2} s ({:.3e} node-steps/s), \
         {} broken bonds, max damage {:.3}",
        s.model,
        s.nodes,
        s.bonds,
        s.steps,
        s.dt,
        s.wall_seconds,
        s.node_steps_per_second,
        s.broken_bonds,
        s.max_damage
    );
    if let Some(r) = &s.subdomains {
        println!(
            "subdomains: {} ({:?}, {} with a slot of their own), {:.1} MiB on the device ({:.1} % of the in-core {:.1} MiB); \
             per force evaluation {:.3e} s: kernels {:.3e} s, copies in {:.3e} s ({:.1} MB), \
             out {:.3e} s ({:.1} MB), host {:.3e} s, hidden by overlap {:.3e} s; {:.2}x the \
             bound max(kernels, copies)",
            r.count,
            r.residency,
            r.resident_subdomains,
            r.allocated_bytes as f64 / MIB,
            100.0 * r.allocated_bytes as f64 / r.in_core_bytes.max(1) as f64,
            r.in_core_bytes as f64 / MIB,
            r.seconds_per_evaluation,
            r.compute_seconds_per_evaluation,
            r.copy_in_seconds_per_evaluation,
            r.bytes_in_per_evaluation / 1e6,
            r.copy_out_seconds_per_evaluation,
            r.bytes_out_per_evaluation / 1e6,
            r.host_seconds_per_evaluation,
            r.hidden_seconds_per_evaluation,
            r.ratio_to_bound,
        );
    }
    println!(
        "neighbour search: {} ({:.3} s)",
        s.neighbor_search,
        s.phase_seconds.neighbors.unwrap_or(0.0)
    );
    if let Some(r) = s.static_residual {
        println!(
            "relative residual {r:.3e} ({})",
            if s.converged == Some(true) {
                "converged"
            } else {
                "not converged"
            }
        );
    }
    if export_stiffness {
        println!(
            "stiffness of the final state in {}",
            out_dir.join("K.mtx").display()
        );
    }
    println!("outputs in {}", out_dir.display());
    Ok(())
}
