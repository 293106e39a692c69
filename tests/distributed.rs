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

/// A rank of `mpirun ... peridot run` builds the problem lean (no bond stored: each rank
/// searches its own part's families and computes their bond data per bond,
/// `distributed/part.rs`). From the lean problem, `cpu-loop` on 1 and 3 thread ranks ends
/// bit for bit where the one-process run of the stored problem ends, for PMB (partial
/// volumes and the surface correction, the factors a lean rank computes) and LPS: the lean
/// rank's bond data equal the stored ones exactly, so no tolerance.
#[test]
fn cpu_loop_ranks_from_a_lean_problem_equal_the_stored_run_bitwise() {
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
    }
}
