//! The softening damage laws of `[material]` (`damage_law = "bilinear" | "trilinear"`,
//! `docs/materials.md`) on `cpu-loop`, and the micromodulus given directly:
//!
//! - a single bond pulled, unloaded, compressed, reloaded and broken follows the law's
//!   force-stretch curve exactly (to round-off), unloading along the secant (irreversible
//!   damage);
//! - the work to failure of the laws derived from a fracture energy, integrated along the
//!   force the backend's law gives and put through the Silling-Askari integral over the bonds
//!   crossing a plane, equals the fracture energy given (to 1e-12), in 3D and both 2D cases;
//! - a plate stretched step by step carries a load that peaks and then falls (softening),
//!   and unloads along the secant;
//! - the other backends refuse the laws, bad keys are clear errors;
//! - a micromodulus equal to the one of a Young's modulus gives bitwise the same forces.

mod common;

use peridot::backend::partitioned::PartitionedCpu;
use peridot::backend::{self, BackendKind, CpuLoop};
use peridot::dynamics::Forces;
use peridot::material::constants::pmb_micromodulus;
use peridot::material::{Law, MaterialConstants};
use peridot::model::Dimension;
use peridot::setup::Problem;
use std::f64::consts::PI;
use std::sync::Arc;

/// Two nodes `dx` apart along x (horizon 1.5 dx: one bond each way), plane stress.
fn two_nodes(law: &str) -> Problem {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pair.csv"),
        "x,y,volume\n0,0,1e-9\n1e-3,0,1e-9\n",
    )
    .unwrap();
    let text = format!(
        "[material]\nmodel = \"pmb\"\nyoungs_modulus = 70e9\ndensity = 2500\n{law}\n\
         [discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\ndx = 1e-3\n\
         horizon_factor = 1.5\n[geometry]\npoints_csv = \"pair.csv\"\n[solver]\n\
         kind = \"explicit\"\nsteps = 1\n"
    );
    let model = peridot::model::parse(&text, "pair.toml", &[]).expect("valid model");
    Problem::build(model, dir.path()).expect("two nodes")
}

/// The envelope of a law written out plainly: force over `c` at stretch `s` (`s` up to `s0`,
/// straight lines through `(s0, s0)`, `(sk, beta s0)`, `(sc, 0)`, then 0).
fn envelope(s0: f64, sk: f64, beta: f64, sc: f64, s: f64) -> f64 {
    if s <= s0 {
        s
    } else if s <= sk {
        s0 + (beta * s0 - s0) * (s - s0) / (sk - s0)
    } else if s < sc {
        beta * s0 * (sc - s) / (sc - sk)
    } else {
        0.0
    }
}

/// `int_0^end f`, `f` straight between the `corners` (trapezoids on each piece: exact).
fn trapezoids(f: impl Fn(f64) -> f64, end: f64, corners: &[f64]) -> f64 {
    let mut points = vec![0.0];
    points.extend(corners.iter().copied().filter(|&c| c < end));
    points.push(end);
    points
        .windows(2)
        .map(|w| 0.5 * (w[1] - w[0]) * (f(w[0]) + f(w[1])))
        .sum()
}

/// Node 1 of [`two_nodes`] pulled to stretch `s` along x (node 0 fixed): the x force density
/// on node 1 after one evaluation, and the bond's damage.
fn pull(backend: &mut CpuLoop<f64>, s: f64) -> (f64, f64) {
    let u = [0.0, 0.0, s * 1e-3, 0.0];
    let mut f = [0.0; 4];
    backend.break_bonds_and_force(&u, &mut f).unwrap();
    let d = backend
        .bond_damage()
        .unwrap()
        .expect("a softening law keeps damage")[1];
    (f[2], d)
}

