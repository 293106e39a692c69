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

fn relax(text: &str, overrides: &[&str]) -> (Problem, Vec<f64>) {
    let problem = common::problem(text, overrides);
    let out = common::run::<f64>(problem.clone());
    assert_eq!(out.summary.converged, Some(true), "ADR did not converge");
    (problem, out.state.u)
}

#[test]
fn pmb_plate_matches_the_lattice_sums_within_one_percent() {
    let (p, u) = relax(PLATE, &[]);
    let lat = lattice_constants(&p.material, p.body.dx, p.body.thickness, p.model.discretization.partial_volume);
    let s = middle_strains(&p, &u, 0.5);
    let axial = P / lat.youngs_modulus;
    let lateral = -lat.lateral_ratio * axial;
    println!("axial {} vs {axial}, lateral {} vs {lateral}", s.axial, s.lateral);
    assert!((s.axial / axial - 1.0).abs() < 0.01, "axial {} vs lattice {axial}", s.axial);
    assert!((s.lateral / lateral - 1.0).abs() < 0.01, "lateral {} vs lattice {lateral}", s.lateral);
}
