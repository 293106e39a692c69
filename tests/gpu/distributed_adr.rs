//! ADR, checkpoints and restarts of `gpu-loop` across ranks (`DistributedGpu`,
//! `docs/distributed.md`), P ranks as P threads of this process (`ThreadComm`) sharing the
//! one GPU.
//!
//! ADR iterates on the host over each rank's owned dofs, its global sums exact and merged
//! over the ranks (`dynamics/exact_sum.rs`), each iteration's forces from the rank's device:
//! each owned node's the one-GPU neighbour-list form's bit for bit (its bonds in the global
//! order with the in-core kernel's arithmetic). So ADR across P = 1, 2, 3 ranks ends BITWISE
//! where the host ADR over the in-core `gpu-loop` list form's forces ends
//! (`GpuLoop::with_neighbour_list`, `AdrCall::on_host`): displacement, velocity, bond status,
//! bonds broken, residual (PMB and LPS on the tiny plate pulled until bonds break across the
//! cuts). The in-core `gpu-loop`'s own ADR iterates on the device and sums in a tree order
//! (`backend/gpu/adr.rs`), and ADR's path is sensitive to the damping coefficient's last bits
//! (`tests/gpu.rs`, `adr_on_the_device_agrees_with_the_cpu`), so against it the run through
//! the driver is held to what that test holds the device's ADR to against the CPU's: both
//! converge, in iteration counts within 30 %, to displacements within 1e-5 (relative, at a
//! residual tolerance of 1e-9); across 2 and 3 ranks the two runs are bitwise equal.
//!
//! Checkpoints: a run across 2 ranks checkpointing half way (rank 0 writes the one-process
//! file), resumed from that checkpoint across 2 ranks and across 3 (and, explicit, in one
//! process on `gpu-loop`, which on a plate with a hole runs the neighbour list too), ends with
//! the uninterrupted run's displacement, velocity and bond status bit for bit, its
//! `probes.csv` byte for byte where the resumed run is across ranks (one GPU sums the probe
//! rows on the device: to round-off only); for the explicit plate whose crack runs across the
//! cuts (PMB and LPS; PMB with the bilinear softening law, whose checkpoint carries each
//! bond's damage; LPS with `critical_stretch_alpha` breaking after the force, whose
//! checkpoint carries each node's critical stretch) and for ADR with bonds breaking.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use crate::common::cli::TINY_ADR;
use crate::common::ranks::end_in;
use peridot::backend::{Backend, BackendKind, Gather, GpuLoop};
use peridot::distributed::{run_ranks, DistributedGpu};
use peridot::dynamics::{Adr, AdrCall, Loads, State};
use peridot::setup::Problem;
use peridot::solver::distributed::simulate_distributed;
use peridot::solver::{simulate, Outcome, Ranks};
use peridot::Precision;
use std::path::Path;
use std::sync::Arc;

/// What an ADR run ends with.
struct AdrEnd {
    u: Vec<f64>,
    v: Vec<f64>,
    status: Vec<u8>,
    /// The bonds broken in all (pre-cracks included).
    broken: usize,
    /// The bonds this backend's iterations broke.
    broken_here: usize,
    residual: f64,
}

/// The driver's ADR without load steps (`solver/run.rs`): the state at rest with the
/// boundary values at t = 0, then `solver.steps` iterations of `h = 1`, each on the host over
/// `b`'s forces (`host`) or by `b`'s own `advance_adr`; the whole state at the end.
fn relax<B: Backend<f64>>(problem: &Problem, b: &mut B, host: bool) -> AdrEnd {
    let loads = Loads::new(problem, 1.0);
    let mut state = State::<f64>::initial(problem);
    let s = &problem.model.solver;
    let mut adr = Adr::<f64>::new(&problem.row_bounds(), problem.dim(), s.damage);
    loads.initial_velocity(&mut state.v);
    loads.impose(0.0, &mut state.u, &mut state.v);
    state.v.iter_mut().for_each(|v| *v = 0.0);
    let mut broken_here = 0;
    for _ in 0..s.steps {
        let call = AdrCall {
            adr: &mut adr,
            loads: &loads,
            state: &mut state,
            h: 1.0,
        };
        broken_here += match host {
            true => call.on_host(b),
            false => b.advance_adr(call),
        }
        .expect("an ADR iteration");
    }
    if !host {
        b.sync_state(&mut state)
            .expect("the owned state downloaded");
    }
    // a rank's calls keep its owned entries current; the whole, to every rank (collective)
    if let Some(outputs) = b.rank_outputs() {
        outputs
            .gather_state(&mut state, Gather::Every)
            .expect("gather the state");
    }
    AdrEnd {
        status: b.bond_status().expect("bond status"),
        broken: b.broken_bonds(),
        broken_here,
        residual: adr.residual,
        u: state.u,
        v: state.v,
    }
}

