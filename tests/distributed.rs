//! A distributed run without `mpirun` (`docs/distributed.md`): P ranks as P threads of the
//! test process, exchanging through channels (`peridot::distributed::ThreadComm`), the same
//! driver and backend as under MPI. `cpu-loop` across P = 1, 2, 3 and 4 ranks ends with the
//! single-process run's displacement, velocity and bond status bit for bit, on every rank
//! (each owned node sums its bonds in the global order with the in-core arithmetic; a bond
//! cut by the partition is evaluated on both sides from the same two displacements), on a
//! pre-cracked plate whose crack runs across the cuts, for PMB and LPS (whose dilatation is
//! exchanged too).

mod common;

use peridot::backend::BackendKind;
use peridot::distributed::plan::RankPlan;

/// 150 steps of the plate break bonds on both sides of the cuts for every P here.
const STEPS: usize = 150;

#[test]
fn cpu_loop_across_thread_ranks_equals_one_process_bitwise() {
    for law in ["pmb", "lps"] {
        let problem = common::cracked_plate(law, STEPS);
        let one = common::run_end(&problem, BackendKind::CpuLoop);
        for p in [1, 2, 3, 4] {
            let ends = common::distributed_end(&problem, BackendKind::CpuLoop, p);
            common::assert_same_end(&one, &ends, &format!("{law}, cpu-loop on {p} ranks"));
        }
        // bonds broke across the cut between ranks 0 and 1 of 2 (the crack crosses it)
        let plan = RankPlan::new(&problem, 2, 0).unwrap();
        let owned0 = &plan.owned_of[0];
        let fam = &problem.families;
        let across = (owned0.iter())
            .flat_map(|&i| (fam.offsets[i]..fam.offsets[i + 1]).map(move |b| (i, b)))
            .filter(|&(_, b)| {
                let j = fam.neighbors[b] as usize;
                owned0.binary_search(&j).is_err() && one.status[b] == 0
            })
            .filter(|&(_, b)| problem.initial_mu[b] != 0)
            .count();
        assert!(across > 0, "{law}: no bond broke across the cut of 2 ranks");
    }
}

/// Bonds breaking with each node's history (`critical_stretch_alpha`), before the force (the
/// displacement's exchange travels while the interior's critical stretches are computed, and
/// theirs while the interior's bonds break; the force pass then exchanges nothing) and after
/// it (the critical stretches' exchange travels while the interior breaks): `cpu-loop` on 2
/// and 3 thread ranks ends bit for bit where the one-process run ends, PMB and LPS. The
/// overlap changes when the ghosts' values arrive, never which values a pass reads, so no
/// tolerance.
#[test]
fn history_breaking_across_thread_ranks_equals_one_process_bitwise() {
    for law in ["pmb", "lps"] {
        for timing in ["before-force", "after-force"] {
            let keys = format!(
                "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\nbreak_timing = \"{timing}\"\n"
            );
            let text = common::cracked_plate_text(law, STEPS);
            let problem =
                common::problem(&text.replacen("critical_stretch = 0.002\n", &keys, 1), &[]);
            let one = common::run_end(&problem, BackendKind::CpuLoop);
            for p in [2, 3] {
                let ends = common::distributed_end(&problem, BackendKind::CpuLoop, p);
                let what = format!("{law} alpha {timing}, cpu-loop on {p} ranks");
                common::assert_same_end(&one, &ends, &what);
            }
        }
    }
}

