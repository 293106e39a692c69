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
//! neighbour list too).
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::{Backend, BackendKind, GpuLoop};
use peridot::distributed::{run_ranks, DistributedGpu};
use peridot::dynamics::State;
use std::sync::Arc;

/// Steps of the plate (the crack grows across the cuts for P = 2 and 3), in calls of these
/// lengths (uneven, as the driver's chunks and outputs make them).
const CHUNKS: [usize; 6] = [10, 7, 30, 1, 40, 32];

/// The end of a run: state, bonds this rank's calls broke, bond status, bonds broken in all.
type End = (State<f64>, usize, Vec<u8>, usize);

fn end_of(problem: &peridot::setup::Problem, backend: &mut dyn Backend<f64>) -> End {
    let (state, broken) = common::chunked_run(problem, backend, &CHUNKS);
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
        for p in [1, 2, 3] {
            let ends = run_ranks(p, |comm| {
                let mut b = DistributedGpu::<f64>::new(&problem, comm, None).unwrap();
                end_of(&problem, &mut b)
            });
            let case = format!("{law}, gpu-loop on {p} ranks sharing one GPU");
            for (r, end) in ends.iter().enumerate() {
                let case = format!("{case}, rank {r}");
                // (the state gathered to every rank at each call's end: full_sync)
                common::assert_same_run(&end.0, one.1, &one.0, one.1, &case);
                assert!(end.2 == one.2, "{case}: bond status differs");
                assert_eq!(end.3, one.3, "{case}: bonds broken in all");
            }
            // each rank's calls count the bonds it broke: together, the in-core count
            let sum: usize = ends.iter().map(|e| e.1).sum();
            assert_eq!(sum, one.1, "{case}: bonds broken by the ranks' calls");
        }
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