/// A bond loaded into softening, unloaded to compression, reloaded past its previous peak
/// and broken: the force is `-c V (envelope)` on the way up, `(1 - d) c s` with the damage of
/// the largest stretch so far on the way back, and 0 once broken, to 1e-12 of the peak force
/// (round-off of the stretch and the products). The damage never decreases.
#[test]
fn a_bond_follows_the_law_and_unloads_along_the_secant() {
    let (s0, sk, beta, sc) = (1e-3, 2e-3, 0.25, 6e-3);
    let laws = [
        (
            "damage_law = \"bilinear\"\ncritical_stretch = 1e-3\nfinal_stretch = 6e-3",
            (s0, sc, 0.0, sc),
        ),
        (
            "damage_law = \"trilinear\"\ncritical_stretch = 1e-3\nkink_stretch = 2e-3\n\
             kink_force_ratio = 0.25\nfinal_stretch = 6e-3",
            (s0, sk, beta, sc),
        ),
    ];
    let path = [
        0.5e-3, 1e-3, 1.5e-3, 2e-3, 3e-3, 1e-3, 0.0, -1e-3, 2e-3, 3e-3, 4e-3, 5.5e-3, 5.9e-3,
        6.5e-3, 2e-3, -1e-3,
    ];
    for (keys, (s0, sk, beta, sc)) in laws {
        let p = Arc::new(two_nodes(keys));
        assert_eq!(p.families.bonds(), 2, "one bond each way");
        let Law::Pmb { c, .. } = p.material.law else {
            unreachable!()
        };
        let cv = c * 1e-9;
        let mut backend = CpuLoop::<f64>::new(p.clone());
        let (mut peak, mut last_d) = (f64::NEG_INFINITY, 0.0);
        for &s in &path {
            let (f, d) = pull(&mut backend, s);
            peak = peak.max(s);
            let expect = if peak >= sc {
                0.0
            } else {
                let env = envelope(s0, sk, beta, sc, peak.max(s0));
                let kept = if peak <= s0 { 1.0 } else { env / peak };
                -cv * kept * s
            };
            assert!(
                (f - expect).abs() <= 1e-12 * cv * s0,
                "{keys}: stretch {s} (peak {peak}): force {f}, law {expect}"
            );
            assert!(d >= last_d, "damage never decreases ({last_d} -> {d})");
            last_d = d;
            if s == 0.0 {
                // unloaded from 3e-3: no strain energy left; dissipated the envelope's work to
                // the peak less the secant's triangle, for the pair (two directed bonds, each
                // half of `w x` per unit volume), to 1e-12
                let u = [0.0; 4];
                let stored = backend.strain_energy(&u).unwrap();
                let lost = backend.dissipated_energy(&u);
                let along = trapezoids(|s| envelope(s0, sk, beta, sc, s), peak, &[s0, sk]);
                let expect = cv * 1e-3 * 1e-9 * (along - 0.5 * (1.0 - d) * peak * peak);
                assert_eq!(stored, 0.0);
                assert!(
                    (lost - expect).abs() <= 1e-12 * expect,
                    "{keys}: {lost} vs {expect}"
                );
            }
        }
        // broken: the whole work to failure is dissipated
        let lost = backend.dissipated_energy(&[0.0; 4]);
        let whole = cv * 1e-3 * 1e-9 * trapezoids(|s| envelope(s0, sk, beta, sc, s), sc, &[s0, sk]);
        assert!(
            (lost - whole).abs() <= 1e-12 * whole,
            "{keys}: {lost} vs {whole}"
        );
        assert_eq!(last_d, 1.0);
        assert_eq!(backend.bond_status().unwrap(), vec![0, 0], "broken at sc");
        assert_eq!(backend.broken_bonds(), 2);
    }
}

/// Gauss-Legendre on [a, b] with 20 points (exact for polynomials to degree 39; the
/// integrands below are polynomials or smooth on the interval).
fn gauss(a: f64, b: f64, f: impl Fn(f64) -> f64) -> f64 {
    let n = 20;
    let mut sum = 0.0;
    for k in 1..=n {
        // Newton on P_n from the Chebyshev guess
        let mut x = (PI * (k as f64 - 0.25) / (n as f64 + 0.5)).cos();
        let mut dp = 0.0;
        for _ in 0..100 {
            let (mut p0, mut p1) = (1.0, x);
            for m in 2..=n {
                let p2 = ((2 * m - 1) as f64 * x * p1 - (m - 1) as f64 * p0) / m as f64;
                (p0, p1) = (p1, p2);
            }
            dp = n as f64 * (x * p1 - p0) / (x * x - 1.0);
            let dx = p1 / dp;
            x -= dx;
            if dx.abs() < 1e-16 {
                break;
            }
        }
        let w = 2.0 / ((1.0 - x * x) * dp * dp);
        sum += w * f(0.5 * (a + b) + 0.5 * (b - a) * x);
    }
    0.5 * (b - a) * sum
}

