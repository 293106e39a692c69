//! The nonlinear ordinary state-based model (`model = "lps-nonlinear"`, `docs/materials.md`)
//! on `cpu-loop`:
//!
//! - its forces and dilatation equal a direct computation written plainly here (brute-force
//!   families, `beta`, `omega`, `m_i`, `theta_i = (d / m_i) sum omega beta V x (|y| - x)`,
//!   `t = omega [alpha e + (d K_d / m - alpha / d) x theta]` along `y / |y|`) to round-off:
//!   1e-12 relative to the largest force, in f64, at strains of a few percent;
//! - in the small-strain limit it tends to the linearized model (`lps`) at the rate of the
//!   strain: the relative difference of the forces is O(strain), so shrinking the
//!   displacement a hundredfold shrinks it about a hundredfold (between 30x and 300x
//!   asserted), and at strain 1e-7 it is under 1e-5;
//! - a large rigid rotation gives no force (the linearized model's does);
//! - in subdomains (`PartitionedCpu`) it runs bitwise as in core: forces, bonds broken,
//!   damage and dilatation, and a damaging explicit run;
//! - the matrix backends refuse it, naming the backends that run it.

mod common;

use peridot::backend::partitioned::PartitionedCpu;
use peridot::backend::{self, BackendKind, CpuLoop};
use peridot::dynamics::Forces;
use peridot::setup::Problem;
use std::sync::Arc;

/// A small plate (2D) or cube (3D) of `law` with Poisson ratio `nu`.
fn model(dim: &str, law: &str, nu: f64, extra: &str) -> String {
    let (geometry, thick) = if dim == "3d" {
        (
            "box = [{ min = [0, 0, 0], max = [0.005, 0.005, 0.004] }]",
            "",
        )
    } else {
        (
            "box = [{ min = [0, 0], max = [0.008, 0.006] }]",
            "thickness = 1e-3",
        )
    };
    format!(
        "{}{extra}\n[discretization]\ndimension = \"{dim}\"\ndx = 1e-3\nhorizon_factor = 3.015\n\
         {thick}\n[geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 1\n",
        common::material(law, Some(nu))
    )
}

/// A deterministic displacement field: a homogeneous stretch and shear of `scale`, a
/// rotation by `angle` about z, and a random part of `scale * dx`.
fn displacement(p: &Problem, scale: f64, angle: f64, seed: u64) -> Vec<f64> {
    let d = p.dim();
    let mut rng = common::Rng(seed);
    let (c, s) = (angle.cos(), angle.sin());
    let mut u = vec![0.0; p.body.len() * d];
    for (i, x) in p.body.positions.iter().enumerate() {
        let g = [
            [scale, 0.5 * scale, 0.0],
            [0.2 * scale, -0.7 * scale, 0.3 * scale],
            [0.0, 0.4 * scale, 0.6 * scale],
        ];
        // y = R (X + G X), u = y - X
        let v: Vec<f64> = (0..3)
            .map(|r| x[r] + (0..3).map(|k| g[r][k] * x[k]).sum::<f64>())
            .collect();
        let y = [c * v[0] - s * v[1], s * v[0] + c * v[1], v[2]];
        for k in 0..d {
            u[d * i + k] = y[k] - x[k] + scale * p.body.dx * (rng.unit() - 0.5);
        }
    }
    u
}

