//! A distributed run whose ranks own **blocks** of the cell grid (`solver.rank_partition =
//! "blocks"`, `docs/distributed.md`): the grid cut along two or three axes, each rank's
//! ghosts in the cells one deep around its box, up to 8 neighbouring ranks in 2D and 26 in
//! 3D. Every owned node sums its bonds in the global order with the in-core arithmetic
//! whatever the cut, so `cpu-loop` across thread ranks (`ThreadComm`) ends bit for bit where
//! the one-process run ends, as for slabs (`tests/distributed.rs`); the matrix scheme to its
//! round-off. The cut itself is asserted (`2 x 2`, `2 x 2 x 2`), so the runs cannot fall
//! back to slabs unnoticed.

mod common;

use peridot::backend::BackendKind;
use peridot::distributed::plan::table;
use peridot::model::RankPartition;
use peridot::setup::Problem;

/// Steps of the cracked plate: 150 break bonds across the cuts (as `tests/distributed.rs`).
const STEPS: usize = 150;

/// `problem` cut into blocks across ranks.
fn in_blocks(mut problem: Problem) -> Problem {
    problem.model.solver.rank_partition = Some(RankPartition::Blocks);
    problem
}

/// The cut `p` ranks make of `problem`, and the bonds broken at the end of `one` between
/// nodes of different ranks (each counted from both ends), which the crack must reach.
fn cut_and_broken_across(problem: &Problem, p: usize, status: &[u8]) -> (String, usize) {
    let (cut, _) = table(problem, p).unwrap();
    let plans: Vec<_> = (0..p)
        .map(|r| peridot::distributed::RankPlan::new(problem, p, r).unwrap())
        .collect();
    let mut owner = vec![0; problem.body.len()];
    for (r, plan) in plans.iter().enumerate() {
        for &i in &plan.owned_of[r] {
            owner[i] = r;
        }
    }
    let fam = &problem.families;
    let across = (0..problem.body.len())
        .flat_map(|i| (fam.offsets[i]..fam.offsets[i + 1]).map(move |b| (i, b)))
        .filter(|&(i, b)| {
            let j = fam.neighbors[b] as usize;
            owner[i] != owner[j] && status[b] == 0 && problem.initial_mu[b] != 0
        })
        .count();
    (cut, across)
}

/// `cpu-loop` on 4 thread ranks cut 2 x 2 ends with the one-process displacement, velocity
/// and bond status bit for bit on every rank, PMB (partial volumes, the surface correction)
/// and LPS (the dilatation exchanged too), on the plate whose crack runs along x through the
/// cut along x and beside the cut along y; bonds broke across the cuts. The plate (48 x 12
/// nodes, 14 x 4 cells) cut into 4 slabs has fewer ghosts (the cell bound: 24 cells against
/// 40), so `auto` keeps slabs there and this asks for blocks.
#[test]
fn cpu_loop_in_blocks_of_2_by_2_equals_one_process_bitwise() {
    for law in ["pmb", "lps"] {
        let problem = in_blocks(common::cracked_plate(law, STEPS));
        let one = common::run_end(&problem, BackendKind::CpuLoop);
        let ends = common::distributed_end(&problem, BackendKind::CpuLoop, 4);
        common::assert_same_end(&one, &ends, &format!("{law}, cpu-loop on 2 x 2 blocks"));
        let (cut, across) = cut_and_broken_across(&problem, 4, &one.status);
        assert_eq!(cut, "blocks: 2 x 2 (x, y)", "{law}");
        assert!(across > 0, "{law}: no bond broke across the cuts");
        let mut auto = problem.clone();
        auto.model.solver.rank_partition = None;
        assert_eq!(table(&auto, 4).unwrap().0, "slabs: 4 along x");
    }
}

/// A lean problem (what a rank under `mpirun` builds: its own part's families searched)
/// of a plate with a hole, which is no full box lattice, so each rank searches a cell list
/// over the cells of its block and the cells one deep around it (`Cuts::subdomain`): on 4
/// ranks (2 x 2) and 6 ranks (3 x 2) it ends bit for bit where the one-process run of the
/// stored problem ends. A candidate missing from the search would drop a bond and change
/// the result, so no tolerance.
#[test]
fn lean_ranks_in_blocks_search_their_cells_and_equal_the_stored_run() {
    let text = common::cracked_plate_text("pmb", STEPS).replacen(
        "]\n[[precrack]]",
        "]\nremove = [{ shape = \"circle\", center = [0.03, 0.004], radius = 0.0025 }]\n\
         [[precrack]]",
        1,
    );
    let sets = ["solver.rank_partition=\"blocks\""];
    let stored = common::problem(&text, &sets);
    let model = stored.model.clone();
    let lean = Problem::build_lean(model, std::path::Path::new(".")).unwrap();
    assert!(stored.body.len() < 48 * 12, "the hole removes nodes");
    let one = common::run_end(&stored, BackendKind::CpuLoop);
    for (p, cut) in [(4, "blocks: 2 x 2 (x, y)"), (6, "blocks: 3 x 2 (x, y)")] {
        assert_eq!(table(&lean, p).unwrap().0, cut);
        let ends = common::distributed_end(&lean, BackendKind::CpuLoop, p);
        common::assert_same_end(&one, &ends, &format!("lean, cpu-loop on {cut}"));
    }
}

