//! Several materials (`[[material]]`, `docs/materials.md`): the single-material form written
//! as one `[[material]]` runs bit for bit as `[material]`; the interface rules give the pair
//! table's constants exactly; the stable time step is the per-node bound with each bond's own
//! micromodulus; a bar of two halves in tension stretches as two springs in series; bad
//! input names the field and value. The backends' agreement on two materials is in
//! `tests/agreement.rs` (`two_materials`).

mod common;

use peridot::backend::{self, BackendKind};
use peridot::material::constants::pmb_micromodulus;
use peridot::material::several::harmonic;
use peridot::model::Dimension;
use peridot::setup::Problem;
use std::path::Path;

const SOFT_E: f64 = 200e9;
const STIFF_E: f64 = 500e9;

/// The error text of a model that must fail at parsing, validation or setup.
fn error_of(text: &str) -> String {
    let model = match peridot::model::parse(text, "test.toml", &[]) {
        Ok(model) => model,
        Err(e) => return e.to_string(),
    };
    match Problem::build(model, Path::new(".")) {
        Ok(_) => panic!("the model must be refused:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// A damaging explicit run of `text` on cpu-loop: the final displacement and bond status.
fn damaging_run(text: &str) -> (Vec<f64>, Vec<u8>) {
    let out = common::run::<f64>(common::problem(text, &[]));
    (out.state.u.clone(), out.backend.bond_status().unwrap())
}

const PULL: &str = "[[region]]\nname = \"top\"\nshape = \"edge\"\nside = \"+y\"\ndepth_dx = 2\n\
                    [[region]]\nname = \"bottom\"\nshape = \"edge\"\nside = \"-y\"\ndepth_dx = 2\n\
                    [[boundary]]\nregion = \"top\"\nkind = \"velocity\"\ny = 5.0\n\
                    [[boundary]]\nregion = \"bottom\"\nkind = \"velocity\"\ny = -5.0\n\
                    [solver]\nkind = \"explicit\"\nsteps = 80\n";

/// One material written as `[[material]]` (a name, no id, no regions: it takes every node)
/// runs bit for bit as `[material]`: the same displacement and the same broken bonds after a
/// damaging run, PMB and LPS.
#[test]
fn one_named_material_runs_bit_for_bit_as_material() {
    for law in ["pmb", "lps"] {
        let plain = common::small_model(law, "plane-stress", true, PULL);
        let named = plain.replacen("[material]\n", "[[material]]\nname = \"steel\"\n", 1);
        let (u0, s0) = damaging_run(&plain);
        let (u1, s1) = damaging_run(&named);
        assert!(
            s0.iter().any(|&m| m == 0),
            "{law}: the run must break bonds"
        );
        assert!(s0 == s1, "{law}: different bonds broke");
        assert!(
            u0.iter().zip(&u1).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{law}: displacements differ"
        );
    }
}

/// The interface rules give the pair table exactly: the softer material's constants (the
/// default), the harmonic means, or the interface's own; a pair of one material keeps its
/// own. Each node takes the material of its region, the rest the material without one.
#[test]
fn interface_rules_give_the_pair_constants() {
    let explicit = "[[interface]]\nmaterials = [\"stiff\", \"soft\"]\nrule = \"explicit\"\n\
                    youngs_modulus = 350e9\ncritical_stretch = 0.0025\n";
    let harmonic_rule = "[[interface]]\nmaterials = [\"soft\", \"stiff\"]\nrule = \"harmonic\"\n";
    for (rule, interface) in [
        ("softer", ""),
        ("harmonic", harmonic_rule),
        ("explicit", explicit),
    ] {
        let text = common::two_materials("pmb", "plane-stress", false, interface, "");
        let p = common::problem(&text, &[]);
        let map = p.materials.as_ref().expect("two materials");
        let (delta, h) = (p.body.delta, p.body.thickness);
        let c = |e: f64| pmb_micromodulus(Dimension::PlaneStress, e, delta, h);
        let (c1, c2) = (c(SOFT_E), c(STIFF_E));
        let (ci, si) = match rule {
            "softer" => (c1, 0.002),
            "harmonic" => (2.0 * c1 * c2 / (c1 + c2), 2.0 * 0.002 * 0.003 / 0.005),
            _ => (c(350e9), 0.0025),
        };
        assert_eq!(
            map.micromodulus,
            vec![c1, ci, ci, c2],
            "{rule}: micromodulus"
        );
        assert_eq!(
            map.critical_stretch,
            vec![0.002, si, si, 0.003],
            "{rule}: s0"
        );
        for (i, x) in p.body.positions.iter().enumerate() {
            assert_eq!(map.node[i], u8::from(x[0] >= 0.0055), "{rule}: node {i}");
        }
    }
    // (a material that never breaks: the interface's harmonic stretch is the other's own)
    assert_eq!(harmonic(0.002, f64::INFINITY), 0.002);
}

/// The stable time step with two materials is the per-node bound of `theory.md`,
/// `min_i sqrt(2 rho / sum_j c_ij lambda beta V_j / x)`, each bond with its pair's `c`,
/// computed here independently from the bonds (equal to round-off, 1e-14: the same sum in
/// another order). An explicit interface stiffer than both materials lowers it below the
/// stiffer material's alone: the bound is not simply the stiffest material's.
#[test]
fn stable_dt_is_the_per_node_bound_of_each_bond() {
    let stiff_interface = "[[interface]]\nmaterials = [\"soft\", \"stiff\"]\n\
                           rule = \"explicit\"\nyoungs_modulus = 2000e9\n";
    let text = common::two_materials("pmb", "plane-stress", false, stiff_interface, "");
    check_stable_dt(&text, 8000.0, 8000.0);
    // the stiff material four times lighter: its nodes' bound falls by 2
    check_stable_dt(&lighter_stiff(&text), 8000.0, 2000.0);
}

/// `text` (of `common::two_materials`) with the stiff material's density 2000 kg/m^3.
fn lighter_stiff(text: &str) -> String {
    let at = text.find("name = \"stiff\"").expect("the stiff material");
    let (head, tail) = text.split_at(at);
    format!(
        "{head}{}",
        tail.replacen("density = 8000", "density = 2000", 1)
    )
}

/// The engine's stable dt of `text` (soft and stiff materials of densities `rho_soft`,
/// `rho_stiff`, an explicit interface of E 2000 GPa) against the bound computed here, to
/// round-off; returns it.
fn check_stable_dt(text: &str, rho_soft: f64, rho_stiff: f64) -> f64 {
    let p = common::problem(text, &[]);
    let map = p.materials.as_ref().unwrap();
    let (delta, h) = (p.body.delta, p.body.thickness);
    let c = |e: f64| pmb_micromodulus(Dimension::PlaneStress, e, delta, h);
    let pair = [c(SOFT_E), c(2000e9), c(2000e9), c(STIFF_E)];
    let rho = [rho_soft, rho_stiff];
    let mut dt = f64::INFINITY;
    for i in 0..p.body.len() {
        let mut sum = 0.0;
        for b in p.families.range(i) {
            let j = p.families.neighbors[b] as usize;
            let x = peridot::material::bonds::bond_length(&p.body.positions, i, j);
            let cij = pair[2 * map.node[i] as usize + map.node[j] as usize];
            sum += cij * p.bonds.correction(b) * p.bonds.beta[b] * p.body.volumes[j] / x;
        }
        dt = dt.min((2.0 * rho[map.node[i] as usize] / sum).sqrt());
    }
    let engine = p.stable_time_step();
    assert!(
        (engine / dt - 1.0).abs() < 1e-14,
        "stable dt {engine:e} vs {dt:e}"
    );
    if rho_stiff != rho_soft {
        return engine;
    }
    let stiff_alone = common::small_model("pmb", "plane-stress", false, "")
        .replace("youngs_modulus = 200e9", "youngs_modulus = 500e9");
    let alone = common::problem(&stiff_alone, &[]).stable_time_step();
    println!("dt two materials {engine:e}, stiff material alone {alone:e}");
    assert!(engine < 0.9 * alone, "{engine:e} vs {alone:e}");
    engine
}

/// A plane-stress PMB bar of two halves (E 100 and 300 GPa, harmonic interface), pulled by
/// 100 MPa at both ends and relaxed by ADR, is two springs in series: each half carries the
/// same force, so in its middle, 30 mm (10 horizons) from the interface and the loaded end,
/// it strains as the homogeneous bar of its material with the same discretization (free
/// surfaces included) within 1e-4 (measured 4e-7: the interface's disturbance has decayed;
/// the ADR tolerance 1e-9 bounds the rest), the two strains in the ratio of the moduli
/// within 1%, and the whole bar elongates by the sum of its halves' (half of each
/// homogeneous bar's elongation) within 0.5% (measured 0.10%): the surface layers at the
/// loaded ends cancel, what is left is the interface layer, a horizon of 3 mm of the 120 mm
/// bar.
#[test]
fn a_bar_of_two_halves_is_two_springs_in_series() {
    let bar = |materials: &str| {
        format!(
            "{materials}\n[discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\n\
             dx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
             box = [{{ min = [-0.06, -0.005], max = [0.06, 0.005] }}]\n\
             [[region]]\nname = \"left\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 1\n\
             [[region]]\nname = \"right\"\nshape = \"edge\"\nside = \"+x\"\ndepth_dx = 1\n\
             [[region]]\nname = \"half\"\nshape = \"box\"\nmin = [0, -1]\nmax = [1, 1]\n\
             [[boundary]]\nregion = \"left\"\nkind = \"traction\"\nx = -100e6\n\
             [[boundary]]\nregion = \"right\"\nkind = \"traction\"\nx = 100e6\n\
             [solver]\nkind = \"adr\"\nsteps = 40000\ntolerance = 1e-9\n"
        )
    };
    let one =
        |e: f64| format!("[material]\nmodel = \"pmb\"\nyoungs_modulus = {e:e}\ndensity = 8000\n");
    let two = "[[material]]\nname = \"a\"\nmodel = \"pmb\"\nyoungs_modulus = 100e9\n\
               density = 8000\n[[material]]\nname = \"b\"\nregions = [\"half\"]\nmodel = \"pmb\"\n\
               youngs_modulus = 300e9\ndensity = 8000\n[[interface]]\nmaterials = [\"a\", \"b\"]\n\
               rule = \"harmonic\"\n";
    let relax = |text: String| {
        let out = common::run::<f64>(common::problem(&text, &[]));
        assert_eq!(out.summary.converged, Some(true), "ADR did not converge");
        (out.problem.clone(), out.state.u.clone())
    };
    // elongation: mean u_x of the right face less the left face's
    let elongation = |p: &Problem, u: &[f64]| {
        let face = |side: f64| {
            let (mut s, mut n) = (0.0, 0.0);
            for (i, x) in p.body.positions.iter().enumerate() {
                if (x[0] - side * 0.0595).abs() < 1e-6 {
                    s += u[2 * i];
                    n += 1.0;
                }
            }
            s / n
        };
        face(1.0) - face(-1.0)
    };
    // strain of the middle of a half: the slope of u_x over x in [c - 15, c + 15] mm
    let strain = |p: &Problem, u: &[f64], c: f64| {
        let points: Vec<(f64, f64)> = p
            .body
            .positions
            .iter()
            .enumerate()
            .filter(|(_, x)| (x[0] - c).abs() <= 0.015)
            .map(|(i, x)| (x[0], u[2 * i]))
            .collect();
        common::slope(&points)
    };
    let (p, u) = relax(bar(two));
    let (pa, ua) = relax(bar(&one(100e9)));
    let (pb, ub) = relax(bar(&one(300e9)));
    let (sa, sb) = (strain(&p, &u, -0.03), strain(&p, &u, 0.03));
    let (ha, hb) = (strain(&pa, &ua, -0.03), strain(&pb, &ub, 0.03));
    println!("strains {sa:e} {sb:e}, homogeneous bars {ha:e} {hb:e}");
    assert!(
        (sa / ha - 1.0).abs() < 0.01,
        "soft half strain {sa:e} vs {ha:e}"
    );
    assert!(
        (sb / hb - 1.0).abs() < 0.01,
        "stiff half strain {sb:e} vs {hb:e}"
    );
    // (and the stiffness ratio: the strains of the halves as the moduli, 3)
    assert!(
        (sa / sb / 3.0 - 1.0).abs() < 0.01,
        "strain ratio {}",
        sa / sb
    );
    let series = 0.5 * (elongation(&pa, &ua) + elongation(&pb, &ub));
    let two_halves = elongation(&p, &u);
    println!("elongation {two_halves:e}, series {series:e}");
    assert!(
        (two_halves / series - 1.0).abs() < 0.005,
        "elongation {two_halves:e} vs series {series:e}"
    );
}

/// The restart fingerprint hashes every material and interface: changing the second
/// material's modulus or the interface rule changes it (a checkpoint of the other physics is
/// refused); the canonical model parses back to the same fingerprint.
#[test]
fn the_fingerprint_covers_the_materials() {
    use peridot::model::fingerprint::{physics_hash, physics_text};
    let base = common::two_materials("pmb", "plane-stress", false, "", "");
    let parse = |t: &str| peridot::model::parse(t, "test.toml", &[]).unwrap();
    let h = physics_hash(&parse(&base));
    let stiffer = base.replace("youngs_modulus = 500e9", "youngs_modulus = 600e9");
    let harmonic_rule =
        format!("{base}[[interface]]\nmaterials = [\"soft\", \"stiff\"]\nrule = \"harmonic\"\n");
    assert_ne!(h, physics_hash(&parse(&stiffer)));
    assert_ne!(h, physics_hash(&parse(&harmonic_rule)));
    let canonical = toml::to_string(&parse(&base)).unwrap();
    assert_eq!(
        h,
        physics_hash(&parse(&canonical)),
        "{}",
        physics_text(&parse(&base))
    );
}

/// Bad input names the field and the value: an unknown region, a region of two materials,
/// nodes two materials claim, a node without a material, an id no node carries, an interface
/// naming an unknown material; every backend scheme runs several materials.
#[test]
fn bad_input_names_the_field() {
    let base = common::two_materials("pmb", "plane-stress", false, "", "");
    let cases: [(String, &[&str]); 6] = [
        (
            base.replace("regions = [\"right\"]", "regions = [\"nowhere\"]"),
            &["material.1.regions.0", "nowhere"],
        ),
        (
            base.replacen(
                "name = \"soft\"\n",
                "name = \"soft\"\nregions = [\"right\"]\n",
                1,
            ),
            &["material.1.regions.0", "also assigned to material.0"],
        ),
        (
            base.replacen(
                "name = \"soft\"\n",
                "name = \"soft\"\nregions = [\"all\"]\n",
                1,
            ) + "[[region]]\nname = \"all\"\nshape = \"box\"\nmin = [-1, -1]\nmax = [1, 1]\n",
            &["material.1.regions.0", "also material.0's"],
        ),
        (
            base.replacen(
                "name = \"soft\"\n",
                "name = \"soft\"\nregions = [\"left\"]\n",
                1,
            ) + "[[region]]\nname = \"left\"\nshape = \"box\"\nmin = [-1, -1]\nmax = [0.002, 1]\n",
            &["material", "takes no material"],
        ),
        (
            base.replace("regions = [\"right\"]", "id = 7"),
            &["material.1.id", "7"],
        ),
        (
            base.clone() + "[[interface]]\nmaterials = [\"soft\", \"glass\"]\n",
            &["interface.0.materials.1", "glass"],
        ),
    ];
    for (text, words) in cases {
        let e = error_of(&text);
        for w in words {
            assert!(e.contains(w), "`{w}` not in: {e}");
        }
    }
    // (every scheme runs several materials: tests/agreement.rs in core on a GPU,
    // tests/gpu/stream.rs in subdomains)
    let p = common::problem(&base, &[]);
    for scheme in [
        backend::Scheme::Matrix,
        backend::Scheme::MatrixParts,
        backend::Scheme::GpuLoopParts,
        backend::Scheme::CpuLoopParts,
    ] {
        assert!(backend::check_material(&p, "gpu-matrix", scheme).is_ok());
    }
}

/// Materials of different densities: in a free body moving with a non-uniform velocity
/// (no loads, no breaking), the leapfrog with each node's density conserves the momentum
/// `sum rho_i V_i v_i` to round-off (1e-12 of `sum rho_i V_i |v_i|`; the internal forces
/// `V_i f_i` cancel in pairs, and each node's acceleration is its force over its own
/// density), and the energy, kinetic with each node's density plus strain, within 2 % over
/// 400 steps (leapfrog's bounded oscillation at 0.8 of the stable step: measured 0.37 %,
/// and 0.87 % where both materials have one density and the step is longer; a kinetic
/// energy or a leapfrog with one density for both would be off by tens of percent of the
/// stiff half's share). A leapfrog with one density would change the momentum by
/// `sum (rho_i / rho - 1) V_i f_i dt`.
#[test]
fn materials_of_different_densities_conserve_momentum_and_energy() {
    use peridot::backend::Backend;
    use peridot::dynamics::{Explicit, Loads, State, StepTimes};
    let text = lighter_stiff(&common::two_materials("pmb", "plane-stress", false, "", ""))
        .replace("critical_stretch = 0.002", "critical_stretch = 0.5")
        .replace("critical_stretch = 0.003", "critical_stretch = 0.5");
    let p = std::sync::Arc::new(common::problem(&text, &[]));
    assert!(p.node_densities().is_some(), "two densities");
    let (dt, _, _) = peridot::solver::run::choose_dt(&p).unwrap();
    let d = p.dim();
    let mut backend = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
    let integrator = Explicit::of(&p, dt, 0.0, false);
    let loads = Loads::new(&p, dt);
    let mut state = State::<f64>::at_rest(p.body.len() * d);
    let len = p.body.bbox_max[0] - p.body.bbox_min[0];
    let set_velocity = |state: &mut State<f64>| {
        for (i, x) in p.body.positions.iter().enumerate() {
            state.v[d * i] = 0.2 * (std::f64::consts::PI * x[0] / len).cos();
            state.v[d * i + 1] = 0.1 * (std::f64::consts::PI * x[1] / len).sin();
        }
    };
    set_velocity(&mut state);
    integrator
        .start(&mut state, &loads, backend.as_forces())
        .unwrap();
    set_velocity(&mut state);
    let rho = |i: usize| integrator.density_of(i);
    let momentum = |s: &State<f64>| {
        let mut m = [0.0; 2];
        let mut scale = 0.0;
        for i in 0..p.body.len() {
            let w = rho(i) * p.body.volumes[i];
            for k in 0..2 {
                m[k] += w * s.v[d * i + k];
                scale += w * s.v[d * i + k].abs();
            }
        }
        (m, scale)
    };
    let energy = |s: &State<f64>, b: &mut dyn Backend<f64>| {
        s.kinetic_energy(rho, &p.body.volumes, d) + b.strain_energy(&s.u).unwrap()
    };
    let (m0, scale) = momentum(&state);
    let e0 = energy(&state, backend.as_mut());
    let mut times = StepTimes::default();
    let mut worst = 0.0f64;
    for _ in 0..400 {
        integrator
            .step(&mut state, &loads, backend.as_forces(), &mut times)
            .unwrap();
        worst = worst.max((energy(&state, backend.as_mut()) / e0 - 1.0).abs());
    }
    let (m1, _) = momentum(&state);
    for k in 0..2 {
        assert!(
            (m1[k] - m0[k]).abs() < 1e-12 * scale,
            "momentum {k}: {:e} -> {:e} (scale {scale:e})",
            m0[k],
            m1[k]
        );
    }
    println!("energy drift over 400 steps: {worst:e}");
    assert!(worst < 2e-2, "energy drift {worst:e}");
}
