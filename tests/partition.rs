//! Subdomain partitioning (issue 5, `docs/subdomains.md`): the partition covers every node
//! once, halos are exactly the neighbours outside, local families map back to the global
//! ones; the CPU emulation of subdomain execution gives the in-core CPU loop's forces, bond
//! status, damage and dilatation bitwise in f64 (PMB nonlinear and linearized, LPS; 2D and 3D;
//! pre-cracked and damaging) for 1, 2, 4, 8 and 16 subdomains, and a short damaging explicit
//! run ends in the bitwise-same state.

mod common;

use peridot::backend::{Backend, CpuLoop};
use peridot::partition::{parse_bytes, partition, PartitionedCpu, Plan, PlanRequest};
use peridot::setup::Problem;
use peridot::solver::explicit::{Explicit, StepTimes};
use peridot::solver::loads::Loads;
use peridot::solver::run::choose_dt;
use peridot::solver::State;
use std::collections::BTreeSet;
use std::sync::Arc;

const COUNTS: [usize; 5] = [1, 2, 4, 8, 16];

/// A bar 60 spacings long (17 cell slabs of the family radius), pre-cracked along its
/// length through about half the slabs, pulled apart at both ends with `steps` steps.
fn bar(law: &str, dim: &str, steps: usize) -> Problem {
    let nu = if law == "lps" { Some(0.22) } else { None };
    let (geometry, thick, crack) = if dim == "3d" {
        (
            "box = [{ min = [0, 0, 0], max = [0.059, 0.005, 0.004] }]",
            "",
            "origin = [-0.001, 0.0025, -0.001]\nedge1 = [0.026, 0, 0]\nedge2 = [0, 0, 0.006]",
        )
    } else {
        (
            "box = [{ min = [0, 0], max = [0.059, 0.011] }]",
            "thickness = 1e-3\n",
            "start = [-0.001, 0.0055]\nend = [0.025, 0.0055]",
        )
    };
    let corr = if law == "lps" {
        ""
    } else {
        "surface_correction = true\n"
    };
    let text = format!(
        "{}{corr}critical_stretch = 0.002\n[discretization]\ndimension = \"{dim}\"\n{thick}\
         dx = 1e-3\nhorizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n\
         {geometry}\n[[precrack]]\n{crack}\n\
         [[region]]\nname = \"left\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 3\n\
         [[region]]\nname = \"right\"\nshape = \"edge\"\nside = \"+x\"\ndepth_dx = 3\n\
         [[boundary]]\nregion = \"left\"\nkind = \"velocity\"\nx = -20.0\n\
         [[boundary]]\nregion = \"right\"\nkind = \"velocity\"\nx = 20.0\n\
         [solver]\nkind = \"explicit\"\nsteps = {steps}\n",
        common::material(law, nu)
    );
    common::problem(&text, &[])
}

const CASES: [(&str, &str); 6] = [
    ("pmb", "plane-stress"),
    ("pmb", "3d"),
    ("pmb-linear", "plane-stress"),
    ("pmb-linear", "3d"),
    ("lps", "plane-strain"),
    ("lps", "3d"),
];

/// Assert `a` and `b` are bitwise equal, naming the first differing entry and the count.
fn assert_bitwise(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let differ: Vec<usize> = (0..a.len())
        .filter(|&k| a[k].to_bits() != b[k].to_bits())
        .collect();
    if let Some(&k) = differ.first() {
        panic!(
            "{what}: {} of {} entries differ, first [{k}]: {:e} vs {:e}",
            differ.len(),
            a.len(),
            a[k],
            b[k]
        );
    }
}

#[test]
fn partition_covers_every_node_once_with_exact_halos() {
    let problem = bar("pmb", "plane-stress", 1);
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
    let problem = bar("pmb", "plane-stress", 1);
    for count in [0, 18, 1000] {
        let e = partition(&problem, count).unwrap_err().to_string();
        assert!(e.contains("--subdomains"), "{e}");
    }
}