/// A cube of 12 x 12 x 12 nodes (4 cells a side) pre-cracked at mid-height through a third
/// of its length, top and bottom layers pulled apart, cut 2 x 2 x 2 across 8 thread ranks
/// (each rank has the 7 others as neighbours): `cpu-loop` ends bit for bit where the
/// one-process run ends, with bonds broken across the cuts. `auto` takes this cut itself
/// (8 slabs do not fit 4 cells; the cell bound of 2 x 2 x 2 is 6^3 - 4^3 = 152 cells
/// against 10 x 6 x 4 - 4^3 = 176 for 4 x 2 x 1).
#[test]
fn cpu_loop_in_blocks_of_2_by_2_by_2_equals_one_process_bitwise() {
    let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
         critical_stretch = 0.002\n[discretization]\ndimension = \"3d\"\ndx = 1e-3\n\
         horizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n\
         box = [{ min = [0, 0, 0], max = [0.012, 0.012, 0.012] }]\n\
         [[precrack]]\norigin = [-0.001, -0.001, 0.006]\nedge1 = [0.005, 0, 0]\n\
         edge2 = [0, 0.014, 0]\n\
         [[region]]\nname = \"bottom\"\nshape = \"edge\"\nside = \"-z\"\ndepth_dx = 2\n\
         [[region]]\nname = \"top\"\nshape = \"edge\"\nside = \"+z\"\ndepth_dx = 2\n\
         [[boundary]]\nregion = \"bottom\"\nkind = \"velocity\"\nz = -8.0\n\
         [[boundary]]\nregion = \"top\"\nkind = \"velocity\"\nz = 8.0\n\
         [solver]\nkind = \"explicit\"\nsteps = 100\n[output]\nimage = false\ntips_every = 0\n";
    let problem = common::problem(text, &[]);
    assert_eq!(problem.body.len(), 12 * 12 * 12);
    let one = common::run_end(&problem, BackendKind::CpuLoop);
    let ends = common::distributed_end(&problem, BackendKind::CpuLoop, 8);
    common::assert_same_end(&one, &ends, "cpu-loop on 2 x 2 x 2 blocks");
    let (cut, across) = cut_and_broken_across(&problem, 8, &one.status);
    assert_eq!(cut, "blocks: 2 x 2 x 2 (x, y, z)");
    assert!(across > 0, "no bond broke across the cuts");
    let peers = table(&problem, 8).unwrap().1.iter().map(|r| r.peers).min();
    assert_eq!(peers, Some(7), "every block touches the 7 others");
}

/// `cpu-matrix` on 4 thread ranks cut 2 x 2 agrees with the one-process `cpu-matrix` run to
/// 1e-12 of the largest displacement and velocity, the bond status and the bonds broken
/// equal, PMB and LPS: a rank's rows sum its bonds in its local order (as for slabs,
/// `tests/distributed.rs`), so round-off, not bits.
#[test]
fn cpu_matrix_in_blocks_agrees_with_one_process_to_1e_12() {
    use peridot::solver::distributed::simulate_distributed;
    use peridot::solver::{simulate, Ranks};
    use peridot::Precision;
    let opts = common::options(BackendKind::CpuMatrix, Precision::F64, None);
    for law in ["pmb", "lps"] {
        let problem = in_blocks(common::cracked_plate(law, STEPS));
        let one = simulate::<f64>(problem.clone(), &opts).unwrap();
        let status = one.backend.bond_status().unwrap();
        assert!(
            one.summary.broken_bonds > problem.precracked_bonds(),
            "{law}"
        );
        let ends = peridot::distributed::run_ranks(4, |comm| {
            let ranks = Ranks { comm, stop: None };
            let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks).unwrap();
            let status = o.backend.bond_status().unwrap();
            (o.state.u, o.state.v, status, o.summary.broken_bonds)
        });
        for (r, (u, v, mu, broken)) in ends.iter().enumerate() {
            let what = format!("{law}, cpu-matrix on 2 x 2 blocks, rank {r}");
            assert!(
                common::rel_max(u, &one.state.u) <= 1e-12,
                "{what}: displacement"
            );
            assert!(
                common::rel_max(v, &one.state.v) <= 1e-12,
                "{what}: velocity"
            );
            assert!(*mu == status, "{what}: bond status");
            assert_eq!(*broken, one.summary.broken_bonds, "{what}");
        }
    }
}

