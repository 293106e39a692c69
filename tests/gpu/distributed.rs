//! One GPU per rank (`peridot::distributed::DistributedGpu`, `docs/distributed.md`): P ranks
//! as P threads of this process (`ThreadComm`), all sharing the one GPU, each holding its
//! part of a pre-cracked plate pulled apart (its crack runs across the cuts between ranks)
//! on the device, exchanging its ghosts' displacement (and for LPS the ghosts'
//! `(alpha, p theta)` pairs) through packed device buffers and pinned host buffers each
//! step. Against the in-core `gpu-loop` in its neighbour-list form
//! (`GpuLoop::with_neighbour_list`; a full box lattice's slot-table kernel, which a one-GPU
//! run takes by default, agrees with the list to 1e-12 only), the same explicit calls end
//! BITWISE equal in f64 for P = 1, 2, 3: displacement, velocity, acceleration and force of
//! every node, the bond status of every bond and the bonds broken (each owned node sums its
//! bonds in the global order with the in-core kernel's arithmetic; a cut bond is evaluated
//! on both sides from the same two displacements). The run through the driver
//! (`simulate_distributed`, `--backend gpu-loop`) on P = 2, 3 ranks ends where the one-GPU
//! run through the driver ends, bitwise (on a plate with a hole, which one GPU runs with the
//! neighbour list too). The same holds, bitwise, for materials of two densities (each local
//! node's density in the rank's device order) and for bond failure with a history (a
//! softening law's damage per bond, each node's critical stretch with the ghosts' exchanged
//! through a device halo), whose gathered history equals the in-core one bit for bit.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::{Backend, BackendKind, Gather, GpuLoop};
use peridot::distributed::{run_ranks, DistributedGpu};
use peridot::dynamics::{Forces, State};
use std::sync::Arc;

/// Steps of the plate (the crack grows across the cuts for P = 2 and 3), in calls of these
/// lengths (uneven, as the driver's chunks and outputs make them).
const CHUNKS: [usize; 6] = [10, 7, 30, 1, 40, 32];

/// The end of a run: state, bonds this rank's calls broke, bond status, bonds broken in all.
type End = (State<f64>, usize, Vec<u8>, usize);

/// A rank's calls leave its owned entries current in the driver's state; the whole is
/// gathered to every rank here (collective), as an output that reads it would.
fn end_of(problem: &peridot::setup::Problem, backend: &mut dyn Backend<f64>) -> End {
    let (mut state, broken) = common::chunked_run(problem, backend, &CHUNKS);
    if let Some(outputs) = backend.rank_outputs() {
        outputs
            .gather_state(&mut state, Gather::Every)
            .expect("gather the state");
    }
    let status = backend.bond_status().expect("bond status");
    (state, broken, status, backend.broken_bonds())
}

#[test]
fn gpu_loop_across_thread_ranks_sharing_one_gpu_equals_in_core_list_form_bitwise() {
    if !have_gpu() {
        return;
    }
    for law in ["pmb", "lps"] {
        let problem = common::cracked_plate(law, CHUNKS.iter().sum());
        let mut core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
        let one = end_of(&problem, &mut core);
        let precracked = problem.precracked_bonds();
        assert!(
            one.3 > precracked,
            "{law}: the crack grows ({} broken, {precracked} pre-cracked)",
            one.3
        );
        assert_ranks_end_as(&problem, &one, law);
    }
}

/// Through the driver (`simulate_distributed`, `--backend gpu-loop`: its chunks of at most
/// 10 steps, the state gathered at the end) on a plate with a hole, which is no full box
/// lattice, so that the one-GPU run through the same driver takes the neighbour list too.
#[test]
fn gpu_loop_across_thread_ranks_through_the_driver_equals_one_gpu_run() {
    if !have_gpu() {
        return;
    }
    for law in ["pmb", "lps"] {
        let text = common::cracked_plate_text(law, 150)
            + "[[geometry.remove]]\nshape = \"circle\"\ncenter = [0.036, 0.004]\n\
               radius = 0.0015\n";
        let problem = common::problem(&text, &[]);
        assert!(
            GpuLoop::<f64>::lattice(&problem).is_none(),
            "the hole: the list form"
        );
        let one = common::run_end(&problem, BackendKind::GpuLoop);
        for p in [2, 3] {
            let ends = common::distributed_end(&problem, BackendKind::GpuLoop, p);
            let case = format!("{law}, gpu-loop on {p} ranks through the driver");
            common::assert_same_end(&one, &ends, &case);
        }
    }
}

