//! Plates and bars in uniaxial tension, relaxed by ADR (`theory.md` sections 3, 5 and 8).
//!
//! The sharp check is against the lattice sums (exact for bulk nodes): in the middle of the
//! body, where surface and load-introduction effects have decayed, the axial and lateral
//! strains equal the lattice prediction within 1% (PMB) or 0.01 absolute in the strain ratio
//! (LPS). The loose check is against the continuum: within 5% (PMB displacements) or 0.05
//! absolute (LPS ratio), the size of the lattice's anisotropy at delta = 3 dx.

mod common;

use peridot::material::lattice_constants;
use peridot::setup::Problem;

const PLATE: &str = include_str!("../models/plate_tension_2d.toml");
const P: f64 = 200e6;

/// Axial and lateral strain of the middle half of the body (least-squares slopes of
/// `u_x(x)` and `u_y(y)` over its nodes), and the continuum-style centreline slopes.
struct Strains {
    axial: f64,
    lateral: f64,
}

fn middle_strains(p: &Problem, u: &[f64], fraction: f64) -> Strains {
    let d = p.dim();
    let b = &p.body;
    let inside = |x: &[f64; 3]| {
        (0..d).all(|k| {
            let c = 0.5 * (b.bbox_min[k] + b.bbox_max[k]);
            let half = 0.5 * (b.bbox_max[k] - b.bbox_min[k]);
            (x[k] - c).abs() <= fraction * half
        })
    };
    let pick = |k: usize| -> Vec<(f64, f64)> {
        b.positions
            .iter()
            .enumerate()
            .filter(|(_, x)| inside(x))
            .map(|(i, x)| (x[k], u[d * i + k]))
            .collect()
    };
    Strains {
        axial: common::slope(&pick(0)),
        lateral: common::slope(&pick(1)),
    }
}

/// Slopes of `u_x(x, 0)` and `u_y(0, y)` along the centrelines (the rows of nodes within one
/// spacing of the axes), over the middle half of the body: the seed's analytic comparison.
fn centreline_strains(p: &Problem, u: &[f64]) -> Strains {
    let (d, b) = (p.dim(), &p.body);
    let line = |along: usize, across: usize| -> Vec<(f64, f64)> {
        let half = 0.5 * (b.bbox_max[along] - b.bbox_min[along]);
        b.positions
            .iter()
            .enumerate()
            .filter(|(_, x)| x[across].abs() <= b.dx && x[along].abs() <= 0.5 * half)
            .map(|(i, x)| (x[along], u[d * i + along]))
            .collect()
    };
    Strains {
        axial: common::slope(&line(0, 1)),
        lateral: common::slope(&line(1, 0)),
    }
}

fn relax(text: &str, overrides: &[&str]) -> (Problem, Vec<f64>) {
    let problem = common::problem(text, overrides);
    let out = common::run::<f64>(problem.clone());
    assert_eq!(out.summary.converged, Some(true), "ADR did not converge");
    (problem, out.state.u)
}

#[test]
fn pmb_plate_matches_the_lattice_sums_within_one_percent() {
    let (p, u) = relax(PLATE, &[]);
    let lat = lattice_constants(
        &p.material,
        p.body.dx,
        p.body.thickness,
        p.model.discretization.partial_volume,
    );
    let s = middle_strains(&p, &u, 0.5);
    let axial = P / lat.youngs_modulus;
    let lateral = -lat.lateral_ratio * axial;
    println!(
        "axial {} vs {axial}, lateral {} vs {lateral}",
        s.axial, s.lateral
    );
    assert!(
        (s.axial / axial - 1.0).abs() < 0.01,
        "axial {} vs lattice {axial}",
        s.axial
    );
    assert!(
        (s.lateral / lateral - 1.0).abs() < 0.01,
        "lateral {} vs lattice {lateral}",
        s.lateral
    );
}

/// Relative errors of the centreline slopes against the continuum `P / E` and `-nu P / E`.
fn continuum_errors(overrides: &[&str]) -> (f64, f64) {
    let (p, u) = relax(PLATE, overrides);
    let s = centreline_strains(&p, &u);
    let e = p.material.youngs_modulus;
    let nu = p.material.poisson_ratio;
    (
        (s.axial / (P / e) - 1.0).abs(),
        (s.lateral / (-nu * P / e) - 1.0).abs(),
    )
}

