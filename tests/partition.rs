//! Subdomain partitioning (issue 5, `docs/subdomains.md`): the partition covers every node
//! once, halos are exactly the neighbours outside, local families map back to the global
//! ones; the CPU emulation of subdomain execution gives the in-core CPU loop's forces, bond
//! status, damage and dilatation bitwise in f64 (PMB nonlinear and linearized, LPS; 2D and 3D;
//! pre-cracked and damaging) for 1, 2, 4, 8 and 16 subdomains, and a short damaging explicit
//! run ends in the bitwise-same state.

mod common;

use peridot::backend::partitioned::{parse_bytes, PartitionedCpu, SubdomainRequest};
use peridot::backend::{BackendKind, CpuLoop};
use peridot::dynamics::Forces;
use peridot::partition::partition;
use peridot::solver::{simulate, RunOptions};
use peridot::Precision;
use std::collections::BTreeSet;
use std::sync::Arc;

const COUNTS: [usize; 5] = [1, 2, 4, 8, 16];

#[test]
fn partition_covers_every_node_once_with_exact_halos() {
    let problem = common::partition_bar("pmb", "plane-stress", 1);
    let fam = &problem.families;
    for count in COUNTS {
        let subs = partition(&problem, count).unwrap();
        assert_eq!(subs.len(), count);
        let mut owner = vec![usize::MAX; problem.body.len()];
        for (s, sub) in subs.iter().enumerate() {
            for &i in sub.owned_nodes() {
                assert_eq!(owner[i], usize::MAX, "node {i} owned twice");
                owner[i] = s;
            }
        }
        assert!(
            owner.iter().all(|&s| s != usize::MAX),
            "a node is not owned"
        );
        let bonds: usize = subs.iter().map(|s| s.bonds()).sum();
        assert_eq!(bonds, fam.bonds());
        for (s, sub) in subs.iter().enumerate() {
            let outside: BTreeSet<usize> = sub
                .owned_nodes()
                .iter()
                .flat_map(|&i| fam.family(i).iter().map(|&j| j as usize))
                .filter(|&j| owner[j] != s)
                .collect();
            let halo: Vec<usize> = sub.halo_nodes().to_vec();
            assert_eq!(halo, outside.into_iter().collect::<Vec<_>>(), "halo of {s}");
            for (k, &i) in sub.owned_nodes().iter().enumerate() {
                let back: Vec<u32> = sub
                    .families
                    .family(k)
                    .iter()
                    .map(|&l| sub.nodes[l as usize] as u32)
                    .collect();
                assert_eq!(back, fam.family(i), "family of node {i}");
                assert_eq!(sub.global_bonds(k), fam.range(i));
            }
        }
    }
}

#[test]
fn bad_subdomain_counts_are_errors_naming_the_option() {
    let problem = common::partition_bar("pmb", "plane-stress", 1);
    for count in [0, 18, 1000] {
        let e = partition(&problem, count).unwrap_err().to_string();
        assert!(e.contains("--subdomains"), "{e}");
    }
}

#[test]
fn partitioned_forces_and_breaks_equal_in_core_bitwise() {
    for (law, dim) in common::PARTITION_CASES {
        let problem = common::partition_bar(law, dim, 1);
        for count in COUNTS {
            let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
            let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
            let case = format!("{law} {dim}, {count} subdomains");
            common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
        }
    }
}

#[test]
fn partitioned_explicit_run_breaks_the_same_bonds_and_ends_bitwise_equal() {
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d"), ("pmb-linear", "3d")] {
        let problem = common::partition_bar(law, dim, 40);
        let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
        let (s_core, b_core) = common::explicit_run(&problem, &mut core);
        assert!(b_core > 0, "{law} {dim}: the run breaks bonds");
        for count in [2, 5, 16] {
            let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
            let (s_part, b_part) = common::explicit_run(&problem, &mut part);
            let case = format!("{law} {dim}, {count} subdomains");
            assert_eq!(b_part, b_core, "{case}: bonds broken");
            assert_eq!(
                part.bond_status().unwrap(),
                core.bond_status().unwrap(),
                "{case}"
            );
            common::assert_bitwise(&s_part.u, &s_core.u, &format!("{case}: displacement"));
            common::assert_bitwise(&s_part.v, &s_core.v, &format!("{case}: velocity"));
            common::assert_bitwise(&s_part.f, &s_core.f, &format!("{case}: force"));
        }
    }
}

