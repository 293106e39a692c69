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
//! (`simulate_distributed`, `--backend gpu-loop`) ends at the same state too.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::have_gpu;
use crate::common;
use peridot::backend::{Backend, BackendKind, GpuLoop};
use peridot::distributed::{run_ranks, DistributedGpu};
use peridot::dynamics::{Forces, State};
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

#[test]
fn gpu_loop_across_thread_ranks_through_the_driver_equals_in_core_list_form() {
    if !have_gpu() {
        return;
    }
    let problem = common::cracked_plate("pmb", 150);
    let mut core = GpuLoop::<f64>::with_neighbour_list(Arc::new(problem.clone())).unwrap();
    let (state, _) = common::chunked_run(&problem, &mut core, &[150]);
    let status = core.bond_status().unwrap();
    let one = common::RunEnd {
        u: state.u,
        v: state.v,
        status,
        broken: core.broken_bonds(),
    };
    let ends = common::distributed_end(&problem, BackendKind::GpuLoop, 2);
    common::assert_same_end(&one, &ends, "pmb, gpu-loop on 2 ranks through the driver");
}