/// The energy to separate a body along a plane when each bond of length `xi` takes
/// `c xi W` J/m^6 to fail (Silling and Askari's integral: the bonds from the half-space
/// below that cross the plane, over the distance `z` below it), J/m^2:
/// 3D `2 pi int_0^delta int_z^delta int_0^acos(z/xi) c xi W xi^2 sin(phi) dphi dxi dz`,
/// 2D `h int_0^delta int_z^delta 2 acos(z/xi) c xi W xi dxi dz`, by quadrature.
fn separation_energy(dim: Dimension, c: f64, w: f64, delta: f64, h: f64) -> f64 {
    match dim {
        Dimension::ThreeD => gauss(0.0, delta, |z| {
            gauss(z, delta, |xi| {
                2.0 * PI * c * xi * w * xi * xi * (1.0 - z / xi)
            })
        }),
        // (z = xi cos(t): the integrand is smooth in t)
        _ => gauss(0.0, delta, |xi| {
            gauss(0.0, 0.5 * PI, |t| {
                h * 2.0 * t * c * xi * w * xi * xi * t.sin()
            })
        }),
    }
}

/// The work to failure of a bond per unit `c` and length, along the force the backend's law
/// gives (`(1 - D(s)) s`), by the trapezoid rule on a grid with the law's corners as nodes
/// (exact on straight lines, to round-off).
fn work_of(m: &MaterialConstants) -> f64 {
    let law = m.softening.expect("softening");
    let force = |s: f64| (1.0 - law.damage(s)) * s;
    let corners = [0.0, law.s0, law.kink_stretch, law.final_stretch];
    let mut w = 0.0;
    for pair in corners.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let n = 64;
        for k in 0..n {
            let (x0, x1) = (
                a + (b - a) * k as f64 / n as f64,
                a + (b - a) * (k + 1) as f64 / n as f64,
            );
            // (just inside each end: the law's value at a corner is the limit from inside)
            let eps = 1e-15 * b;
            w += 0.5 * (x1 - x0) * (force(x0 + eps) + force(x1 - eps));
        }
    }
    w
}

/// The fracture energy gives the softening laws' missing stretch so that their work to
/// failure, through the Silling-Askari integral, is that energy: 1e-12 relative (the
/// quadratures are exact to round-off; the trapezoids' corner offsets are 1e-15 relative).
/// The same integral with the brittle law's `s0^2 / 2` gives the energy back too, so the
/// integral is that of `theory.md`'s critical-stretch formulas.
#[test]
fn the_fracture_energy_is_the_work_to_failure() {
    let g0 = 120.0;
    for dim in ["3d", "plane-stress", "plane-strain"] {
        for keys in [
            "damage_law = \"bilinear\"\ncritical_stretch = 2e-4",
            "damage_law = \"bilinear\"\nfinal_stretch = 4e-3",
            "damage_law = \"trilinear\"\ncritical_stretch = 2e-4\nkink_stretch = 5e-4",
            "damage_law = \"trilinear\"\ncritical_stretch = 2e-4\nkink_stretch = 5e-4\n\
             kink_force_ratio = 0.4",
            "",
        ] {
            let (geometry, thick) = match dim {
                "3d" => (
                    "box = [{ min = [0, 0, 0], max = [0.004, 0.004, 0.004] }]",
                    "",
                ),
                _ => (
                    "box = [{ min = [0, 0], max = [0.004, 0.004] }]",
                    "thickness = 2e-3\n",
                ),
            };
            let text = format!(
                "[material]\nmodel = \"pmb\"\nyoungs_modulus = 30e9\ndensity = 2400\n\
                 fracture_energy = {g0}\n{keys}\n[discretization]\ndimension = \"{dim}\"\n\
                 {thick}dx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n{geometry}\n\
                 [solver]\nkind = \"explicit\"\nsteps = 1\n"
            );
            let p = common::problem(&text, &[]);
            let m = &p.material;
            let Law::Pmb { c, .. } = m.law else {
                unreachable!()
            };
            let w = match m.softening {
                Some(law) => {
                    assert!(law.disorder().is_none(), "{dim} {keys}: {law:?}");
                    let w = work_of(m);
                    assert!((w - law.work()).abs() <= 1e-12 * w, "{w} {}", law.work());
                    w
                }
                None => 0.5 * m.critical_stretch.unwrap().powi(2),
            };
            let g = separation_energy(m.dimension, c, w, p.body.delta, p.body.thickness);
            assert!(
                (g - g0).abs() <= 1e-12 * g0,
                "{dim} {keys}: work to failure gives {g} J/m^2, not {g0}"
            );
        }
    }
}