/// A rank of `mpirun ... peridot run` builds the problem lean (no bond stored: each rank
/// searches its own part's families and computes their bond data per bond,
/// `distributed/part.rs`). From the lean problem, `cpu-loop` on 1 and 3 thread ranks ends
/// bit for bit where the one-process run of the stored problem ends, for PMB (partial
/// volumes and the surface correction, the factors a lean rank computes) and LPS: the lean
/// rank's bond data equal the stored ones exactly, so no tolerance. `cpu-matrix` on 2 ranks
/// from the lean problem (its rows from the part's own bonds, the ghosts' turned round)
/// ends bit for bit where it ends from the stored one (whose rows are gathered from the
/// stored bonds): the same local problem, so the same sums in the same order.
#[test]
fn ranks_from_a_lean_problem_equal_the_stored_run_bitwise() {
    for law in ["pmb", "lps"] {
        let stored = common::cracked_plate(law, STEPS);
        let model = stored.model.clone();
        let lean = peridot::setup::Problem::build_lean(model, std::path::Path::new("."))
            .expect("the lean problem builds");
        assert!(
            !lean.bonds_stored && lean.families.neighbors.is_empty(),
            "lean"
        );
        let one = common::run_end(&stored, BackendKind::CpuLoop);
        for p in [1, 3] {
            let ends = common::distributed_end(&lean, BackendKind::CpuLoop, p);
            common::assert_same_end(&one, &ends, &format!("{law}, lean, cpu-loop on {p} ranks"));
        }
        let matrix = common::distributed_end(&stored, BackendKind::CpuMatrix, 2);
        let ends = common::distributed_end(&lean, BackendKind::CpuMatrix, 2);
        common::assert_same_end(&matrix[0], &ends, &format!("{law}, lean, cpu-matrix"));
    }
}

/// What an ADR run ends with: the displacement and velocity, the bond status, the
/// iterations and the relative residual.
struct AdrEnd {
    u: Vec<f64>,
    v: Vec<f64>,
    status: Vec<u8>,
    steps: usize,
    residual: f64,
}

fn adr_end(o: peridot::solver::Outcome<f64>) -> AdrEnd {
    AdrEnd {
        status: o.backend.bond_status().expect("bond status"),
        steps: o.state.step,
        residual: o
            .summary
            .static_residual
            .expect("an ADR run has a residual"),
        u: o.state.u,
        v: o.state.v,
    }
}

/// ADR across P = 1..4 thread ranks ends where the one-process ADR ends, bit for bit
/// (displacement, velocity, bond status, iterations, residual): its global sums (the
/// residual's norms, the damping coefficient's Rayleigh quotient) are exact until one
/// rounding, so each rank's part merged equals the whole (`dynamics/exact_sum.rs`); on the
/// tiny plate whose top is pulled until bonds break (they break across the cuts: the crack
/// runs along x, the cuts across it), with and without load steps, PMB and LPS.
#[test]
fn adr_across_thread_ranks_equals_one_process_bitwise() {
    use peridot::solver::distributed::simulate_distributed;
    use peridot::solver::{simulate, Ranks};
    use peridot::Precision;
    let lps = ["material.model=\"lps\"", "material.poisson_ratio=0.22"];
    for extra in [&[][..], &["solver.load_steps=4"][..], &lps[..]] {
        let problem = common::problem(common::cli::TINY_ADR, extra);
        let opts = common::options(BackendKind::CpuLoop, Precision::F64, None);
        let one = adr_end(simulate::<f64>(problem.clone(), &opts).unwrap());
        let broken = one.status.iter().filter(|&&s| s == 0).count();
        assert!(
            broken > problem.precracked_bonds(),
            "{extra:?}: bonds must break beyond the pre-crack"
        );
        for p in [1, 2, 3, 4] {
            let ends = peridot::distributed::run_ranks(p, |comm| {
                let ranks = Ranks { comm, stop: None };
                let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks);
                adr_end(o.unwrap_or_else(|e| panic!("distributed ADR: {e}")))
            });
            for (r, end) in ends.iter().enumerate() {
                let what = format!("ADR {extra:?} on {p} ranks, rank {r}");
                common::assert_bitwise(&end.u, &one.u, &format!("{what}: displacement"));
                common::assert_bitwise(&end.v, &one.v, &format!("{what}: velocity"));
                assert!(end.status == one.status, "{what}: bond status differs");
                assert_eq!(end.steps, one.steps, "{what}: iterations");
                assert_eq!(
                    end.residual.to_bits(),
                    one.residual.to_bits(),
                    "{what}: residual"
                );
            }
        }
    }
}