/// The direct computation: `(force density, dilatation)` of every node, written from the
/// formulas with nothing of the library but the body (positions, volumes, horizon, spacing).
fn direct(
    p: &Problem,
    u: &[f64],
    nu: f64,
    omega_one: bool,
    linear_pv: bool,
) -> (Vec<f64>, Vec<f64>) {
    let (d, n) = (p.dim(), p.body.len());
    let (pos, vol) = (&p.body.positions, &p.body.volumes);
    let (delta, dx) = (p.body.delta, p.body.dx);
    let e_mod = p.material.youngs_modulus;
    let g = e_mod / (2.0 * (1.0 + nu));
    let (kd, alpha_factor) = match p.model.discretization.dimension {
        peridot::model::Dimension::ThreeD => (e_mod / (3.0 * (1.0 - 2.0 * nu)), 15.0),
        peridot::model::Dimension::PlaneStrain => {
            (e_mod / (2.0 * (1.0 + nu) * (1.0 - 2.0 * nu)), 8.0)
        }
        peridot::model::Dimension::PlaneStress => (e_mod / (2.0 * (1.0 - nu)), 8.0),
    };
    let radius = if linear_pv { delta + 0.5 * dx } else { delta };
    let beta = |x: f64| {
        if !linear_pv || x <= delta - 0.5 * dx {
            1.0
        } else {
            ((delta + 0.5 * dx - x) / dx).clamp(0.0, 1.0)
        }
    };
    let omega = |x: f64| if omega_one { 1.0 } else { delta / x };
    let disp = |i: usize, k: usize| if k < d { u[d * i + k] } else { 0.0 };
    // families by brute force
    let family: Vec<Vec<usize>> = (0..n)
        .map(|i| {
            (0..n)
                .filter(|&j| {
                    let r2: f64 = (0..d).map(|k| (pos[j][k] - pos[i][k]).powi(2)).sum();
                    j != i && r2 <= radius * radius
                })
                .collect()
        })
        .collect();
    let xi = |i: usize, j: usize| [0, 1, 2].map(|k| pos[j][k] - pos[i][k]);
    let len = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    let y = |i: usize, j: usize| {
        let x = xi(i, j);
        [0, 1, 2].map(|k| x[k] + disp(j, k) - disp(i, k))
    };
    let m: Vec<f64> = (0..n)
        .map(|i| {
            family[i]
                .iter()
                .map(|&j| {
                    let x = len(xi(i, j));
                    omega(x) * x * x * beta(x) * vol[j]
                })
                .sum()
        })
        .collect();
    let theta: Vec<f64> = (0..n)
        .map(|i| {
            let sum: f64 = family[i]
                .iter()
                .map(|&j| {
                    let x = len(xi(i, j));
                    let e = len(y(i, j)) - x;
                    omega(x) * beta(x) * vol[j] * x * e
                })
                .sum();
            d as f64 * sum / m[i]
        })
        .collect();
    let dd = d as f64;
    // t_ij without the influence function: alpha_i e + (d K_d / m_i - alpha_i / d) x theta_i
    let t = |i: usize, x: f64, e: f64| {
        let alpha = alpha_factor * g / m[i];
        alpha * e + (dd * kd / m[i] - alpha / dd) * x * theta[i]
    };
    let mut force = vec![0.0; n * d];
    for i in 0..n {
        for &j in &family[i] {
            let x = len(xi(i, j));
            let yv = y(i, j);
            let ly = len(yv);
            let e = ly - x;
            let scalar = omega(x) * (t(i, x, e) + t(j, x, e)) * beta(x) * vol[j];
            for k in 0..d {
                force[d * i + k] += scalar * yv[k] / ly;
            }
        }
    }
    (force, theta)
}

fn largest(v: &[f64]) -> f64 {
    v.iter().fold(0.0f64, |m, x| m.max(x.abs()))
}

fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()))
}

/// Forces and dilatation of `cpu-loop` at `u`.
fn cpu(p: &Arc<Problem>, u: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let mut backend = CpuLoop::<f64>::new(p.clone());
    let mut f = vec![0.0; u.len()];
    backend.internal_force(u, &mut f).unwrap();
    let mut theta = vec![0.0; p.body.len()];
    assert!(backend.dilatation(u, &mut theta).unwrap());
    (f, theta)
}

/// At strains of a few percent and a rotation of 0.4 rad, the backend equals the direct
/// computation to 1e-12 of the largest force (dilatation: of the largest dilatation). The
/// cases cover 2D and 3D, both influence functions and both partial-volume choices.
#[test]
fn forces_equal_a_direct_computation() {
    for (dim, nu, extra, omega_one, linear_pv) in [
        ("plane-strain", 0.3, "", false, false),
        ("plane-stress", 0.2, "influence = \"one\"\n", true, false),
        ("3d", 0.3, "", false, false),
        ("3d", 0.15, "influence = \"one\"\n", true, true),
    ] {
        let mut text = model(dim, "lps-nonlinear", nu, extra);
        if linear_pv {
            text = text.replace(
                "horizon_factor",
                "partial_volume = \"linear\"\nhorizon_factor",
            );
        }
        let p = Arc::new(common::problem(&text, &[]));
        let u = displacement(&p, 0.02, 0.4, 7);
        let (f, theta) = cpu(&p, &u);
        let (f_ref, theta_ref) = direct(&p, &u, nu, omega_one, linear_pv);
        let (ef, et) = (
            max_diff(&f, &f_ref) / largest(&f_ref),
            max_diff(&theta, &theta_ref) / largest(&theta_ref),
        );
        println!("{dim} nu {nu}: force {ef:.2e}, dilatation {et:.2e} (relative)");
        assert!(
            ef < 1e-12 && et < 1e-12,
            "{dim} nu {nu}: force {ef:.2e}, dilatation {et:.2e} (relative)"
        );
    }
}

