//! Bond failure with a history (`docs/materials.md`) on `gpu-loop` against `cpu-loop`: the
//! softening damage laws (bilinear, trilinear: a damage value per bond), the critical
//! stretch with `alpha` and breaking after the force. Both run the same passes in the same
//! order (`backend/gpu/bond_loop/failure.rs`, `backend/cpu/bond_loop.rs`), so:
//!
//! - at given displacements (three damaging evaluations in a row, then forces, damage fields
//!   and energy at a fourth): the same bonds break, the damage per bond agrees to 1e-12 (f64;
//!   1e-5 in f32: it is the law's damage at stretches that differ by the round-off of the
//!   two kernels' stretch formulas), each node's critical stretch to 1e-12 relative, the
//!   forces to 1e-12 (1e-5 in f32). In f64 the displacements break bonds; in f32, whose
//!   stretches differ by about 3e-7 relative between the two (the kernels' bond vectors are
//!   differences of f32 positions), a bond within that of its threshold would break on one
//!   only, so the f32 displacements stay below every threshold that breaks (`|u_j - u_i| <=
//!   2 sqrt(d) a` bounds each stretch by `2 sqrt(d) a / dx`): the softening bonds take partial
//!   damage, the brittle ones each node's critical stretch, with no tie to round-off;
//! - over 80 damaging explicit steps in f64, through the trait (the host loop) and through
//!   `simulate` (the device time loop, failure pass fused in the step sequence): the same
//!   bonds break, and displacements and damage per bond agree to 1e-10, the bound of the
//!   other damaging runs here (round-off of 1e-16 per step grows over a fracturing motion).
//!
//! Without a GPU every test says `skipping gpu-loop` and passes.

use super::*;
use peridot::material::FailureHistory;

/// The softening laws over the small models' `s0 = 0.002`.
const BILINEAR: &str = "damage_law = \"bilinear\"\nfinal_stretch = 0.006\n";
const TRILINEAR: &str = "damage_law = \"trilinear\"\nkink_stretch = 0.003\n\
                         kink_force_ratio = 0.25\nfinal_stretch = 0.006\n";
/// `alpha` (LAMMPS's usual 0.25), breaking after the force, and both.
const ALPHA: &str = "critical_stretch_alpha = 0.25\n";
const AFTER: &str = "break_timing = \"after-force\"\n";
const ALPHA_AFTER: &str = "critical_stretch_alpha = 0.25\nbreak_timing = \"after-force\"\n";

/// The softening laws are bond-based; the history breaking runs every law.
const BOND_BASED: [&str; 2] = ["pmb-linear", "pmb"];

/// `text` (one of the small models) with `keys` added to its `[material]`.
fn with_keys(text: String, keys: &str) -> String {
    let at = "critical_stretch = 0.002\n";
    assert!(text.contains(at), "a small model's critical stretch");
    text.replacen(at, &format!("{at}{keys}"), 1)
}

/// The largest difference of two histories: damage per bond (absolute) and each node's
/// critical stretch (relative to `s00`; infinite values must match).
fn history_diff<T: Real>(a: &FailureHistory<T>, b: &FailureHistory<T>, case: &str) -> f64 {
    assert_eq!(
        a.bond_damage.len(),
        b.bond_damage.len(),
        "{case}: damage per bond"
    );
    assert_eq!(
        a.node_s0.len(),
        b.node_s0.len(),
        "{case}: critical stretch per node"
    );
    let damage = a
        .bond_damage
        .iter()
        .zip(&b.bond_damage)
        .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y.f64()).abs()));
    let s0 = a.node_s0.iter().zip(&b.node_s0).fold(0.0f64, |m, (x, y)| {
        let (x, y) = (x.f64(), y.f64());
        match x.is_finite() {
            true => m.max((x - y).abs() / 0.002),
            false => {
                assert_eq!(x, y, "{case}: a node without bonds has s0 = +inf");
                m
            }
        }
    });
    damage.max(s0)
}

