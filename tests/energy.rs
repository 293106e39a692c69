//! Explicit leapfrog conserves energy: an undamaged body vibrating freely keeps its total
//! (kinetic + strain) energy within 0.5% over 2000 steps at the default safety factor 0.8.
//! Leapfrog is symplectic, so the error oscillates at O((omega dt)^2) without drifting.

mod common;

use peridot::backend::{self, BackendKind};
use peridot::solver::explicit::{Explicit, StepTimes};
use peridot::solver::loads::Loads;
use peridot::solver::run::choose_dt;
use peridot::solver::State;
use std::sync::Arc;

fn check(law: &str, nu: Option<f64>, dim: &str) {
    let (geometry, thick) = if dim == "3d" {
        ("box = [{ min = [0, 0, 0], max = [0.016, 0.008, 0.008] }]", "")
    } else {
        ("box = [{ min = [0, 0], max = [0.04, 0.02] }]", "thickness = 1e-3")
    };
    let text = format!(
        "{}\n[discretization]\ndimension = \"{dim}\"\ndx = 1e-3\nhorizon_factor = 3.015\n{thick}\n\
         [geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 2000\ndamage = false\n",
        common::material(law, nu)
    );
    let problem = common::problem(&text, &[]);
    let (dt, _, _) = choose_dt(&problem).unwrap();
    let p = Arc::new(problem);
    let mut backend = backend::create::<f64>(BackendKind::CpuLoop, p.clone()).unwrap();
    let loads = Loads::new(&p, dt);
    let d = p.dim();
    let mut state = State::<f64>::at_rest(p.body.len() * d);
    // A smooth initial displacement (half a sine wave along x), released from rest.
    let len = p.body.bbox_max[0] - p.body.bbox_min[0];
    for (i, x) in p.body.positions.iter().enumerate() {
        state.u[d * i] = 1e-6 * (std::f64::consts::PI * x[0] / len).sin();
        state.u[d * i + 1] = 5e-7 * (std::f64::consts::PI * x[0] / len).cos();
    }
    let integrator = Explicit {
        dt,
        density: p.material.density,
        damping: 0.0,
        damage: false,
    };
    integrator.start(&mut state, &loads, backend.as_mut());
    let energy = |s: &State<f64>, b: &mut dyn backend::Backend<f64>| {
        s.kinetic_energy(p.material.density, &p.body.volumes, d) + b.strain_energy(&s.u)
    };
    let e0 = energy(&state, backend.as_mut());
    let mut worst: f64 = 0.0;
    let mut times = StepTimes::default();
    for step in 1..=2000 {
        integrator.step(&mut state, &loads, backend.as_mut(), &mut times);
        if step % 50 == 0 {
            let e = energy(&state, backend.as_mut());
            worst = worst.max((e - e0).abs() / e0);
        }
    }
    assert!(worst < 5e-3, "{law} {dim}: energy drift {worst:.3e}");
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
fn lps_3d_energy_is_conserved() {
    check("lps", Some(0.2), "3d");
}