/// Checkpoints across ranks: a run across 2 thread ranks checkpointing half way (rank 0
/// writes the one-process file, whole and atomically), resumed from that checkpoint across
/// 2 ranks, across 3 and in one process, ends with the uninterrupted run's displacement,
/// velocity and bond status bit for bit, its `probes.csv` byte for byte and its `.pvd`
/// listing the same snapshots; for the explicit plate whose crack runs across the cuts
/// (PMB, LPS with a node history: `critical_stretch_alpha`, breaking after the force, and
/// PMB with the bilinear softening law: each part's damage per bond from the checkpoint's)
/// and for ADR with bonds breaking. On `cpu-matrix` (PMB), whose sums run in each rank's
/// local order, a restart on the same count is bitwise (another count agrees to round-off:
/// not tested here). The resumed runs on 2 ranks start from a lean problem, as under
/// `mpirun` (the parts take their bonds' status and damage from the checkpoint's, held
/// whole until they are built); on 3 ranks and in one process from the stored one.
#[test]
fn checkpoints_across_thread_ranks_resume_bitwise_on_any_count() {
    use common::ranks::end_in;
    let plate = common::cracked_plate_text("pmb", STEPS);
    let alpha = common::cracked_plate_text("lps", STEPS).replacen(
        "critical_stretch = 0.002\n",
        "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\nbreak_timing = \"after-force\"\n",
        1,
    );
    let bilinear = plate.replacen(
        "critical_stretch = 0.002\n",
        "damage_law = \"bilinear\"\ncritical_stretch = 0.002\nfinal_stretch = 0.006\n",
        1,
    );
    let probes = [
        "output.probes=[\"top\", \"bottom\"]",
        "output.probe_every=5",
    ];
    let cases = [
        ("pmb", plate.as_str(), 75, "output.vtk_every=50"),
        ("lps alpha", alpha.as_str(), 75, "output.vtk_every=50"),
        ("pmb bilinear", bilinear.as_str(), 75, "output.vtk_every=50"),
        ("adr", common::cli::TINY_ADR, 30, "output.vtk_every=10"),
        ("pmb cpu-matrix", plate.as_str(), 75, "output.vtk_every=50"),
    ];
    for (name, text, half, vtk) in cases {
        let backend = match name.ends_with("cpu-matrix") {
            true => BackendKind::CpuMatrix,
            false => BackendKind::CpuLoop,
        };
        let counts: &[usize] = match backend {
            BackendKind::CpuMatrix => &[2],
            _ => &[2, 3, 0],
        };
        let mut keys = vec![vtk, probes[1]];
        if name != "adr" {
            keys.push(probes[0]);
        }
        let problem = common::problem(text, &keys);
        let tmp = tempfile::tempdir().unwrap();
        let full = tmp.path().join("full");
        let one = end_in((&problem, backend), 2, &full, None);
        let every = format!("output.checkpoint_every={half}");
        let checked = common::problem(text, &[keys.clone(), vec![every.as_str()]].concat());
        for &p in counts {
            let dir = tmp.path().join(format!("part{p}"));
            let steps = checked.model.solver.steps;
            let all = end_in((&checked, backend), 2, &dir, None);
            common::assert_bitwise(
                &all.0,
                &one.0,
                &format!("{name}: checkpoints change nothing"),
            );
            // back to the checkpoint half way: the later ones removed
            common::ranks::back_to_checkpoint(&dir, half, steps, name);
            let what = format!("{name}: resumed from step {half} on {p} ranks");
            let dot = std::path::Path::new(".");
            let lean = match p {
                2 => peridot::setup::Problem::build_lean(checked.model.clone(), dot).unwrap(),
                _ => checked.clone(),
            };
            let resumed = end_in((&lean, backend), p, &dir, Some(&dir));
            assert_eq!(resumed.3, Some(half), "{what}: the step resumed from");
            common::assert_bitwise(&resumed.0, &one.0, &format!("{what}: displacement"));
            common::assert_bitwise(&resumed.1, &one.1, &format!("{what}: velocity"));
            assert!(resumed.2 == one.2, "{what}: bond status");
            let read = |d: &std::path::Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
            assert_eq!(
                read(&dir, "probes.csv"),
                read(&full, "probes.csv"),
                "{what}"
            );
            // the .pvd lists the same snapshots (steps and times; one process writes .vtu)
            let pvd = |d| read(d, &format!("{}.pvd", problem.name)).replace(".pvtu", ".vtu");
            if p != 0 {
                assert_eq!(pvd(&dir), pvd(&full), "{what}: .pvd");
            }
        }
        let broken = one.2.iter().filter(|&&s| s == 0).count();
        assert!(broken > problem.precracked_bonds(), "{name}: bonds break");
    }
}