/// A plate (`pmb-linear`, so a bond's stretch is `eps cos^2` exactly) stretched uniformly
/// along x, step by step: the load across its middle (the force density times volume summed
/// over the right half: the bonds within it cancel pairwise) rises linearly, peaks past the
/// stretch `s0` and falls (bonds soften one angle after another) to below half its peak at
/// the final stretch; unloaded from past the peak, it goes back along the secant (the load
/// at half the stretch is half the load, to 1e-12: damage frozen, force linear in the
/// stretch). The brittle law with the same `s0` peaks lower (it drops every bond at once).
#[test]
fn a_stretched_plate_softens_after_its_peak() {
    let plate = |keys: &str| {
        let text = format!(
            "[material]\nmodel = \"pmb-linear\"\nyoungs_modulus = 30e9\ndensity = 2400\n{keys}\n\
             [discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\ndx = 1e-3\n\
             horizon_factor = 3.015\n[geometry]\n\
             box = [{{ min = [0, 0], max = [0.02, 0.01] }}]\n[solver]\nkind = \"explicit\"\n\
             steps = 1\n"
        );
        Arc::new(common::problem(&text, &[]))
    };
    let load = |p: &Problem, b: &mut CpuLoop<f64>, eps: f64| {
        let d = p.dim();
        let mut u = vec![0.0; p.body.len() * d];
        for (i, x) in p.body.positions.iter().enumerate() {
            u[d * i] = eps * x[0];
        }
        let mut f = vec![0.0; u.len()];
        b.break_bonds_and_force(&u, &mut f).unwrap();
        (0..p.body.len())
            .filter(|&i| p.body.positions[i][0] > 0.01)
            .map(|i| f[d * i] * p.body.volumes[i])
            .sum::<f64>()
    };
    let (s0, sc) = (1e-3, 5e-3);
    let soft = plate(&format!(
        "damage_law = \"bilinear\"\ncritical_stretch = {s0}\nfinal_stretch = {sc}"
    ));
    let brittle = plate(&format!("critical_stretch = {s0}"));
    let (mut b, mut r) = (CpuLoop::new(soft.clone()), CpuLoop::new(brittle.clone()));
    let steps: Vec<f64> = (1..=60).map(|k| k as f64 * 1e-4).collect();
    let curve: Vec<f64> = steps.iter().map(|&e| -load(&soft, &mut b, e)).collect();
    let brittle_curve: Vec<f64> = steps.iter().map(|&e| -load(&brittle, &mut r, e)).collect();
    let (k_peak, peak) = curve
        .iter()
        .enumerate()
        .fold((0, 0.0), |m, (k, &v)| if v > m.1 { (k, v) } else { m });
    println!(
        "peak load {peak:.4e} N at stretch {:.1e}; at 6e-3 {:.4e} N; brittle peak {:.4e} N",
        steps[k_peak],
        curve[59],
        brittle_curve.iter().cloned().fold(0.0, f64::max)
    );
    // linear while every bond is elastic (stretch eps cos^2 <= eps <= s0)
    for k in 0..10 {
        let expect = curve[0] * (k + 1) as f64;
        assert!(
            (curve[k] - expect).abs() <= 1e-12 * expect,
            "elastic at {k}"
        );
    }
    assert!(
        steps[k_peak] > s0,
        "the peak comes after s0: {}",
        steps[k_peak]
    );
    assert!(curve[59] < 0.5 * peak, "the load falls after its peak");
    for k in k_peak + 1..60 {
        assert!(
            curve[k] <= curve[k - 1] * (1.0 + 1e-12),
            "falls monotonically at {k}"
        );
    }
    assert!(peak > brittle_curve.iter().cloned().fold(0.0, f64::max));
    // unloading along the secant from past the peak
    let mut un = CpuLoop::new(soft.clone());
    let eps = steps[k_peak + 5];
    for &e in steps.iter().take_while(|&&e| e <= eps) {
        load(&soft, &mut un, e);
    }
    let at = -load(&soft, &mut un, eps);
    let half = -load(&soft, &mut un, 0.5 * eps);
    assert!(
        (half - 0.5 * at).abs() <= 1e-12 * at,
        "secant: {half} vs {}",
        0.5 * at
    );
}