#[test]
fn memory_sizes_parse_with_units_and_bad_ones_name_the_option() {
    let opt = "--gpu-memory-budget";
    assert_eq!(parse_bytes(opt, "2GiB").unwrap(), 2 << 30);
    assert_eq!(parse_bytes(opt, "512MiB").unwrap(), 512 << 20);
    assert_eq!(parse_bytes(opt, "1.5e9").unwrap(), 1_500_000_000);
    assert_eq!(parse_bytes(opt, "2 GB").unwrap(), 2_000_000_000);
    assert_eq!(parse_bytes(opt, "4096").unwrap(), 4096);
    for bad in ["", "GiB", "-1GiB", "0", "2XB", "nan", "1e30"] {
        let e = parse_bytes(opt, bad).unwrap_err().to_string();
        assert!(e.contains(opt) && e.contains(bad), "{e}");
    }
}

#[test]
fn the_model_key_gpu_memory_budget_takes_sizes_and_names_itself_when_bad() {
    let base = common::small_model("pmb", "plane-stress", false, "");
    let with = |value: &str| format!("{base}gpu_memory_budget = {value}\n");
    for (value, bytes) in [
        ("\"2GiB\"", 2u64 << 30),
        ("1.5e9", 1_500_000_000),
        ("4096", 4096),
    ] {
        let model = peridot::model::parse(&with(value), "test.toml", &[]).unwrap();
        let budget = model.solver.gpu_memory_budget.unwrap();
        assert_eq!(budget.bytes(), Some(bytes), "{value}");
    }
    let model = peridot::model::parse(&with("\"15%\""), "test.toml", &[]).unwrap();
    let budget = model.solver.gpu_memory_budget.unwrap();
    assert_eq!(
        (budget.percent(), budget.raw()),
        (Some(15.0), "15%".to_string())
    );
    for bad in ["\"2XB\"", "0", "-5", "\"\"", "true", "\"0%\"", "\"120%\""] {
        let e = peridot::model::parse(&with(bad), "test.toml", &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("gpu_memory_budget"), "{bad}: {e}");
    }
}

/// Two blocks with a gap of several cell slabs between them: some subdomains own no node,
/// and the emulation still equals the in-core run.
#[test]
fn subdomains_without_nodes_are_harmless() {
    let text = format!(
        "{}critical_stretch = 0.002\n[discretization]\ndimension = \"plane-stress\"\n\
         thickness = 1e-3\ndx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
         box = [{{ min = [0, 0], max = [0.005, 0.005] }}, {{ min = [0.04, 0], max = [0.045, 0.005] }}]\n\
         [solver]\nkind = \"explicit\"\nsteps = 1\n",
        common::material("pmb", None)
    );
    let problem = common::problem(&text, &[]);
    let subs = partition(&problem, 8).unwrap();
    assert!(
        subs.iter().any(|s| s.owned == 0),
        "a subdomain owns no node"
    );
    let n = problem.body.len() * problem.dim();
    let u: Vec<f64> = common::random_vector(n, 5)
        .iter()
        .map(|x| 4e-6 * x)
        .collect();
    let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
    let mut part = PartitionedCpu::<f64>::new(&problem, 8).unwrap();
    let (mut f_core, mut f_part) = (vec![0.0; n], vec![0.0; n]);
    let broken = core.break_bonds_and_force(&u, &mut f_core).unwrap();
    assert_eq!(part.break_bonds_and_force(&u, &mut f_part).unwrap(), broken);
    common::assert_bitwise(&f_part, &f_core, "two blocks: forces");
    assert_eq!(part.bond_status().unwrap(), core.bond_status().unwrap());
}

fn run_with(
    problem: &peridot::setup::Problem,
    backend: BackendKind,
    request: Option<SubdomainRequest>,
) -> peridot::Result<peridot::solver::Outcome<f64>> {
    let opts = RunOptions {
        cancel: None,
        process_start: None,
        subdomains: request,
        backend,
        precision: Precision::F64,
        out_dir: None,
        quiet: true,
    };
    simulate::<f64>(problem.clone(), &opts)
}