/// The nonlinear and linearized models agree to O(strain): a hundredfold smaller
/// displacement gives a hundredfold smaller relative difference (30x to 300x asserted), and
/// at strain 1e-7 the difference is under 1e-5 of the largest force.
#[test]
fn small_strains_give_the_linearized_forces() {
    for (dim, nu) in [("plane-stress", 0.25), ("3d", 0.3)] {
        let nl = Arc::new(common::problem(&model(dim, "lps-nonlinear", nu, ""), &[]));
        let lin = Arc::new(common::problem(&model(dim, "lps", nu, ""), &[]));
        let rel = |scale: f64| {
            let u = displacement(&nl, scale, 0.0, 11);
            let (f_nl, _) = cpu(&nl, &u);
            let (f_lin, _) = cpu(&lin, &u);
            max_diff(&f_nl, &f_lin) / largest(&f_lin)
        };
        let (small, larger) = (rel(1e-7), rel(1e-5));
        println!("{dim}: relative difference {small:.2e} at strain 1e-7, {larger:.2e} at 1e-5");
        assert!(
            small < 1e-5,
            "{dim}: relative difference {small:.2e} at strain 1e-7"
        );
        let ratio = larger / small;
        assert!(
            (30.0..300.0).contains(&ratio),
            "{dim}: difference {small:.2e} at 1e-7, {larger:.2e} at 1e-5 (ratio {ratio:.1})"
        );
    }
}

/// A rigid rotation by 0.5 rad and a translation: no force in the nonlinear model (under
/// 1e-9 of the force a strain of 1e-3 gives, the round-off of `|y| - x` at this rotation),
/// while the linearized model answers with forces of the order of that of a strain of 0.1.
#[test]
fn a_large_rotation_gives_no_force() {
    for dim in ["plane-strain", "3d"] {
        let nl = Arc::new(common::problem(&model(dim, "lps-nonlinear", 0.3, ""), &[]));
        let lin = Arc::new(common::problem(&model(dim, "lps", 0.3, ""), &[]));
        let d = nl.dim();
        let (c, s) = (0.5f64.cos(), 0.5f64.sin());
        let mut u = vec![0.0; nl.body.len() * d];
        for (i, x) in nl.body.positions.iter().enumerate() {
            let y = [c * x[0] - s * x[1] + 1e-3, s * x[0] + c * x[1] - 2e-3, x[2]];
            for k in 0..d {
                u[d * i + k] = y[k] - x[k];
            }
        }
        let scale = nl.material.youngs_modulus * 1e-3 / nl.body.dx;
        let (f_nl, theta) = cpu(&nl, &u);
        println!("{dim}: |L| {:.2e} of {scale:.2e}", largest(&f_nl));
        assert!(
            largest(&f_nl) < 1e-9 * scale,
            "{dim}: |L| {:.2e}",
            largest(&f_nl)
        );
        assert!(
            largest(&theta) < 1e-12,
            "{dim}: theta {:.2e}",
            largest(&theta)
        );
        let (f_lin, _) = cpu(&lin, &u);
        assert!(
            largest(&f_lin) > 10.0 * scale,
            "{dim}: linearized |L| {:.2e}",
            largest(&f_lin)
        );
    }
}

/// `cpu-matrix` (and `gpu-matrix`, which shares the check) refuse the nonlinear model with an
/// error naming the backends that run it; `cpu-loop` runs it.
#[test]
fn the_matrix_backends_refuse_it() {
    let p = Arc::new(common::problem(
        &model("plane-stress", "lps-nonlinear", 0.3, ""),
        &[],
    ));
    for kind in [BackendKind::CpuMatrix, BackendKind::GpuMatrix] {
        let err = backend::create::<f64>(kind, p.clone(), None)
            .err()
            .unwrap_or_else(|| panic!("{} ran lps-nonlinear", kind.name()))
            .to_string();
        assert!(
            err.contains(kind.name()) && err.contains("cpu-loop and gpu-loop"),
            "{err}"
        );
    }
    assert!(backend::create::<f64>(BackendKind::CpuLoop, p, None).is_ok());
}

/// Subdomains on the CPU equal the in-core loop bitwise (the same bond loop per subdomain):
/// forces and breaking at damaging fields for 1, 3 and 8 subdomains, and a 40-step damaging
/// explicit run that breaks the same bonds and ends in the same state.
#[test]
fn subdomains_run_it_bitwise_as_in_core() {
    for dim in ["plane-strain", "3d"] {
        let problem = common::partition_bar("lps-nonlinear", dim, 40);
        for count in [1, 3, 8] {
            let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
            let mut part = PartitionedCpu::<f64>::new(&problem, count).unwrap();
            let case = format!("lps-nonlinear {dim}, {count} subdomains");
            common::check_partitioned(&problem, &mut core, &mut part, common::BITWISE, &case);
        }
        let mut core = CpuLoop::<f64>::new(Arc::new(problem.clone()));
        let (s_core, b_core) = common::explicit_run(&problem, &mut core);
        assert!(b_core > 0, "{dim}: the run breaks bonds");
        let mut part = PartitionedCpu::<f64>::new(&problem, 4).unwrap();
        let (s_part, b_part) = common::explicit_run(&problem, &mut part);
        assert_eq!(b_part, b_core, "{dim}: bonds broken");
        assert_eq!(part.bond_status().unwrap(), core.bond_status().unwrap());
        assert_eq!(s_part.u, s_core.u, "{dim}: displacement after 40 steps");
    }
}
