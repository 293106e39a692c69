//! Contact across ranks (`docs/contact.md`, `docs/distributed.md`, `distributed/contact.rs`):
//! `cpu-loop` across P = 1 to 4 thread ranks (`peridot::distributed::ThreadComm`, the same
//! driver and backend as under MPI) ends with the one-process run's displacement and
//! velocity bit for bit on every rank, and with its impactors' position, velocity and force
//! bit for bit, and its bond status: each owned node sums its contact pairs in ascending
//! partner order with the in-core arithmetic (from the displacements of its own and of the
//! other ranks' nodes within reach, the contact halo), and an impactor's reaction
//! is summed over every rank's terms in node order, the one-process order. No tolerance:
//! the arithmetic is the same, so any difference is a fault. Each model makes contact act
//! (asserted), so none passes vacuously: two blocks colliding across the cut of two ranks,
//! a sphere pressing a plate across the cuts (with and without node contact), and the
//! faces of a pre-crack pushed apart by crack-face contact (their broken bonds answered by
//! the rank owning either end) while the crack grows across the cuts; the blocks in f32
//! too. The matrix form across ranks refuses contact, naming both loops (`gpu-loop` across
//! ranks runs it: `tests/gpu/distributed_contact.rs`, on the same models).

mod common;

use common::contact::{across, assert_same, one, sphere_on_plate, two_blocks, End};
use peridot::backend::BackendKind;
use peridot::distributed::plan::RankPlan;
use peridot::setup::Problem;

/// Every rank of every P = 1..4 ends as the one-process run, bit for bit; returns that end.
fn check_bitwise(problem: &Problem, what: &str) -> End {
    let one = one(problem, BackendKind::CpuLoop);
    for p in 1..=4 {
        for (r, end) in across(problem, BackendKind::CpuLoop, p).iter().enumerate() {
            assert_same(end, &one, &format!("{what}, rank {r} of {p}"));
        }
    }
    one
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
    let struck = common::contact::struck_block_momentum(&problem, &end.v);
    eprintln!("right block's momentum {struck:.3} of the left's");
    assert!(
        struck > 0.1,
        "the right block got {struck:.3} of the left's momentum: no contact acted"
    );
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
        let what = format!("sphere on plate {extra:?}");
        common::contact::assert_sphere_pressed(&check_bitwise(&problem, &what), &what);
    }
}

/// A pre-cracked plate pulled apart whose crack runs across the cuts, with crack-face
/// contact whose pairs across the pre-crack repel from the start (`common::contact::
/// crack_faces`), and bonds broken later join them. Across ranks each rank answers a pair's broken bond from its owned end.
/// The crack-face forces act: the displacement differs from the run without contact by more
/// than 1 nm (measured 51 um, of a largest displacement of 100 um: the repulsion breaks
/// bonds at the faces), and bonds break.
#[test]
fn crack_faces_across_thread_ranks_equal_one_process_bitwise() {
    let (text, problem) = common::contact::crack_faces("");
    let end = check_bitwise(&problem, "crack faces");
    assert!(end.broken > 0, "the crack grows");
    let plain = common::run_end(&common::problem(&text, &[]), BackendKind::CpuLoop);
    let moved = common::contact::largest_change(&end.u, &plain.u);
    let largest = end.u.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    eprintln!("largest displacement change by crack-face contact {moved:e} m of {largest:e} m");
    assert!(
        moved > 1e-9,
        "crack-face contact changed nothing ({moved:e} m)"
    );
}

/// The matrix form across ranks (`cpu-matrix`, the part `gpu-matrix` ranks build on too)
/// refuses a model with an impactor before any part is built, naming both loops across MPI
/// ranks as what runs it (`gpu-loop` across ranks runs contact: `tests/gpu/
/// distributed_contact.rs`).
#[test]
fn the_matrix_form_across_ranks_refuses_contact_naming_both_loops() {
    let problem = sphere_on_plate(1, "");
    let errors = peridot::distributed::run_ranks(2, |comm| {
        match peridot::distributed::DistributedMatrix::<f64>::new(&problem, comm, None) {
            Ok(_) => panic!("cpu-matrix across ranks accepted an impactor"),
            Err(e) => e.to_string(),
        }
    });
    for e in errors {
        assert!(
            e.contains("impactor")
                && e.contains("cpu-loop and gpu-loop, in core and across MPI ranks")
                && e.contains("not on cpu-matrix (distributed) across MPI ranks"),
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
    let v = common::contact::assert_f32_ranks_bitwise(&problem, BackendKind::CpuLoop, &[2, 3]);
    let x = &problem.body.positions;
    let right_vx = (0..x.len())
        .filter(|&i| x[i][0] > 0.009)
        .map(|i| v[2 * i] as f64)
        .sum::<f64>();
    assert!(
        right_vx > 0.0,
        "the right block was struck (sum of vx {right_vx})"
    );
}