/// `run --subdomains N --backend cpu-loop` and `run --gpu-memory-budget P% --backend
/// cpu-loop` run the CPU emulation of the same partition the GPU would use, and end bitwise
/// where the in-core run ends.
#[test]
fn runs_in_subdomains_end_where_in_core_runs_end() {
    let problem = common::partition_bar("pmb", "plane-stress", 30);
    let core = run_with(&problem, BackendKind::CpuLoop, None).unwrap();
    assert!(core.summary.broken_bonds > problem.precracked_bonds());
    let requests = [
        SubdomainRequest {
            count: Some(4),
            ..Default::default()
        },
        SubdomainRequest {
            budget: Some("60%".into()),
            ..Default::default()
        },
    ];
    for request in requests {
        let part = run_with(&problem, BackendKind::CpuLoop, Some(request.clone())).unwrap();
        assert_eq!(part.backend.name(), "cpu-loop-partitioned", "{request:?}");
        assert_eq!(
            part.summary.broken_bonds, core.summary.broken_bonds,
            "{request:?}"
        );
        common::assert_bitwise(&part.state.u, &core.state.u, &format!("{request:?}: u"));
    }
}

#[test]
fn subdomain_runs_reject_what_they_cannot_do_naming_the_option() {
    let problem = common::partition_bar("pmb", "plane-stress", 1);
    let bad = [
        (
            BackendKind::CpuLoop,
            SubdomainRequest {
                budget: Some("150%".into()),
                ..Default::default()
            },
            "--gpu-memory-budget",
        ),
        (
            BackendKind::CpuLoop,
            SubdomainRequest {
                budget: Some("12 apples".into()),
                ..Default::default()
            },
            "--gpu-memory-budget",
        ),
        (
            BackendKind::CpuLoop,
            SubdomainRequest {
                count: Some(99),
                ..Default::default()
            },
            "--subdomains",
        ),
    ];
    for (backend, request, option) in bad {
        let e = match run_with(&problem, backend, Some(request.clone())) {
            Ok(_) => panic!("{request:?} on {} should fail", backend.name()),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(option), "{request:?}: {e}");
    }
}

/// The subdomains a budget asks for (a count estimated from slab counts, checked on the
/// partition) have two streaming slots (as allocated) within the budget.
#[test]
fn budget_counts_fit_two_slots() {
    use peridot::backend::partitioned::plan::{plan_for_budget, slot_bytes_of};
    for (law, dim) in [("pmb", "3d"), ("lps", "plane-strain")] {
        let problem = common::partition_bar(law, dim, 1);
        let whole = slot_bytes_of::<f64>(&problem, &partition(&problem, 1).unwrap()[0]);
        for share in [0.9, 0.5, 0.3] {
            let budget = (share * whole) as u64;
            let count = plan_for_budget::<f64>(&problem, budget).unwrap();
            let subs = partition(&problem, count).unwrap();
            let largest = subs
                .iter()
                .map(|s| slot_bytes_of::<f64>(&problem, s))
                .fold(0.0, f64::max);
            assert!(
                2.0 * largest <= budget as f64,
                "{law} {dim} {share}: {count}"
            );
            assert!(count > 1);
        }
        let e = plan_for_budget::<f64>(&problem, 1000)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--gpu-memory-budget"), "{e}");
    }
}

/// The explicit step fused into the subdomains' force scatter (`advance_explicit` of a
/// partitioned backend: per owned dof, accelerate and kick, then the next step's kick and
/// drift; kinematic dofs stepped after the pass) ends bitwise where `Explicit::step` on the
/// in-core CPU loop ends, over calls of uneven length, with fixed, displacement-ramped,
/// velocity and body-force conditions and bonds breaking.
#[test]
fn fused_explicit_steps_equal_the_host_loop_bitwise() {
    let problem = common::conditions_bar();
    let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
    let core = common::explicit_run(&problem, &mut core);
    assert!(core.1 > 0, "the run breaks bonds");
    for count in [3, 7] {
        let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
        let case = format!("{count} subdomains");
        common::assert_chunked_run_equals(&problem, &mut part, &core, &case);
    }
}

