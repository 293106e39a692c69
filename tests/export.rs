//! `peridot export-matrix`, `peridot run --export-stiffness` and `peridot solve-static` as
//! users meet them. The Matrix Market files are read back by the crate's own reader (SciPy is
//! not assumed) and checked against the loop backend: `K u = -f_int` to 1e-12 relative
//! (newtons), `Theta (mu o B u)` equals the backend's dilatation to 1e-12, and the stiffness
//! a run exports is bit for bit the one assembled from its final bond status. Bad input gives
//! a one-line error and a failure status, never a panic.

mod common;

use common::cli::{peridot, stderr, write_model};

use peridot::backend::{self, BackendKind};
use peridot::operators::stiffness::assemble_stiffness;
use peridot::output::matrix_market::{read_matrix_market, MatrixMarket, Symmetry};
use std::path::Path;
use std::sync::Arc;

const PLATE: &str = r#"
name = "lps_plate"
[material]
model = "lps"
youngs_modulus = 70e9
poisson_ratio = 0.3
density = 2700
[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015
[geometry]
box = [{ min = [0, 0], max = [0.02, 0.01] }]
[[precrack]]
start = [0.008, -0.001]
end = [0.008, 0.004]
[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 2
[[region]]
name = "right"
shape = "edge"
side = "+x"
depth_dx = 1
[[boundary]]
region = "left"
kind = "fixed"
[[boundary]]
region = "right"
kind = "traction"
x = 20e6
[solver]
kind = "adr"
steps = 100
[output]
probes = ["right"]
"#;

/// A model that breaks bonds in a short explicit run (the CLI test's tiny plate).
const BREAKING: &str = r#"
name = "tiny"
[material]
model = "pmb"
youngs_modulus = 200e9
density = 8000
critical_stretch = 0.01
[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015
[geometry]
box = [{ min = [0, 0], max = [0.02, 0.01] }]
[[precrack]]
start = [0.0, 0.005]
end = [0.006, 0.005]
[[region]]
name = "top"
shape = "edge"
side = "+y"
depth_dx = 2
[[region]]
name = "bottom"
shape = "edge"
side = "-y"
depth_dx = 2
[[boundary]]
region = "top"
kind = "velocity"
y = 5.0
[[boundary]]
region = "bottom"
kind = "velocity"
y = -5.0
[solver]
kind = "explicit"
steps = 200
[output]
vtk = false
"#;

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn exported_matrices_reproduce_the_loop_backend() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), PLATE);
    let out = dir.path().join("export");
    let o = peridot(&[
        "export-matrix",
        &model,
        "--out",
        out.to_str().unwrap(),
        "--what",
        "K,B,Theta",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let p = Arc::new(common::problem(PLATE, &[]));
    let (n, d) = (p.body.len(), p.dim());
    let k = read_matrix_market(&out.join("K.mtx")).unwrap();
    assert_eq!(k.symmetry, Symmetry::Symmetric);
    assert_eq!((k.nrows, k.ncols), (d * n, d * n));
    assert!(k.entries.iter().all(|&(i, j, _)| j <= i), "lower triangle");

    // K u = -f_int, f_int in newtons
    let u: Vec<f64> = common::random_vector(d * n, 5)
        .iter()
        .map(|x| 1e-6 * x)
        .collect();
    let mut b = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
    let mut f = vec![0.0; d * n];
    b.internal_force(&u, &mut f).unwrap();
    let f: Vec<f64> = (0..d * n).map(|k| -f[k] * p.body.volumes[k / d]).collect();
    let err = common::rel_diff(&k.multiply(&u), &f);
    println!("K.mtx: |K u + f_int| / |f_int| = {err:.2e}");
    assert!(err < 1e-12, "K u vs -f_int: {err:e}");

    // Theta (mu o B u) = the backend's dilatation
    let bm = read_matrix_market(&out.join("B.mtx")).unwrap();
    let theta_m = read_matrix_market(&out.join("Theta.mtx")).unwrap();
    assert_eq!((bm.nrows, bm.ncols), (p.families.bonds(), d * n));
    assert_eq!((theta_m.nrows, theta_m.ncols), (n, p.families.bonds()));
    let e = bm.multiply(&u);
    let me: Vec<f64> = e
        .iter()
        .zip(&p.initial_mu)
        .map(|(e, &m)| e * f64::from(m))
        .collect();
    let mut theta = vec![0.0; n];
    assert!(b.dilatation(&u, &mut theta).unwrap());
    let err = common::rel_diff(&theta_m.multiply(&me), &theta);
    println!("Theta.mtx: |Theta (mu o B u) - theta| / |theta| = {err:.2e}");
    assert!(err < 1e-12, "dilatation: {err:e}");

    check_side_files(&out, &p);
}

fn check_side_files(out: &Path, p: &peridot::setup::Problem) {
    let (n, d) = (p.body.len(), p.dim());
    let side = json(&out.join("export.json"));
    assert_eq!(side["dimension"], 2);
    assert_eq!(side["nodes"], n);
    assert_eq!(side["dofs"], d * n);
    assert_eq!(side["broken_bonds"], p.precracked_bonds());
    assert!(side["dof_ordering"]
        .as_str()
        .unwrap()
        .starts_with("dof = 2 * node + component"));
    assert_eq!(side["material"]["youngs_modulus"], 70e9);
    assert_eq!(side["material"]["model"], "lps");
    assert_eq!(side["units"]["K"], "N/m");
    let names: Vec<&str> = side["matrices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["K", "B", "Theta"]);
    let nodes = std::fs::read_to_string(out.join("nodes.csv")).unwrap();
    let mut lines = nodes.lines();
    assert_eq!(lines.next(), Some("node,x,y,volume"));
    let first: Vec<f64> = lines
        .next()
        .unwrap()
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    assert_eq!(
        first,
        [
            0.0,
            p.body.positions[0][0],
            p.body.positions[0][1],
            p.body.volumes[0]
        ]
    );
    assert_eq!(nodes.lines().count(), n + 1);
    let bonds = std::fs::read_to_string(out.join("bonds.csv")).unwrap();
    assert_eq!(bonds.lines().count(), p.families.bonds() + 1);
    let bc = json(&out.join("boundary.json"));
    assert_eq!(bc["boundary"][0]["kind"], "fixed");
    assert_eq!(
        bc["boundary"][0]["components"],
        serde_json::json!(["x", "y"])
    );
    assert_eq!(bc["boundary"][0]["prescribes_displacement"], true);
    let left: Vec<usize> = serde_json::from_value(bc["boundary"][0]["nodes"].clone()).unwrap();
    assert_eq!(left, p.region("left"));
    assert_eq!(bc["boundary"][1]["kind"], "traction");
    assert_eq!(bc["boundary"][1]["components"], serde_json::json!(["x"]));
    assert_eq!(bc["boundary"][1]["values"], serde_json::json!([20e6]));
    assert_eq!(bc["regions"][1]["name"], "right");
}

fn entries_sorted(m: &MatrixMarket) -> Vec<(usize, usize, f64)> {
    let mut e = m.entries.clone();
    e.sort_by_key(|&(i, j, _)| (i, j));
    e
}

#[test]
fn run_exports_the_stiffness_of_its_final_damage() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), BREAKING);
    let out = dir.path().join("run");
    let o = peridot(&[
        "run",
        &model,
        "--quiet",
        "--export-stiffness",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let summary = json(&out.join("summary.json"));
    let side = json(&out.join("export.json"));
    let p = common::problem(BREAKING, &[]);
    let broken = summary["broken_bonds"].as_u64().unwrap() as usize;
    assert!(broken > p.precracked_bonds(), "the run breaks bonds");
    assert_eq!(side["broken_bonds"], summary["broken_bonds"]);
    // the same run in memory: its final status gives exactly the exported K
    let outcome = common::run::<f64>(p.clone());
    let status = outcome.backend.bond_status().unwrap();
    let k = assemble_stiffness(&p, &status).unwrap();
    let sym = k.symbolic();
    let mut expected = Vec::new();
    for i in 0..k.nrows() {
        for e in sym.row_ptr()[i] as usize..sym.row_ptr()[i + 1] as usize {
            let j = sym.col_idx()[e] as usize;
            if j <= i {
                expected.push((i, j, k.val()[e]));
            }
        }
    }
    let written = read_matrix_market(&out.join("K.mtx")).unwrap();
    assert_eq!(
        entries_sorted(&written),
        expected,
        "K.mtx is the K of the final status"
    );
}

#[test]
fn solve_static_writes_the_run_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), PLATE);
    let out = dir.path().join("static");
    let o = peridot(&["solve-static", &model, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for f in [
        "summary.json",
        "damage.png",
        "probes.csv",
        "lps_plate.pvd",
        "lps_plate_000001.vtu",
    ] {
        assert!(out.join(f).is_file(), "missing {f}");
    }
    let s = json(&out.join("summary.json"));
    for key in [
        "model",
        "nodes",
        "bonds",
        "steps",
        "backend",
        "precision",
        "dt",
        "wall_seconds",
        "phase_seconds",
        "node_steps_per_second",
        "peak_rss_bytes",
        "broken_bonds",
        "max_damage",
        "static_residual",
    ] {
        assert!(s.get(key).is_some(), "summary.json lacks {key}");
    }
    assert!(s["static_residual"].as_f64().unwrap() < 1e-10);
    assert_eq!(s["solver"], "static");
    assert_eq!(s["status"], "completed");
    assert_eq!(s["static_solve"]["rigid_modes_removed"], 0);
    // the right edge carries the applied traction: 20 MPa on a 10 mm x 1 mm face
    let probes = std::fs::read_to_string(out.join("probes.csv")).unwrap();
    let row: Vec<f64> = probes
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    // step, time, u_x, u_y, f_x, f_y (2D)
    let fx = row[4];
    println!(
        "right edge: mean u_x {:.4e} m, internal force {fx:.4e} N",
        row[2]
    );
    assert!(row[2] > 0.0, "the right edge moves right");
    assert!(
        (fx / -(20e6 * 0.01 * 1e-3) - 1.0).abs() < 1e-8,
        "internal force {fx}"
    );
}

#[test]
fn bad_matrix_commands_fail_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), PLATE);
    let out = dir.path().join("x");
    let out = out.to_str().unwrap();
    let pmb = dir.path().join("pmb.toml");
    std::fs::write(&pmb, BREAKING).unwrap();
    let pmb = pmb.to_str().unwrap();
    let free = dir.path().join("free.toml");
    std::fs::write(
        &free,
        PLATE
            .replace("kind = \"fixed\"", "kind = \"body-force\"\nx = 1e9")
            .replace("name = \"lps_plate\"", "name = \"free\""),
    )
    .unwrap();
    let free = free.to_str().unwrap();
    let cases: [(&[&str], &str); 6] = [
        (
            &["export-matrix", &model, "--out", out, "--what", "K,X"],
            "--what",
        ),
        (
            &["export-matrix", pmb, "--out", out, "--what", "Theta"],
            "LPS only",
        ),
        (
            &["export-matrix", &model, "--out", out, "--format", "csv"],
            "csv",
        ),
        (&["export-matrix", &model], "--out"),
        (&["solve-static", free, "--out", out], "not in equilibrium"),
        (
            &["solve-static", "no/such/model.toml"],
            "no/such/model.toml",
        ),
    ];
    for (args, expect) in cases {
        let _ = std::fs::remove_file(Path::new(out).join("summary.json"));
        let o = peridot(args);
        let err = stderr(&o);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if !args.contains(&"--format") && args.len() > 2 {
            assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        }
        if args[0] == "solve-static" && args.len() > 2 {
            // a solve that failed after it began still writes its summary
            let s = json(&Path::new(out).join("summary.json"));
            assert_eq!(s["status"], "failed");
            assert!(s["stopped_early"].as_str().unwrap().contains(expect), "{s}");
        }
    }
}

