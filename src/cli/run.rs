//! `peridot run`.

use super::signals::{self, Interrupted};
use super::{load_model, process_start, ModelArgs, MIB};
use peridot::backend::estimate::{self, RankShape, RunShape};
use peridot::backend::partitioned::SubdomainRequest;
use peridot::backend::{BackendKind, GpuLoop};
use peridot::output::RunStatus;
use peridot::setup::memory::{self, ModelCounts};
use peridot::setup::{timed, Problem};
use peridot::solver::distributed::run_distributed;
use peridot::solver::export::run_and_export_stiffness;
use peridot::solver::run::run_restarted;
use peridot::solver::{checkpoints_across_ranks, Ranks};
use peridot::solver::{run as simulate, RunOptions};
use peridot::Precision;
use std::path::PathBuf;

/// The options of `peridot run` beyond the model.
pub struct RunFlags {
    pub out: Option<PathBuf>,
    pub backend: BackendKind,
    pub precision: Precision,
    pub quiet: bool,
    pub export_stiffness: bool,
    pub subdomains: SubdomainRequest,
    /// `--restart DIR`: resume from the latest checkpoint in `DIR`.
    pub restart: Option<PathBuf>,
    /// `--checkpoint-every N`.
    pub checkpoint_every: Option<usize>,
}

pub fn run(args: &ModelArgs, flags: RunFlags) -> anyhow::Result<()> {
    let RunFlags {
        out,
        backend,
        precision,
        quiet,
        export_stiffness,
        subdomains,
        restart,
        checkpoint_every,
    } = flags;
    // From here SIGINT / SIGTERM stop the run after a step (`signals.rs`); one that comes
    // during setup stops it at step 0, after that step's outputs.
    let cancel = signals::install()?;
    // under an MPI launcher: this process's rank of a distributed run (`ranks.rs`)
    let (ranks, on_host) = super::ranks::join(&cancel, export_stiffness)?;
    let (loaded, parse_seconds) = timed(|| load_model(args));
    let (mut model, dir) = loaded?;
    if checkpoint_every.is_some() {
        model.output.checkpoint_every = checkpoint_every;
    }
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
        if ranks.as_ref().is_none_or(Ranks::writes) {
            eprintln!("backend auto: {why}; using {}", chosen.name());
        }
        chosen
    } else {
        backend
    };
    // the device opened and its kernel program made on a thread of their own, while the host
    // builds the body, families and bond data
    let device_open = open_device_aside(backend, precision);
    // gpu-loop keeps no bond factor on the device (its kernels recompute them from
    // positions) and fills its bond arrays from a lean problem's searched families as well
    // as from stored ones (`backend::gpu::bond_loop`), so it runs from a lean problem, which holds
    // no bond on the host (`Problem::build_lean`). The rule: lean for gpu-loop without
    // `--export-stiffness` (which assembles K from stored bonds) when it runs in subdomains
    // (each subdomain searches its own families; a model larger than the GPU is not first held
    // whole in host memory), or when in core the stored problem's per-bond arrays, estimated
    // from the node count and the family radius (`setup::stored_bond_bytes_estimate`), would
    // exceed half of the host's available memory (`setup::memory::available`; where it
    // cannot be read, never), or when the body is a full box lattice, which the in-core
    // backend runs from its stencil, reading no family (`GpuLoop::runs_listless`: the host
    // then builds no family and no per-bond array at all). Otherwise the stored problem, with the families from the device
    // neighbour search on a GPU backend (the same families; faster than the CPU cell list the
    // lean problem searches with).
    // the memory guard: refuse, before anything large is allocated, a model whose setup the
    // host cannot hold, by the chosen backend's own count (`backend/estimate.rs`; gpu-loop may
    // set up lean, holding no bond on the host)
    let counts = ModelCounts::of(&model, &dir, precision);
    // (a restart sets the checkpoint's bond status as the problem's initial one, which needs
    // the bonds stored; so does the partition of a distributed run)
    let may_be_lean = backend == BackendKind::GpuLoop
        && !export_stiffness
        && restart.is_none()
        && ranks.is_none();
    // A rank of a distributed run builds the problem lean as well, on every backend: it
    // holds the per-node arrays the driver needs whole (state, loads, outputs), and the
    // bonds of its own part only, searched for its owned nodes (`partition::Cuts::subdomain`)
    // with their data computed per bond (`distributed/part.rs`: the loops' parts and the
    // matrix scheme's): the same values as a stored problem's. A restart holds the
    // checkpoint's bond status whole while the parts take theirs from it, then drops it
    // (`restart::adopt_bond_status`). The guard then counts one rank's part, times the
    // ranks on this host (`RankShape`).
    let rank_lean = ranks.is_some();
    let mut shape = RunShape {
        lean: may_be_lean || rank_lean,
        subdomains: subdomains.count,
        streamed: subdomains.streamed,
        ranks: (ranks.as_ref()).map(|r| RankShape {
            count: r.comm.size(),
            on_host,
            restart: restart.is_some(),
        }),
        ..RunShape::in_core(backend)
    };
    // the budget the run will take: the option, else the model key on gpu-loop
    let budget = subdomains.budget.clone().or_else(|| {
        let key = model.solver.gpu_memory_budget.as_ref()?;
        (backend == BackendKind::GpuLoop).then(|| key.raw())
    });
    if let Some(text) = &budget {
        shape.budget = estimate::budget_of(text, &counts, &shape);
        shape.streamed = true;
    }
    estimate::guard_host(&counts, &shape, args.memory_limit_bytes()?, may_be_lean)?;
    let (body, body_seconds) = timed(|| peridot::setup::checked_body_for(&model, &dir, precision));
    let body = body?;
    let listless = GpuLoop::<f64>::runs_listless(&model, &body);
    let lean = may_be_lean
        && (!nothing_to_stream || listless || {
            let estimate = peridot::setup::stored_bond_bytes_estimate(&model, &body);
            memory::available().is_some_and(|free| estimate > 0.5 * free)
        });
    // the device side, before the neighbour search and the bond data: the in-core gpu-loop
    // runs a full box lattice from its stencil
    shape.lean = lean || rank_lean;
    shape.listless = listless && nothing_to_stream;
    // (a rank of a distributed run holds its part only: its GpuLoop checks that the part fits)
    if ranks.is_none() {
        guard_device(&counts, &shape)?;
    }
    let mut problem = if let (true, Some(r)) = (rank_lean, ranks.as_ref()) {
        // (each rank the bond passes of its share of the nodes, put together: `setup/shared.rs`)
        let shares = peridot::distributed::CommShares(&*r.comm);
        Problem::lean_from_body_shared(model, body, &shares)?
    } else if lean {
        Problem::lean_from_body(model, body)?
    } else {
        Problem::from_body(model, body, backend.neighbor_search(precision))?
    };
    problem.setup.parse = Some(parse_seconds);
    problem.setup.body = Some(body_seconds);
    problem.setup.device_open = device_open.and_then(|h| h.join().ok());
    let out_dir = out
        .or_else(|| restart.clone())
        .unwrap_or_else(|| PathBuf::from("out").join(&problem.name));
    let writes = ranks.as_ref().is_none_or(Ranks::writes);
    let opts = RunOptions {
        backend,
        precision,
        out_dir: Some(out_dir.clone()),
        quiet,
        subdomains: Some(subdomains),
        cancel: Some(super::ranks::agreed(&ranks).unwrap_or(cancel)),
        process_start: Some(process_start()),
    };
    let s = match (export_stiffness, &restart, ranks) {
        (_, _, Some(ranks)) => run_distributed(problem, &opts, restart.as_deref(), ranks)?,
        (true, _, None) => run_and_export_stiffness(problem, &opts, restart.as_deref())?,
        (false, Some(from), None) => run_restarted(problem, &opts, from)?,
        (false, None, None) => simulate(problem, &opts)?,
    };
    // (an interrupted rank says how to resume where its backend wrote the checkpoint)
    let resumable = checkpoints_across_ranks(&s.backend);
    if !writes {
        // (rank 0 reports the run)
        return match s.status == RunStatus::Interrupted {
            true => Err(Interrupted::ranked(s.steps, out_dir, resumable).into()),
            false => Ok(()),
        };
    }
    if let Some(step) = s.restarted_from_step {
        println!("resumed from the checkpoint of step {step}");
    }
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
    let interrupted = s.status == RunStatus::Interrupted;
    if export_stiffness && !interrupted {
        println!(
            "stiffness of the final state in {}",
            out_dir.join("K.mtx").display()
        );
    }
    println!("outputs in {}", out_dir.display());
    if interrupted {
        return Err(match s.backend.ends_with("-mpi") {
            true => Interrupted::ranked(s.steps, out_dir, resumable),
            false => Interrupted::new(s.steps, out_dir),
        }
        .into());
    }
    Ok(())
}