/// The matrix scheme in subdomains (each subdomain's own operator blocks: its owned bonds and
/// the bonds entering its owned nodes) against the in-core `cpu-matrix` in full storage, for
/// 1, 2, 4, 8 and 16 subdomains, PMB nonlinear and linearized and LPS, 2D and 3D, at
/// damaging displacements (`common::check_partitioned` to round-off).
#[test]
fn partitioned_matrix_scheme_equals_in_core_to_round_off() {
    use peridot::backend::partitioned::PartitionedMatrix;
    use peridot::backend::CpuMatrix;
    use peridot::operators::Storage;
    for (law, dim) in common::PARTITION_CASES {
        let problem = common::partition_bar(law, dim, 1);
        for count in COUNTS {
            let case = format!("{law} {dim}, {count} subdomains");
            let mut core = CpuMatrix::<f64>::new(Arc::new(problem.clone()), Storage::Full).unwrap();
            let mut part = PartitionedMatrix::<f64>::new(&problem, count).unwrap();
            common::check_partitioned(&problem, &mut core, &mut part, common::ROUND_OFF, &case);
        }
    }
}

/// Adaptive dynamic relaxation in subdomains (the CPU emulation, ADR on the host through
/// the backend's force calls) converges to the in-core equilibrium bitwise: the same
/// iterations, the same displacement.
#[test]
fn adr_in_subdomains_ends_where_in_core_adr_ends() {
    let text = common::lps_bar(0.03, "steps = 3000\ntolerance = 1e-8");
    let problem = common::problem(&text, &[]);
    let core = run_with(&problem, BackendKind::CpuLoop, None).unwrap();
    let request = SubdomainRequest {
        count: Some(3),
        ..Default::default()
    };
    let part = run_with(&problem, BackendKind::CpuLoop, Some(request)).unwrap();
    assert_eq!(
        core.summary.converged,
        Some(true),
        "the relaxation converges"
    );
    assert_eq!(part.summary.converged, core.summary.converged);
    assert_eq!(part.state.step, core.state.step, "iterations");
    common::assert_bitwise(&part.state.u, &core.state.u, "ADR displacement");
}

/// A lean problem (no bond stored on the host: what `run --backend gpu-loop` in subdomains
/// builds) has the stored problem's family sizes, per-node volumes, stable time step, row
/// bounds and pre-cracked bond count BITWISE (the same sums over the same bonds in the same
/// order), and its subdomains, each searched on its own, equal the stored partition's,
/// initial bond status included, for 1..16 subdomains.
#[test]
fn lean_problems_and_their_subdomains_equal_stored_ones() {
    use peridot::partition::Cuts;
    for (law, dim) in common::PARTITION_CASES {
        let stored = common::partition_bar(law, dim, 1);
        let lean = common::partition_bar_lean(law, dim, 1);
        let case = format!("{law} {dim}");
        assert!(
            !lean.bonds_stored && lean.families.neighbors.is_empty(),
            "{case}"
        );
        assert!(
            lean.bonds.beta.is_empty() && lean.initial_mu.is_empty(),
            "{case}"
        );
        assert_eq!(lean.families.offsets, stored.families.offsets, "{case}");
        let (s, l) = (&stored.bonds, &lean.bonds);
        common::assert_bitwise(&l.horizon_volume, &s.horizon_volume, &case);
        common::assert_bitwise(&l.weighted_volume, &s.weighted_volume, &case);
        let (dt_l, dt_s) = (lean.stable_time_step(), stored.stable_time_step());
        assert_eq!(
            dt_l.to_bits(),
            dt_s.to_bits(),
            "{case}: {dt_l:e} vs {dt_s:e}"
        );
        common::assert_bitwise(&lean.row_bounds(), &stored.row_bounds(), &case);
        assert!(
            stored.precracked_bonds() > 0,
            "{case}: the bar is pre-cracked"
        );
        assert_eq!(lean.precracked_bonds(), stored.precracked_bonds(), "{case}");
        for count in [1, 2, 4, 8, 16] {
            let subs = partition(&stored, count).unwrap();
            let cuts = Cuts::new(&lean, count).unwrap();
            for (k, sub) in subs.iter().enumerate() {
                let searched = cuts.subdomain(&lean, k);
                assert!(searched == *sub, "{case}: subdomain {k} of {count}");
                assert_eq!(
                    searched.initial_status(&lean),
                    sub.initial_status(&stored),
                    "{case}: initial status of subdomain {k} of {count}"
                );
            }
        }
    }
}

