//! `peridot bench`: time explicit steps for each backend x precision x size, print a table and
//! write `bench.json` (`contract.md`). A backend this build or machine cannot run is skipped
//! with a line saying why.

use super::ModelArgs;
use peridot::backend::estimate::{self, RunShape};
use peridot::backend::BackendKind;
use peridot::bench::{self, BenchRecord, BenchSettings};
use peridot::setup::check_material;
use peridot::setup::memory::{self, ModelCounts};
use peridot::Precision;
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes of the host copy used as the CPU bandwidth reference (well beyond the caches).
const HOST_COPY_BYTES: usize = 256 << 20;
/// Bytes of the device copy used as the GPU bandwidth reference (beyond the L2 cache).
const DEVICE_COPY_BYTES: usize = 1 << 30;

/// `peridot bench` options.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Backends to time, comma-separated; unavailable ones are skipped with a message.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "cpu-loop,cpu-matrix,gpu-loop,gpu-matrix"
    )]
    pub backends: Vec<BackendKind>,
    /// Precisions, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "f64,f32")]
    pub precisions: Vec<Precision>,
    /// Target node counts, comma-separated (`200000`, `200k`, `2M`); dx is scaled to
    /// reach each. Default: the model as it is.
    #[arg(long, value_delimiter = ',', value_parser = parse_size)]
    pub sizes: Vec<usize>,
    /// Timed steps per run (the median step is reported).
    #[arg(long, default_value_t = 20)]
    pub steps: usize,
    /// Untimed steps before timing.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    /// Steps per timed call (default: 1 on CPU backends, 10 on device backends).
    #[arg(long)]
    pub batch: Option<usize>,
    /// Folder for bench.json.
    #[arg(long, default_value = "out/bench")]
    pub out: PathBuf,
}

/// A node count: digits, optionally with a `k` (1e3) or `M` (1e6) suffix (`200k`, `1.5M`).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (digits, factor) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 1e3),
        Some('m' | 'M') => (&t[..t.len() - 1], 1e6),
        _ => (t, 1.0),
    };
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() && v * factor >= 1.0 && v * factor <= u32::MAX as f64 => {
            Ok((v * factor).round() as usize)
        }
        _ => Err(format!(
            "`{text}` is not a node count (a positive integer, or with k or M: 200000, 200k, 2M)"
        )),
    }
}