/// In-core and partitioned: break bonds and compute forces at a damaging random field, then
/// forces at another field with the bonds as broken; every result bitwise the same.
fn check_forces(law: &str, dim: &str, count: usize) {
    let problem = bar(law, dim, 1);
    let n = problem.body.len() * problem.dim();
    let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
    let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
    let case = format!("{law} {dim}, {count} subdomains");
    for seed in [1, 2] {
        let u: Vec<f64> = common::random_vector(n, seed)
            .iter()
            .map(|x| 4e-6 * x)
            .collect();
        let (mut f_core, mut f_part) = (vec![0.0; n], vec![7.0; n]);
        let broken = core.break_bonds_and_force(&u, &mut f_core);
        assert_eq!(
            part.break_bonds_and_force(&u, &mut f_part),
            broken,
            "{case}"
        );
        assert!(seed > 1 || broken > 0, "{case}: the field breaks bonds");
        assert_bitwise(&f_part, &f_core, &format!("{case}: forces"));
        core.internal_force(&u, &mut f_core);
        part.internal_force(&u, &mut f_part);
        assert_bitwise(
            &f_part,
            &f_core,
            &format!("{case}: forces without breaking"),
        );
    }
    assert_eq!(
        part.bond_status(),
        core.bond_status(),
        "{case}: bond status"
    );
    assert_eq!(part.broken_bonds(), core.broken_bonds(), "{case}");
    let (mut d_core, mut d_part) = (vec![0.0; problem.body.len()], vec![1.0; problem.body.len()]);
    core.damage(&mut d_core);
    part.damage(&mut d_part);
    assert_bitwise(&d_part, &d_core, &format!("{case}: damage"));
    let u = common::random_vector(n, 3);
    let (mut t_core, mut t_part) = (d_core.clone(), d_part.clone());
    assert_eq!(
        core.dilatation(&u, &mut t_core),
        part.dilatation(&u, &mut t_part)
    );
    assert_bitwise(&t_part, &t_core, &format!("{case}: dilatation"));
    let (e_core, e_part) = (core.strain_energy(&u), part.strain_energy(&u));
    assert!(
        (e_part - e_core).abs() <= 1e-12 * e_core.abs(),
        "{case}: energy"
    );
}

#[test]
fn partitioned_forces_and_breaks_equal_in_core_bitwise() {
    for (law, dim) in CASES {
        for count in COUNTS {
            check_forces(law, dim, count);
        }
    }
}

/// `steps` damaging explicit steps on `backend`: the final state and the bonds broken.
fn explicit_run(problem: &Problem, backend: &mut dyn Backend<f64>) -> (State<f64>, usize) {
    let (dt, _, _) = choose_dt(problem).unwrap();
    let integrator = Explicit {
        dt,
        density: problem.material.density,
        damping: 0.0,
        damage: true,
    };
    let loads = Loads::new(problem, dt);
    let mut state = State::at_rest(problem.body.len() * problem.dim());
    let mut times = StepTimes::default();
    integrator.start(&mut state, &loads, backend);
    let broken = (0..problem.model.solver.steps)
        .map(|_| integrator.step(&mut state, &loads, backend, &mut times))
        .sum();
    (state, broken)
}

#[test]
fn partitioned_explicit_run_breaks_the_same_bonds_and_ends_bitwise_equal() {
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d"), ("pmb-linear", "3d")] {
        let problem = bar(law, dim, 40);
        let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
        let (s_core, b_core) = explicit_run(&problem, &mut core);
        assert!(b_core > 0, "{law} {dim}: the run breaks bonds");
        for count in [2, 5, 16] {
            let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
            let (s_part, b_part) = explicit_run(&problem, &mut part);
            let case = format!("{law} {dim}, {count} subdomains");
            assert_eq!(b_part, b_core, "{case}: bonds broken");
            assert_eq!(part.bond_status(), core.bond_status(), "{case}");
            assert_bitwise(&s_part.u, &s_core.u, &format!("{case}: displacement"));
            assert_bitwise(&s_part.v, &s_core.v, &format!("{case}: velocity"));
            assert_bitwise(&s_part.f, &s_core.f, &format!("{case}: force"));
        }
    }
}

#[test]
fn budget_plans_fit_their_budget_and_counts_are_kept() {
    let problem = bar("pmb", "3d", 1);
    let n = problem.body.len() as f64;
    let per_node = 1000.0;
    let plan = Plan::new(&problem, PlanRequest::Count(4), per_node).unwrap();
    assert_eq!(plan.subdomains.len(), 4);
    assert!(plan.fits());
    // in core with room to spare: one subdomain
    let big = PlanRequest::Budget {
        budget: (10.0 * n * per_node) as u64,
        bytes_per_node: per_node,
    };
    assert_eq!(
        Plan::new(&problem, big, per_node).unwrap().subdomains.len(),
        1
    );
    for share in [0.8, 0.5] {
        let budget = (share * n * per_node) as u64;
        let request = PlanRequest::Budget {
            budget,
            bytes_per_node: per_node,
        };
        let plan = Plan::new(&problem, request, per_node).unwrap();
        assert!(plan.subdomains.len() > 1 && plan.fits(), "budget {budget}");
        assert!(plan.peak_bytes() <= budget as f64);
    }
    let tiny = PlanRequest::Budget {
        budget: 1000,
        bytes_per_node: per_node,
    };
    let e = Plan::new(&problem, tiny, per_node).unwrap_err().to_string();
    assert!(e.contains("--gpu-memory-budget"), "{e}");
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
    for bad in ["\"2XB\"", "0", "-5", "\"\"", "true"] {
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
    let broken = core.break_bonds_and_force(&u, &mut f_core);
    assert_eq!(part.break_bonds_and_force(&u, &mut f_part), broken);
    assert_bitwise(&f_part, &f_core, "two blocks: forces");
    assert_eq!(part.bond_status(), core.bond_status());
}