/// Three damaging evaluations (`break_bonds_and_force`) at random displacements (f64: whose
/// stretches reach past the final stretch; f32: below any that breaks, see the module notes),
/// then [`compare_states`] at a fourth, on every law of `laws`, both dimensions, with and
/// without a pre-crack.
fn compare_evaluations<T: Real>(keys: &str, laws: &[&str]) -> Option<Worst> {
    let softening = keys.contains("damage_law");
    // amplitudes in units of s0 dx: the largest stretch is at most 2 sqrt(3) a / dx, so in
    // f32 below the final stretch 3 s0 (softening: 0.8 gives 2.8 s0) or below the least
    // critical stretch with alpha 0.25 (brittle: 0.2 gives 0.7 s0, the threshold at least
    // s00 - 0.25 x 0.7 s0 = 0.83 s0)
    let f64_run = T::NAME == "f64";
    let amplitudes: [f64; 3] = match (f64_run, softening) {
        (true, _) => [1.2, 1.8, 0.6],
        (false, true) => [0.8, 0.6, 0.4],
        (false, false) => [0.2, 0.15, 0.1],
    };
    let tol = tolerance::<T>();
    let (cpu, gpu) = (
        kind::<T>(BackendKind::CpuLoop),
        kind::<T>(BackendKind::GpuLoop),
    );
    let mut worst = Worst::default();
    for &law in laws {
        for dim in DIMS {
            for precrack in [false, true] {
                let text = with_keys(common::small_model(law, dim, precrack, ""), keys);
                let p = Arc::new(common::problem(&text, &[]));
                let case = format!(
                    "gpu-loop {}, {law} {dim} precrack={precrack} {keys:?}",
                    T::NAME
                );
                let mut a = (cpu.make)(p.clone())?;
                let mut b = (gpu.make)(p.clone())?;
                let len = p.dim() * p.body.len();
                for (seed, times_s0) in [3, 4, 5].into_iter().zip(amplitudes) {
                    let u = random_field::<T>(&p, times_s0 * 0.002 * p.body.dx, seed);
                    let (mut fa, mut fb) = (vec![T::zero(); len], vec![T::zero(); len]);
                    let na = a.break_bonds_and_force(&u, &mut fa).unwrap();
                    let nb = b.break_bonds_and_force(&u, &mut fb).unwrap();
                    assert_eq!(na, nb, "{case}: bonds broken by one evaluation");
                    assert!(
                        a.bond_status().unwrap() == b.bond_status().unwrap(),
                        "{case}: bond status"
                    );
                    let force = common::rel_diff(&fb, &fa);
                    assert!(force < tol, "{case}: force rel. diff {force:.2e}");
                    let (ha, hb) = (a.failure_history().unwrap(), b.failure_history().unwrap());
                    let diff = history_diff(&ha, &hb, &case);
                    assert!(diff < tol, "{case}: failure history differs by {diff:.2e}");
                    worst.force = worst.force.max(force);
                    worst.damage = worst.damage.max(diff);
                }
                // (something failed: f64, bonds broke; softening bonds hold a partial damage;
                // the brittle options keep each node's critical stretch)
                let h = a.failure_history().unwrap();
                let partial = h
                    .bond_damage
                    .iter()
                    .filter(|d| d.f64() > 0.0 && d.f64() < 1.0)
                    .count();
                let broken = a.broken_bonds() - p.precracked_bonds();
                assert!(
                    (broken > 0 || !f64_run)
                        && (partial > 0 || !softening)
                        && (!h.node_s0.is_empty() || softening),
                    "{case}: the evaluations must damage bonds ({broken} broken, {partial} \
                     partly damaged, {} critical stretches)",
                    h.node_s0.len()
                );
                worst = worst.max(compare_states(&p, a.as_mut(), b.as_mut(), 6, &case));
            }
        }
    }
    println!(
        "cpu-loop vs gpu-loop ({}) {keys:?}: largest differences {worst:?}",
        T::NAME
    );
    Some(worst)
}

/// The damaging model with `keys` on `law` in `dim`.
fn damaging_with(keys: &str, law: &str, dim: &str) -> Problem {
    common::problem(&with_keys(damaging_model(law, dim), keys), &[])
}