/// The device-order bond arrays the in-core `gpu-loop` uploads (`backend::gpu::bond_loop::device_bond_arrays`:
/// neighbour index and initial bond status per slot of the sliced order, padding included)
/// are the same for a lean problem, whose families are searched again node by node, as for
/// the stored problem, and the stored problem's are its CSR arrays in the sliced order
/// (`SlicedLayout::to_device`, padding node 0 and status 0): the partition bars (pre-cracked,
/// 2D and 3D), the pre-cracked 2D plate model and an uncracked block (all bonds intact).
#[test]
fn lean_device_bond_arrays_equal_stored_ones() {
    use peridot::backend::gpu::bond_loop::device_bond_arrays;
    use peridot::gpu::layout::SlicedLayout;
    use peridot::setup::Problem;
    use std::path::Path;
    let plate = std::fs::read_to_string("models/precracked_plate_2d.toml").unwrap();
    let parse = |text: &str, overrides: &[&str]| {
        let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        peridot::model::parse(text, "test.toml", &overrides).unwrap()
    };
    let mut cases: Vec<(String, Problem, Problem)> = common::PARTITION_CASES
        .iter()
        .map(|(law, dim)| {
            let stored = common::partition_bar(law, dim, 1);
            let lean = common::partition_bar_lean(law, dim, 1);
            (format!("bar {law} {dim}"), stored, lean)
        })
        .collect();
    let block = common::small_model("pmb", "3d", false, "");
    for (name, text, overrides) in [
        ("plate", plate.as_str(), &["discretization.dx=1e-3"][..]),
        ("uncracked block", block.as_str(), &[][..]),
    ] {
        let model = parse(text, overrides);
        let dir = Path::new(".");
        let stored = Problem::build(model.clone(), dir).unwrap();
        let lean = Problem::build_lean(model, dir).unwrap();
        cases.push((name.to_string(), stored, lean));
    }
    for (case, stored, lean) in &cases {
        assert!(
            !lean.bonds_stored && lean.families.neighbors.is_empty(),
            "{case}"
        );
        let cracked = !case.contains("uncracked");
        assert_eq!(stored.precracked_bonds() > 0, cracked, "{case}");
        let (nb_s, mu_s) = device_bond_arrays(stored);
        let (nb_l, mu_l) = device_bond_arrays(lean);
        let layout = SlicedLayout::new(&stored.families);
        assert_eq!(
            nb_s,
            layout.to_device(&stored.families.neighbors, 0),
            "{case}"
        );
        assert_eq!(mu_s, layout.to_device(&stored.initial_mu, 0), "{case}");
        assert!(nb_l == nb_s, "{case}: neighbour indices");
        assert!(mu_l == mu_s, "{case}: bond status");
        let broken = mu_l.iter().filter(|&&m| m == 0).count()
            - (layout.padded_len() - stored.families.bonds());
        assert_eq!(
            broken,
            stored.precracked_bonds(),
            "{case}: pre-cracked bonds"
        );
    }
}

/// Static bytes that stream per evaluation when `subs` run within `budget`: the subdomains
/// beyond the first that fit resident beside two streaming slots (as `GpuStreamed` places
/// them), by the bytes their slots hold.
fn streamed_static(problem: &peridot::setup::Problem, count: usize, budget: f64) -> f64 {
    use peridot::backend::partitioned::plan::slot_bytes_of;
    let slots: Vec<f64> = partition(problem, count)
        .unwrap()
        .iter()
        .map(|s| slot_bytes_of::<f64>(problem, s))
        .collect();
    let fits = |r: usize| {
        let rest = slots[r..].iter().copied().fold(0.0, f64::max);
        slots[..r].iter().sum::<f64>() + (slots.len() - r).min(2) as f64 * rest <= budget
    };
    let r = (0..=slots.len()).rev().find(|&r| fits(r)).unwrap();
    slots[r..].iter().sum()
}

