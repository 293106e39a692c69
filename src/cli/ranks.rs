//! The ranks of `peridot run` under `mpirun` (`docs/distributed.md`), and the partition
//! `peridot info --ranks P` shows.

use peridot::backend::gpu::bond_loop::device_bytes_per;
use peridot::distributed::plan::table;
use peridot::material::Law;
use peridot::setup::Problem;
use peridot::solver::Ranks;
use peridot::Precision;

/// The number of ranks the MPI launcher started, from its environment (`PMI_SIZE`: MPICH's
/// Hydra and Slurm's PMI; `OMPI_COMM_WORLD_SIZE`: Open MPI); `None` outside a launcher.
pub fn launched_ranks() -> Option<usize> {
    ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.parse().ok())
}

/// Print the `p`-way partition of `problem` as a run across `p` ranks makes it (slabs or
/// blocks as `solver.rank_partition` says, balanced by bonds), with the halo bytes per step
/// in `precision`.
pub fn print_ranks(problem: &Problem, p: usize, precision: Precision) -> anyhow::Result<()> {
    let (cut, table) = table(problem, p)?;
    let mode = problem.model.solver.rank_partition.unwrap_or_default();
    let lps = matches!(problem.material.law, Law::Lps { .. });
    let bytes = match precision {
        Precision::F32 => 4,
        Precision::F64 => 8,
    };
    let dim = problem.dim();
    println!(
        "ranks {p} (as `mpirun -n {p} peridot run` cuts the model: {cut}, partition {}, cells \
         one family radius wide balanced by bonds; halo bytes received per step in {}):",
        mode.name(),
        precision.name()
    );
    println!(
        "  rank      nodes        bonds     ghosts  peers  halo bytes/step  gpu-loop: PCIe \
         bytes/step  device bytes"
    );
    // (the rank's GpuLoop in its neighbour-list form: per node of the part and per bond,
    // padding of the sliced order left out)
    let (node, slot) = device_bytes_per(dim, bytes, lps);
    for r in &table {
        let device = node * (r.nodes + r.ghosts) + (slot * r.bonds as f64) as usize;
        println!(
            "  {:>4} {:>10} {:>12} {:>10} {:>6} {:>16} {:>25} {:>13}",
            r.rank,
            r.nodes,
            r.bonds,
            r.ghosts,
            r.peers,
            r.halo_bytes(dim, bytes, lps),
            r.gpu_pcie_bytes(dim, bytes, lps),
            device
        );
    }
    let total: usize = table.iter().map(|r| r.bonds).sum();
    let most = table.iter().map(|r| r.bonds).max().unwrap_or(0);
    let ghosts: usize = table.iter().map(|r| r.ghosts).sum();
    let halo: usize = table.iter().map(|r| r.halo_bytes(dim, bytes, lps)).sum();
    let peers = table.iter().map(|r| r.peers).max().unwrap_or(0);
    println!(
        "  bond imbalance {:.3} (largest share over the mean); ghosts {} in all, {:.1} per \
         rank ({:.2} % of the nodes); halo {} bytes a step in all; at most {peers} \
         neighbours",
        most as f64 * p as f64 / total.max(1) as f64,
        ghosts,
        ghosts as f64 / p as f64,
        100.0 * ghosts as f64 / problem.body.len().max(1) as f64,
        halo
    );
    println!(
        "  gpu-loop runs one GPU per rank (local rank modulo the host's GPUs), the part \
         resident on it; per step only the halo crosses PCIe: the values sent packed on the \
         device and copied down, the ghosts' copied up ({} values a node{})",
        dim + 2 * usize::from(lps),
        if lps {
            ": displacement and (alpha, p theta)"
        } else {
            ": displacement"
        }
    );
    Ok(())
}

/// This process's place in a distributed run where an MPI launcher started it (see
/// [`launched_ranks`]; one rank of one runs the distributed path too), `None` otherwise,
/// with the number of ranks on this host (1 without ranks): those whose memory the guard
/// counts together. The raw stop flag is `cancel`'s (set by this process's signal handler).
/// `refused`: an option that does not run across ranks (`--export-stiffness`).
#[cfg(feature = "mpi")]
pub fn join(
    cancel: &peridot::solver::Cancel,
    refused: bool,
) -> anyhow::Result<(Option<Ranks>, usize)> {
    use peridot::distributed::MpiComm;
    use peridot::distributed::StopFlags;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    if launched_ranks().is_none() {
        return Ok((None, 1));
    }
    if refused {
        anyhow::bail!(
            "--export-stiffness does not run across MPI ranks yet; run it in one process"
        );
    }
    let comm = MpiComm::init()?;
    // (ranks of one host take distinct GPUs while there are enough: the local rank modulo
    // the devices, for the GPU backends; opened only by them)
    peridot::gpu::select_device(comm.local_rank());
    let on_host = comm.local_size();
    let stop = StopFlags {
        raw: cancel.flag().clone(),
        agreed: Arc::new(AtomicBool::new(false)),
    };
    let ranks = Ranks {
        comm: Arc::new(comm),
        stop: Some(stop),
    };
    Ok((Some(ranks), on_host))
}

/// Without the `mpi` feature: an error where a launcher started several ranks (each would
/// run the whole model into the same folder), else `None`.
#[cfg(not(feature = "mpi"))]
pub fn join(
    _cancel: &peridot::solver::Cancel,
    _refused: bool,
) -> anyhow::Result<(Option<Ranks>, usize)> {
    match launched_ranks() {
        Some(p) if p > 1 => anyhow::bail!(
            "started as {p} MPI ranks, but this peridot was built without MPI: build it with \
             `cargo build --release --features mpi` (docs/distributed.md)"
        ),
        _ => Ok((None, 1)),
    }
}

/// The stop flag the driver of a distributed run reads: the one all ranks agree on.
pub fn agreed(ranks: &Option<Ranks>) -> Option<peridot::solver::Cancel> {
    let stop = ranks.as_ref()?.stop.as_ref()?;
    Some(peridot::solver::Cancel::from_flag(stop.agreed.clone()))
}