/// `peridot info --ranks 4` on the benchmark block (21 nodes, 7 cells a side) takes blocks
/// by default (`auto`: 2 x 2 across two axes; their ghosts' cell bound, 9 x 9 x 7 - 7^3 =
/// 224 cells, is below the 4 slabs' 6 x 49 = 294) and slabs with `--partition slabs`, and
/// the ghosts it prints in all are fewer for the blocks, as the bound says; `--partition`
/// without `--ranks` is refused by the parser, naming `--ranks`.
#[test]
fn info_prints_the_cut_and_partition_picks_it() {
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/models/pmb_block_3d.toml");
    let ghosts = |mode: &str| {
        let out = common::cli::peridot(&["info", model, "--ranks", "4", "--partition", mode]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{mode}: {}",
            common::cli::stderr(&out)
        );
        let line = text.lines().find(|l| l.contains("in all")).unwrap_or("");
        let all = line
            .split("ghosts ")
            .nth(1)
            .and_then(|t| t.split(' ').next());
        (
            text.clone(),
            all.and_then(|n| n.parse::<usize>().ok())
                .expect("the ghosts in all"),
        )
    };
    let (auto, in_blocks) = ghosts("auto");
    assert!(auto.contains("cuts the model: blocks: 2 x 2 ("), "{auto}");
    let (slabs, in_slabs) = ghosts("slabs");
    assert!(slabs.contains("cuts the model: slabs: 4 along"), "{slabs}");
    assert!(
        in_blocks < in_slabs,
        "{in_blocks} ghosts in blocks, {in_slabs} in slabs"
    );
    let refused = common::cli::peridot(&["info", model, "--partition", "blocks"]);
    assert!(!refused.status.success());
    assert!(common::cli::stderr(&refused).contains("--ranks"));
}

/// The cuts fall between node layers, each nested cut at the layer boundary nearest its
/// share, so a rank is within a layer of its share along each axis, not within a cell. A
/// cube of 29 x 29 x 29 nodes (10 cells a side) in 27 ranks (3 x 3 x 3): a part's share is
/// 29 / 3 = 9.67 layers along each axis and the cuts give 9 or 10, at most (10 / 9.67)^3 =
/// 1.107 of the mean nodes; the bonds, balanced over the parts' lighter surface layers too,
/// stay under 1.11 of the mean (measured 1.039). Cut between cells (3.015 layers each, a part
/// of 3 or 4 of the 10 cells) the largest rank held 1.689 of the mean bonds. Every node is
/// owned once and every rank owns some.
#[test]
fn layer_cuts_balance_bonds_to_within_a_layer() {
    let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
         critical_stretch = 0.002\n[discretization]\ndimension = \"3d\"\ndx = 1e-3\n\
         horizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n\
         box = [{ min = [0, 0, 0], max = [0.029, 0.029, 0.029] }]\n\
         [solver]\nkind = \"explicit\"\nsteps = 10\n[output]\nimage = false\ntips_every = 0\n";
    let problem = in_blocks(common::problem(text, &[]));
    assert_eq!(problem.body.len(), 29 * 29 * 29);
    let (cut, rows) = table(&problem, 27).unwrap();
    assert_eq!(cut, "blocks: 3 x 3 x 3 (x, y, z)");
    let bonds: Vec<usize> = rows.iter().map(|r| r.bonds).collect();
    let total: usize = bonds.iter().sum();
    assert_eq!(total, problem.families.bonds(), "every bond owned once");
    assert_eq!(
        rows.iter().map(|r| r.nodes).sum::<usize>(),
        problem.body.len()
    );
    assert!(rows.iter().all(|r| r.nodes > 0), "a rank owns no node");
    let most = *bonds.iter().max().unwrap() as f64;
    let imbalance = most / (total as f64 / 27.0);
    assert!(
        imbalance <= 1.11,
        "largest rank {imbalance:.3} of the mean bonds"
    );
}
