//! The failure options of `[material]` (`docs/materials.md`): the critical stretch with
//! `alpha`, `s0 = s00 - alpha s_min` (Silling and Askari 2005), and `break_timing`, on
//! `cpu-loop`:
//!
//! - the bonds broken equal a plain computation of the rule (each node's `s_min` over its
//!   unbroken bonds at the previous evaluation, a bond breaking past the smaller `s0` of its
//!   ends), exactly, over two evaluations;
//! - `after-force` counts a breaking bond in that step's force and breaks the same bonds;
//! - a run with `alpha = 1e-300` (thresholds equal to `s00` in f64) is bitwise the default
//!   run, so the history path breaks exactly as the fused passes do; existing models keep
//!   their fingerprint;
//! - bad values and backends that do not run the options are clear errors.

mod common;

use peridot::backend::partitioned::PartitionedCpu;
use peridot::backend::{self, BackendKind, CpuLoop};
use peridot::dynamics::Forces;
use peridot::model::BreakTiming;
use peridot::setup::Problem;
use std::sync::Arc;

const S00: f64 = 0.01;

fn plate(law: &str, extra: &str) -> String {
    let nu = if law.starts_with("lps") {
        "poisson_ratio = 0.3\n"
    } else {
        ""
    };
    format!(
        "[material]\nmodel = \"{law}\"\nyoungs_modulus = 70e9\ndensity = 2500\n{nu}\
         critical_stretch = {S00}\n{extra}\n[discretization]\ndimension = \"plane-stress\"\n\
         thickness = 1e-3\ndx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
         box = [{{ min = [0, 0], max = [0.012, 0.007] }}]\n[solver]\nkind = \"explicit\"\n\
         steps = 1\n"
    )
}

/// A random displacement of amplitude `amp * dx`: bond stretches of both signs up to a few
/// `amp`.
fn field(p: &Problem, amp: f64, seed: u64) -> Vec<f64> {
    common::random_vector(p.body.len() * p.dim(), seed)
        .iter()
        .map(|x| amp * p.body.dx * x)
        .collect()
}

/// The rule, plainly: `(status after, s0 per node after)` from the status and per-node `s0`
/// before, at `u` (nonlinear stretch `(|y| - x) / x`, as PMB reads it).
fn rule(p: &Problem, u: &[f64], intact: &[bool], s0: &[f64], alpha: f64) -> (Vec<bool>, Vec<f64>) {
    let (fam, pos, d) = (&p.families, &p.body.positions, p.dim());
    let stretch = |i: usize, j: usize| {
        let (mut x2, mut y2) = (0.0, 0.0);
        for k in 0..d {
            let xi = pos[j][k] - pos[i][k];
            let y = xi + u[d * j + k] - u[d * i + k];
            x2 += xi * xi;
            y2 += y * y;
        }
        (y2.sqrt() - x2.sqrt()) / x2.sqrt()
    };
    let mut after = intact.to_vec();
    let mut s_min = vec![f64::INFINITY; p.body.len()];
    for i in 0..p.body.len() {
        for b in fam.range(i) {
            let j = fam.neighbors[b] as usize;
            if !intact[b] {
                continue;
            }
            let s = stretch(i, j);
            s_min[i] = s_min[i].min(s);
            if s > s0[i].min(s0[j]) {
                after[b] = false;
            }
        }
    }
    let s0_next = s_min
        .iter()
        .map(|&s| if s.is_infinite() { s } else { S00 - alpha * s })
        .collect();
    (after, s0_next)
}

/// The backend's bond status, intact as `true`.
fn status(b: &CpuLoop<f64>) -> Vec<bool> {
    b.bond_status().unwrap().iter().map(|&m| m == 1).collect()
}

