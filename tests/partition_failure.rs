//! The material options in subdomains (`docs/subdomains.md`, `docs/materials.md`): the CPU
//! emulation of the subdomain loop (`PartitionedCpu`) runs the softening damage laws
//! (bilinear, trilinear: a damage value per bond, kept by each subdomain in the global bond
//! order), the critical stretch with `alpha` and `break_timing = "after-force"` (each node's
//! critical stretch from the previous evaluation, exchanged between subdomains), and
//! materials of different densities (each node's density in the fused update), bitwise as
//! the in-core `cpu-loop` does: forces, bond status, damage per bond and per node, the
//! per-node critical stretches, and damaging explicit runs through the host step and through
//! the fused loop. Bitwise is the right tolerance: each owned node sums its bonds in the
//! global CSR order with the in-core arithmetic, and each threshold and density is the same
//! f64 value rounded the same way; only the strain energy, summed per subdomain, agrees to
//! round-off (1e-12 relative, `common::check_partitioned`).

mod common;

use peridot::backend::partitioned::PartitionedCpu;
use peridot::backend::{self, Backend, BackendKind, CpuLoop};
use peridot::dynamics::Forces;
use std::sync::Arc;

const BILINEAR: &str =
    "damage_law = \"bilinear\"\ncritical_stretch = 0.002\nfinal_stretch = 0.006\n";
const TRILINEAR: &str = "damage_law = \"trilinear\"\ncritical_stretch = 0.002\n\
                         kink_stretch = 0.003\nkink_force_ratio = 0.25\nfinal_stretch = 0.006\n";
const ALPHA: &str = "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\n";
const AFTER: &str = "critical_stretch = 0.002\nbreak_timing = \"after-force\"\n";
const ALPHA_AFTER: &str =
    "critical_stretch = 0.002\ncritical_stretch_alpha = 0.25\nbreak_timing = \"after-force\"\n";

/// The options and the laws and dimensions each runs with (softening: PMB only).
const CASES: [(&str, &str, &str, &str); 8] = [
    ("bilinear", BILINEAR, "pmb", "plane-stress"),
    ("bilinear", BILINEAR, "pmb-linear", "3d"),
    ("trilinear", TRILINEAR, "pmb", "3d"),
    ("alpha", ALPHA, "pmb", "plane-stress"),
    ("alpha", ALPHA, "lps", "3d"),
    ("after-force", AFTER, "pmb", "3d"),
    ("after-force", AFTER, "lps", "plane-strain"),
    (
        "alpha after-force",
        ALPHA_AFTER,
        "pmb-linear",
        "plane-stress",
    ),
];

/// Damage per bond and per-node critical stretches of two backends, bitwise.
fn assert_same_history(part: &dyn Backend<f64>, core: &dyn Backend<f64>, case: &str) {
    let (a, b) = (
        part.failure_history().unwrap(),
        core.failure_history().unwrap(),
    );
    common::assert_bitwise(
        &a.bond_damage,
        &b.bond_damage,
        &format!("{case}: damage per bond"),
    );
    common::assert_bitwise(
        &a.node_s0,
        &b.node_s0,
        &format!("{case}: critical stretch per node"),
    );
    assert_eq!(
        part.bond_damage().unwrap(),
        core.bond_damage().unwrap(),
        "{case}: bond damage"
    );
}

/// At two damaging random fields (the second breaking with the critical stretches the first
/// left), forces, bonds broken, bond status, damage and dilatation bitwise, the energy to
/// 1e-12; the damage per bond and each node's critical stretch bitwise; 1 to 8 subdomains.
#[test]
fn failure_options_in_subdomains_equal_in_core_bitwise() {
    for (name, keys, law, dim) in CASES {
        let problem = common::partition_bar_with(law, dim, keys, 1);
        let m = &problem.material;
        assert!(
            m.softening.is_some() || m.history_breaking(),
            "{name}: the option is on"
        );
        for count in [1, 3, 8] {
            let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
            let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
            let case = format!("{name} {law} {dim}, {count} subdomains");
            common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
            assert_same_history(&part, &core, &case);
            let history = core.failure_history().unwrap();
            let softened = history.bond_damage.iter().filter(|&&d| d > 0.0 && d < 1.0);
            assert!(
                m.softening.is_none() || softened.count() > 0,
                "{case}: bonds partly damaged"
            );
            assert!(
                !m.history_breaking() || m.softening.is_some() || !history.node_s0.is_empty(),
                "{case}: critical stretches kept"
            );
        }
    }
}

/// A damaging explicit run (40 steps) in subdomains, through the host step and through the
/// fused loop (calls of 7, 13, 1, 19 steps), ends bitwise where the in-core run ends, with
/// the same bonds broken and the same damage per bond and critical stretches.
#[test]
fn failure_options_in_subdomain_runs_end_bitwise_as_in_core() {
    for (name, keys, law, dim) in CASES {
        let problem = common::partition_bar_with(law, dim, keys, 40);
        let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
        let reference = common::explicit_run(&problem, &mut core);
        assert!(reference.1 > 0, "{name} {law} {dim}: the run breaks bonds");
        for count in [2, 5] {
            let case = format!("{name} {law} {dim}, {count} subdomains");
            let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
            let (state, broken) = common::explicit_run(&problem, &mut part);
            common::assert_same_run(&state, broken, &reference.0, reference.1, &case);
            assert_same_history(&part, &core, &case);
            let mut fused = PartitionedCpu::<f64>::new(&problem, count).unwrap();
            let case = format!("{case}, fused");
            common::assert_chunked_run_equals(&problem, &mut fused, &reference, &case);
            assert_same_history(&fused, &core, &case);
        }
    }
}

/// Two materials of different densities (soft 8000, stiff 2000 kg/m^3) in a pre-cracked
/// plate pulled apart: the damaging run (40 steps) in subdomains through the fused loop
/// (each node's inverse density in its update) ends bitwise where the in-core host leapfrog
/// ends, PMB and LPS. A fused update with one density would differ in every stiff node's
/// acceleration by a factor of 4. `cpu-matrix` in subdomains builds for it too.
#[test]
fn materials_of_different_densities_in_subdomains_equal_in_core_bitwise() {
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d")] {
        let problem = common::two_densities(law, dim, 40);
        let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
        let reference = common::explicit_run(&problem, &mut core);
        assert!(reference.1 > 0, "{law} {dim}: the run breaks bonds");
        for count in [2, 3] {
            let case = format!("{law} {dim} two densities, {count} subdomains");
            let mut part = backend::create::<f64>(
                BackendKind::CpuLoop,
                Arc::new(problem.clone()),
                Some(&request(count)),
            )
            .unwrap();
            common::assert_chunked_run_equals(&problem, part.as_mut(), &reference, &case);
        }
        // (the matrix form in subdomains steps on the host leapfrog, `Explicit::accelerate`,
        // which takes each node's density: it builds, no longer refused)
        let shared = Arc::new(problem.clone());
        let matrix = backend::create::<f64>(BackendKind::CpuMatrix, shared, Some(&request(2)));
        assert!(matrix.is_ok(), "{law} {dim}: cpu-matrix in subdomains");
    }
}

fn request(count: usize) -> backend::partitioned::SubdomainRequest {
    backend::partitioned::SubdomainRequest {
        count: Some(count),
        budget: None,
        streamed: false,
    }
}
