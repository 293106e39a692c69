//! The snapshot fields `[output] fields` chooses (`docs/models.md`): force density, strain
//! energy density, bond virial stress, broken bonds and material id beside the older arrays.
//!
//! - Without the key a snapshot is byte for byte the one with the old default list named.
//! - The force density, energy density and broken-bond count of a snapshot are the backend's
//!   own at the snapshot's displacement and bond status (`Forces::internal_force`,
//!   `strain_energy`, `broken_bonds`), PMB and LPS, with bonds broken during the run.
//! - The virial stress obeys `sum_i V_i sigma_i = -sum_i V_i L_i (x) x_i` (pair forces are
//!   antisymmetric), an identity to round-off for any displacement.
//! - In the static plate in tension it gives the applied traction in the interior and a
//!   volume integral equal to the load's first moment.
//! - A point cloud's material column is written as `material_id`.

mod common;

use peridot::backend::BackendKind;
use peridot::dynamics::Loads;
use peridot::setup::Problem;
use peridot::solver::implicit::{solve_static, StaticOptions};
use peridot::solver::{simulate, Outcome};
use peridot::Precision;
use std::path::{Path, PathBuf};

const PLATE: &str = include_str!("../models/plate_tension_2d.toml");

/// Every field, by its `[output] fields` name.
const ALL: &str = "output.fields=[\"displacement\", \"velocity\", \"damage\", \
    \"damage_bond_count\", \"volume\", \"dilatation\", \"force_density\", \
    \"strain_energy_density\", \"stress\", \"material_id\", \"broken_bonds\"]";

/// Run `problem` on `cpu-loop` in f64 with its outputs in `out`.
fn run_into(problem: Problem, out: &Path) -> Outcome<f64> {
    let opts = common::options(BackendKind::CpuLoop, Precision::F64, Some(out));
    simulate::<f64>(problem, &opts).expect("run succeeds")
}

/// The last `.vtu` of an output folder (name order).
fn last_snapshot(dir: &Path) -> PathBuf {
    common::snapshots(dir).pop().expect("a snapshot")
}

/// A small 2D model pulled apart at +-x by a velocity for 40 steps, so bonds break at
/// the pre-crack's tip.
/// The regions, velocities and solver of [`pulled`].
const PULL: &str = "[[region]]\nname = \"l\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 2\n\
    [[region]]\nname = \"r\"\nshape = \"edge\"\nside = \"+x\"\ndepth_dx = 2\n\
    [[boundary]]\nregion = \"l\"\nkind = \"velocity\"\nx = -2.0\n\
    [[boundary]]\nregion = \"r\"\nkind = \"velocity\"\nx = 2.0\n\
    [solver]\nkind = \"explicit\"\nsteps = 40\n";

fn pulled(law: &str, fields: &str) -> Problem {
    let extra = PULL;
    let mut overrides = vec!["output.image=false"];
    if !fields.is_empty() {
        overrides.push(fields);
    }
    common::problem(
        &common::small_model(law, "plane-stress", true, extra),
        &overrides,
    )
}

/// `-sum_i V_i L_i (x) x_i`, row-major 3 x 3 (`L` with `d` components per node).
fn load_moment(p: &Problem, force: &[f64]) -> [f64; 9] {
    let d = p.dim();
    let mut m = [0.0; 9];
    for (i, (x, v)) in p.body.positions.iter().zip(&p.body.volumes).enumerate() {
        for a in 0..d {
            for b in 0..3 {
                m[3 * a + b] -= v * force[d * i + a] * x[b];
            }
        }
    }
    m
}

/// `sum_i V_i sigma_i`, row-major.
fn stress_integral(p: &Problem, stress: &[f64]) -> [f64; 9] {
    let mut s = [0.0; 9];
    for (sigma, v) in stress.chunks_exact(9).zip(&p.body.volumes) {
        for k in 0..9 {
            s[k] += v * sigma[k];
        }
    }
    s
}

/// Without `output.fields` a snapshot holds the arrays it held before the key existed, and
/// naming that list gives the same bytes (a run is deterministic, so any difference would be
/// the writer's).
#[test]
fn default_fields_give_the_same_bytes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    run_into(pulled("pmb", ""), a.path());
    let named = "output.fields=[\"displacement\", \"velocity\", \"damage\", \
        \"damage_bond_count\", \"volume\", \"dilatation\"]";
    run_into(pulled("pmb", named), b.path());
    let (fa, fb) = (last_snapshot(a.path()), last_snapshot(b.path()));
    let (ba, bb) = (std::fs::read(&fa).unwrap(), std::fs::read(&fb).unwrap());
    assert!(ba == bb, "{} and {} differ", fa.display(), fb.display());
    let text = String::from_utf8_lossy(&ba);
    let names: Vec<&str> = text
        .split("Name=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    let expected = [
        "TimeValue",
        "displacement",
        "velocity",
        "damage",
        "damage_bond_count",
        "volume",
        "Points",
        "connectivity",
        "offsets",
        "types",
    ];
    assert_eq!(names, expected);
    assert!(text.contains("<PointData Scalars=\"damage\" Vectors=\"displacement\">"));
}