/// `gpu-matrix` across P = 1, 2, 3 thread ranks sharing the GPU (`DistributedGpuMatrix`:
/// each rank the operators' rows of its owned nodes' bonds with ghost columns in half storage,
/// its owned pairs once and its cut pairs once on each side, its explicit loop on
/// the device, the ghosts' displacement and for LPS dilatation exchanged through packed
/// device buffers before the products that read them) agrees with the in-core `gpu-matrix`
/// through the driver to 1e-12 of the largest value: displacement and velocity after 150
/// steps of the pre-cracked plate (PMB and LPS). The rows of a rank run in local order, so
/// the sums differ from the in-core ones by round-off only; the bond status and the bonds
/// broken are equal (a cut bond is a pair row on both sides and breaks on both at the same step;
/// no stretch here falls within round-off of the critical one). ADR on 2 ranks (no bond
/// breaking) iterates on the host with exact sums, its forces from the devices: it ends
/// within 1e-8 of the largest displacement of the in-core `cpu-matrix` ADR, the same
/// iteration with the CPU's forces (measured 1.5e-9 on an H100). The 60 damped iterations
/// are not converged and grow the forces' round-off: in one process `gpu-matrix` (its
/// iteration on the device, sums in another order) and `cpu-matrix` already part by 4.3e-9,
/// and the run across ranks is 5.8e-9 from the one-GPU run (printed, not bounded here).
#[test]
fn gpu_matrix_across_thread_ranks_agrees_with_one_gpu_to_1e_12() {
    if !have_gpu() {
        return;
    }
    for law in ["pmb", "lps"] {
        let problem = common::cracked_plate(law, 150);
        let one = common::run_end(&problem, BackendKind::GpuMatrix);
        assert!(
            one.broken > problem.precracked_bonds(),
            "{law}: bonds break"
        );
        for p in [1, 2, 3] {
            let ends = common::distributed_end(&problem, BackendKind::GpuMatrix, p);
            for (r, end) in ends.iter().enumerate() {
                let what = format!("{law}, gpu-matrix on {p} ranks, rank {r}");
                let (du, dv) = (
                    common::rel_max(&end.u, &one.u),
                    common::rel_max(&end.v, &one.v),
                );
                println!("{what}: displacement {du:.2e}, velocity {dv:.2e}");
                assert!(du <= 1e-12, "{what}: displacement {du:e}");
                assert!(dv <= 1e-12, "{what}: velocity {dv:e}");
                assert!(end.status == one.status, "{what}: bond status differs");
                assert_eq!(end.broken, one.broken, "{what}: bonds broken");
            }
        }
    }
    let adr = common::problem(common::cli::TINY_ADR, &["material.critical_stretch=0.5"]);
    let (cpu, gpu) = (
        common::run_end(&adr, BackendKind::CpuMatrix),
        common::run_end(&adr, BackendKind::GpuMatrix),
    );
    let dg = common::rel_max(&gpu.u, &cpu.u);
    println!("ADR in one process, gpu-matrix against cpu-matrix: displacement {dg:.2e}");
    for (r, end) in common::distributed_end(&adr, BackendKind::GpuMatrix, 2)
        .iter()
        .enumerate()
    {
        let (dc, dg) = (
            common::rel_max(&end.u, &cpu.u),
            common::rel_max(&end.u, &gpu.u),
        );
        println!(
            "ADR on gpu-matrix, 2 ranks, rank {r}: displacement {dc:.2e} from cpu-matrix, \
             {dg:.2e} from gpu-matrix in one process"
        );
        assert!(dc <= 1e-8, "ADR on gpu-matrix, rank {r}: {dc:e}");
    }
}

