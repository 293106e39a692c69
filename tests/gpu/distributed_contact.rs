//! Contact across ranks on `gpu-loop` (`peridot::distributed::DistributedGpu`,
//! `distributed/contact.rs`, `docs/distributed.md`): P = 1, 2, 3 ranks as threads of this
//! process sharing the one GPU, each its part's bond forces on the device and the host
//! leapfrog with its owned nodes' contact forces (the contact halo of the other ranks' nodes
//! within reach, the impactors' reaction terms merged in node order, a crack face's bond
//! from the owned end's status on the rank's device), as `gpu-loop` in one process runs
//! contact: the host leapfrog over the device's forces. Against the one-GPU run through the
//! same driver, in its neighbour-list form (no model here is a full box lattice, asserted:
//! the lattice slot-table kernel agrees with the list to 1e-12 only), every rank ends
//! BITWISE equal in f64: displacement, velocity, the impactors' position, velocity and
//! force, the bond status and the bonds broken. No tolerance: each owned node's bond forces
//! are the one-GPU kernels' (the same bonds in the same order with the same arithmetic), its
//! contact force the one-process sum, and the leapfrog the same host arithmetic. The models
//! (`common::contact`) are those of `tests/distributed_contact.rs` on `cpu-loop` (a corner
//! of the plate removed and a hole in the cracked plate, so that one GPU takes the list
//! too), and each makes contact act (asserted); the colliding blocks in f32 too.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use common::contact::{across, assert_same, one, End};
use peridot::backend::{BackendKind, GpuLoop};
use peridot::setup::Problem;

/// Every rank of `gpu-loop` on P = 1, 2, 3 thread ranks ends as the one-GPU run through the
/// driver, bit for bit; returns that end.
fn check_bitwise(problem: &Problem, what: &str) -> End {
    assert!(
        GpuLoop::<f64>::lattice(problem).is_none(),
        "{what}: no full box lattice, so one GPU runs the neighbour list as the ranks do"
    );
    let one = one(problem, BackendKind::GpuLoop);
    for p in [1, 2, 3] {
        for (r, end) in across(problem, BackendKind::GpuLoop, p).iter().enumerate() {
            assert_same(end, &one, &format!("{what}, gpu-loop rank {r} of {p}"));
        }
    }
    one
}

/// Two blocks colliding across the cut of two ranks (every contact pair then joins nodes
/// of two ranks): bitwise the one-GPU run, and the struck block, bonded to nothing of the
/// other, ends with more than 10% of the striking block's initial momentum (only contact
/// gives it any; 97% on `cpu-loop`). In f32 too, across 2 and 3 ranks: displacement and
/// velocity bit for bit (contact sums in f64 from the same f32 displacements).
#[test]
fn gpu_loop_across_thread_ranks_runs_colliding_blocks_as_one_gpu_bitwise() {
    if !have_gpu() {
        return;
    }
    let problem = common::contact::two_blocks(450);
    let end = check_bitwise(&problem, "two blocks");
    let struck = common::contact::struck_block_momentum(&problem, &end.v);
    println!("gpu-loop: right block's momentum {struck:.3} of the left's");
    assert!(
        struck > 0.1,
        "the right block got {struck:.3} of the left's momentum: no contact acted"
    );
    common::contact::assert_f32_ranks_bitwise(&problem, BackendKind::GpuLoop, &[2, 3]);
}

/// A sphere pressing a plate whose cuts between ranks run under it, without node contact
/// and with it: its reaction (summed over the nodes inside it of several ranks) and motion
/// bitwise the one-GPU run's; it ends pressing the plate (the reaction pushes it up) and
/// slowed by more than 1% of its 5 m/s (75% and 3% on `cpu-loop`).
#[test]
fn gpu_loop_across_thread_ranks_moves_an_impactor_as_one_gpu_bitwise() {
    if !have_gpu() {
        return;
    }
    // (a corner of the plate removed, far from the sphere: no full box lattice)
    let corner = "[[geometry.remove]]\nshape = \"circle\"\ncenter = [0, 0, 0]\nradius = 0.0015\n";
    for contact in ["", "[contact]\n"] {
        let problem = common::contact::sphere_on_plate(150, &format!("{contact}{corner}"));
        let what = format!("sphere on plate {contact:?}");
        common::contact::assert_sphere_pressed(&check_bitwise(&problem, &what), &what);
    }
}

/// The faces of a pre-crack pushed apart by crack-face contact while the crack grows across
/// the cuts (a hole in the plate: no full box lattice): bitwise the one-GPU run, each rank
/// answering a pair's bond from its owned end's status on its device (the owned nodes'
/// neighbour indices kept on the host for it). Bonds break beyond the pre-crack, and the
/// contact acts: the displacement differs from the one-GPU run without contact by more than
/// 1 nm (51 um of 100 um on `cpu-loop` without the hole).
#[test]
fn gpu_loop_across_thread_ranks_runs_crack_faces_as_one_gpu_bitwise() {
    if !have_gpu() {
        return;
    }
    let hole = "[[geometry.remove]]\nshape = \"circle\"\ncenter = [0.036, 0.004]\n\
                radius = 0.0015\n";
    let (text, problem) = common::contact::crack_faces(hole);
    let end = check_bitwise(&problem, "crack faces");
    assert!(
        end.broken > problem.precracked_bonds(),
        "the crack grows ({} broken)",
        end.broken
    );
    let plain = common::run_end(&common::problem(&text, &[]), BackendKind::GpuLoop);
    let moved = common::contact::largest_change(&end.u, &plain.u);
    println!("gpu-loop: displacement change by crack-face contact {moved:e} m");
    assert!(
        moved > 1e-9,
        "crack-face contact changed nothing ({moved:e} m)"
    );
}