/// A chosen subset is written alone, in the file's order, with the units in the new names.
#[test]
fn only_the_chosen_fields_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let fields = "output.fields=[\"stress\", \"broken_bonds\", \"velocity\"]";
    run_into(pulled("pmb", fields), dir.path());
    let bytes = std::fs::read(last_snapshot(dir.path())).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let names: Vec<&str> = text
        .split("Name=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert_eq!(names[1..4], ["velocity", "stress_Pa", "broken_bonds"]);
    assert!(text.contains("Name=\"stress_Pa\" NumberOfComponents=\"9\""));
    assert!(text.contains("type=\"Int64\" Name=\"broken_bonds\""));
    assert!(
        text.contains("<PointData>"),
        "no active arrays that are not written"
    );
}

/// A field named twice is refused, naming the entry.
#[test]
fn a_field_named_twice_is_refused() {
    let text = common::small_model("pmb", "plane-stress", false, "");
    let o = vec!["output.fields=[\"stress\", \"damage\", \"stress\"]".to_string()];
    let err = peridot::model::parse(&text, "t.toml", &o)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("output.fields.2") && err.contains("twice"),
        "{err}"
    );
    let o = vec!["output.fields=[\"stresses\"]".to_string()];
    let err = peridot::model::parse(&text, "t.toml", &o)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("stresses") && err.contains("strain_energy_density"),
        "{err}"
    );
}

/// The snapshot's force density, energy density and broken bonds are the backend's at the
/// last step (bonds broke during the run), and the virial stress integrates to the force
/// density's moment. Tolerances: the host sums the same bond terms in `f64` in the same
/// order as `cpu-loop`, which keeps the reference length and weight rounded once and (PMB)
/// runs a vectorized kernel, so they agree to a few ulps of the largest bond term: 1e-10 of
/// the largest force density leaves room for the cancellation of terms about 1e3 times
/// larger; the identity sums 1e3 terms of either sign, 1e-11 of the largest component.
fn agrees_with_the_backend(law: &str) {
    agrees(law, pulled(law, ALL), &[]);
}

/// [`agrees_with_the_backend`] on `p`, whose nodes' material ids are `ids` (empty: all 0).
fn agrees(law: &str, p: Problem, ids: &[i64]) {
    let dir = tempfile::tempdir().unwrap();
    let mut out = run_into(p.clone(), dir.path());
    let snap = last_snapshot(dir.path());
    let broken = out.backend.broken_bonds();
    assert!(
        broken > p.precracked_bonds(),
        "{law}: no bond broke in the run"
    );
    let u = out.state.u.clone();
    let mut force = vec![0.0; u.len()];
    out.backend.internal_force(&u, &mut force).unwrap();
    let d = p.dim();
    let written = common::vtu_array(&snap, "force_density_N_m3");
    let written: Vec<f64> = written
        .chunks_exact(3)
        .flat_map(|c| c[..d].to_vec())
        .collect();
    let e = common::rel_max(&written, &force);
    println!("{law}: force density vs cpu-loop {e:.2e}, {broken} broken bonds");
    assert!(e < 1e-10, "{law}: force density {e:e}");

    let energy = common::vtu_array(&snap, "strain_energy_density_J_m3");
    let total: f64 = energy.iter().zip(&p.body.volumes).map(|(e, v)| e * v).sum();
    let backend = out.backend.strain_energy(&u).unwrap();
    println!("{law}: strain energy {total:.6e} J, cpu-loop {backend:.6e} J");
    assert!((total - backend).abs() < 1e-12 * backend, "{law}: energy");

    let per_node = common::vtu_ints(&snap, "broken_bonds");
    assert_eq!(
        per_node.iter().sum::<i64>() as usize,
        broken,
        "{law}: broken bonds"
    );
    let expected = match ids.is_empty() {
        true => vec![0; p.body.len()],
        false => ids.to_vec(),
    };
    assert_eq!(common::vtu_ints(&snap, "material_id"), expected);

    let stress = common::vtu_array(&snap, "stress_Pa");
    let (s, m) = (stress_integral(&p, &stress), load_moment(&p, &force));
    let e = common::rel_max(&s, &m);
    println!("{law}: sum V sigma {:?}\n  vs -sum V L x {m:?}: {e:.2e}", s);
    assert!(e < 1e-11, "{law}: virial identity {e:e}");
}

#[test]
fn pmb_fields_agree_with_the_backend() {
    agrees_with_the_backend("pmb");
}

#[test]
fn lps_fields_agree_with_the_backend() {
    agrees_with_the_backend("lps");
}