/// The strain energy of `gpu-matrix` across 2 and 3 thread ranks sharing the GPU, summed
/// over the ranks, is the in-core `gpu-matrix`'s at the same displacement (the one-GPU run's
/// end after 150 steps of the pre-cracked plate) to 1e-12 relative, PMB and LPS: each rank's
/// `matrix_energy` counts of a cut pair row only its owned end's share (LPS the `a_ij` term
/// with the owned end's dilatation, PMB half the row), so every direction is counted once
/// over the ranks; the sums run in another order, round-off only. Counting a cut row whole
/// on both sides would add the cut bonds' energy twice.
#[test]
fn gpu_matrix_energy_across_thread_ranks_is_the_one_gpu_energy() {
    use peridot::solver::distributed::simulate_distributed;
    use peridot::solver::{simulate, Ranks};
    if !have_gpu() {
        return;
    }
    let opts = common::options(BackendKind::GpuMatrix, peridot::Precision::F64, None);
    for law in ["pmb", "lps"] {
        let problem = common::cracked_plate(law, 150);
        let mut one = simulate::<f64>(problem.clone(), &opts).expect("one GPU");
        let u = one.state.u.clone();
        let energy = one.backend.strain_energy(&u).expect("energy");
        assert!(energy > 0.0, "{law}: strained");
        for p in [2, 3] {
            let sums = run_ranks(p, |comm| {
                let ranks = Ranks { comm, stop: None };
                let mut o = simulate_distributed::<f64>(problem.clone(), &opts, ranks)
                    .unwrap_or_else(|e| panic!("distributed gpu-matrix: {e}"));
                o.backend.strain_energy(&u).expect("energy")
            });
            for (r, e) in sums.iter().enumerate() {
                let rel = (e - energy).abs() / energy;
                println!("{law}, gpu-matrix on {p} ranks, rank {r}: energy {rel:.2e}");
                assert!(
                    rel <= 1e-12,
                    "{law}, {p} ranks, rank {r}: {e:e} vs {energy:e}"
                );
            }
        }
    }
}

/// `gpu-matrix` across 2 thread ranks checkpointing half way (rank 0 writes the
/// one-process file from the state gathered off the devices), resumed from that checkpoint:
/// across 2 ranks it ends with the uninterrupted run bitwise (the same parts, the state
/// uploaded from the checkpoint's bits, the rows' status from its bond status); across 3
/// ranks and in one process (the in-core `gpu-matrix`, half storage) within 1e-12 of the
/// largest displacement and velocity (other rows, other sums), the bond status equal; PMB
/// and LPS on the pre-cracked plate whose crack grows through the cuts.
#[test]
fn gpu_matrix_checkpoints_across_thread_ranks_resume_on_any_count() {
    if !have_gpu() {
        return;
    }
    let gpu = BackendKind::GpuMatrix;
    for law in ["pmb", "lps"] {
        let text = common::cracked_plate_text(law, 150);
        let keys = ["output.vtk_every=50", "output.probe_every=5"];
        let problem = common::problem(&text, &keys);
        let tmp = tempfile::tempdir().unwrap();
        let one = common::ranks::end_in((&problem, gpu), 2, &tmp.path().join("full"), None);
        let broken = one.2.iter().filter(|&&s| s == 0).count();
        assert!(broken > problem.precracked_bonds(), "{law}: bonds break");
        let checked = common::problem(
            &text,
            &[&keys[..], &["output.checkpoint_every=75"]].concat(),
        );
        for p in [2, 3, 0] {
            let dir = tmp.path().join(format!("part{p}"));
            let all = common::ranks::end_in((&checked, gpu), 2, &dir, None);
            let what = format!("{law} on gpu-matrix across 2 ranks");
            common::assert_bitwise(
                &all.0,
                &one.0,
                &format!("{what}: checkpoints change nothing"),
            );
            let steps = checked.model.solver.steps;
            common::ranks::back_to_checkpoint(&dir, 75, steps, &what);
            let resumed = common::ranks::end_in((&checked, gpu), p, &dir, Some(&dir));
            let what = format!("{law}: resumed from step 75 on {p} ranks (0: one process)");
            assert_eq!(resumed.3, Some(75), "{what}: the step resumed from");
            let (du, dv) = (
                common::rel_max(&resumed.0, &one.0),
                common::rel_max(&resumed.1, &one.1),
            );
            println!("{what}: displacement {du:.2e}, velocity {dv:.2e}");
            if p == 2 {
                common::assert_bitwise(&resumed.0, &one.0, &format!("{what}: displacement"));
                common::assert_bitwise(&resumed.1, &one.1, &format!("{what}: velocity"));
            }
            assert!(du <= 1e-12 && dv <= 1e-12, "{what}: {du:e}, {dv:e}");
            assert!(resumed.2 == one.2, "{what}: bond status");
        }
    }
}