/// The backends that keep no damage per bond (the matrix form) refuse the laws, naming
/// cpu-loop (which runs them in core, in subdomains and on MPI ranks) and gpu-loop (in core
/// or in subdomains; its material checks pass: `tests/agreement.rs` compares it with cpu-loop
/// on a GPU, `tests/gpu/stream.rs` its subdomains with it); cpu-loop in subdomains builds;
/// bad keys are errors naming their field.
#[test]
fn other_backends_and_bad_keys_are_refused() {
    let text = |keys: &str, law: &str| {
        format!(
            "[material]\nmodel = \"{law}\"\nyoungs_modulus = 30e9\ndensity = 2400\n\
             poisson_ratio = 0.25\n{keys}\n[discretization]\ndimension = \"3d\"\ndx = 1e-3\n\
             horizon_factor = 3.015\n[geometry]\n\
             box = [{{ min = [0, 0, 0], max = [0.006, 0.004, 0.004] }}]\n[solver]\n\
             kind = \"explicit\"\nsteps = 1\n"
        )
    };
    let bilinear = "damage_law = \"bilinear\"\ncritical_stretch = 1e-3\nfinal_stretch = 4e-3";
    let p = Arc::new(common::problem(&text(bilinear, "pmb"), &[]));
    let runs_on = "cpu-loop and gpu-loop (in core, in subdomains, on MPI ranks)";
    for kind in [BackendKind::CpuMatrix, BackendKind::GpuMatrix] {
        let e = backend::create::<f64>(kind, p.clone(), None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("damage_law = \"bilinear\"")
                && e.contains(runs_on)
                && e.contains(kind.name()),
            "{e}"
        );
    }
    assert!(PartitionedCpu::<f64>::new(&p, 2).is_ok());
    for scheme in [backend::Scheme::GpuLoop, backend::Scheme::GpuLoopParts] {
        assert!(backend::check_material(&p, "gpu-loop", scheme).is_ok());
    }
    assert!(backend::create::<f64>(BackendKind::Auto, p, None).is_ok());
    let parse = |keys: &str, law: &str| {
        peridot::model::parse(&text(keys, law), "t.toml", &[])
            .err()
            .map(|e| e.to_string())
    };
    for (keys, law, field) in [
        (bilinear, "lps", "material.damage_law"),
        (
            "damage_law = \"bilinear\"\ncritical_stretch = 1e-3",
            "pmb",
            "material.damage_law",
        ),
        (
            "final_stretch = 4e-3\ncritical_stretch = 1e-3",
            "pmb",
            "material.final_stretch",
        ),
        (
            "damage_law = \"trilinear\"\ncritical_stretch = 1e-3\nfinal_stretch = 4e-3",
            "pmb",
            "material.damage_law",
        ),
        (
            "damage_law = \"trilinear\"\ncritical_stretch = 1e-3\nkink_stretch = 2e-3\n\
             final_stretch = 4e-3\nkink_force_ratio = 1.5",
            "pmb",
            "material.kink_force_ratio",
        ),
        (
            "damage_law = \"bilinear\"\ncritical_stretch = 1e-3\nfinal_stretch = 4e-3\n\
             kink_stretch = 2e-3",
            "pmb",
            "material.kink_stretch",
        ),
        (
            &format!("{bilinear}\ncritical_stretch_alpha = 0.25"),
            "pmb",
            "material.critical_stretch_alpha",
        ),
        ("micromodulus = 1e18", "pmb", "material.micromodulus"),
        ("micromodulus = 1e18", "lps", "material.micromodulus"),
    ] {
        let e = parse(keys, law).unwrap_or_else(|| panic!("{keys} accepted"));
        assert!(e.contains(field), "{keys}: {e}");
    }
    // both moduli: the error names both
    let e = parse("micromodulus = 1e18", "pmb").unwrap();
    assert!(
        e.contains("youngs_modulus") && e.contains("micromodulus"),
        "{e}"
    );
    // a final stretch below s0 (given, or from too small a fracture energy): refused with the
    // constants, naming the law
    for keys in [
        "damage_law = \"bilinear\"\ncritical_stretch = 4e-3\nfinal_stretch = 1e-3",
        "damage_law = \"bilinear\"\ncritical_stretch = 4e-3\nfracture_energy = 1e-3",
    ] {
        let model = peridot::model::parse(&text(keys, "pmb"), "t.toml", &[]).unwrap();
        let e = Problem::build(model, std::path::Path::new("."))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("material.damage_law") && e.contains("final stretch"),
            "{e}"
        );
    }
}