/// The memory guard's device side for a run of `shape` (a GPU backend, a device that opens):
/// the estimated device bytes against the device's free memory. Without a usable device the
/// backend's own creation reports why.
/// On a GPU backend, a thread that opens the device and makes the kernel program of
/// `precision` (compiled, or read from the disk cache), returning its seconds; the backend
/// later finds both made. An error is left for the backend to report.
fn open_device_aside(
    backend: BackendKind,
    precision: Precision,
) -> Option<std::thread::JoinHandle<f64>> {
    let on_gpu = matches!(backend, BackendKind::GpuLoop | BackendKind::GpuMatrix);
    (on_gpu && peridot::gpu::driver_available()).then(|| {
        std::thread::spawn(move || {
            let t0 = std::time::Instant::now();
            if let Ok(gpu) = peridot::gpu::Gpu::get() {
                let _ = gpu.module(precision);
            }
            t0.elapsed().as_secs_f64()
        })
    })
}

fn guard_device(counts: &ModelCounts, shape: &RunShape) -> anyhow::Result<()> {
    let on_gpu = matches!(shape.kind, BackendKind::GpuLoop | BackendKind::GpuMatrix);
    if !on_gpu || !peridot::gpu::driver_available() {
        return Ok(());
    }
    let Ok(gpu) = peridot::gpu::Gpu::get() else {
        return Ok(());
    };
    let free_total = gpu.memory_info()?;
    estimate::guard_device(counts, shape, free_total, &gpu.name)?;
    Ok(())
}