/// Materials of different densities across ranks: each rank's device loop updates every
/// local node with its own material's density (the rank's problem in device order gives the
/// leapfrog each local node's, `Explicit::node_density`; the ghosts' too, so that what a
/// call's first kick and drift do to a ghost is well-defined, though the exchange overwrites
/// it before any kernel reads it). The pre-cracked
/// two-material block (the stiff half 2000 kg/m^3, the soft 8000) pulled apart: BITWISE the
/// in-core `gpu-loop` list form for P = 1, 2, 3, PMB and LPS, as the one-density runs above
/// (each owned node's force sums its bonds in the global order with the in-core arithmetic,
/// and its `1 / rho` is the in-core value, `T::of(1 / rho)`, so its update too).
#[test]
fn gpu_loop_across_thread_ranks_with_two_densities_equals_in_core_list_form_bitwise() {
    if !have_gpu() {
        return;
    }
    for law in ["pmb", "lps"] {
        let problem = common::two_densities(law, "plane-stress", CHUNKS.iter().sum());
        let mut core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
        let one = end_of(&problem, &mut core);
        let precracked = problem.precracked_bonds();
        assert!(
            one.3 > precracked,
            "{law}: bonds break ({} broken, {precracked} pre-cracked)",
            one.3
        );
        assert_ranks_end_as(&problem, &one, &format!("two densities, {law}"));
    }
}

/// Every rank's end of the explicit calls of `end_of` on P = 1, 2, 3 thread ranks equals the
/// in-core run's `one` bit for bit (state, bond status, bonds broken in all; the ranks'
/// counts add up to the in-core count).
fn assert_ranks_end_as(problem: &peridot::setup::Problem, one: &End, what: &str) {
    for p in [1, 2, 3] {
        let ends = run_ranks(p, |comm| {
            let mut b = DistributedGpu::<f64>::new(problem, comm, None).unwrap();
            end_of(problem, &mut b)
        });
        let case = format!("{what}, gpu-loop on {p} ranks sharing one GPU");
        for (r, end) in ends.iter().enumerate() {
            let case = format!("{case}, rank {r}");
            common::assert_same_run(&end.0, one.1, &one.0, one.1, &case);
            assert!(end.2 == one.2, "{case}: bond status differs");
            assert_eq!(end.3, one.3, "{case}: bonds broken in all");
        }
        // each rank's calls count the bonds it broke: together, the in-core count
        let sum: usize = ends.iter().map(|e| e.1).sum();
        assert_eq!(sum, one.1, "{case}: bonds broken by the ranks' calls");
    }
}

/// Bond failure with a history across ranks, on the pre-cracked plate whose crack grows
/// across the cuts: a softening law (bilinear between stretches 0.002 and 0.006: a damage
/// value per bond, kept on the rank of each end; a cut bond's two copies evolve from the
/// same two displacements, its criterion stretch the same bits in both directions), each
/// node's critical stretch with `critical_stretch_alpha` (the owned nodes' computed on their
/// device, the ghosts' exchanged through the device halo wherever the pass writes them) and
/// breaking after the force, alone and with alpha. BITWISE the in-core `gpu-loop` (which
/// runs such a model with its neighbour list) for P = 1, 2, 3: state, bond status, bonds
/// broken; and every rank's gathered failure history (damage per bond, each node's critical
/// stretch for the next evaluation) equals the in-core one bit for bit.
#[test]
fn gpu_loop_across_thread_ranks_with_failure_history_equals_in_core_bitwise() {
    if !have_gpu() {
        return;
    }
    let bilinear = "damage_law = \"bilinear\"\ncritical_stretch = 0.002\nfinal_stretch = 0.006\n";
    let alpha = "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\n";
    let after = "critical_stretch = 0.002\nbreak_timing = \"after-force\"\n";
    let both = format!("{alpha}break_timing = \"after-force\"\n");
    for (name, keys, law) in [
        ("bilinear", bilinear, "pmb"),
        ("alpha", alpha, "pmb"),
        ("after-force", after, "lps"),
        ("alpha after-force", both.as_str(), "lps"),
    ] {
        let text = common::cracked_plate_text(law, CHUNKS.iter().sum()).replacen(
            "critical_stretch = 0.002\n",
            keys,
            1,
        );
        let problem = common::problem(&text, &[]);
        let what = format!("{name}, {law}");
        let m = &problem.material;
        assert!(
            m.softening.is_some() || m.history_breaking(),
            "{what}: a history"
        );
        let mut core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
        let one = end_of(&problem, &mut core);
        let history = core.failure_history().unwrap();
        let precracked = problem.precracked_bonds();
        assert!(
            one.3 > precracked,
            "{what}: bonds break ({} broken, {precracked} pre-cracked)",
            one.3
        );
        assert_eq!(
            history.bond_damage.is_empty(),
            m.softening.is_none(),
            "{what}: damage per bond where softening"
        );
        assert_eq!(
            history.node_s0.is_empty(),
            !m.history_breaking() || m.softening.is_some(),
            "{what}: critical stretches where breaking with a history"
        );
        assert_ranks_end_as(&problem, &one, &what);
        for p in [2, 3] {
            let ends = run_ranks(p, |comm| {
                let mut b = DistributedGpu::<f64>::new(&problem, comm, None).unwrap();
                common::chunked_run(&problem, &mut b, &CHUNKS);
                // (collective: every rank asks)
                b.failure_history().unwrap()
            });
            for (r, h) in ends.iter().enumerate() {
                let case = format!("{what}, {p} ranks, rank {r}");
                common::assert_bitwise(&h.bond_damage, &history.bond_damage, &case);
                common::assert_bitwise(&h.node_s0, &history.node_s0, &case);
            }
        }
    }
}