/// `micromodulus` equal (to the last bit) to the one `youngs_modulus` gives: the same
/// constants but the modulus (implied back to within 1e-15), bitwise the same forces and
/// bonds broken at a random displacement; `info`'s modulus is the implied one.
#[test]
fn the_micromodulus_given_directly_is_the_modulus_given() {
    for (dim, geometry, thick) in [
        (
            "3d",
            "box = [{ min = [0, 0, 0], max = [0.006, 0.004, 0.004] }]",
            "",
        ),
        (
            "plane-stress",
            "box = [{ min = [0, 0], max = [0.01, 0.006] }]",
            "thickness = 1e-3\n",
        ),
        (
            "plane-strain",
            "box = [{ min = [0, 0], max = [0.01, 0.006] }]",
            "thickness = 1e-3\n",
        ),
    ] {
        let text = |modulus: &str| {
            format!(
                "[material]\nmodel = \"pmb\"\n{modulus}\ndensity = 2400\ncritical_stretch = 1e-3\n\
                 [discretization]\ndimension = \"{dim}\"\n{thick}dx = 1e-3\nhorizon_factor = 3.015\n\
                 [geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 1\n"
            )
        };
        let by_e = common::problem(&text("youngs_modulus = 30e9"), &[]);
        let c = pmb_micromodulus(
            by_e.material.dimension,
            30e9,
            by_e.body.delta,
            by_e.body.thickness,
        );
        let by_c = common::problem(&text(&format!("micromodulus = {c:?}")), &[]);
        assert_eq!(by_c.material.law, by_e.material.law, "{dim}: the same c");
        let e = by_c.material.youngs_modulus;
        assert!(
            (e - 30e9).abs() <= 1e-15 * 30e9 * 4.0,
            "{dim}: implied E {e}"
        );
        let u: Vec<f64> = common::random_vector(by_e.body.len() * by_e.dim(), 7)
            .iter()
            .map(|x| 2e-3 * 1e-3 * x)
            .collect();
        let mut forces = Vec::new();
        for p in [by_e, by_c] {
            let mut b = CpuLoop::<f64>::new(Arc::new(p));
            let mut f = vec![0.0; u.len()];
            let broken = b.break_bonds_and_force(&u, &mut f).unwrap();
            forces.push((f.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), broken));
        }
        assert!(forces[0].1 > 0, "{dim}: the field breaks bonds");
        assert!(forces[0] == forces[1], "{dim}: forces differ");
    }
}

/// The two local damages: with equal volumes and no partial volumes (`beta = 1`) the
/// `beta V`-weighted `damage` equals the bond-count `damage_bond_count`, to 1e-15 (the same
/// fraction summed two ways); a softening bond counts by its damage `d` in both, a broken
/// one as 1; both are 0 on an intact body. A run writes both into its `.vtu`.
#[test]
fn the_two_damage_fractions_agree_where_they_should() {
    let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 30e9\ndensity = 2400\n\
                damage_law = \"bilinear\"\ncritical_stretch = 1e-3\nfinal_stretch = 3e-3\n\
                [discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\ndx = 1e-3\n\
                horizon_factor = 3.015\n[geometry]\n\
                box = [{ min = [0, 0], max = [0.012, 0.008] }]\n[solver]\nkind = \"explicit\"\n\
                steps = 1\n";
    let p = Arc::new(common::problem(text, &[]));
    let mut b = CpuLoop::<f64>::new(p.clone());
    let n = p.body.len();
    let count = |b: &CpuLoop<f64>| {
        let damage = b.bond_damage().unwrap();
        peridot::dynamics::forces::bond_count_damage(
            &p.families.offsets,
            &b.bond_status().unwrap(),
            damage.as_deref(),
        )
    };
    let mut phi = vec![0.0; n];
    b.damage(&mut phi).unwrap();
    assert!(phi.iter().all(|&v| v == 0.0) && count(&b).iter().all(|&v| v == 0.0));
    let u: Vec<f64> = common::random_vector(n * p.dim(), 11)
        .iter()
        .map(|x| 2.5e-3 * 1e-3 * x)
        .collect();
    let mut f = vec![0.0; u.len()];
    let broken = b.break_bonds_and_force(&u, &mut f).unwrap();
    let d = b.bond_damage().unwrap().unwrap();
    let partial = d.iter().filter(|&&v| v > 0.0 && v < 1.0).count();
    assert!(
        broken > 0 && partial > 0,
        "{broken} broken, {partial} softening"
    );
    b.damage(&mut phi).unwrap();
    let by_count = count(&b);
    // a plain count: a node's mean of d (1 for broken)
    for i in 0..n {
        let r = p.families.range(i);
        let plain = r.clone().map(|k| d[k]).sum::<f64>() / r.len() as f64;
        assert!((by_count[i] - plain).abs() <= 1e-15, "node {i}");
        assert!(
            (phi[i] - by_count[i]).abs() <= 1e-15,
            "node {i}: {} {}",
            phi[i],
            by_count[i]
        );
    }
    // through a run: both arrays in the snapshot
    let dir = tempfile::tempdir().unwrap();
    let opts = common::options(
        BackendKind::CpuLoop,
        peridot::Precision::F64,
        Some(dir.path()),
    );
    let run = peridot::solver::simulate::<f64>((*p).clone(), &opts).unwrap();
    assert_eq!(run.backend.name(), "cpu-loop");
    let vtu = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "vtu"))
        .expect("a snapshot");
    let head = String::from_utf8_lossy(&std::fs::read(vtu).unwrap()[..2000]).to_string();
    assert!(head.contains("Name=\"damage\"") && head.contains("Name=\"damage_bond_count\""));
}