#[test]
fn alpha_breaks_the_bonds_of_a_plain_computation() {
    for alpha in [0.25, 1.0] {
        let p = Arc::new(common::problem(
            &plate("pmb", &format!("critical_stretch_alpha = {alpha}")),
            &[],
        ));
        let mut backend = CpuLoop::<f64>::new(p.clone());
        let n = p.body.len() * p.dim();
        let mut f = vec![0.0; n];
        let (u1, u2) = (field(&p, 0.012, 3), field(&p, 0.016, 4));
        // first evaluation: s0 from the stretches at u1 itself
        let all = vec![true; p.families.bonds()];
        let (_, s0_first) = rule(&p, &u1, &all, &vec![f64::INFINITY; p.body.len()], alpha);
        let (expect1, s0_1) = rule(&p, &u1, &all, &s0_first, alpha);
        let broken1 = backend.break_bonds_and_force(&u1, &mut f).unwrap();
        assert_eq!(status(&backend), expect1, "alpha {alpha}: first evaluation");
        // second: s0 from u1's stretches over the bonds intact before it
        let (expect2, _) = rule(&p, &u2, &expect1, &s0_1, alpha);
        let broken2 = backend.break_bonds_and_force(&u2, &mut f).unwrap();
        assert_eq!(
            status(&backend),
            expect2,
            "alpha {alpha}: second evaluation"
        );
        let plain = |e: &[bool]| e.iter().filter(|&&m| !m).count();
        assert_eq!(
            (broken1, broken2),
            (plain(&expect1), plain(&expect2) - plain(&expect1))
        );
        // alpha changes the outcome: with s00 alone another set breaks
        let (fixed, _) = rule(&p, &u1, &all, &vec![S00; p.body.len()], 0.0);
        assert_ne!(fixed, expect1, "alpha {alpha} must matter at this field");
        println!(
            "alpha {alpha}: {broken1} then {broken2} bonds broken ({} at s00 alone)",
            plain(&fixed)
        );
    }
}