pub fn bench(model: &ModelArgs, args: BenchArgs) -> anyhow::Result<()> {
    if args.steps == 0 {
        anyhow::bail!("--steps: must be at least 1");
    }
    if args.batch == Some(0) {
        anyhow::bail!("--batch: must be at least 1");
    }
    let sizes: Vec<Option<usize>> = if args.sizes.is_empty() {
        vec![None]
    } else {
        args.sizes.iter().map(|&n| Some(n)).collect()
    };
    let wants_cpu = args.backends.iter().any(|b| {
        matches!(
            b,
            BackendKind::Auto | BackendKind::CpuLoop | BackendKind::CpuMatrix
        )
    });
    let host_copy = wants_cpu.then(|| bench::host_copy_gb_per_s(HOST_COPY_BYTES, 5));
    if let Some(c) = host_copy {
        println!(
            "host copy bandwidth {c:.2} GB/s ({} threads, read + write of {} MiB)",
            rayon::current_num_threads(),
            HOST_COPY_BYTES >> 20
        );
    }
    let wants_device = args.backends.iter().any(|b| {
        matches!(
            b,
            BackendKind::Auto | BackendKind::GpuLoop | BackendKind::GpuMatrix
        )
    });
    // Without a GPU this is an error; the GPU backends then print their own skip lines.
    let device_copy = wants_device
        .then(|| bench::device_copy_gb_per_s(DEVICE_COPY_BYTES, 5).ok())
        .flatten();
    if let Some(c) = device_copy {
        println!(
            "device copy bandwidth {c:.1} GB/s (device to device, read + write of {} MiB)",
            DEVICE_COPY_BYTES >> 20
        );
    }
    let settings = BenchSettings {
        steps: args.steps,
        warmup: args.warmup,
        batch: args.batch,
        host_copy_gb_per_s: host_copy,
        device_copy_gb_per_s: device_copy,
    };
    // the memory guard: the stored problem and the largest of the backends asked for (one
    // backend is held at a time), in each precision asked for
    let limit = model.memory_limit_bytes()?;
    let guard = |counts: &ModelCounts| -> peridot::Result<()> {
        let worst = args
            .backends
            .iter()
            .flat_map(|&kind| {
                args.precisions.iter().map(move |&p| {
                    let counts = counts.in_precision(memory::scalar_bytes(p));
                    estimate::estimate(&counts, &RunShape::in_core(kind))
                })
            })
            .max_by(|a, b| a.host.total_cmp(&b.host));
        let Some(worst) = worst else { return Ok(()) };
        memory::check_host(&worst, limit, |cap| {
            vec![
                counts.coarser_dx(worst.host, cap),
                format!(
                    "--sizes below {:.3e} nodes",
                    counts.nodes * cap / worst.host
                ),
            ]
        })
    };
    let mut records = Vec::new();
    for size in sizes {
        let scaled = bench::scaled_problem(&model.model, &model.set, size, &guard)?;
        let problem = Arc::new(scaled.problem);
        let sets: Vec<String> = scaled
            .overrides
            .iter()
            .map(|s| format!(" --set {s}"))
            .collect();
        println!(
            "\n{}: {} nodes, {} bonds{}{}",
            problem.name,
            problem.body.len(),
            problem.families.bonds(),
            size.map(|n| format!(" (asked for {n})"))
                .unwrap_or_default(),
            if sets.is_empty() {
                String::new()
            } else {
                format!(", as with{}", sets.concat())
            }
        );
        if let (_, Some(note)) = bench::bench_dt(&problem) {
            println!("note: {note}");
        }
        print_header();
        // the material's numbers in each precision (the build checked f64): a precision
        // they leave the normal range of is skipped with the reason
        let usable: Vec<(Precision, Option<String>)> = args
            .precisions
            .iter()
            .map(|&p| {
                let check = check_material(&problem.model, &problem.body, p);
                (p, check.err().map(|e| e.to_string()))
            })
            .collect();
        for &kind in &args.backends {
            for (precision, refused) in &usable {
                let precision = *precision;
                if let Some(why) = refused {
                    println!("skip {} {}: {why}", kind.name(), precision.name());
                    continue;
                }
                match bench::bench_one(&problem, kind, precision, &settings) {
                    Ok(r) => {
                        print_row(&r);
                        records.push(r);
                    }
                    Err(e) => println!("skip {} {}: {e}", kind.name(), precision.name()),
                }
            }
        }
    }
    let path = bench::write_json(&args.out, &records)?;
    println!(
        "\nnode-steps/s = nodes / median seconds per explicit step (force, bond-break check, \
         update; setup and output excluded); cpu = CPU time of this process over threads x \
         wall time (below 100%: other processes shared the cores)\nwrote {}",
        path.display()
    );
    Ok(())
}

fn print_header() {
    println!(
        "{:<11} {:<4} {:>3} {:>9} {:>11} {:>6} {:>11} {:>13} {:>8} {:>7} {:>10} {:>5}",
        "backend",
        "prec",
        "dim",
        "nodes",
        "bonds",
        "steps",
        "s/step",
        "node-steps/s",
        "GB/s",
        "of copy",
        "memory MiB",
        "cpu"
    );
}

fn print_row(r: &BenchRecord) {
    let frac = r
        .fraction_of_copy
        .map(|f| format!("{:.0}%", 100.0 * f))
        .unwrap_or_else(|| "-".into());
    // Share of the pool's threads x wall time this process was on a CPU while timing.
    let busy = r
        .cpu_seconds_per_step
        .map(|c| {
            format!(
                "{:.0}%",
                100.0 * c / (r.threads as f64 * r.mean_seconds_per_step)
            )
        })
        .unwrap_or_else(|| "-".into());
    println!(
        "{:<11} {:<4} {:>3} {:>9} {:>11} {:>6} {:>11.4e} {:>13.4e} {:>8.2} {:>7} {:>10.1} {:>5}",
        r.backend,
        r.precision,
        r.dim,
        r.nodes,
        r.bonds,
        r.steps,
        r.seconds_per_step,
        r.node_steps_per_second,
        r.achieved_gb_per_s,
        frac,
        r.memory_bytes as f64 / (1 << 20) as f64,
        busy
    );
    if !r.nnz.is_empty() {
        let nnz: Vec<String> = r.nnz.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!("{:<16} nnz: {}", "", nnz.join(", "));
    }
}