/// The concrete beam in three-point bending (`models/concrete_beam_3pt_2d.toml`) at dx = 5
/// mm (400 nodes, 10 through the depth), its load probe (summed force against the midspan
/// deflection) read from `probes.csv`: the curve rises linearly, its secant stiffness at
/// 40% of the peak between 0.5 and 1 times the elastic beam's `48 E I / S^3` = 128.6 N/um
/// (below it: the shear deflection and the indentation of the supports and the load point,
/// which the beam formula leaves out; measured 86.6 N/um, 0.67), peaks (3.32 kN at 53 um,
/// row 74 of 141), then softens: the load at the end is below 70% of the peak (measured
/// 1.57 kN, 47%), and no probe interval loses more than 15% of the peak (a softening law's
/// bonds give their force up gradually, not at once as brittle bonds would; measured 3.4%).
#[test]
fn concrete_beam_rises_linearly_peaks_and_softens() {
    let text = include_str!("../models/concrete_beam_3pt_2d.toml");
    let dir = tempfile::tempdir().unwrap();
    let p = common::problem(
        text,
        &[
            "discretization.dx=5e-3",
            "solver.steps=14000",
            "output.probe_every=100",
        ],
    );
    let opts = common::options(
        BackendKind::CpuLoop,
        peridot::Precision::F64,
        Some(dir.path()),
    );
    peridot::solver::run::simulate::<f64>(p, &opts).expect("beam runs");
    let csv = std::fs::read_to_string(dir.path().join("probes.csv")).unwrap();
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let (cu, cf) = (col("load_uy"), col("load_fy"));
    let rows: Vec<(f64, f64)> = lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            (-v[cu], v[cf])
        })
        .collect();
    let (ipeak, &(wpeak, peak)) = (rows.iter().enumerate())
        .max_by(|a, b| a.1 .1.total_cmp(&b.1 .1))
        .unwrap();
    let k_beam = 48.0 * 30e9 * (0.05 * 0.05f64.powi(3) / 12.0) / 0.18f64.powi(3);
    let at = rows.iter().find(|r| r.1 > 0.4 * peak).unwrap();
    let k = at.1 / at.0;
    let end = rows.last().unwrap().1;
    let worst_drop = (rows.windows(2).map(|w| w[0].1 - w[1].1)).fold(0.0, f64::max) / peak;
    eprintln!(
        "peak {peak:.1} N at {:.2} um (row {ipeak} of {}), secant stiffness {:.1} N/um vs \
         beam {:.1} N/um, end {end:.1} N, largest drop {worst_drop:.3} of the peak",
        wpeak * 1e6,
        rows.len(),
        k * 1e-6,
        k_beam * 1e-6
    );
    assert!(
        k > 0.5 * k_beam && k < k_beam,
        "stiffness {k:e} vs {k_beam:e}"
    );
    assert!(ipeak + 5 < rows.len(), "the load peaks before the end");
    assert!(end < 0.7 * peak, "softens: end {end} N, peak {peak} N");
    assert!(
        worst_drop < 0.15,
        "a sudden drop of {worst_drop} of the peak"
    );
}
