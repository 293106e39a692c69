//! Command-line parsing (clap) and dispatch to the subcommands (`contract.md`).

mod bench;
mod info;
mod matrix;
mod neighbors;
mod ranks;
mod run;
pub mod signals;
mod subdomains;

use clap::{Parser, Subcommand};
use peridot::backend::BackendKind;
use peridot::setup::memory;
use peridot::Precision;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

/// Peridynamic fracture simulation.
#[derive(Debug, Parser)]
#[command(name = "peridot", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// When `main` began: what `summary.json`'s `process_seconds` counts from.
static PROCESS_START: OnceLock<Instant> = OnceLock::new();

/// Take the process's start time (first thing in `main`).
pub fn mark_process_start() {
    PROCESS_START.get_or_init(Instant::now);
}

/// The time [`mark_process_start`] took (now, where it was not called).
fn process_start() -> Instant {
    *PROCESS_START.get_or_init(Instant::now)
}

/// Bytes in a mebibyte, for the sizes the commands print.
const MIB: f64 = (1u64 << 20) as f64;

/// Arguments shared by every command that reads a model.
#[derive(Debug, clap::Args)]
pub struct ModelArgs {
    /// Model file (TOML).
    pub model: PathBuf,
    /// Override a model value: dotted path = TOML value (`discretization.dx=0.5e-3`,
    /// `boundary.0.y=20`). Repeatable.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Host memory the command may take (`16GiB`, `2e10`): a model whose setup on the
    /// chosen backend is estimated above it is refused before anything large is allocated. Default: what the machine reports
    /// available (MemAvailable, the cgroup's limit, `ulimit -v`); set it where that is
    /// reported low at start and grows.
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<String>,
}

