//! `peridot info`: size of a model and memory per backend, without running it.

use super::{load_lean_problem, load_model, ModelArgs, MIB};
use peridot::backend::estimate::{self, RankShape, RunShape};
use peridot::backend::gpu::bond_loop::device_bytes_per;
use peridot::backend::BackendKind;
use peridot::backend::{CpuMatrix, GpuLoop, GpuMatrix};
use peridot::operators::{footprint, Storage};
use peridot::setup::memory::{self, cpu_loop_bytes, gib, Estimate, ModelCounts};
use peridot::solver::run::choose_dt;
use peridot::Precision;

/// The options of `peridot info` beyond the model.
pub struct InfoFlags<'a> {
    /// `--gpu-memory-budget`.
    pub budget: Option<&'a str>,
    /// `--subdomains`.
    pub subdomains: Option<usize>,
    /// `--ranks`.
    pub ranks: Option<usize>,
    /// The backend (`auto` resolved as `run` does) and precision of the guard's estimate.
    pub backend: BackendKind,
    pub precision: Precision,
}

/// Print the model's size, memory per backend, the memory guard's estimate for the chosen
/// backend and, with `budget` or `subdomains`, the subdomain plan.
pub fn info(args: &ModelArgs, flags: InfoFlags) -> anyhow::Result<()> {
    let InfoFlags {
        budget,
        subdomains,
        ranks,
        backend,
        precision,
    } = flags;
    let estimate = guard_estimate(args, (backend, precision), budget, subdomains, ranks)?;
    // counts are all `info` needs: no bond is stored, so a model of any size fits the host
    let problem = load_lean_problem(args)?;
    if let Some(text) = budget {
        // a malformed size is an error before any output (sizes or a share of the in-core
        // footprint, as `run` takes them)
        peridot::backend::partitioned::budget_bytes::<f64>(text, &problem)?;
    }
    let (n, nb) = (problem.body.len(), problem.families.bonds());
    let (fmin, fmean, fmax) = problem.families.size_stats();
    println!("model        {}", problem.name);
    println!(
        "dimension    {:?}, dx {:.4e} m, delta {:.4e} m ({:.3} dx)",
        problem.model.discretization.dimension,
        problem.body.dx,
        problem.body.delta,
        problem.body.delta / problem.body.dx
    );
    println!("material     {}", problem.material.name());
    println!("nodes        {n}");
    if !problem.body.layers.is_empty() {
        let each: Vec<String> = problem
            .body
            .layers
            .iter()
            .map(|l| {
                let k: usize = l.field["region.".len()..].parse().unwrap_or(0);
                let name = problem.model.region.get(k).map_or("?", |r| r.name.as_str());
                format!("\"{name}\" {}", l.nodes.len())
            })
            .collect();
        println!(
            "layers       {} nodes added outside the body ({})",
            problem.body.layer_node_count(),
            each.join(", ")
        );
    }
    let body = &problem.body;
    if !body.groups.is_empty() {
        let each: Vec<String> = body
            .groups
            .iter()
            .map(|g| format!("\"{}\" {}", g.name, g.nodes.len()))
            .collect();
        println!("groups       {} (nodes: {})", each.len(), each.join(", "));
    }
    if let Some(ids) = &body.material_ids {
        let mut distinct = ids.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let shown: Vec<String> = distinct.iter().take(8).map(|m| m.to_string()).collect();
        let taken = match problem.materials {
            Some(_) => "[[material]] tables with an id take their nodes",
            None => "stored; every node has [material]",
        };
        println!(
            "material ids {}{} ({taken})",
            shown.join(", "),
            if distinct.len() > 8 { ", ..." } else { "" }
        );
    }
    println!("bonds        {nb} (directed)");
    println!("family size  min {fmin}, mean {fmean:.2}, max {fmax}");
    println!("pre-cracked  {} bonds", problem.precracked_bonds());
    match choose_dt(&problem) {
        Ok((dt, stable, _)) => println!("time step    {dt:.4e} s (stable {stable:.4e} s)"),
        Err(e) => println!("time step    error: {e}"),
    }
    if let Some(map) = &problem.materials {
        several_materials(map);
    } else {
        let m = &problem.material;
        if let peridot::material::Law::Pmb { c, .. } = m.law {
            let implied = match problem.model.material.micromodulus {
                Some(_) => " (implied by the micromodulus)",
                None => "",
            };
            println!("micromodulus {c:.6e} N/m^6");
            println!("E            {:.6e} Pa{implied}", m.youngs_modulus);
        }
        if let Some(s0) = m.critical_stretch {
            println!("crit. stretch {s0:.4e}");
        }
        if let Some(law) = m.softening {
            println!(
                "damage law   {}: s0 {:.4e}, kink {:.4e} at {} of the peak force, final {:.4e}; \
                 work to failure c x {:.4e} per bond of length x",
                problem.model.material.damage_law.unwrap_or_default().name(),
                law.s0,
                law.kink_stretch,
                law.kink_ratio,
                law.final_stretch,
                law.work()
            );
        }
    }
    println!("memory (estimates of what each backend holds):");
    let gpu_memory = gpu_memory_bytes();
    let corr = problem.material.surface_correction;
    for (name, p) in [("f32", 4), ("f64", 8)] {
        let (bn, bb) = cpu_loop_bytes(problem.dim(), p, corr);
        let total = bn * n + bb * nb;
        println!(
            "  cpu-loop {name}: {bn} B/node + {bb} B/bond = {:.1} B/node, total {:.3} MiB",
            total as f64 / n.max(1) as f64,
            total as f64 / MIB
        );
    }
    for (name, p) in [("f32", 4), ("f64", 8)] {
        for storage in [Storage::Full, Storage::Half] {
            let held = match p {
                4 => CpuMatrix::<f32>::memory_estimate(&problem, storage),
                _ => CpuMatrix::<f64>::memory_estimate(&problem, storage),
            };
            let fp = footprint(&problem, storage, p);
            println!(
                "  cpu-matrix {name} {}: {:.1} B/node, total {:.3} MiB (operators {:.3} MiB; \
                 all operators as assembled for K and export {:.3} MiB)",
                storage.name(),
                held as f64 / n.max(1) as f64,
                held as f64 / MIB,
                fp.step() as f64 / MIB,
                fp.assembled() as f64 / MIB
            );
        }
    }
    // (whether the body is a full box lattice, decided once: it checks every family)
    let lattice = GpuLoop::<f64>::lattice(&problem);
    for (name, p) in [("f32", 4), ("f64", 8)] {
        let lps = matches!(problem.material.law, peridot::material::Law::Lps { .. });
        let (bn, bb) = device_bytes_per(problem.dim(), p, lps);
        let total = match p {
            4 => GpuLoop::<f32>::device_bytes_for(&problem, lattice.as_ref()),
            _ => GpuLoop::<f64>::device_bytes_for(&problem, lattice.as_ref()),
        };
        let per_node = total as f64 / n.max(1) as f64;
        let form = match &lattice {
            Some(st) => format!(
                "{bn} B/node + a status bit for each of {} stencil slots (a full box \
                 lattice: no neighbour list)",
                st.slots()
            ),
            None => format!("{bn} B/node + {bb} B/bond slot"),
        };
        println!(
            "  gpu-loop {name}: {form} = {per_node:.1} B/node, total {:.3} MiB on the GPU; at \
             this family size {:.3e} nodes fit in {:.0} GB",
            total as f64 / MIB,
            gpu_memory as f64 / per_node,
            gpu_memory as f64 / 1e9
        );
    }
    for (name, p) in [("f32", 4), ("f64", 8)] {
        let storage = Storage::Half;
        let held = GpuMatrix::<f32>::memory_estimate(&problem, storage, p);
        println!(
            "  gpu-matrix {name} {}: {:.1} B/node, total {:.3} MiB on the GPU (+ cuSPARSE \
             workspaces)",
            storage.name(),
            held as f64 / n.max(1) as f64,
            held as f64 / MIB
        );
    }
    print_guard(&estimate, args.memory_limit_bytes()?);
    super::subdomains::print_plan(&problem, budget, subdomains)?;
    match ranks {
        Some(p) => super::ranks::print_ranks(&problem, p, precision),
        None => Ok(()),
    }
}