/// Where a budget holds more than two slots of the fewest subdomains but not the whole
/// model, the plan splits finer so that part of the model stays resident: the static bytes
/// that stream per evaluation (by the slots the partition really needs) are fewer than with
/// the fewest subdomains (on this small bar the halos, a third of a slot, eat much of the
/// gain; on the 100 M-node block of `docs/results.md` they are a few per cent).
#[test]
fn a_budget_between_two_slots_and_the_model_keeps_part_of_it_resident() {
    use peridot::backend::partitioned::plan::{fewest_for_budget, plan_for_budget, slot_bytes_of};
    let problem = common::partition_bar("pmb", "3d", 1);
    let whole = slot_bytes_of::<f64>(&problem, &partition(&problem, 1).unwrap()[0]);
    let budget = 0.6 * whole;
    let fewest = fewest_for_budget::<f64>(&problem, budget as u64).unwrap();
    let count = plan_for_budget::<f64>(&problem, budget as u64).unwrap();
    let (finer, coarse) = (
        streamed_static(&problem, count, budget),
        streamed_static(&problem, fewest, budget),
    );
    assert!(count > fewest, "{count} vs {fewest}");
    assert!(
        finer < coarse,
        "{count}: {finer:.0} vs {fewest}: {coarse:.0} bytes"
    );
}

/// The streamed matrix scheme's plan: for budgets from 80 % down to 45 % of `gpu-matrix`'s
/// in-core footprint, the count's two streaming slots (each with room for the most nodes and
/// the most bond rows of any subdomain's local problem, no time loop, plus the 10 %
/// workspace margin) fit the budget, and one subdomain fewer would not (the fewest such); a
/// slot's estimate is at most the largest part's in-core estimate; a budget too small for two
/// one-slab parts of this small bar (30 % of its half-storage footprint: a part is in full
/// storage, and its halo is as large as itself) is an error naming the option.
#[test]
fn matrix_budget_counts_fit_two_parts() {
    use peridot::backend::partitioned::budget_bytes_for;
    use peridot::backend::partitioned::matrix::count_for_budget;
    use peridot::backend::{BackendKind, GpuMatrix};
    use peridot::operators::Storage;
    let problem = common::partition_bar("lps", "plane-strain", 1);
    let locals = |count: usize| -> Vec<peridot::setup::Problem> {
        partition(&problem, count)
            .unwrap()
            .iter()
            .map(|sub| peridot::backend::partitioned::matrix::local_problem_of(&problem, sub))
            .collect()
    };
    let slot = |count: usize| {
        let locals = locals(count);
        let nodes = locals.iter().map(|l| l.body.len()).max().unwrap();
        let rows = locals
            .iter()
            .map(|l| GpuMatrix::<f64>::bond_rows(l, Storage::Full))
            .max()
            .unwrap();
        let slot = GpuMatrix::<f64>::slot_estimate(&problem, Storage::Full, 8, nodes, rows);
        let largest = locals
            .iter()
            .map(|l| GpuMatrix::<f64>::memory_estimate(l, Storage::Full, 8))
            .max()
            .unwrap();
        assert!(
            slot <= largest,
            "{count}: slot {slot} > largest part {largest}"
        );
        slot as f64 * 1.1
    };
    let in_core = GpuMatrix::<f64>::memory_estimate(&problem, Storage::Half, 8) as f64;
    for share in [80, 60, 45] {
        let text = format!("{share}%");
        let budget = budget_bytes_for::<f64>(&text, &problem, BackendKind::GpuMatrix).unwrap();
        assert_eq!(
            budget,
            (share as f64 / 100.0 * in_core).ceil() as u64,
            "{text}"
        );
        let count = count_for_budget::<f64>(&problem, budget).unwrap();
        assert!(2.0 * slot(count) <= budget as f64, "{text}: {count}");
        assert!(
            count == 1 || 2.0 * slot(count - 1) > budget as f64,
            "{text}: {count} is not the fewest"
        );
    }
    let small = budget_bytes_for::<f64>("30%", &problem, BackendKind::GpuMatrix).unwrap();
    let e = count_for_budget::<f64>(&problem, small)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--gpu-memory-budget"), "{e}");
}