impl ModelArgs {
    /// `--memory-limit` in bytes, or an error naming the option and the value.
    pub fn memory_limit_bytes(&self) -> anyhow::Result<Option<u64>> {
        match &self.memory_limit {
            None => Ok(None),
            Some(text) => peridot::model::size::parse_byte_size(text)
                .map(Some)
                .ok_or_else(|| {
                    anyhow::anyhow!(
                        "--memory-limit: `{text}` is not a size of at least one byte \
                         (e.g. 16GiB, 500MB, 2e10)"
                    )
                }),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Simulate a model and write VTK, probes, summary.json and damage.png.
    Run {
        #[command(flatten)]
        model: ModelArgs,
        /// Output folder (default `out/<model name>`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Backend: `auto` takes gpu-loop where a CUDA device is usable, cpu-loop otherwise.
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendKind,
        /// Floating-point precision of the state and the force evaluation.
        #[arg(long, value_enum, default_value = "f64")]
        precision: Precision,
        /// No progress display.
        #[arg(long)]
        quiet: bool,
        /// Also write the global stiffness K of the final bond status (K.mtx, export.json,
        /// nodes.csv, boundary.json) into the output folder.
        #[arg(long)]
        export_stiffness: bool,
        /// Run in this many subdomains (gpu-loop on the GPU; cpu-loop: the CPU emulation).
        #[arg(long, value_name = "N")]
        subdomains: Option<usize>,
        /// Run in subdomains sized for this much GPU memory (`2GiB`, `1.5e9`, or `15%` of
        /// the model's in-core footprint); overrides the model's solver.gpu_memory_budget.
        #[arg(long, value_name = "SIZE", conflicts_with = "subdomains")]
        gpu_memory_budget: Option<String>,
        /// With subdomains: stream them through two device buffers even where all would
        /// fit on the device at once.
        #[arg(long)]
        streamed: bool,
        /// Resume from the latest checkpoint in this output folder of an earlier run of the
        /// same model; writes on into `--out` (default: that folder).
        #[arg(long, value_name = "DIR")]
        restart: Option<PathBuf>,
        /// Write a restart checkpoint every N steps (overrides output.checkpoint_every).
        #[arg(long, value_name = "N")]
        checkpoint_every: Option<usize>,
        /// Under an MPI launcher: how the ranks cut the model (overrides
        /// solver.rank_partition; ignored in one process).
        #[arg(long, value_enum, value_name = "CUT")]
        partition: Option<PartitionArg>,
    },
    /// Write sparse matrices (K, B, Theta) as Matrix Market files plus a JSON sidecar,
    /// node coordinates and volumes (CSV) and boundary-condition node sets (JSON).
    ExportMatrix {
        #[command(flatten)]
        model: ModelArgs,
        /// Output folder.
        #[arg(long)]
        out: PathBuf,
        /// Comma-separated matrices: K (stiffness), B (extensions), Theta (dilatation, LPS).
        #[arg(long, default_value = "K")]
        what: String,
        /// File format: `mtx` (Matrix Market and side files) or `png` (a picture of the
        /// sparsity patterns, one panel per matrix in `--what` order, `DIR/sparsity.png`).
        #[arg(long, value_enum, default_value = "mtx")]
        format: MatrixFormat,
    },
    /// Solve the linear static problem K u = f directly (sparse Cholesky); writes the same
    /// outputs as run, with static_residual in summary.json.
    SolveStatic {
        #[command(flatten)]
        model: ModelArgs,
        /// Output folder (default `out/<model name>`).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Nodes, bonds, family sizes, stable dt and memory per backend.
    Info {
        #[command(flatten)]
        model: ModelArgs,
        /// Plan subdomains for this much GPU memory (`2GiB`, `512MiB`, `1.5e9` bytes).
        #[arg(long, value_name = "SIZE", conflicts_with = "subdomains")]
        gpu_memory_budget: Option<String>,
        /// Plan this many subdomains.
        #[arg(long, value_name = "N")]
        subdomains: Option<usize>,
        /// Show the partition of a run across this many MPI ranks (`mpirun -n P`): nodes,
        /// bonds, ghosts and halo bytes per rank.
        #[arg(long, value_name = "P")]
        ranks: Option<usize>,
        /// With --ranks: how the ranks cut the model (overrides solver.rank_partition).
        #[arg(long, value_enum, value_name = "CUT", requires = "ranks")]
        partition: Option<PartitionArg>,
        /// The backend whose memory estimate (host and device) `info` compares with this
        /// machine, as `run` would; `auto` as `run` resolves it.
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendKind,
        /// Precision of that estimate.
        #[arg(long, value_enum, default_value = "f64")]
        precision: Precision,
    },
    /// Time the neighbour search alone (device and/or CPU) on a model's nodes; with both,
    /// check that they give the same families.
    Neighbors {
        #[command(flatten)]
        model: ModelArgs,
        /// Searches to run, comma-separated, in this order; `auto`: on the device where a GPU
        /// is usable, else on the CPU.
        #[arg(long, value_enum, value_delimiter = ',', default_value = "auto")]
        search: Vec<neighbors::SearchKind>,
        /// Runs of each search (each one printed).
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// How the device families come back to the host.
        #[arg(long, value_enum, default_value = "staged")]
        download: neighbors::DownloadKind,
        /// Kernel program the device search takes its kernels from (the search is f64).
        #[arg(long, value_enum, default_value = "f64")]
        precision: Precision,
    },
    /// Parse and check a model only.
    Validate {
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Time explicit steps per backend x precision x size; a table and bench.json.
    Bench {
        #[command(flatten)]
        model: ModelArgs,
        #[command(flatten)]
        args: bench::BenchArgs,
    },
}

/// `--partition`: how the ranks of a distributed run cut the model (`docs/distributed.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum PartitionArg {
    /// Blocks where their ghosts' cell bound is below the slabs', else slabs (the default).
    Auto,
    /// Slabs of cells along the body's longest axis.
    Slabs,
    /// Blocks: the cell grid cut along two or three axes (slabs where P is prime).
    Blocks,
}

impl PartitionArg {
    /// `model` with `solver.rank_partition` set to this cut.
    fn into_model(self, model: &mut ModelArgs) {
        let name = match self {
            PartitionArg::Auto => "auto",
            PartitionArg::Slabs => "slabs",
            PartitionArg::Blocks => "blocks",
        };
        model.set.push(format!("solver.rank_partition=\"{name}\""));
    }
}

/// Matrix file formats of `export-matrix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MatrixFormat {
    /// Matrix Market coordinate (`.mtx`).
    Mtx,
    /// Sparsity pattern picture (`sparsity.png`).
    Png,
}

/// Run the parsed command.
pub fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run {
            mut model,
            out,
            backend,
            precision,
            quiet,
            export_stiffness,
            subdomains,
            gpu_memory_budget,
            streamed,
            restart,
            checkpoint_every,
            partition,
        } => {
            if let Some(p) = partition {
                p.into_model(&mut model);
            }
            let request = peridot::backend::partitioned::SubdomainRequest {
                count: subdomains,
                budget: gpu_memory_budget,
                streamed,
            };
            let flags = run::RunFlags {
                out,
                backend,
                precision,
                quiet,
                export_stiffness,
                subdomains: request,
                restart,
                checkpoint_every,
            };
            run::run(&model, flags)
        }
        Command::ExportMatrix {
            model,
            out,
            what,
            format,
        } => matrix::export(&model, &out, &what, format),
        Command::SolveStatic { model, out } => matrix::solve_static(&model, out),
        Command::Info {
            mut model,
            gpu_memory_budget,
            subdomains,
            ranks,
            partition,
            backend,
            precision,
        } => {
            if let Some(p) = partition {
                p.into_model(&mut model);
            }
            info::info(
                &model,
                info::InfoFlags {
                    budget: gpu_memory_budget.as_deref(),
                    subdomains,
                    ranks,
                    backend,
                    precision,
                },
            )
        }
        Command::Bench { model, args } => bench::bench(&model, args),
        Command::Neighbors {
            model,
            search,
            repeat,
            download,
            precision,
        } => neighbors::neighbors(
            &model,
            neighbors::NeighborArgs {
                search,
                repeat,
                download,
                precision,
            },
        ),
        Command::Validate { model } => {
            // the checks `info` and `run` make before any neighbour search, and no more
            let (m, dir) = load_model(&model)?;
            // the memory guard on the body, the one thing `validate` builds
            let counts = memory::ModelCounts::of(&m, &dir, Precision::F64);
            let body = memory::Estimate {
                what: "validate (the body: positions and volumes)".into(),
                host: counts.nodes * memory::BODY_BYTES_PER_NODE as f64,
                ..memory::lean_estimate(&counts, "")
            };
            memory::check_host(&body, model.memory_limit_bytes()?, |cap| {
                vec![counts.coarser_dx(body.host, cap)]
            })?;
            let body = peridot::setup::checked_body(&m, &dir)?;
            println!(
                "{}: valid ({} nodes, {} regions, {} boundary conditions)",
                model.model.display(),
                body.len(),
                m.region.len(),
                m.boundary.len()
            );
            Ok(())
        }
    }
}