/// The same on two materials (`common::two_materials`): each bond's micromodulus (PMB) or
/// each node's constants (LPS) from the pair table, and `material_id` the index of each
/// node's `[[material]]`.
#[test]
fn fields_of_two_materials_agree_with_the_backend() {
    for law in ["pmb", "lps"] {
        let text = pulled(law, ALL);
        let two = common::two_materials(law, "plane-stress", true, "", PULL);
        let p = common::problem(&two, &["output.image=false", ALL]);
        let map = p.materials.as_ref().expect("two materials");
        let ids: Vec<i64> = map.node.iter().map(|&k| k as i64).collect();
        assert!(
            ids.contains(&0) && ids.contains(&1),
            "both materials have nodes"
        );
        assert_eq!(p.body.len(), text.body.len());
        agrees(law, p, &ids);
    }
}

/// The plate in tension (`models/plate_tension_2d.toml`, 200 MPa, coarsened to dx = 10 mm,
/// linearized PMB), solved statically, snapshot written by `solve-static`: in the interior
/// (more than a horizon from every edge and the loaded layers) `sigma_xx` is the traction
/// within 3 % (the lattice at delta = 3.015 dx is a few % stiffer than the continuum and
/// the free edges, softer within a horizon, take less of the load, so the interior takes a
/// little more), `|sigma_yy| < 3 %` of it, and the tensor is symmetric to round-off. The
/// volume integral equals the applied load's first moment `sum_i V_i b_i (x) x_i` to the
/// solve's residual (1e-10), since `L_i = -b_i` at equilibrium.
#[test]
fn plate_tension_stress_is_the_traction() {
    let dir = tempfile::tempdir().unwrap();
    let p = common::problem(
        PLATE,
        &[
            "discretization.dx=0.01",
            "output.probes=[]",
            "output.image=false",
            "material.model=\"pmb-linear\"",
            ALL,
        ],
    );
    let opts = StaticOptions {
        out_dir: Some(dir.path().to_path_buf()),
    };
    solve_static(p.clone(), &opts).expect("static solve");
    let snap = last_snapshot(dir.path());
    let stress = common::vtu_array(&snap, "stress_Pa");
    let traction = 200e6;
    let delta = p.body.delta;
    let (mut sxx, mut syy, mut n, mut asym) = (0.0, 0.0f64, 0, 0.0f64);
    for (x, s) in p.body.positions.iter().zip(stress.chunks_exact(9)) {
        asym = asym.max((s[1] - s[3]).abs());
        if x[0].abs() < 0.5 - 1.5 * delta && x[1].abs() < 0.25 - 1.5 * delta {
            sxx += s[0];
            syy = syy.max(s[4].abs());
            n += 1;
        }
    }
    let sxx = sxx / n as f64;
    println!(
        "plate: interior sigma_xx {:.4} MPa over {n} nodes ({:+.2} %), max |sigma_yy| {:.3} MPa, \
         max |sigma_xy - sigma_yx| {asym:.2e} Pa",
        sxx / 1e6,
        100.0 * (sxx / traction - 1.0),
        syy / 1e6
    );
    assert!((sxx / traction - 1.0).abs() < 0.03, "sigma_xx {sxx:e}");
    assert!(syy < 0.03 * traction, "sigma_yy {syy:e}");
    assert!(asym < 1e-6 * traction, "asymmetric {asym:e}");

    let mut b = vec![0.0; p.body.len() * p.dim()];
    Loads::new(&p, 1.0).body_force(1.0, &mut b);
    let moment = load_moment(&p, &b.iter().map(|x| -x).collect::<Vec<f64>>());
    let integral = stress_integral(&p, &stress);
    let e = (integral[0] - moment[0]).abs() / moment[0];
    println!(
        "plate: sum V sigma_xx {:.6e} N m, load moment {:.6e} N m ({e:.1e})",
        integral[0], moment[0]
    );
    assert!(e < 1e-8, "integral {e:e}");
}

/// A point cloud's `material` column is written as `material_id`, node for node (Int64,
/// exact).
#[test]
fn material_ids_come_from_the_cloud() {
    let mut csv = String::from("x,y,volume,material\n");
    let mut ids = Vec::new();
    for k in 0..30 {
        let id = if k % 6 < 3 { 1 } else { 42 };
        csv.push_str(&format!("{},{},1.0,{id}\n", k % 6, k / 6));
        ids.push(id);
    }
    let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 72e9\ndensity = 2440.0\n\
        [discretization]\ndimension = \"plane-stress\"\nthickness = 1.0\ndx = 1.0\n\
        horizon_factor = 3.015\n[geometry]\npoints_csv = \"cloud.csv\"\n\
        [solver]\nkind = \"explicit\"\nsteps = 2\n\
        [output]\nimage = false\nfields = [\"material_id\", \"damage\"]\n";
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cloud.csv"), csv).unwrap();
    let model = peridot::model::parse(text, "cloud.toml", &[]).expect("valid model");
    let problem = Problem::build(model, dir.path()).expect("cloud problem");
    let out = tempfile::tempdir().unwrap();
    run_into(problem, out.path());
    let written = common::vtu_ints(&last_snapshot(out.path()), "material_id");
    assert_eq!(written, ids);
}