/// `cpu-matrix` across P = 1..4 thread ranks (each rank the operators' rows of its owned
/// nodes' bonds with ghost columns in half storage, `DistributedMatrix`, running the rows
/// that read no ghost while its messages travel: its `overlapped_seconds`) agrees with the
/// in-core `cpu-matrix` to 1e-12 of the largest value: displacement and velocity after 150
/// steps of the pre-cracked plate (PMB and LPS, whose dilatation is exchanged), and, at the
/// one-process run's final displacement, the strain energy summed over the ranks (relative;
/// a cut row counts its owned end's share on each side), the damage of every node
/// (absolute: it is at most 1) and the LPS dilatation. The rows of a rank's local operators
/// run in local order, so these differ by round-off only (measured: energy 1.4e-15, damage
/// 2.2e-16, dilatation 1.5e-16, displacement 1.0e-15, velocity 4.6e-14). The bond status
/// and the bonds broken are equal (a bond cut by the partition breaks on both sides at the
/// same step; no stretch here falls within round-off of the critical one). ADR on
/// `cpu-matrix` across 2 ranks (no bond breaking) takes the in-core iterations and ends
/// within 1e-9 of the largest displacement (measured 6.8e-10 in half storage, 2.2e-10 in
/// full: the forces' round-off, grown by the 60 iterations of the damped fictitious
/// dynamics, not yet converged; the sums themselves are exact).
#[test]
fn cpu_matrix_across_thread_ranks_agrees_with_one_process_to_1e_12() {
    use peridot::solver::distributed::simulate_distributed;
    use peridot::solver::{simulate, Ranks};
    use peridot::Precision;
    let close = |a: &[f64], b: &[f64], tol: f64, what: &str| {
        let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        let worst = a
            .iter()
            .zip(b)
            .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
        assert!(worst <= tol * scale, "{what}: {worst:e} of {scale:e}");
    };
    // the strain energy, the damage and (LPS) the dilatation at the end, on every rank
    let fields = |mut b: Box<dyn peridot::backend::Backend<f64>>, u: &[f64]| {
        let energy = b.strain_energy(u).expect("strain energy");
        let n = u.len() / 2;
        let (mut phi, mut theta) = (vec![0.0; n], vec![0.0; n]);
        b.damage(&mut phi).expect("damage");
        b.dilatation(u, &mut theta).expect("dilatation");
        (energy, phi, theta)
    };
    let opts = common::options(BackendKind::CpuMatrix, Precision::F64, None);
    // (the fields at `at`, the one-process run's end: the same displacement on both sides)
    let run_on = |problem: &peridot::setup::Problem, p: usize, at: &[f64]| {
        peridot::distributed::run_ranks(p, |comm| {
            let ranks = Ranks { comm, stop: None };
            let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks)
                .unwrap_or_else(|e| panic!("distributed cpu-matrix: {e}"));
            assert_eq!(o.summary.backend, "cpu-matrix-mpi");
            let status = o.backend.bond_status().expect("bond status");
            let ends = fields(o.backend, at);
            (o.state.u, o.state.v, status, o.summary, ends)
        })
    };
    for law in ["pmb", "lps"] {
        let problem = common::cracked_plate(law, STEPS);
        let one = simulate::<f64>(problem.clone(), &opts).unwrap();
        let status = one.backend.bond_status().unwrap();
        let u_one = one.state.u.clone();
        let ends = fields(one.backend, &u_one);
        assert!(
            ends.0 > 0.0 && ends.1.iter().any(|&d| d > 0.0),
            "{law}: strained, damaged"
        );
        assert!(
            one.summary.broken_bonds > problem.precracked_bonds(),
            "{law}: bonds break"
        );
        for p in [1, 2, 3, 4] {
            for (r, end) in run_on(&problem, p, &u_one).iter().enumerate() {
                let what = format!("{law}, cpu-matrix on {p} ranks, rank {r}");
                close(
                    &end.0,
                    &one.state.u,
                    1e-12,
                    &format!("{what}: displacement"),
                );
                close(&end.1, &one.state.v, 1e-12, &format!("{what}: velocity"));
                assert!(end.2 == status, "{what}: bond status");
                assert_eq!(end.3.broken_bonds, one.summary.broken_bonds, "{what}");
                // (every rank ran its rows that read no ghost while its messages travelled)
                let reports = end.3.ranks.as_ref().expect("rank reports");
                assert!(
                    reports.iter().all(|r| r.overlapped_seconds > 0.0),
                    "{what}: no row work overlapped the exchange: {reports:?}"
                );
                // (a matrix rank reports its setup's phases: the cut, the subdomain and
                // the local problem its operators are assembled from)
                let setup = &end.3.setup;
                assert!(
                    [setup.rank_cut, setup.rank_subdomain, setup.rank_part]
                        .iter()
                        .all(|s| s.is_some_and(|s| s >= 0.0)),
                    "{what}: the rank's setup phases: {setup:?}"
                );
                // (the thread ranks share this process: each reports its peak, which is
                // the process's give or take the pages the kernel counts per thread and
                // adds up lazily, a few hundred kB: within half of it)
                let peak = peridot::output::peak_rss_bytes() as f64;
                assert!(
                    (reports.iter()).all(|r| (r.peak_rss_bytes as f64 - peak).abs() < 0.5 * peak),
                    "{what}: each rank's peak resident memory, the process's ({peak}): \
                     {reports:?}"
                );
                let (energy, phi, theta) = &end.4;
                let rel = (energy - ends.0).abs() / ends.0.abs();
                assert!(
                    rel <= 1e-12,
                    "{what}: energy {energy:e} against {:e}",
                    ends.0
                );
                let worst =
                    (phi.iter().zip(&ends.1)).fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(worst <= 1e-12, "{what}: damage differs by {worst:e}");
                close(theta, &ends.2, 1e-12, &format!("{what}: dilatation"));
            }
        }
    }
    let adr = common::problem(common::cli::TINY_ADR, &["material.critical_stretch=0.5"]);
    let one = simulate::<f64>(adr.clone(), &opts).unwrap();
    for (r, end) in run_on(&adr, 2, &one.state.u).iter().enumerate() {
        let what = format!("ADR on cpu-matrix, 2 ranks, rank {r}");
        close(&end.0, &one.state.u, 1e-9, &format!("{what}: displacement"));
        assert_eq!(end.3.steps, one.summary.steps, "{what}: iterations");
    }
}