/// Ranks that own **blocks** (`solver.rank_partition = "blocks"`: the pre-cracked plate cut
/// 2 x 2 on 4 thread ranks sharing the GPU, each rank bordering the other three, the crack
/// running across both cuts). `gpu-loop` ends BITWISE as the in-core list form, as on slabs
/// (each owned node sums its bonds in the global order whatever the part's shape; the halo
/// lists come from the families), and `gpu-matrix` within 1e-12 of the one-GPU run with the
/// same bonds broken (its rows' sums in each rank's local order, round-off only).
#[test]
fn gpu_backends_across_thread_ranks_cut_in_blocks_end_as_one_gpu() {
    if !have_gpu() {
        return;
    }
    use peridot::model::RankPartition;
    for law in ["pmb", "lps"] {
        let mut problem = common::cracked_plate(law, CHUNKS.iter().sum());
        problem.model.solver.rank_partition = Some(RankPartition::Blocks);
        let mut core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
        let one = end_of(&problem, &mut core);
        assert!(one.3 > problem.precracked_bonds(), "{law}: the crack grows");
        let ends = run_ranks(4, |comm| {
            let mut b = DistributedGpu::<f64>::new(&problem, comm, None).unwrap();
            end_of(&problem, &mut b)
        });
        for (r, end) in ends.iter().enumerate() {
            let case = format!("{law}, gpu-loop on 2 x 2 blocks, rank {r}");
            common::assert_same_run(&end.0, one.1, &one.0, one.1, &case);
            assert!(end.2 == one.2, "{case}: bond status differs");
        }
        let one = common::run_end(&problem, BackendKind::GpuMatrix);
        for (r, end) in common::distributed_end(&problem, BackendKind::GpuMatrix, 4)
            .iter()
            .enumerate()
        {
            let what = format!("{law}, gpu-matrix on 2 x 2 blocks, rank {r}");
            let du = common::rel_max(&end.u, &one.u);
            println!("{what}: displacement {du:.2e}");
            assert!(du <= 1e-12, "{what}: displacement {du:e}");
            assert_eq!(end.broken, one.broken, "{what}: bonds broken");
        }
    }
}

