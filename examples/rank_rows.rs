//! The matrix scheme across thread ranks (`DistributedMatrix`, `cpu-matrix` across ranks) on
//! the 3D PMB block of `models/pmb_block_3d.toml`: per rank its owned nodes and ghosts, the
//! directed bonds of its local problem (an owned node's whole family, a ghost's bonds into
//! owned nodes), how many of its bond pairs join two owned nodes and how many are cut by the
//! partition, the bond rows its operators hold, the seconds its local problem takes
//! (`partitioned::matrix::local_problem`) and its whole setup (`DistributedMatrix::new`), and
//! the seconds of one force evaluation across the ranks (the halo exchange included). The
//! numbers of `docs/distributed.md` (`cpu-matrix` across ranks) come from it.
//!
//! ```text
//! cargo run --release --example rank_rows -- [dx] [ranks] [evaluations]
//! ```
//! `dx`: lattice spacing, m (default 1.1e-3: 97,336 nodes), `ranks` (default 2),
//! `evaluations`: timed force evaluations, the fastest kept (default 5).

use peridot::backend::partitioned::matrix::local_problem_of;
use peridot::backend::Backend;
use peridot::distributed::{run_ranks, DistributedMatrix, RankPlan};
use peridot::dynamics::Forces;
use peridot::setup::Problem;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or(default.into());
    let dx: f64 = arg(0, "1.1e-3").parse().expect("dx in m");
    let ranks: usize = arg(1, "2").parse().expect("ranks");
    let evaluations: usize = arg(2, "5").parse().expect("evaluations");
    let text = include_str!("../models/pmb_block_3d.toml");
    let set = vec![format!("discretization.dx={dx}")];
    let model = peridot::model::parse(text, "pmb_block_3d.toml", &set).expect("the model");
    let problem = Problem::build(model, std::path::Path::new(".")).expect("the problem");
    let (n, nb) = (problem.body.len(), problem.families.bonds());
    println!(
        "{n} nodes, {nb} directed bonds ({} pairs), {ranks} ranks",
        nb / 2
    );
    println!("rank owned ghosts local_bonds owned_pairs cut_pairs plan_s local_problem_s");
    for rank in 0..ranks {
        let t0 = Instant::now();
        let plan = RankPlan::new(&problem, ranks, rank).expect("the plan");
        let plan_s = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let local = local_problem_of(&problem, &plan.sub);
        let seconds = t0.elapsed().as_secs_f64();
        let owned = plan.sub.owned;
        let f = &local.families;
        let (mut inside, mut cut) = (0, 0);
        for k in 0..owned {
            for &j in f.family(k) {
                match (j as usize) < owned {
                    true => inside += 1,
                    false => cut += 1,
                }
            }
        }
        println!(
            "{rank} {owned} {} {} {} {cut} {plan_s:.3} {seconds:.3}",
            plan.sub.halo(),
            f.bonds(),
            inside / 2
        );
    }
    let rows = run_ranks(ranks, |comm| {
        let t0 = Instant::now();
        let mut m = DistributedMatrix::<f64>::new(&problem, comm, None).expect("the part");
        let setup = t0.elapsed().as_secs_f64();
        // a small stretch along z, the same on every rank
        let u: Vec<f64> = (problem.body.positions.iter())
            .flat_map(|p| [0.0, 0.0, 1e-4 * p[2]])
            .collect();
        let mut force = vec![0.0; u.len()];
        let mut best = f64::INFINITY;
        for _ in 0..=evaluations {
            let t0 = Instant::now();
            m.internal_force(&u, &mut force).expect("forces");
            best = best.min(t0.elapsed().as_secs_f64());
        }
        let bytes = m.footprint().memory_bytes;
        (m.plan().rank, m.bond_rows(), setup, best, bytes)
    });
    println!("rank rows setup_s force_evaluation_s memory_MiB");
    for (rank, rows, setup, best, bytes) in rows {
        let mib = bytes as f64 / (1 << 20) as f64;
        println!("{rank} {rows} {setup:.3} {best:.4} {mib:.0}");
    }
}