/// Steps of the plate of [`crack_tips_across_thread_ranks_are_the_one_process_tips`].
const TIP_STEPS: usize = 600;

/// Crack tips across ranks: every rank samples the damage field gathered to it and tracks
/// the same tips, rank 0 writing `crack_tips.csv`. On `cpu-loop` the run across 2 and 3
/// thread ranks is bitwise the one-process run, so its file must be the one-process file
/// byte for byte (no tolerance), and the summary's tip count the same; on a plate of 90 x 40
/// nodes (3,600) pre-cracked from its left edge to a third of its length and pulled apart,
/// whose crack runs along x across the cuts, sampled every 10 steps. Checkpointed half way
/// across 2 ranks and resumed from there across 3 ranks and in one process, the tracker
/// goes on from the checkpoint's (ids, positions, speeds): the file again equals the
/// uninterrupted run's. Rows before and after the checkpoint are asserted, so neither
/// comparison holds vacuously (measured: 35 rows of 3 tips, 3 of them before step 300; the
/// crack runs through the plate and branches).
#[test]
fn crack_tips_across_thread_ranks_are_the_one_process_tips() {
    use common::ranks::end_in;
    let text = common::cracked_plate_model(
        "pmb",
        TIP_STEPS,
        (90, 40),
        6.0,
        "image = false\nvtk = false\ntips_every = 10\n",
    );
    let backend = BackendKind::CpuLoop;
    let problem = common::problem(&text, &[]);
    let tmp = tempfile::tempdir().unwrap();
    let read = |d: &std::path::Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    let summary = |d: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&read(d, "summary.json")).unwrap()
    };
    let one = tmp.path().join("one");
    end_in((&problem, backend), 0, &one, None);
    let reference = read(&one, "crack_tips.csv");
    let s = summary(&one);
    let dt = s["dt"].as_f64().unwrap();
    let half = TIP_STEPS / 2;
    let times: Vec<f64> = (reference.lines().skip(1))
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    let before = times.iter().filter(|&&t| t <= half as f64 * dt).count();
    assert!(before > 0, "tip rows before step {half}: {reference}");
    assert!(
        times.len() > before,
        "tip rows after step {half}: {reference}"
    );
    // the file byte for byte, and the summary's tips and samples
    let same_tips = |dir: &std::path::Path, what: &str| {
        assert_eq!(read(dir, "crack_tips.csv"), reference, "{what}");
        let tips = &summary(dir)["crack_tips"];
        for key in ["tips", "samples"] {
            assert_eq!(tips[key], s["crack_tips"][key], "{what}: {key}");
        }
    };
    for p in [2, 3] {
        let dir = tmp.path().join(format!("ranks{p}"));
        end_in((&problem, backend), p, &dir, None);
        same_tips(&dir, &format!("{p} ranks"));
    }
    let every = format!("output.checkpoint_every={half}");
    let checked = common::problem(&text, &[every.as_str()]);
    let dir = tmp.path().join("checked");
    end_in((&checked, backend), 2, &dir, None);
    same_tips(&dir, "checkpointed on 2 ranks");
    for p in [3, 0] {
        // back to the checkpoint half way
        for (step, path) in peridot::output::checkpoint::list(&dir).unwrap() {
            if step > half {
                std::fs::remove_file(path).unwrap();
            }
        }
        let resumed = end_in((&checked, backend), p, &dir, Some(&dir));
        let what = format!("resumed from step {half} on {p} ranks");
        assert_eq!(resumed.3, Some(half), "{what}: the step resumed from");
        same_tips(&dir, &what);
    }
}

