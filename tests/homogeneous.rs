//! Interior nodes of a regular lattice under homogeneous deformation (`theory.md` section 3):
//! dilatation equals the trace of the strain, the net force vanishes (bonds `xi` and `-xi`
//! cancel, in the nonlinear models too), and rigid motions give no force. On a square or cubic lattice these hold exactly, so the tolerances are round-off:
//! 1e-12 relative in f64.

mod common;

use peridot::backend::CpuLoop;
use peridot::dynamics::Forces;
use std::sync::Arc;

fn lattice_model(dim: &str, law: &str, nu: Option<f64>) -> String {
    let (geometry, thick) = if dim == "3d" {
        (
            "box = [{ min = [0, 0, 0], max = [0.016, 0.016, 0.016] }]",
            "",
        )
    } else {
        (
            "box = [{ min = [0, 0], max = [0.02, 0.02] }]",
            "thickness = 1e-3",
        )
    };
    format!(
        "{}\n[discretization]\ndimension = \"{dim}\"\ndx = 1e-3\nhorizon_factor = 3.015\n{thick}\n\
         [geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 1\n",
        common::material(law, nu)
    )
}

/// Displacement `u = A X` for a 3x3 matrix `A`.
fn affine(positions: &[[f64; 3]], d: usize, a: [[f64; 3]; 3]) -> Vec<f64> {
    let mut u = vec![0.0; positions.len() * d];
    for (i, p) in positions.iter().enumerate() {
        for r in 0..d {
            u[d * i + r] = (0..3).map(|c| a[r][c] * p[c]).sum();
        }
    }
    u
}

/// Index of the node nearest the body's centre: its neighbours' families are full too (LPS
/// forces reach 2 delta through the dilatation), as the blocks are over 4 delta + dx wide.
fn centre_node(p: &peridot::setup::Problem) -> usize {
    let b = &p.body;
    let c: Vec<f64> = (0..3)
        .map(|k| 0.5 * (b.bbox_min[k] + b.bbox_max[k]))
        .collect();
    (0..b.len())
        .min_by(|&i, &j| {
            let di: f64 = (0..3).map(|k| (b.positions[i][k] - c[k]).powi(2)).sum();
            let dj: f64 = (0..3).map(|k| (b.positions[j][k] - c[k]).powi(2)).sum();
            di.total_cmp(&dj)
        })
        .unwrap()
}

const STRAIN: [[f64; 3]; 3] = [
    [1e-3, 2e-4, -3e-4],
    [2e-4, -5e-4, 1e-4],
    [-3e-4, 1e-4, 7e-4],
];

/// A force scale for "zero": the force one bond family would exert at this strain.
fn force_scale(p: &peridot::setup::Problem) -> f64 {
    p.material.youngs_modulus * 1e-3 / p.body.dx
}

#[test]
fn dilatation_is_the_trace_of_a_homogeneous_strain() {
    for dim in ["plane-stress", "plane-strain", "3d"] {
        let p = Arc::new(common::problem(&lattice_model(dim, "lps", Some(0.3)), &[]));
        let d = p.dim();
        let i = centre_node(&p);
        let u = affine(&p.body.positions, d, STRAIN);
        let mut theta = vec![0.0; p.body.len()];
        let mut backend = CpuLoop::<f64>::new(p.clone());
        assert!(backend.dilatation(&u, &mut theta).unwrap());
        let trace: f64 = (0..d).map(|k| STRAIN[k][k]).sum();
        assert!(
            (theta[i] - trace).abs() < 1e-12 * trace.abs().max(1e-3),
            "{dim}: theta {} vs trace {trace}",
            theta[i]
        );
    }
}

#[test]
fn homogeneous_strain_gives_no_net_force_on_an_interior_node() {
    for (dim, law, nu) in [
        ("plane-stress", "lps", Some(0.3)),
        ("3d", "lps", Some(0.2)),
        ("plane-strain", "lps-nonlinear", Some(0.3)),
        ("3d", "lps-nonlinear", Some(0.2)),
        ("plane-stress", "pmb-linear", None),
        ("3d", "pmb-linear", None),
    ] {
        let p = Arc::new(common::problem(&lattice_model(dim, law, nu), &[]));
        let d = p.dim();
        let i = centre_node(&p);
        let u = affine(&p.body.positions, d, STRAIN);
        let mut f = vec![0.0; u.len()];
        CpuLoop::<f64>::new(p.clone())
            .internal_force(&u, &mut f)
            .unwrap();
        let norm = (0..d).map(|k| f[d * i + k].powi(2)).sum::<f64>().sqrt();
        assert!(norm < 1e-12 * force_scale(&p), "{dim} {law}: |L| = {norm}");
    }
}

#[test]
fn rigid_motions_give_no_force() {
    let angle: f64 = 1e-3;
    let (c, s) = (angle.cos(), angle.sin());
    // Exact rotation about z (minus identity) for the nonlinear model, its linearization
    // (an antisymmetric gradient) for the linearized ones; plus a translation.
    let exact = [[c - 1.0, -s, 0.0], [s, c - 1.0, 0.0], [0.0, 0.0, 0.0]];
    let linear = [[0.0, -angle, 0.0], [angle, 0.0, 0.0], [0.0, 0.0, 0.0]];
    for (dim, law, nu) in [
        ("plane-stress", "pmb", None),
        ("3d", "pmb", None),
        ("plane-stress", "pmb-linear", None),
        ("plane-strain", "lps", Some(0.25)),
        ("3d", "lps", Some(0.3)),
        ("plane-stress", "lps-nonlinear", Some(0.2)),
        ("3d", "lps-nonlinear", Some(0.3)),
    ] {
        let p = Arc::new(common::problem(&lattice_model(dim, law, nu), &[]));
        let d = p.dim();
        let nonlinear = law == "pmb" || law == "lps-nonlinear";
        let grad = if nonlinear { exact } else { linear };
        let mut u = affine(&p.body.positions, d, grad);
        for (k, x) in u.iter_mut().enumerate() {
            *x += [1e-3, -2e-3, 5e-4][k % d];
        }
        let mut f = vec![0.0; u.len()];
        CpuLoop::<f64>::new(p.clone())
            .internal_force(&u, &mut f)
            .unwrap();
        let max = f.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        assert!(max < 1e-9 * force_scale(&p), "{dim} {law}: max |L| = {max}");
    }
}