/// Width and height from a PNG's IHDR chunk (bytes 16..24, big-endian).
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    let be = |k: usize| u32::from_be_bytes(bytes[k..k + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn png_format_draws_one_panel_per_matrix_with_the_exported_non_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), PLATE);
    let (mtx, png) = (dir.path().join("mtx"), dir.path().join("png"));
    let args = |out: &Path, format: &str| {
        let out = out.to_str().unwrap().to_string();
        peridot(&[
            "export-matrix",
            &model,
            "--out",
            &out,
            "--what",
            "K,B,Theta",
            "--format",
            format,
        ])
    };
    let o = args(&mtx, "mtx");
    assert!(o.status.success(), "{}", stderr(&o));
    let o = args(&png, "png");
    assert!(o.status.success(), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    // every panel's rows, columns and non-zeros are those of the exported matrices: B and
    // Theta as in their Matrix Market files; K (a file of its lower triangle) as assembled,
    // both triangles (round-off may keep one of two cancelling entries, so its pattern need
    // not be exactly symmetric)
    let p = common::problem(PLATE, &[]);
    let k_nnz = assemble_stiffness(&p, &p.initial_mu).unwrap().val().len();
    let mut expected_width = 16;
    for (k, name) in ["K", "B", "Theta"].iter().enumerate() {
        let m = read_matrix_market(&mtx.join(format!("{name}.mtx"))).unwrap();
        let nnz = if *name == "K" { k_nnz } else { m.entries.len() };
        let line = format!(
            "panel {}: {name}, {} x {}, {nnz} non-zeros",
            k + 1,
            m.nrows,
            m.ncols
        );
        assert!(stdout.contains(&line), "missing '{line}' in:\n{stdout}");
        let long = m.nrows.max(m.ncols) as f64;
        expected_width += ((400.0 * m.ncols as f64 / long).round() as u32).max(1) + 2 + 16;
    }
    // panels side by side, 400 pixels on the longer side, framed, 16 pixels apart
    assert_eq!(png_size(&png.join("sparsity.png")), (expected_width, 434));
    assert!(
        !png.join("K.mtx").exists(),
        "png format writes only the picture"
    );
}