/// `cpu-matrix` across ranks holds its operators in half storage: a rank's bond rows are
/// exactly its pairs of two owned nodes plus its pairs cut by the partition (one end a
/// ghost), counted here from the global families and the rank's owned nodes, so over the
/// ranks every pair once and every cut pair twice (counts: exact). On the pre-cracked LPS
/// plate across 2 and 3 thread ranks, where every rank has cut pairs. The directed bonds a
/// rank reports broken by one breaking force evaluation (counted from its rows: an owned
/// pair's two directions, a cut pair's owned one) sum over the ranks to those of one
/// process (exact), under `u_y = s0 t^2 / H` (`t` the height above the bottom, `H` the
/// plate's), which breaks the upper rows, across the cuts too, and not the lower ones.
#[test]
fn cpu_matrix_ranks_hold_owned_pairs_and_cut_pairs_once() {
    use peridot::backend::CpuMatrix;
    use peridot::distributed::DistributedMatrix;
    use peridot::dynamics::Forces;
    use peridot::operators::Storage;
    let problem = common::cracked_plate("lps", STEPS);
    let fam = &problem.families;
    let (n, d) = (problem.body.len(), problem.dim());
    let ys = problem.body.positions.iter().map(|x| x[1]);
    let (bottom, top) = ys.fold((f64::MAX, f64::MIN), |(lo, hi), y| (lo.min(y), hi.max(y)));
    let s0 = problem
        .material
        .critical_stretch
        .expect("a critical stretch");
    let mut u = vec![0.0; d * n];
    for (k, x) in problem.body.positions.iter().enumerate() {
        u[d * k + 1] = s0 / (top - bottom) * (x[1] - bottom).powi(2);
    }
    let whole = std::sync::Arc::new(problem.clone());
    let mut one = CpuMatrix::<f64>::new(whole, Storage::Half).expect("in core");
    let broken_one = one.break_bonds(&u).expect("breaking");
    assert!(broken_one > 0, "the displacement breaks bonds");
    for p in [2, 3] {
        let parts = peridot::distributed::run_ranks(p, |comm| {
            let mut m = DistributedMatrix::<f64>::new(&problem, comm, None).expect("a rank's part");
            let mut f = vec![0.0; d * n];
            let broken = m.break_bonds_and_force(&u, &mut f).expect("breaking");
            (m.bond_rows(), m.plan().sub.owned_nodes().to_vec(), broken)
        });
        let broken: usize = parts.iter().map(|part| part.2).sum();
        assert_eq!(broken, broken_one, "{p} ranks: directed bonds broken");
        let mut cut_sides = 0;
        for (r, (rows, owned, _)) in parts.iter().enumerate() {
            let (mut inside, mut cut) = (0, 0);
            for &i in owned {
                for &j in fam.family(i) {
                    match owned.binary_search(&(j as usize)) {
                        Err(_) => cut += 1,
                        Ok(_) if j as usize > i => inside += 1,
                        Ok(_) => {}
                    }
                }
            }
            assert!(cut > 0, "{p} ranks, rank {r}: no pair cut");
            assert_eq!(*rows, inside + cut, "{p} ranks, rank {r}: bond rows");
            cut_sides += cut;
        }
        let total: usize = parts.iter().map(|part| part.0).sum();
        assert_eq!(
            total,
            fam.bonds() / 2 + cut_sides / 2,
            "{p} ranks: rows in all"
        );
    }
}

