//! Contact across ranks (`docs/contact.md`, `docs/distributed.md`, `distributed/contact.rs`):
//! `cpu-loop` across P = 1 to 4 thread ranks (`peridot::distributed::ThreadComm`, the same
//! driver and backend as under MPI) ends with the one-process run's displacement and
//! velocity bit for bit on every rank, and with its impactors' position, velocity and force
//! bit for bit: each owned node sums its contact pairs in ascending partner order with the
//! in-core arithmetic (from every node's displacement, gathered), and an impactor's reaction
//! is summed over every rank's terms in node order, the one-process order. No tolerance:
//! the arithmetic is the same, so any difference is a fault. Each model makes contact act
//! (asserted), so none passes vacuously: two blocks colliding across the cut of two ranks,
//! a sphere pressing a plate across the cuts (with and without node contact), and the
//! faces of a pre-crack pushed apart by crack-face contact (their broken bonds answered by
//! the rank owning either end) while the crack grows across the cuts; the blocks in f32
//! too. `gpu-loop` across ranks refuses contact, naming `cpu-loop` across ranks.

mod common;

use peridot::backend::BackendKind;
use peridot::distributed::plan::RankPlan;
use peridot::dynamics::contact::ImpactorState;
use peridot::setup::Problem;
use peridot::solver::distributed::simulate_distributed;
use peridot::solver::{simulate, Ranks};
use peridot::Precision;

/// What a run ends with: displacement, velocity, the impactors' motion and the bonds broken.
struct End {
    u: Vec<f64>,
    v: Vec<f64>,
    impactors: Vec<ImpactorState>,
    broken: usize,
}

fn end_of(o: peridot::solver::Outcome<f64>) -> End {
    let c = o.state.contact.as_ref().expect("the run has contact");
    End {
        impactors: c.impactors.iter().map(|i| i.motion()).collect(),
        broken: o.summary.broken_bonds,
        u: o.state.u,
        v: o.state.v,
    }
}

/// The end of `problem` on `cpu-loop` in one process.
fn one(problem: &Problem) -> End {
    let opts = common::options(BackendKind::CpuLoop, Precision::F64, None);
    end_of(simulate::<f64>(problem.clone(), &opts).expect("run succeeds"))
}

/// The end of `problem` on `cpu-loop` across `ranks` thread ranks, as every rank sees it.
fn across(problem: &Problem, ranks: usize) -> Vec<End> {
    peridot::distributed::run_ranks(ranks, |comm| {
        let opts = common::options(BackendKind::CpuLoop, Precision::F64, None);
        let ranks = Ranks { comm, stop: None };
        let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks)
            .unwrap_or_else(|e| panic!("distributed run: {e}"));
        end_of(o)
    })
}

/// Every rank of every P = 1..4 ends as the one-process run, bit for bit; returns that end.
fn check_bitwise(problem: &Problem, what: &str) -> End {
    let one = one(problem);
    for p in 1..=4 {
        for (r, end) in across(problem, p).iter().enumerate() {
            let what = format!("{what}, rank {r} of {p}");
            common::assert_bitwise(&end.u, &one.u, &format!("{what}: displacement"));
            common::assert_bitwise(&end.v, &one.v, &format!("{what}: velocity"));
            assert_eq!(end.broken, one.broken, "{what}: bonds broken");
            assert_eq!(end.impactors.len(), one.impactors.len());
            for (a, b) in end.impactors.iter().zip(&one.impactors) {
                // (bit for bit: `==` on f64 also equates 0 and -0, so compare the bits)
                let bits = |s: &ImpactorState| {
                    [s.position, s.velocity, s.force].map(|v| v.map(f64::to_bits))
                };
                assert_eq!(bits(a), bits(b), "{what}: impactor motion");
            }
        }
    }
    one
}

