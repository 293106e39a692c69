//! The implicit static solve (`solve-static`) against adaptive dynamic relaxation on the loop
//! backend: the same equilibrium reached two independent ways.
//!
//! - The free plate in tension (`models/plate_tension_2d.toml`, coarsened to dx = 10 mm, with
//!   the linearized PMB law: the static solve is linear): no Dirichlet condition, so the solve
//!   removes three rigid-body modes; after removing the volume-weighted rigid part from the
//!   ADR solution too, the two agree to 1e-4 relative (normwise), with the ADR tolerance
//!   tightened to 1e-10. With the nonlinear PMB law of the model file they differ by about
//!   the strain (1e-3), the geometric nonlinearity the linear solve leaves out.
//! - A small 3D LPS bar clamped at one end and pulled by a traction at the other, and a 2D
//!   PMB-linear strip stretched by a prescribed displacement: agreement to 1e-4 again.
//! - Every solve reaches `static_residual < 1e-10`, and the solution is bitwise the same at
//!   any thread count.

mod common;

use peridot::setup::Problem;
use peridot::solver::implicit::{solve_static, StaticOptions, StaticOutcome};
use peridot::solver::rigid::RigidModes;

const PLATE: &str = include_str!("../models/plate_tension_2d.toml");

fn implicit(p: &Problem) -> StaticOutcome {
    let out = solve_static(p.clone(), &StaticOptions::default()).expect("static solve");
    let r = out.summary.static_residual.unwrap();
    println!(
        "{}: static residual {r:.2e}, {:?}",
        p.name, out.summary.static_solve
    );
    assert!(r < 1e-10, "static residual {r:e}");
    out
}

/// ADR displacement with its rigid part along the solve's free modes removed.
fn adr(p: &Problem, rigid: &RigidModes) -> Vec<f64> {
    let out = common::run::<f64>(p.clone());
    println!(
        "{}: ADR {} iterations, residual {:.2e}, converged {:?}",
        p.name,
        out.summary.steps,
        out.summary.static_residual.unwrap(),
        out.summary.converged
    );
    assert_eq!(out.summary.converged, Some(true), "ADR did not converge");
    let mut u = out.state.u;
    let d = p.dim();
    let weight: Vec<f64> = (0..u.len()).map(|k| p.body.volumes[k / d]).collect();
    rigid.normalize(&mut u, &weight);
    u
}

fn compare(p: &Problem) -> f64 {
    let s = implicit(p);
    let u = adr(p, &s.rigid);
    let err = common::rel_diff(&u, &s.u);
    println!("{}: |u_adr - u_static| / |u_static| = {err:.2e}", p.name);
    err
}

#[test]
fn free_plate_in_tension_matches_adr() {
    let p = common::problem(
        PLATE,
        &[
            "discretization.dx=0.01",
            "solver.tolerance=1e-10",
            "solver.steps=20000",
            "output.probes=[]",
            "material.model=\"pmb-linear\"",
        ],
    );
    let s = implicit(&p);
    let info = s.summary.static_solve.clone().unwrap();
    assert_eq!(info.rigid_modes_removed, 3);
    assert_eq!(info.support_dofs.len(), 3);
    assert!(
        info.support_load < 1e-9,
        "supports carry {}",
        info.support_load
    );
    let u = adr(&p, &s.rigid);
    let err = common::rel_diff(&u, &s.u);
    println!("plate: |u_adr - u_static| / |u_static| = {err:.2e}");
    assert!(err < 1e-4, "plate: {err:e}");
}

/// A 3D LPS bar, 16 x 5 x 5 mm, clamped at -x, pulled by a traction at +x.
fn lps_bar() -> String {
    common::lps_bar(0.016, "steps = 40000\ntolerance = 1e-11")
}

#[test]
fn clamped_lps_bar_matches_adr() {
    let err = compare(&common::problem(&lps_bar(), &[]));
    assert!(err < 1e-4, "LPS bar: {err:e}");
}