/// Load and validate a model; also the folder its relative file names resolve from.
pub fn load_model(args: &ModelArgs) -> anyhow::Result<(peridot::model::Model, PathBuf)> {
    let model = peridot::model::load(&args.model, &args.set)?;
    let dir = args
        .model
        .parent()
        .map(|p| p.to_path_buf())
        .unwrap_or_default();
    Ok((model, dir))
}

/// Load a model and discretize it (neighbour search on the CPU).
pub fn load_problem(args: &ModelArgs) -> anyhow::Result<peridot::setup::Problem> {
    let (model, dir) = load_model(args)?;
    Ok(peridot::setup::Problem::build(model, &dir)?)
}

/// The model of `args` as a lean problem (family sizes, per-node data, no bond stored:
/// `Problem::build_lean`), for what needs only counts: `peridot info` of any size.
pub fn load_lean_problem(args: &ModelArgs) -> anyhow::Result<peridot::setup::Problem> {
    let (model, dir) = load_model(args)?;
    // a lean problem holds the body and the family sizes, no bond
    let counts = memory::ModelCounts::of(&model, &dir, Precision::F64);
    let lean = memory::lean_estimate(&counts, "peridot info's lean setup (no bond stored)");
    memory::check_host(&lean, args.memory_limit_bytes()?, |cap| {
        vec![counts.coarser_dx(lean.host, cap)]
    })?;
    Ok(peridot::setup::Problem::build_lean(model, &dir)?)
}