/// Two plane-strain steel blocks 8 x 6 mm (dx 0.5 mm) 1.5 mm apart along x (beyond the
/// horizon: no bond between them), the left one moving right at 60 m/s, node contact on,
/// for `steps` steps.
fn two_blocks(steps: usize) -> Problem {
    let text = format!(
        "{}[discretization]\ndimension = \"plane-strain\"\nthickness = 1e-3\ndx = 0.5e-3\n\
         horizon_factor = 3.015\n[geometry]\nbox = [{{ min = [0, 0], max = [0.008, 0.006] }}, \
         {{ min = [0.0095, 0], max = [0.0175, 0.006] }}]\n\
         [[region]]\nname = \"left\"\nshape = \"box\"\nmin = [-1, -1]\nmax = [0.009, 1]\n\
         [[initial]]\nregion = \"left\"\nvelocity = [60, 0]\n\
         [contact]\n[solver]\nkind = \"explicit\"\nsteps = {steps}\ndamage = false\n\
         [output]\nimage = false\ntips_every = 0\n",
        common::material("pmb", None),
    );
    common::problem(&text, &[])
}

/// The blocks collide: across 2 ranks the cut falls in the gap (rank 0 owns the left block,
/// rank 1 the right), so every contact pair joins nodes of two ranks. The right block,
/// at rest and bonded to nothing of the left, ends with x momentum above 10% of the left
/// block's initial one: only the contact force can give it (measured 97%: the blocks have
/// met and exchanged their momentum, as equal elastic bodies do).
#[test]
fn two_blocks_colliding_across_thread_ranks_equal_one_process_bitwise() {
    let problem = two_blocks(450);
    let x = &problem.body.positions;
    let left: Vec<usize> = (0..x.len()).filter(|&i| x[i][0] < 0.009).collect();
    let plan = RankPlan::new(&problem, 2, 0).unwrap();
    assert_eq!(
        plan.owned_of[0], left,
        "2 ranks: rank 0 owns the left block"
    );
    let end = check_bitwise(&problem, "two blocks");
    let rho = problem.material.density;
    let vol = &problem.body.volumes;
    let p_right: f64 = (0..x.len())
        .filter(|&i| x[i][0] > 0.009)
        .map(|i| rho * vol[i] * end.v[2 * i])
        .sum();
    let p_left0: f64 = left.iter().map(|&i| rho * vol[i] * 60.0).sum();
    eprintln!(
        "right block's momentum {:.3} of the left's",
        p_right / p_left0
    );
    assert!(
        p_right > 0.1 * p_left0,
        "the right block got {p_right:e} kg m/s of {p_left0:e}: no contact acted"
    );
}

/// A free steel plate 16 x 8 x 3 mm (dx 1 mm; 5 family radii long, so up to 4 ranks cut it
/// along x) and a sphere of radius 3 mm and 1 g 0.01 mm above its top centre moving down at 5 m/s, for `steps` steps; `extra` more model
/// text (`[contact]`).
fn sphere_on_plate(steps: usize, extra: &str) -> Problem {
    let text = format!(
        "{}[discretization]\ndimension = \"3d\"\ndx = 1e-3\nhorizon_factor = 3.015\n\
         [geometry]\nbox = [{{ min = [0, 0, 0], max = [0.016, 0.008, 0.003] }}]\n\
         [[impactor]]\nshape = \"sphere\"\ncenter = [0.008, 0.004, 0.00551]\nradius = 0.003\n\
         mass = 1e-3\nvelocity = [0, 0, -5]\n{extra}\
         [solver]\nkind = \"explicit\"\nsteps = {steps}\ndamage = false\n\
         [output]\nimage = false\ntips_every = 0\n",
        common::material("pmb", None),
    );
    common::problem(&text, &[])
}

/// The sphere presses the plate: its reaction, summed over the nodes inside it of several
/// ranks (the cuts run through the plate under it), and its motion equal the one-process
/// run's bit for bit, without node contact (no gather: each rank its owned nodes' positions)
/// and with it. At the end the sphere is pressing the plate (the reaction pushes it up) and
/// has been slowed by more than 1% of its 5 m/s (only the contact force acts on it;
/// measured 75% without node contact and 3% with it, whose contact springs shorten the
/// stable step, so its 150 steps cover less time).
#[test]
fn an_impactor_across_thread_ranks_moves_as_in_one_process_bitwise() {
    for extra in ["", "[contact]\n"] {
        let problem = sphere_on_plate(150, extra);
        let end = check_bitwise(&problem, &format!("sphere on plate {extra:?}"));
        let s = &end.impactors[0];
        eprintln!(
            "{extra:?}: vz {:e} m/s, fz {:e} N",
            s.velocity[2], s.force[2]
        );
        assert!(
            s.velocity[2] > -4.95,
            "{extra:?}: the sphere was not slowed"
        );
        assert!(
            s.force[2] > 0.0,
            "{extra:?}: the plate pushes the sphere up"
        );
    }
}