/// The partition of a run across ranks (`peridot info --ranks`, `distributed::plan`), in
/// slabs and in blocks: every node owned once and every bond counted once, the ghosts
/// exactly the halo, each rank's sends to a neighbour as long as that neighbour's receives
/// from it (the lists match without a handshake), the halo bytes the ghosts' displacements
/// (and the PCIe bytes of gpu-loop's exchange the sent nodes' and the ghosts'), the bonds
/// balanced to within one cell slab, and a lean problem's rows the same as the
/// stored one's. The bar is 17 x 4 cells: 18 slabs are refused, 18 blocks (9 x 2) are not.
#[test]
fn rank_plans_cover_the_model_and_match_their_neighbours() {
    use peridot::distributed::plan::{rows, table};
    use peridot::model::RankPartition;
    for mode in [RankPartition::Slabs, RankPartition::Blocks] {
        let mut problem = common::partition_bar("pmb", "plane-stress", 1);
        let mut lean = common::partition_bar_lean("pmb", "plane-stress", 1);
        problem.model.solver.rank_partition = Some(mode);
        lean.model.solver.rank_partition = Some(mode);
        for p in [1, 2, 3, 4, 8, 12] {
            check_rank_plans(&problem, &lean, p, mode);
        }
        let many = rows(&problem, 18);
        assert_eq!(
            many.is_err(),
            mode == RankPartition::Slabs,
            "{mode:?}: 18 ranks"
        );
        if mode == RankPartition::Blocks {
            assert_eq!(table(&problem, 18).unwrap().0, "blocks: 9 x 2 (x, y)");
            assert_eq!(table(&problem, 4).unwrap().0, "blocks: 2 x 2 (x, y)");
            check_rank_plans(&problem, &lean, 18, mode);
        }
    }
}

/// The facts of [`rank_plans_cover_the_model_and_match_their_neighbours`] for `p` ranks.
fn check_rank_plans(
    problem: &peridot::setup::Problem,
    lean: &peridot::setup::Problem,
    p: usize,
    mode: peridot::model::RankPartition,
) {
    use peridot::distributed::plan::rows;
    use peridot::distributed::RankPlan;
    let (n, bonds) = (problem.body.len(), problem.families.bonds());
    let table = rows(problem, p).unwrap();
    assert_eq!(table, rows(lean, p).unwrap(), "{p} ranks: lean rows");
    assert_eq!(
        table.iter().map(|r| r.nodes).sum::<usize>(),
        n,
        "{p} ranks: nodes"
    );
    assert_eq!(
        table.iter().map(|r| r.bonds).sum::<usize>(),
        bonds,
        "{p}: bonds"
    );
    let plans: Vec<RankPlan> = (0..p)
        .map(|r| RankPlan::new(problem, p, r).unwrap())
        .collect();
    for (r, plan) in plans.iter().enumerate() {
        assert_eq!(
            table[r].ghosts,
            plan.sub.halo(),
            "{p} ranks, rank {r}: ghosts"
        );
        assert_eq!(table[r].halo_bytes(2, 8, false), 16 * plan.sub.halo());
        // (gpu-loop: the sent nodes' values down and the ghosts' up; LPS adds the
        // (alpha, p theta) pair to the 2 displacement components)
        let sent: usize = plan.halo.sends.iter().map(|q| q.nodes.len()).sum();
        let moved = sent + plan.sub.halo();
        assert_eq!(table[r].gpu_pcie_bytes(2, 8, false), 16 * moved);
        assert_eq!(table[r].gpu_pcie_bytes(2, 4, true), 16 * moved);
        for send in &plan.halo.sends {
            let back = &plans[send.rank].halo.recvs;
            let recv = back
                .iter()
                .find(|q| q.rank == r)
                .expect("the neighbour receives");
            let sent: Vec<usize> = send
                .nodes
                .iter()
                .map(|&k| plan.sub.nodes[k as usize])
                .collect();
            let got: Vec<usize> = (recv.nodes.iter())
                .map(|&k| plans[send.rank].sub.nodes[k as usize])
                .collect();
            assert_eq!(
                sent, got,
                "{p} ranks: {r} -> {} the same nodes in order",
                send.rank
            );
        }
    }
    // (the cuts fall between node layers, each within a layer of its share: slabs one of
    // the 59 node columns off, blocks one column and then one of the 11 rows of their
    // column of parts; either is under the bonds of one of the 17 cell slabs)
    let slab = bonds.div_ceil(17) + bonds / 17 / 4;
    let most = table.iter().map(|r| r.bonds).max().unwrap();
    let bound = bonds / p + slab;
    assert!(
        most <= bound,
        "{p} ranks ({mode:?}): {most} bonds on one rank of {bonds}"
    );
}
