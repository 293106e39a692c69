//! Bond breaking and local damage (`theory.md` sections 1 and 2).

mod common;

use peridot::backend::CpuLoop;
use peridot::dynamics::Forces;
use std::sync::Arc;

fn plate(dim: &str, extra: &str) -> String {
    let (geometry, thick) = if dim == "3d" {
        (
            "box = [{ min = [-0.01, -0.01, -0.01], max = [0.01, 0.01, 0.01] }]",
            "",
        )
    } else {
        (
            "box = [{ min = [-0.02, -0.02], max = [0.02, 0.02] }]",
            "thickness = 1e-3",
        )
    };
    format!(
        "{}critical_stretch = 0.01\n[discretization]\ndimension = \"{dim}\"\ndx = 1e-3\n\
         horizon_factor = 3.015\n{thick}\n[geometry]\n{geometry}\n{extra}\n\
         [solver]\nkind = \"explicit\"\nsteps = 1\n",
        common::material("pmb", None)
    )
}

fn nearest(p: &peridot::setup::Problem, x: [f64; 3]) -> usize {
    (0..p.body.len())
        .min_by(|&i, &j| {
            let d = |k: usize| {
                (0..3)
                    .map(|c| (p.body.positions[k][c] - x[c]).powi(2))
                    .sum::<f64>()
            };
            d(i).total_cmp(&d(j))
        })
        .unwrap()
}

/// A node next to a straight cut between two lattice rows loses 11 of its 28 bonds in 2D and
/// 47 of 122 in 3D at delta = 3.015 dx (theory.md section 1); with beta = 1 and equal volumes
/// the damage is exactly that fraction (round-off tolerance 1e-14); intact nodes have 0.
#[test]
fn damage_next_to_a_straight_cut() {
    for (dim, crack, expected) in [
        ("plane-stress", "[[precrack]]\nstart = [-0.03, 0.0]\nend = [0.03, 0.0]", 11.0 / 28.0),
        (
            "3d",
            "[[precrack]]\norigin = [-0.02, -0.02, 0.0]\nedge1 = [0.04, 0, 0]\nedge2 = [0, 0.04, 0]",
            47.0 / 122.0,
        ),
    ] {
        let p = Arc::new(common::problem(&plate(dim, crack), &[]));
        let next = nearest(&p, [0.0005, 0.0005, 0.0005]);
        let far = nearest(&p, [0.0005, 0.0085, 0.0085]);
        let mut phi = vec![0.0; p.body.len()];
        CpuLoop::<f64>::new(p.clone()).damage(&mut phi).unwrap();
        assert!((phi[next] - expected).abs() < 1e-14, "{dim}: phi = {}", phi[next]);
        if dim == "3d" {
            // the far node is 8.5 dx from the cut in z as well: a full, intact family
            assert_eq!(phi[far], 0.0, "{dim}: intact node damaged");
        }
    }
}

/// A bond stretched past the critical stretch breaks, and stays broken when the stretch is
/// removed (damage is irreversible); bonds below it are untouched.
#[test]
fn bonds_break_past_the_critical_stretch_and_stay_broken() {
    for law in ["pmb", "pmb-linear"] {
        let text = plate("plane-stress", "").replace("\"pmb\"", &format!("\"{law}\""));
        let p = Arc::new(common::problem(&text, &[]));
        let mut backend = CpuLoop::<f64>::new(p.clone());
        // Uniform strain 0.9 s0 along x: no bond reaches s0 (its stretch is eps n_x^2).
        let strain = |eps: f64| -> Vec<f64> {
            p.body
                .positions
                .iter()
                .flat_map(|x| [eps * x[0], 0.0])
                .collect()
        };
        assert_eq!(
            backend.break_bonds(&strain(0.009)).unwrap(),
            0,
            "{law}: broke below s0"
        );
        // 1.1 s0: every bond along x (n_x = 1) now exceeds s0 and breaks.
        let broken = backend.break_bonds(&strain(0.011)).unwrap();
        assert!(broken > 0, "{law}: nothing broke above s0");
        assert_eq!(backend.break_bonds(&strain(0.0)).unwrap(), 0);
        assert_eq!(backend.broken_bonds(), broken, "{law}: healed on unloading");
        let status = backend.bond_status().unwrap();
        let fam = &p.families;
        for i in 0..p.body.len() {
            for b in fam.range(i) {
                let j = fam.neighbors[b] as usize;
                let dx = p.body.positions[j][0] - p.body.positions[i][0];
                let dy = p.body.positions[j][1] - p.body.positions[i][1];
                let n2 = dx * dx / (dx * dx + dy * dy);
                // linearized stretch eps n_x^2: broken exactly where 0.011 n_x^2 > 0.01
                if law == "pmb-linear" {
                    assert_eq!(status[b] == 0, 0.011 * n2 > 0.01, "bond {i}->{j}");
                }
            }
        }
    }
}

/// The fused bond-break and force pass a time step uses gives exactly (bit for bit) what
/// breaking the bonds and then evaluating the forces in two calls gives, for every law, with
/// a no-fail zone whose bonds must survive.
#[test]
fn fused_break_and_force_equals_the_two_calls() {
    let no_fail = "[[region]]\nname = \"core\"\nshape = \"box\"\nmin = [-0.004, -0.004, -0.02]\n\
                   max = [0.004, 0.004, 0.02]\n[[boundary]]\nregion = \"core\"\nkind = \"no-fail\"";
    for dim in ["plane-stress", "3d"] {
        for law in ["pmb", "pmb-linear", "lps"] {
            let region = if dim == "3d" {
                no_fail.to_string()
            } else {
                no_fail
                    .replace("[-0.004, -0.004, -0.02]", "[-0.004, -0.004]")
                    .replace("[0.004, 0.004, 0.02]", "[0.004, 0.004]")
            };
            let model = if law == "lps" {
                format!("\"{law}\"\npoisson_ratio = 0.25")
            } else {
                format!("\"{law}\"")
            };
            let text = plate(dim, &region).replace("\"pmb\"", &model);
            let p = Arc::new(common::problem(&text, &[]));
            let d = p.dim();
            // Uniform strain of 2 s0 along x plus a ripple: many bonds break, not all.
            let u: Vec<f64> = p
                .body
                .positions
                .iter()
                .enumerate()
                .flat_map(|(i, x)| {
                    let r = 1e-6 * (i as f64 * 0.7).sin();
                    [0.02 * x[0] + r, r, r][..d].to_vec()
                })
                .collect();
            let mut fused = CpuLoop::<f64>::new(p.clone());
            let mut f1 = vec![0.0; u.len()];
            let broken = fused.break_bonds_and_force(&u, &mut f1).unwrap();
            let mut split = CpuLoop::<f64>::new(p.clone());
            assert_eq!(
                split.break_bonds(&u).unwrap(),
                broken,
                "{dim} {law}: broken count"
            );
            let mut f2 = vec![0.0; u.len()];
            split.internal_force(&u, &mut f2).unwrap();
            assert!(broken > 0, "{dim} {law}: nothing broke");
            assert_eq!(
                fused.bond_status().unwrap(),
                split.bond_status().unwrap(),
                "{dim} {law}: status"
            );
            let same = f1.iter().zip(&f2).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{dim} {law}: forces differ");
            // No bond with an end in the no-fail zone broke.
            let core = p.region("core");
            let status = fused.bond_status().unwrap();
            for &i in core {
                for b in p.families.range(i) {
                    assert_eq!(status[b], 1, "{dim} {law}: a no-fail bond broke");
                }
            }
        }
    }
}