/// Assert `end` equals `one` bit for bit (`what` names the run).
fn assert_same_adr(end: &AdrEnd, one: &AdrEnd, what: &str) {
    common::assert_bitwise(&end.u, &one.u, &format!("{what}: displacement"));
    common::assert_bitwise(&end.v, &one.v, &format!("{what}: velocity"));
    assert!(end.status == one.status, "{what}: bond status differs");
    assert_eq!(end.broken, one.broken, "{what}: bonds broken in all");
    assert_eq!(
        end.residual.to_bits(),
        one.residual.to_bits(),
        "{what}: residual {} vs {}",
        end.residual,
        one.residual
    );
}

#[test]
fn adr_on_gpu_loop_across_thread_ranks_equals_host_adr_over_one_gpu_list_forces_bitwise() {
    if !have_gpu() {
        return;
    }
    let lps = ["material.model=\"lps\"", "material.poisson_ratio=0.22"];
    for (law, extra) in [("pmb", &[][..]), ("lps", &lps[..])] {
        let problem = common::problem(TINY_ADR, extra);
        let mut core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
        let one = relax(&problem, &mut core, true);
        let precracked = problem.precracked_bonds();
        assert!(
            one.broken > precracked,
            "{law}: bonds break beyond the pre-crack ({} broken, {precracked} pre-cracked)",
            one.broken
        );
        let mut first: Option<Vec<AdrEnd>> = None;
        for p in [1, 2, 3] {
            let ends = run_ranks(p, |comm| {
                let mut b = DistributedGpu::<f64>::new(&problem, comm, None).unwrap();
                relax(&problem, &mut b, false)
            });
            let case = format!("ADR {law} on gpu-loop, {p} ranks sharing one GPU");
            // (the ranks against one rank first: the part's own claim, whatever the reference)
            if let Some(single) = &first {
                for (r, end) in ends.iter().enumerate() {
                    let what = format!("{case}, rank {r}, against 1 rank");
                    assert_same_adr(end, &single[0], &what);
                }
            }
            for (r, end) in ends.iter().enumerate() {
                let what = format!("{case}, rank {r}, against the in-core list form");
                assert_same_adr(end, &one, &what);
            }
            // each rank's iterations count the bonds it broke: together, the in-core count
            let sum: usize = ends.iter().map(|e| e.broken_here).sum();
            assert_eq!(sum, one.broken_here, "{case}: bonds broken by the ranks");
            first.get_or_insert(ends);
        }
    }
}

/// What the driver's ADR run ends with.
struct DriverEnd {
    u: Vec<f64>,
    v: Vec<f64>,
    iterations: usize,
    converged: Option<bool>,
    residual: f64,
}

fn driver_end(o: Outcome<f64>) -> DriverEnd {
    DriverEnd {
        iterations: o.state.step,
        converged: o.summary.converged,
        residual: o.summary.static_residual.expect("ADR has a residual"),
        u: o.state.u,
        v: o.state.v,
    }
}

/// Through the driver (`simulate_distributed`, `--backend gpu-loop`) to a residual of 1e-9
/// (the tiny plate, bonds kept intact): across 2 and 3 ranks the same run bit for bit, and
/// against the in-core `gpu-loop`'s ADR on the device (another summation order) within what
/// the device's ADR is held to against the CPU's.
#[test]
fn adr_on_gpu_loop_across_thread_ranks_through_the_driver_agrees_with_one_gpu() {
    if !have_gpu() {
        return;
    }
    let keys = [
        "material.critical_stretch=0.5",
        "solver.steps=20000",
        "solver.tolerance=1e-9",
    ];
    let problem = common::problem(TINY_ADR, &keys);
    let opts = common::options(BackendKind::GpuLoop, Precision::F64, None);
    let one = driver_end(simulate::<f64>(problem.clone(), &opts).unwrap());
    assert_eq!(one.converged, Some(true), "one GPU converges");
    let mut two: Option<DriverEnd> = None;
    for p in [2, 3] {
        let ends = run_ranks(p, |comm| {
            let ranks = Ranks { comm, stop: None };
            let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks);
            let o = o.unwrap_or_else(|e| panic!("distributed ADR: {e}"));
            assert_eq!(o.summary.backend, "gpu-loop-mpi");
            driver_end(o)
        });
        for (r, end) in ends.iter().enumerate() {
            let what = format!("ADR on gpu-loop through the driver, {p} ranks, rank {r}");
            assert_eq!(end.converged, Some(true), "{what}: converges");
            let (ir, i1) = (end.iterations as f64, one.iterations as f64);
            let e = common::rel_f64(&end.u, &one.u);
            eprintln!(
                "{what}: {ir} iterations (one GPU {i1}), residual {:.2e} ({:.2e}), u agrees \
                 to {e:.1e}",
                end.residual, one.residual
            );
            let ratio = ir / i1;
            assert!(
                (0.7..1.3).contains(&ratio),
                "{what}: iterations {ir} vs {i1}"
            );
            assert!(e < 1e-5, "{what}: u relative difference {e:.3e}");
            let base = two.as_ref().unwrap_or(&ends[0]);
            common::assert_bitwise(&end.u, &base.u, &format!("{what}: displacement"));
            common::assert_bitwise(&end.v, &base.v, &format!("{what}: velocity"));
            assert_eq!(end.iterations, base.iterations, "{what}: iterations");
            let bits = (end.residual.to_bits(), base.residual.to_bits());
            assert_eq!(bits.0, bits.1, "{what}: residual");
        }
        two.get_or_insert(ends.into_iter().next().unwrap());
    }
}