/// The memory guard's estimate for a run of the model on `backend` (`auto` resolved) in
/// `precision`, shaped as `run` would set it up (lean on gpu-loop; subdomains of the
/// options; across `ranks` ranks one rank's, lean but on cpu-matrix).
fn guard_estimate(
    args: &ModelArgs,
    (backend, precision): (BackendKind, Precision),
    budget: Option<&str>,
    subdomains: Option<usize>,
    ranks: Option<usize>,
) -> anyhow::Result<Estimate> {
    let (model, dir) = load_model(args)?;
    let kind = match backend {
        BackendKind::Auto => peridot::backend::resolve_auto(precision).0,
        k => k,
    };
    let counts = ModelCounts::of(&model, &dir, precision);
    let ranks = ranks.map(|count| RankShape {
        count,
        on_host: 1,
        restart: false,
    });
    let mut shape = RunShape {
        // (a rank of any backend sets up lean, as `run` does)
        lean: kind == BackendKind::GpuLoop || ranks.is_some(),
        subdomains,
        ranks,
        ..RunShape::in_core(kind)
    };
    if let Some(text) = budget {
        shape.budget = estimate::budget_of(text, &counts, &shape);
        shape.streamed = true;
    }
    Ok(estimate::estimate(&counts, &shape))
}