/// Each rank writes its piece of a snapshot from its own part, with no gather of the whole
/// state: at every snapshot step the piece of rank r must be, byte for byte, the `.vtu` the
/// writer makes of the one-process snapshot's values at the nodes r owns, which is what the
/// pieces were when every rank gathered the whole state and picked its nodes. The plate
/// whose crack runs across the cuts (bonds broken across them, as the first test asserts),
/// 2 and 3 thread ranks, `cpu-loop` (bitwise the one-process run): PMB (the damage and the
/// bond-count damage from the rank's part), LPS (its dilatation too, the ghosts' exchanged)
/// and PMB with `output.fields` choosing the stress, material id and broken bonds (fields
/// read over every node's bonds on the host, for which the state is still gathered).
#[test]
fn snapshot_pieces_are_the_one_process_snapshot_at_each_ranks_nodes_byte_for_byte() {
    use peridot::solver::distributed::simulate_distributed;
    use peridot::solver::{simulate, Ranks};
    use peridot::Precision;
    let bond_fields = "fields = [\"displacement\", \"damage\", \"damage_bond_count\", \
                       \"stress\", \"material_id\", \"broken_bonds\"]\n";
    for (law, fields) in [("pmb", ""), ("lps", ""), ("pmb", bond_fields)] {
        let output = format!("image = false\ntips_every = 0\nvtk_every = 50\n{fields}");
        let text = common::cracked_plate_model(law, STEPS, (48, 12), 6.0, &output);
        let problem = common::problem(&text, &[]);
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("one");
        let opts = common::options(BackendKind::CpuLoop, Precision::F64, Some(&one));
        let broken = simulate::<f64>(problem.clone(), &opts).unwrap();
        assert!(
            broken.summary.broken_bonds > problem.precracked_bonds(),
            "{law}: no crack"
        );
        let wholes = common::snapshots(&one);
        assert_eq!(wholes.len(), 4, "{law}: snapshots of steps 0, 50, 100, 150");
        for p in [2, 3] {
            let out = dir.path().join(format!("ranks_{p}"));
            let opts = common::options(BackendKind::CpuLoop, Precision::F64, Some(&out));
            peridot::distributed::run_ranks(p, |comm| {
                let ranks = Ranks { comm, stop: None };
                simulate_distributed::<f64>(problem.clone(), &opts, ranks)
                    .unwrap_or_else(|e| panic!("distributed run: {e}"));
            });
            let scratch = dir.path().join(format!("expected_{p}"));
            for r in 0..p {
                let nodes = &RankPlan::new(&problem, p, r).unwrap().owned_of[r];
                for whole in &wholes {
                    let stem = whole.file_stem().unwrap().to_string_lossy().into_owned();
                    let step: usize = stem.rsplit('_').next().unwrap().parse().unwrap();
                    let piece = out.join(format!("{stem}_{r}.vtu"));
                    let expected =
                        common::pieces::expected_piece(&problem, whole, step, nodes, &scratch);
                    let got = std::fs::read(&piece).unwrap();
                    assert!(
                        got == expected,
                        "{law} {fields}on {p} ranks: {} differs from the one-process \
                         snapshot's nodes of rank {r}",
                        piece.display()
                    );
                }
            }
        }
    }
}