/// `after-force`: the step's force counts every bond intact at its start (it equals the force
/// before breaking), and the same bonds break as `before-force` (alpha 0); `before-force`'s
/// force omits them.
#[test]
fn after_force_counts_the_breaking_bonds_in_that_force() {
    for law in ["pmb", "lps-nonlinear"] {
        let before = Arc::new(common::problem(&plate(law, ""), &[]));
        let after = Arc::new(common::problem(
            &plate(law, "break_timing = \"after-force\""),
            &[],
        ));
        assert_eq!(after.material.break_timing, BreakTiming::AfterForce);
        let u = field(&before, 0.012, 5);
        let n = u.len();
        let (mut f_intact, mut f_before, mut f_after) = (vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let mut b = CpuLoop::<f64>::new(before.clone());
        let mut a = CpuLoop::<f64>::new(after.clone());
        a.internal_force(&u, &mut f_intact).unwrap();
        let nb = b.break_bonds_and_force(&u, &mut f_before).unwrap();
        let na = a.break_bonds_and_force(&u, &mut f_after).unwrap();
        assert!(nb > 0, "{law}: the field breaks bonds");
        assert_eq!(na, nb, "{law}: bonds broken");
        assert_eq!(
            a.bond_status().unwrap(),
            b.bond_status().unwrap(),
            "{law}: status"
        );
        assert_eq!(
            f_after, f_intact,
            "{law}: the after-force force counts every bond"
        );
        let mut f_broken = vec![0.0; n];
        a.internal_force(&u, &mut f_broken).unwrap();
        assert_eq!(
            f_before, f_broken,
            "{law}: the before-force force omits them"
        );
        assert_ne!(f_before, f_after);
    }
}

/// `alpha = 1e-300` takes the history path with thresholds equal to `s00` in f64
/// (`1e-300 s_min` is far below an ulp of `s00`): a damaging run is bitwise the default one,
/// for PMB (whose default breaking is fused into the vectorized force loop) and LPS.
#[test]
fn a_negligible_alpha_is_bitwise_the_default_run() {
    for (law, dim) in [
        ("pmb", "plane-stress"),
        ("lps", "3d"),
        ("lps-nonlinear", "plane-strain"),
    ] {
        let problem = common::partition_bar(law, dim, 40);
        let mut tiny = problem.clone();
        tiny.material.critical_stretch_alpha = 1e-300;
        assert!(tiny.material.history_breaking() && !problem.material.history_breaking());
        let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
        let (s_default, b_default) = common::explicit_run(&problem, &mut core);
        let mut history = CpuLoop::<f64>::new(Arc::new(tiny.clone()));
        let (s_history, b_history) = common::explicit_run(&tiny, &mut history);
        assert!(b_default > 0, "{law} {dim}: the run breaks bonds");
        assert_eq!(b_history, b_default, "{law} {dim}: bonds broken");
        assert_eq!(history.bond_status().unwrap(), core.bond_status().unwrap());
        assert_eq!(s_history.u, s_default.u, "{law} {dim}: displacement");
        assert_eq!(s_history.v, s_default.v, "{law} {dim}: velocity");
    }
}

/// A model without the new keys keeps its fingerprint text (no new key in it), and giving
/// the defaults explicitly changes no physics.
#[test]
fn existing_models_are_unchanged() {
    let plain = common::problem(&plate("pmb", ""), &[]);
    let text = peridot::model::fingerprint::physics_text(&plain.model);
    assert!(
        !text.contains("alpha") && !text.contains("break_timing"),
        "{text}"
    );
    let explicit = common::problem(
        &plate(
            "pmb",
            "critical_stretch_alpha = 0\nbreak_timing = \"before-force\"",
        ),
        &[],
    );
    assert_eq!(explicit.material.critical_stretch_alpha, 0.0);
    assert!(!explicit.material.history_breaking());
    assert_eq!(explicit.material, plain.material);
}

#[test]
fn bad_values_and_backends_are_clear_errors() {
    let parse = |extra: &str, breaks: bool| {
        let mut text = plate("pmb", extra);
        if !breaks {
            text = text.replace(&format!("critical_stretch = {S00}\n"), "");
        }
        peridot::model::parse(&text, "t.toml", &[])
            .err()
            .map(|e| e.to_string())
    };
    for (extra, breaks, field) in [
        (
            "critical_stretch_alpha = -0.1",
            true,
            "material.critical_stretch_alpha",
        ),
        (
            "critical_stretch_alpha = 0.25",
            false,
            "material.critical_stretch_alpha",
        ),
        (
            "break_timing = \"after-force\"",
            false,
            "material.break_timing",
        ),
    ] {
        let e = parse(extra, breaks).unwrap_or_else(|| panic!("{extra} accepted"));
        assert!(e.contains(field), "{e}");
    }
    assert!(parse("break_timing = \"later\"", true).is_some());
    let p = Arc::new(common::problem(
        &plate("pmb", "critical_stretch_alpha = 0.25"),
        &[],
    ));
    let runs_on = "cpu-loop and gpu-loop (in core, in subdomains, on MPI ranks)";
    for kind in [BackendKind::CpuMatrix, BackendKind::GpuMatrix] {
        let e = backend::create::<f64>(kind, p.clone(), None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains(runs_on) && e.contains(kind.name()), "{e}");
    }
    // (cpu-loop in subdomains runs it: tests/partition_failure.rs compares it with cpu-loop
    // in core; gpu-loop in core and in subdomains: tests/agreement.rs and tests/gpu/stream.rs
    // on a GPU)
    assert!(PartitionedCpu::<f64>::new(&p, 2).is_ok());
    for scheme in [backend::Scheme::GpuLoop, backend::Scheme::GpuLoopParts] {
        assert!(backend::check_material(&p, "gpu-loop", scheme).is_ok());
    }
    assert!(backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).is_ok());
    assert!(backend::create::<f64>(BackendKind::Auto, p, None).is_ok());
}