/// A GPU rank's `forces_seconds` (`summary.json`'s `ranks`) times its device loop alone:
/// each explicit call's steps, from the first launch to the bonds broken read back, an
/// interval inside the call's `forces` phase (which adds the call's preparation), so at most
/// the rank's `forces` phase and its step zero's force evaluation (a trait call, timed as
/// setup). Before, it timed the whole call: the state's upload at the first call and its
/// gather to every rank at the end made it exceed the phase (on four GPUs 9 s against 1.27
/// s). The upload and gather are `state_seconds`, above zero: the first call uploads. On
/// `gpu-loop` and `gpu-matrix`, 2 thread ranks through the driver.
#[test]
fn gpu_ranks_time_the_device_loop_apart_from_the_state() {
    use peridot::solver::distributed::simulate_distributed;
    use peridot::solver::Ranks;
    use peridot::Precision;
    if !have_gpu() {
        return;
    }
    let problem = common::cracked_plate("pmb", 150);
    for backend in [BackendKind::GpuLoop, BackendKind::GpuMatrix] {
        let rows = run_ranks(2, |comm| {
            let rank = comm.rank();
            let opts = common::options(backend, Precision::F64, None);
            let ranks = Ranks { comm, stop: None };
            let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks)
                .unwrap_or_else(|e| panic!("distributed run: {e}"));
            let reports = o.summary.ranks.clone().expect("the ranks' reports");
            let mine = reports.into_iter().find(|r| r.rank == rank).expect("mine");
            let forces = o.summary.phase_seconds.forces.expect("a forces phase");
            (mine, forces, o.summary.setup.step_zero.unwrap_or(0.0))
        });
        for (report, forces, step_zero) in rows {
            let what = format!("{backend:?}, rank {}", report.rank);
            println!(
                "{what}: forces_seconds {:.4}, state_seconds {:.4}, forces phase {forces:.4}, \
                 step zero {step_zero:.4}",
                report.forces_seconds, report.state_seconds
            );
            assert!(report.forces_seconds > 0.0, "{what}");
            assert!(
                report.forces_seconds <= forces + step_zero + 1e-6,
                "{what}: the device loop {} s past the forces phase {forces} s",
                report.forces_seconds
            );
            assert!(report.state_seconds > 0.0, "{what}: no upload timed");
        }
    }
}

/// The halo through device buffers, the path a CUDA-aware MPI takes (`Comm::device_buffers`:
/// no page-locked copy, the packed device buffers handed to the transport, which here copies
/// them through the host itself, `run_ranks_with_device_buffers`). `gpu-loop` on 2 and 3
/// thread ranks ends BITWISE as the in-core list form (PMB, LPS with its pairs' exchange, and
/// `critical_stretch_alpha` with each node's critical stretch exchanged), as the staged path
/// does: only where the bytes travel changes, never which. `gpu-matrix` on 2 ranks ends
/// bitwise as its staged run. Every rank reports the path (`device_buffers`).
#[test]
fn gpu_ranks_exchanging_device_buffers_end_as_the_staged_runs_bitwise() {
    use peridot::distributed::{run_ranks_with_device_buffers, DistributedGpuMatrix};
    if !have_gpu() {
        return;
    }
    let alpha = "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\n";
    let plain = common::cracked_plate_text("pmb", CHUNKS.iter().sum());
    for (name, text) in [
        ("pmb", plain.clone()),
        (
            "lps",
            common::cracked_plate_text("lps", CHUNKS.iter().sum()),
        ),
        (
            "pmb alpha",
            plain.replacen("critical_stretch = 0.002\n", alpha, 1),
        ),
    ] {
        let problem = common::problem(&text, &[]);
        let mut core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
        let one = end_of(&problem, &mut core);
        assert!(one.3 > problem.precracked_bonds(), "{name}: bonds break");
        for p in [2, 3] {
            let ends = run_ranks_with_device_buffers(p, |comm| {
                let mut b = DistributedGpu::<f64>::new(&problem, comm, None).unwrap();
                let end = end_of(&problem, &mut b);
                let reports = b.footprint().ranks.expect("rank reports");
                (end, reports.iter().all(|r| r.device_buffers))
            });
            for (r, (end, direct)) in ends.iter().enumerate() {
                let case = format!("{name}, gpu-loop on {p} ranks, device buffers, rank {r}");
                assert!(direct, "{case}: the ranks report device buffers");
                common::assert_same_run(&end.0, one.1, &one.0, one.1, &case);
                assert!(end.2 == one.2, "{case}: bond status differs");
                assert_eq!(end.3, one.3, "{case}: bonds broken in all");
            }
        }
    }
    let problem = common::cracked_plate("lps", CHUNKS.iter().sum());
    let run = |comm| {
        let mut b = DistributedGpuMatrix::<f64>::new(&problem, comm, None).unwrap();
        end_of(&problem, &mut b)
    };
    let staged = run_ranks(2, run);
    let direct = run_ranks_with_device_buffers(2, run);
    for (r, (s, d)) in staged.iter().zip(&direct).enumerate() {
        let case = format!("lps, gpu-matrix on 2 ranks, device buffers, rank {r}");
        common::assert_same_run(&d.0, d.1, &s.0, s.1, &case);
        assert!(d.2 == s.2, "{case}: bond status differs");
    }
}