/// A rank's lean setup shares its passes over the bonds with the other ranks (each its share
/// of the nodes: family sizes, horizon and weighted volumes, pre-cracked bonds, the stable
/// time step; `setup/shared.rs`) and ends with the one-process lean problem bit for bit, on
/// 1 to 4 thread ranks: PMB with a pre-crack and the surface correction, LPS (whose stable
/// step reads its neighbours' dilatation bounds, computed for those alone) and, in 3D, a
/// plate under an impactor with node contact (contact's stiffness in the stable step). Each
/// node's values come from its own bonds alone, so the share changes no bit.
#[test]
fn a_ranks_shared_lean_setup_equals_the_whole_one_bitwise() {
    use peridot::distributed::{run_ranks, CommShares};
    use peridot::setup::Problem;
    for (name, stored) in [
        ("pmb", common::cracked_plate("pmb", 10)),
        ("lps", common::cracked_plate("lps", 10)),
        (
            "3d contact",
            common::contact::sphere_on_plate(10, "[contact]\n"),
        ),
    ] {
        let (model, body) = (stored.model.clone(), stored.body.clone());
        let whole = Problem::lean_from_body(model.clone(), body.clone()).unwrap();
        let dt = whole.stable_time_step();
        assert!(dt.is_finite() && dt > 0.0, "{name}: a stable step");
        assert_eq!(dt.to_bits(), stored.stable_time_step().to_bits(), "{name}");
        if name == "pmb" {
            assert!(whole.precracked > 0, "{name}: the pre-crack cuts bonds");
        }
        for p in 1..=4 {
            let ends = run_ranks(p, |comm| {
                let shares = CommShares(&*comm);
                Problem::lean_from_body_shared(model.clone(), body.clone(), &shares).unwrap()
            });
            for (r, e) in ends.iter().enumerate() {
                let what = format!("{name}, rank {r} of {p}");
                assert_eq!(e.families.offsets, whole.families.offsets, "{what}");
                let (b, w) = (&e.bonds, &whole.bonds);
                common::assert_bitwise(&b.horizon_volume, &w.horizon_volume, &what);
                common::assert_bitwise(&b.weighted_volume, &w.weighted_volume, &what);
                assert_eq!(e.precracked, whole.precracked, "{what}: pre-cracked bonds");
                let shared = e.stable_step.expect("computed by the shared setup");
                assert_eq!(shared.to_bits(), dt.to_bits(), "{what}: stable step");
            }
        }
    }
}