/// The seed's analytic check, `u_x(x, 0) = P x / E` and `u_y(0, y) = -nu P y / E`: at the
/// seed's discretization (delta = 3.015 dx, no partial volumes) the axial slope is within 5%;
/// the lateral one is off by about 9%, as the lattice sums predict (E 4.9% high, lateral ratio
/// 4.5% low). Both errors shrink with linear partial volumes and delta = 4.015 dx, where both
/// are within 5%.
#[test]
fn pmb_plate_approaches_the_continuum() {
    let (ax0, lat0) = continuum_errors(&[]);
    let (ax1, lat1) = continuum_errors(&[
        "discretization.horizon_factor=4.015",
        "discretization.partial_volume=linear",
    ]);
    println!("seed: axial {ax0:.4} lateral {lat0:.4}; refined: axial {ax1:.4} lateral {lat1:.4}");
    assert!(ax0 < 0.05, "axial error {ax0} at the seed discretization");
    assert!(ax1 < 0.05 && lat1 < 0.05, "refined errors {ax1}, {lat1}");
    assert!(
        ax1 < ax0 && lat1 < lat0,
        "errors do not shrink: {ax0} -> {ax1}, {lat0} -> {lat1}"
    );
}

/// An LPS body (`law`: "lps" or "lps-nonlinear") in uniaxial tension: traction on the -x and
/// +x faces, free elsewhere.
fn lps_bar(law: &str, dim: &str, nu: f64) -> String {
    let (geometry, thick) = if dim == "3d" {
        (
            "box = [{ min = [-0.015, -0.006, -0.006], max = [0.015, 0.006, 0.006] }]",
            "",
        )
    } else {
        (
            "box = [{ min = [-0.06, -0.03], max = [0.06, 0.03] }]",
            "thickness = 1e-3",
        )
    };
    format!(
        r#"{material}
[discretization]
dimension = "{dim}"
dx = 1e-3
horizon_factor = 3.015
{thick}
[geometry]
{geometry}
[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 1
[[region]]
name = "right"
shape = "edge"
side = "+x"
depth_dx = 1
[[boundary]]
region = "left"
kind = "traction"
x = -200e6
[[boundary]]
region = "right"
kind = "traction"
x = 200e6
[solver]
kind = "adr"
steps = 20000
tolerance = 1e-8
"#,
        material = common::material(law, Some(nu))
    )
}

/// LPS represents any Poisson ratio: for nu in {0, 0.2, 0.3, 0.45}, plane stress, plane strain
/// and 3D, the lateral-to-axial strain ratio in the middle of a bar in tension equals the
/// lattice-sum prediction within 0.01 absolute and the continuum value (nu; nu / (1 - nu) in
/// plane strain) within 0.05, for the linearized and the nonlinear state-based model. At the
/// bar's strain of 1e-3 the nonlinear forces differ from the linearized ones by terms of the
/// order of the strain (tests/lps_nonlinear.rs), so the two ratios agree within 1e-3. Prints
/// the tables recorded in docs/validation.md.
#[test]
fn lps_poisson_ratio_tables() {
    let linearized = poisson_ratio_table("lps");
    let nonlinear = poisson_ratio_table("lps-nonlinear");
    for ((case, a), (_, b)) in nonlinear.iter().zip(&linearized) {
        assert!(
            (a - b).abs() < 1e-3,
            "{case}: nonlinear {a:.5}, linearized {b:.5}"
        );
    }
}

/// The sweep of `law` over dimensions and Poisson ratios: prints its table, asserts the
/// bands, and returns each case's simulated ratio.
fn poisson_ratio_table(law: &str) -> Vec<(String, f64)> {
    println!("| law | dimension | nu | continuum | lattice sum | simulated |");
    println!("|---|---|---|---|---|---|");
    let mut failures = Vec::new();
    let mut ratios = Vec::new();
    for dim in ["plane-stress", "plane-strain", "3d"] {
        for nu in [0.0, 0.2, 0.3, 0.45] {
            let (p, u) = relax(&lps_bar(law, dim, nu), &[]);
            let lat = lattice_constants(
                &p.material,
                p.body.dx,
                p.body.thickness,
                p.model.discretization.partial_volume,
            );
            let s = middle_strains(&p, &u, 0.5);
            let ratio = -s.lateral / s.axial;
            let cont = if dim == "plane-strain" {
                nu / (1.0 - nu)
            } else {
                nu
            };
            println!(
                "| {law} | {dim} | {nu} | {cont:.4} | {:.4} | {ratio:.4} |",
                lat.lateral_ratio
            );
            if (ratio - lat.lateral_ratio).abs() > 0.01 || (ratio - cont).abs() > 0.05 {
                failures.push(format!(
                    "{law} {dim} nu {nu}: {ratio:.4} (lattice {:.4}, continuum {cont:.4})",
                    lat.lateral_ratio
                ));
            }
            ratios.push((format!("{dim} nu {nu}"), ratio));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    ratios
}
