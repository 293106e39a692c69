//! Explicit leapfrog conserves energy: an undamaged body vibrating freely keeps its total
//! (kinetic + strain) energy without drift (under 0.5% between the first and last 200 of 2000
//! steps at the default safety factor 0.8). Leapfrog is symplectic: the measured energy
//! oscillates at O((omega dt)^2) around a constant (bounded here by 2%) but does not drift.

mod common;

use peridot::backend::{self, BackendKind};
use peridot::dynamics::explicit::{Explicit, StepTimes};
use peridot::dynamics::loads::Loads;
use peridot::dynamics::State;
use peridot::solver::run::choose_dt;
use std::sync::Arc;

fn check(law: &str, nu: Option<f64>, dim: &str) {
    let (geometry, thick) = if dim == "3d" {
        (
            "box = [{ min = [0, 0, 0], max = [0.016, 0.008, 0.008] }]",
            "",
        )
    } else {
        (
            "box = [{ min = [0, 0], max = [0.04, 0.02] }]",
            "thickness = 1e-3",
        )
    };
    let text = format!(
        "{}\n[discretization]\ndimension = \"{dim}\"\ndx = 1e-3\nhorizon_factor = 3.015\n{thick}\n\
         [geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 2000\ndamage = false\n",
        common::material(law, nu)
    );
    let problem = common::problem(&text, &[]);
    let (dt, _, _) = choose_dt(&problem).unwrap();
    let p = Arc::new(problem);
    let mut backend = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
    let loads = Loads::new(&p, dt);
    let d = p.dim();
    let mut state = State::<f64>::at_rest(p.body.len() * d);
    // A smooth initial velocity field (half a sine wave along x) in an undeformed body: it
    // feeds mostly the low modes, which leapfrog integrates accurately.
    let len = p.body.bbox_max[0] - p.body.bbox_min[0];
    for (i, x) in p.body.positions.iter().enumerate() {
        state.v[d * i] = 0.1 * (std::f64::consts::PI * x[0] / len).cos();
        state.v[d * i + 1] = 0.05 * (std::f64::consts::PI * x[0] / len).sin();
    }
    let integrator = Explicit::of(&p, dt, 0.0, false);
    let v0 = state.v.clone();
    integrator
        .start(&mut state, &loads, backend.as_mut())
        .unwrap();
    state.v = v0;
    let energy = |s: &State<f64>, b: &mut dyn backend::Backend<f64>| {
        s.kinetic_energy(|i| integrator.density_of(i), &p.body.volumes, d)
            + b.strain_energy(&s.u).unwrap()
    };
    let e0 = energy(&state, backend.as_mut());
    let mut samples = Vec::new();
    let mut times = StepTimes::default();
    for step in 1..=2000 {
        integrator
            .step(&mut state, &loads, backend.as_mut(), &mut times)
            .unwrap();
        if step % 10 == 0 {
            samples.push((energy(&state, backend.as_mut()) - e0) / e0);
        }
    }
    // Drift: the change of the mean energy between the first and the last 200 steps.
    let mean = |w: &[f64]| w.iter().sum::<f64>() / w.len() as f64;
    let drift = (mean(&samples[samples.len() - 20..]) - mean(&samples[..20])).abs();
    let swing = samples.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    assert!(drift < 5e-3, "{law} {dim}: energy drift {drift:.3e}");
    // Leapfrog's bounded O((omega dt)^2) oscillation of the measured energy.
    assert!(swing < 2e-2, "{law} {dim}: energy oscillation {swing:.3e}");
}

#[test]
fn pmb_2d_energy_is_conserved() {
    check("pmb", None, "plane-stress");
}

#[test]
fn lps_2d_energy_is_conserved() {
    check("lps", Some(0.3), "plane-strain");
}

#[test]
fn lps_nonlinear_2d_energy_is_conserved() {
    check("lps-nonlinear", Some(0.3), "plane-stress");
}

#[test]
fn lps_3d_energy_is_conserved() {
    check("lps", Some(0.2), "3d");
}

/// The internal force is minus the gradient of the strain energy: for a random direction
/// `w`, `(E(u + h w) - E(u - h w)) / 2h = -sum_i V_i L_i . w`. Central differences of a
/// quadratic (linearized models) are exact up to round-off; for the nonlinear models their
/// error is O(h^2 |w|^2 / x^2), about 1e-18 here; 1e-6 relative leaves room for round-off.
#[test]
fn force_is_the_energy_gradient() {
    for (law, nu, dim) in [
        ("pmb-linear", None, "plane-stress"),
        ("pmb", None, "3d"),
        ("lps", Some(0.3), "plane-strain"),
        ("lps", Some(0.2), "3d"),
        ("lps-nonlinear", Some(0.3), "plane-strain"),
        ("lps-nonlinear", Some(0.2), "3d"),
    ] {
        let (geometry, thick) = if dim == "3d" {
            (
                "box = [{ min = [0, 0, 0], max = [0.008, 0.008, 0.008] }]",
                "",
            )
        } else {
            (
                "box = [{ min = [0, 0], max = [0.02, 0.01] }]",
                "thickness = 1e-3",
            )
        };
        let text = format!(
            "{}\n[discretization]\ndimension = \"{dim}\"\ndx = 1e-3\nhorizon_factor = 3.015\n{thick}\n\
             [geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 1\n",
            common::material(law, nu)
        );
        let p = Arc::new(common::problem(&text, &[]));
        let mut backend = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
        let n = p.body.len() * p.dim();
        let mut seed = 12345u64;
        let mut rand = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 11) as f64 / (1u64 << 53) as f64) - 0.5
        };
        let u: Vec<f64> = (0..n).map(|_| 1e-6 * rand()).collect();
        let w: Vec<f64> = (0..n).map(|_| 1e-6 * rand()).collect();
        let h = 1e-3;
        let shifted = |s: f64| -> Vec<f64> { u.iter().zip(&w).map(|(a, b)| a + s * b).collect() };
        let de = (backend.strain_energy(&shifted(h)).unwrap()
            - backend.strain_energy(&shifted(-h)).unwrap())
            / (2.0 * h);
        let mut f = vec![0.0; n];
        backend.internal_force(&u, &mut f).unwrap();
        let d = p.dim();
        let work: f64 = (0..n).map(|k| f[k] * w[k] * p.body.volumes[k / d]).sum();
        assert!(
            (de + work).abs() < 1e-6 * de.abs().max(work.abs()),
            "{law} {dim}: dE {de} vs -work {}",
            -work
        );
    }
}