/// A pre-cracked plate pulled apart whose crack runs across the cuts (`common::
/// cracked_plate_model`), with crack-face contact whose distance (`distance_factor` 1.0002:
/// 1.0002 times a pair's reference length) puts the pairs across the pre-crack (their
/// bonds broken) just inside it at rest, so they repel from the start, and bonds broken
/// later join them. Across ranks each rank answers a pair's broken bond from its owned end.
/// The crack-face forces act: the displacement differs from the run without contact by more
/// than 1 nm (measured 51 um, of a largest displacement of 100 um: the repulsion breaks
/// bonds at the faces), and bonds break.
#[test]
fn crack_faces_across_thread_ranks_equal_one_process_bitwise() {
    let text = common::cracked_plate_model("pmb", 120, (48, 12), 6.0, "image = false\n");
    let problem = common::problem(&format!("{text}[contact]\ndistance_factor = 1.0002\n"), &[]);
    let end = check_bitwise(&problem, "crack faces");
    assert!(end.broken > 0, "the crack grows");
    let plain = common::run_end(&common::problem(&text, &[]), BackendKind::CpuLoop);
    let moved = (end.u.iter().zip(&plain.u))
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    let largest = end.u.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    eprintln!("largest displacement change by crack-face contact {moved:e} m of {largest:e} m");
    assert!(
        moved > 1e-9,
        "crack-face contact changed nothing ({moved:e} m)"
    );
}

/// `gpu-loop` across ranks refuses a model with an impactor before touching a device,
/// naming `cpu-loop` across ranks as what runs it.
#[test]
fn gpu_loop_across_ranks_refuses_contact_naming_cpu_loop() {
    let problem = sphere_on_plate(1, "");
    let errors = peridot::distributed::run_ranks(2, |comm| {
        match peridot::distributed::DistributedGpu::<f64>::new(&problem, comm, None) {
            Ok(_) => panic!("gpu-loop across ranks accepted an impactor"),
            Err(e) => e.to_string(),
        }
    });
    for e in errors {
        assert!(
            e.contains("impactor") && e.contains("cpu-loop across MPI ranks"),
            "{e}"
        );
    }
}

/// In f32 too: the two blocks colliding across 2 and 3 thread ranks end with the
/// one-process f32 run's displacement and velocity bit for bit (contact sums in f64 from
/// the same f32 displacements, gathered exactly; the rest is the f32 arithmetic of one
/// process), and the struck block moves.
#[test]
fn two_blocks_colliding_in_f32_across_thread_ranks_equal_one_process_bitwise() {
    let problem = two_blocks(450);
    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<u32>>();
    let opts = common::options(BackendKind::CpuLoop, Precision::F32, None);
    let one = simulate::<f32>(problem.clone(), &opts).expect("run succeeds");
    for p in [2, 3] {
        let ends = peridot::distributed::run_ranks(p, |comm| {
            let ranks = Ranks { comm, stop: None };
            let o = simulate_distributed::<f32>(problem.clone(), &opts, ranks)
                .unwrap_or_else(|e| panic!("distributed run: {e}"));
            (o.state.u, o.state.v)
        });
        for (r, (u, v)) in ends.iter().enumerate() {
            assert!(
                bits(u) == bits(&one.state.u),
                "f32, rank {r} of {p}: displacement"
            );
            assert!(
                bits(v) == bits(&one.state.v),
                "f32, rank {r} of {p}: velocity"
            );
        }
    }
    let x = &problem.body.positions;
    let right_vx = (0..x.len())
        .filter(|&i| x[i][0] > 0.009)
        .map(|i| one.state.v[2 * i] as f64)
        .sum::<f64>();
    assert!(
        right_vx > 0.0,
        "the right block was struck (sum of vx {right_vx})"
    );
}