/// Whether the run has damaged bonds: more than 20 broken, or (softening) more than 20 with
/// damage.
fn assert_damaged(p: &Problem, backend: &dyn Backend<f64>, case: &str) {
    let broken = backend.broken_bonds() - p.precracked_bonds();
    let damaged = backend
        .failure_history()
        .unwrap()
        .bond_damage
        .iter()
        .filter(|&&d| d > 0.0)
        .count();
    assert!(
        broken > 20 || damaged > 20,
        "{case}: {broken} broken, {damaged} damaged"
    );
}

/// 80 damaging explicit steps in f64 on both, through the trait: the same bonds break, and
/// displacements and failure histories agree to 1e-10.
fn compare_history_runs(keys: &str, laws: &[&str]) -> Option<f64> {
    let (cpu, gpu) = (
        kind::<f64>(BackendKind::CpuLoop),
        kind::<f64>(BackendKind::GpuLoop),
    );
    let mut worst = 0.0f64;
    for &law in laws {
        for dim in DIMS {
            let p = Arc::new(damaging_with(keys, law, dim));
            let case = format!("gpu-loop run, {law} {dim} {keys:?}");
            let mut a = (cpu.make)(p.clone())?;
            let mut b = (gpu.make)(p.clone())?;
            let (sa, ua) = explicit_run(p.clone(), a.as_mut());
            let (sb, ub) = explicit_run(p.clone(), b.as_mut());
            assert_damaged(&p, a.as_ref(), &case);
            assert!(sa == sb, "{case}: different bonds broke");
            let du = common::rel_diff(&ub, &ua);
            assert!(du < 1e-10, "{case}: displacement rel. diff {du:.2e}");
            let (ha, hb) = (a.failure_history().unwrap(), b.failure_history().unwrap());
            let dh = history_diff(&ha, &hb, &case);
            assert!(dh < 1e-10, "{case}: failure history differs by {dh:.2e}");
            worst = worst.max(du).max(dh);
        }
    }
    println!("cpu-loop vs gpu-loop runs {keys:?}: largest difference {worst:.2e}");
    Some(worst)
}

/// The same runs through `simulate` (gpu-loop's device time loop: the failure pass launched
/// in each step's sequence, the update fused into the force kernel), PMB in both dimensions.
fn compare_simulated(keys: &str) {
    for dim in DIMS {
        let run = |backend| {
            let opts = common::options(backend, Precision::F64, None);
            simulate::<f64>(damaging_with(keys, "pmb", dim), &opts)
        };
        let a = run(BackendKind::CpuLoop).unwrap();
        let b = match run(BackendKind::GpuLoop) {
            Ok(b) => b,
            Err(e) if std::env::var("PERIDOT_REQUIRE_GPU").as_deref() != Ok("1") => {
                eprintln!("skipping gpu-loop: {e}");
                return;
            }
            Err(e) => panic!("gpu-loop: {e}"),
        };
        let case = format!("simulate on gpu-loop, pmb {dim} {keys:?}");
        assert_eq!(b.summary.backend, "gpu-loop");
        assert_damaged(&a.problem, a.backend.as_ref(), &case);
        let du = assert_runs_match(&a, &b, &case);
        let (ha, hb) = (
            a.backend.failure_history().unwrap(),
            b.backend.failure_history().unwrap(),
        );
        let dh = history_diff(&ha, &hb, &case);
        assert!(dh < 1e-10, "{case}: failure history differs by {dh:.2e}");
        println!("{case}: displacement {du:.2e}, history {dh:.2e}");
    }
}

/// Tests of one failure option: evaluations in f64 and f32, trait runs and simulated runs.
macro_rules! history_case {
    ($name:ident, $keys:expr, $laws:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn evaluations_agree_f64() {
                compare_evaluations::<f64>($keys, &$laws);
            }

            #[test]
            fn evaluations_agree_f32() {
                compare_evaluations::<f32>($keys, &$laws);
            }

            #[test]
            fn damaging_runs_agree() {
                compare_history_runs($keys, &$laws);
            }

            #[test]
            fn simulated_runs_agree() {
                compare_simulated($keys);
            }
        }
    };
}

history_case!(bilinear, BILINEAR, BOND_BASED);
history_case!(trilinear, TRILINEAR, BOND_BASED);
history_case!(alpha, ALPHA, LAWS);
history_case!(after_force, AFTER, LAWS);
history_case!(alpha_after_force, ALPHA_AFTER, LAWS);