/// Print `estimate` and whether it fits the host (`limit`, else what it has) and, on a GPU
/// backend where a device opens, the device's free memory.
fn print_guard(estimate: &Estimate, limit: Option<u64>) {
    let fits = |needed: f64, cap: Option<(f64, &str)>| match cap {
        Some((c, source)) if needed <= c => format!("fits: {:.3} GiB {source}", gib(c)),
        Some((c, source)) => format!("DOES NOT FIT: {:.3} GiB {source}", gib(c)),
        None => "what the machine has is unknown".to_string(),
    };
    println!(
        "memory guard {}: host {:.3} GiB ({:.0} bytes; {})",
        estimate.what,
        gib(estimate.host),
        estimate.host,
        fits(estimate.host, memory::host_cap(limit))
    );
    if let Some(device) = estimate.device {
        let free = peridot::gpu::driver_available()
            .then(|| peridot::gpu::Gpu::get().ok())
            .flatten()
            .and_then(|g| g.memory_info().ok())
            .map(|(free, _)| (free as f64, "free on the device"));
        println!(
            "memory guard {}: device {:.3} GiB ({device:.0} bytes; {})",
            estimate.what,
            gib(device),
            fits(device, free)
        );
    }
}

/// Memory of this machine's GPU where one is present (`total_memory` as the driver reports
/// it), else the 80 GB of an H100, so `info` can say how large a model fits.
fn gpu_memory_bytes() -> usize {
    if peridot::gpu::driver_available() {
        if let Ok(g) = peridot::gpu::Gpu::get() {
            return g.total_memory;
        }
    }
    80_000_000_000
}

/// The lines of several materials: each one's nodes and constants, then each pair's bond
/// constants (`docs/materials.md`).
fn several_materials(map: &peridot::material::MaterialMap) {
    let counts = map.counts();
    for (k, (name, m)) in map.names.iter().zip(&map.constants).enumerate() {
        let s0 = m
            .critical_stretch
            .map_or("never breaks".into(), |s| format!("s0 {s:.4e}"));
        println!(
            "material {k}   \"{name}\": {} nodes, E {:.6e} Pa, nu {}, {s0}",
            counts[k], m.youngs_modulus, m.poisson_ratio
        );
    }
    let n = map.names.len();
    for a in 0..n {
        for b in a + 1..n {
            let at = a * n + b;
            let (c, s0) = (map.micromodulus[at], map.critical_stretch[at]);
            let c = match c > 0.0 {
                true => format!("c {c:.6e} N/m^6, "),
                false => String::new(),
            };
            println!(
                "interface    \"{}\" - \"{}\": {c}s0 {s0:.4e}",
                map.names[a], map.names[b]
            );
        }
    }
}