#[test]
fn gpu_loop_checkpoints_across_thread_ranks_resume_bitwise_on_any_count() {
    if !have_gpu() {
        return;
    }
    let gpu = BackendKind::GpuLoop;
    // (the hole: no full box lattice, so one GPU runs the neighbour list too)
    let hole = "[[geometry.remove]]\nshape = \"circle\"\ncenter = [0.036, 0.004]\n\
                radius = 0.0015\n";
    let pmb = common::cracked_plate_text("pmb", 150) + hole;
    let lps = common::cracked_plate_text("lps", 150) + hole;
    // (bond failure with a history: the checkpoint carries the damage per bond and each
    // node's critical stretch, gathered off the devices; the resumed ranks' parts upload
    // their bonds' and local nodes' values)
    let history = |law: &str, keys: &str| {
        common::cracked_plate_text(law, 150).replacen("critical_stretch = 0.002\n", keys, 1)
    };
    let bilinear = history(
        "pmb",
        "damage_law = \"bilinear\"\ncritical_stretch = 0.002\nfinal_stretch = 0.006\n",
    );
    let alpha = history(
        "lps",
        "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\nbreak_timing = \"after-force\"\n",
    );
    let probes = [
        "output.probes=[\"top\", \"bottom\"]",
        "output.probe_every=5",
    ];
    let cases: [(&str, &str, usize, &str, &[usize]); 5] = [
        ("pmb", &pmb, 75, "output.vtk_every=50", &[2, 3, 0]),
        ("lps", &lps, 75, "output.vtk_every=50", &[2, 3, 0]),
        (
            "pmb bilinear",
            &bilinear,
            75,
            "output.vtk_every=50",
            &[2, 3, 0],
        ),
        (
            "lps alpha after-force",
            &alpha,
            75,
            "output.vtk_every=50",
            &[2, 3, 0],
        ),
        // (one GPU iterates ADR on the device, in another summation order: across ranks only)
        ("adr", TINY_ADR, 30, "output.vtk_every=10", &[2, 3]),
    ];
    for (name, text, half, vtk, counts) in cases {
        let mut keys = vec![vtk, probes[1]];
        if name != "adr" {
            keys.push(probes[0]);
        }
        let problem = common::problem(text, &keys);
        let tmp = tempfile::tempdir().unwrap();
        let full = tmp.path().join("full");
        let one = end_in((&problem, gpu), 2, &full, None);
        let broken = one.2.iter().filter(|&&s| s == 0).count();
        assert!(broken > problem.precracked_bonds(), "{name}: bonds break");
        let every = format!("output.checkpoint_every={half}");
        let checked = common::problem(text, &[keys.clone(), vec![every.as_str()]].concat());
        for &p in counts {
            let dir = tmp.path().join(format!("part{p}"));
            let all = end_in((&checked, gpu), 2, &dir, None);
            let what = format!("{name} on gpu-loop across 2 ranks");
            common::assert_bitwise(
                &all.0,
                &one.0,
                &format!("{what}: checkpoints change nothing"),
            );
            // back to the checkpoint half way: the later ones removed
            let steps = checked.model.solver.steps;
            common::ranks::back_to_checkpoint(&dir, half, steps, &what);
            let what = match p {
                0 => format!("{name}: resumed from step {half} in one process on gpu-loop"),
                p => format!("{name}: resumed from step {half} on {p} ranks"),
            };
            let resumed = end_in((&checked, gpu), p, &dir, Some(&dir));
            assert_eq!(resumed.3, Some(half), "{what}: the step resumed from");
            common::assert_bitwise(&resumed.0, &one.0, &format!("{what}: displacement"));
            common::assert_bitwise(&resumed.1, &one.1, &format!("{what}: velocity"));
            assert!(resumed.2 == one.2, "{what}: bond status");
            if p != 0 {
                let read = |d: &Path| std::fs::read_to_string(d.join("probes.csv")).unwrap();
                assert_eq!(read(&dir), read(&full), "{what}: probes.csv");
            }
        }
    }
}