/// The same bar with the traction applied in 4 ADR load steps: the iterations within a load
/// step (empty load interval) keep the clamped dofs still, so ADR's damping estimate stays
/// finite and it converges to the same solution (it once stalled undamped).
#[test]
fn clamped_lps_bar_in_load_steps_matches_adr() {
    let p = common::problem(
        &lps_bar(),
        &[
            "solver.load_steps=4",
            "solver.steps=8000",
            "solver.tolerance=1e-10",
        ],
    );
    let err = compare(&p);
    assert!(err < 1e-4, "LPS bar in load steps: {err:e}");
}

#[test]
fn strip_stretched_by_a_displacement_matches_adr() {
    let text = common::adr_strip(
        &common::material("pmb-linear", None),
        "1e-5",
        "steps = 40000\ntolerance = 1e-11",
        false,
    );
    let p = common::problem(&text, &[]);
    let s = implicit(&p);
    assert_eq!(
        s.summary.static_solve.as_ref().unwrap().rigid_modes_removed,
        0
    );
    for &(dof, v) in &s.prescribed {
        assert_eq!(s.u[dof], v, "prescribed dof {dof}");
    }
    let u = adr(&p, &s.rigid);
    let err = common::rel_diff(&u, &s.u);
    println!("strip: |u_adr - u_static| / |u_static| = {err:.2e}");
    assert!(err < 1e-4, "strip: {err:e}");
}

/// A pre-crack through the whole height cuts a clamped strip in two: the loose right piece
/// (unloaded) has three rigid-body modes, held by supports, and stays at rest; the clamped
/// left piece carries its body force. Loading the loose piece instead is refused.
#[test]
fn a_piece_cut_off_by_a_precrack_is_held_by_supports() {
    let text = format!(
        r#"name = "cut"
{}
[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015
[geometry]
box = [{{ min = [0, 0], max = [0.02, 0.008] }}]
[[precrack]]
start = [0.0101, -0.001]
end = [0.0101, 0.009]
[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 2
[[region]]
name = "loaded"
shape = "box"
min = [0.003, 0]
max = [0.009, 0.008]
[[boundary]]
region = "left"
kind = "fixed"
[[boundary]]
region = "loaded"
kind = "body-force"
y = 1e9
[solver]
kind = "adr"
steps = 10
"#,
        common::material("lps", Some(0.25))
    );
    let p = common::problem(&text, &[]);
    let s = implicit(&p);
    let info = s.summary.static_solve.clone().unwrap();
    assert_eq!((info.pieces, info.rigid_modes_removed), (2, 3));
    let d = p.dim();
    let right = (0..p.body.len()).filter(|&i| p.body.positions[i][0] > 0.0101);
    let umax = s.u.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for i in right {
        for k in 0..d {
            assert!(s.u[d * i + k].abs() <= 1e-12 * umax, "loose node {i} moves");
        }
    }
    let loose = common::problem(
        &text.replace("max = [0.009, 0.008]", "max = [0.019, 0.008]"),
        &[],
    );
    let err = solve_static(loose, &StaticOptions::default())
        .err()
        .expect("refused");
    assert!(err.to_string().contains("not in equilibrium"), "{err}");
}

/// The static solve (assembly, factorization, solves, refinement) is bitwise the same in
/// thread pools of 1 and 3 threads.
#[test]
fn static_solution_does_not_depend_on_the_thread_count() {
    let p = common::problem(&lps_bar(), &[]);
    let solve_in = |threads: usize| {
        let p = p.clone();
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(move || solve_static(p, &StaticOptions::default()).unwrap().u)
    };
    let (one, three) = (solve_in(1), solve_in(3));
    assert!(
        one.iter()
            .zip(&three)
            .all(|(a, b)| a.to_bits() == b.to_bits()),
        "solutions differ"
    );
}
