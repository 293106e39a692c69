//! Bad input that only the discretized body reveals: `peridot validate`, `info` and `run` all
//! refuse it before any neighbour search, through `setup::checked_body`, naming the field and
//! the value. Also the diagnosis of degenerate input (no bond at all) at setup, and the advice
//! of an unstable run by solver kind. Each case states what it expects; all failures are listed
//! together, by case name.

mod common;

use peridot::model::{parse, Model};
use peridot::setup::{checked_body, Problem};
use std::path::Path;

/// A valid small plane-stress lattice model: 20 x 10 nodes, a pre-crack, a notch, two regions.
const LATTICE: &str = r#"
name = "small"
[material]
model = "pmb"
youngs_modulus = 72e9
density = 2440
critical_stretch = 0.01
[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015
[[geometry.box]]
min = [0, 0]
max = [0.02, 0.01]
[[geometry.remove]]
shape = "notch"
start = [0.0, 0.005]
end = [0.003, 0.005]
width = 2e-3
[[precrack]]
start = [0.006, 0.005]
end = [0.009, 0.005]
[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 2
[[region]]
name = "right"
shape = "box"
min = [0.018, 0]
max = [0.02, 0.01]
[[boundary]]
region = "left"
kind = "fixed"
[[boundary]]
region = "right"
kind = "velocity"
x = 1.0
[solver]
kind = "explicit"
steps = 20
"#;

/// A valid point-cloud model reading `cloud.csv` from the model's folder.
const CLOUD: &str = r#"
[material]
model = "pmb"
youngs_modulus = 72e9
density = 2440
[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015
[geometry]
points_csv = "cloud.csv"
[[region]]
name = "everything"
shape = "all"
[[boundary]]
region = "everything"
kind = "initial-velocity"
x = 1.0
[solver]
kind = "explicit"
steps = 20
"#;

/// A 6 x 4 grid of points 1 mm apart, with a header (line 1); point `k` is on line `k + 2`.
fn grid_csv() -> String {
    let mut text = String::from("x,y,volume\n");
    for j in 0..4 {
        for i in 0..6 {
            text += &format!("{:e},{:e},1e-9\n", i as f64 * 1e-3, j as f64 * 1e-3);
        }
    }
    text
}

/// A folder holding `cloud.csv` with `csv`, kept while the value lives.
fn cloud_dir(csv: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cloud.csv"), csv).unwrap();
    dir
}

fn model(text: &str, sets: &[&str]) -> Model {
    let overrides: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse(text, "test.toml", &overrides).expect("the model itself validates")
}

/// One case: the error of `checked_body` (or the model's own validation) must contain every
/// needle. Returns a failure line.
fn check_err(
    name: &str,
    text: &str,
    sets: &[&str],
    dir: &Path,
    needles: &[&str],
) -> Option<String> {
    let overrides: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let result = parse(text, "test.toml", &overrides).and_then(|m| checked_body(&m, dir));
    match result {
        Ok(body) => Some(format!(
            "{name}: accepted ({} nodes), expected an error with {needles:?}",
            body.len()
        )),
        Err(e) => {
            let msg = e.to_string();
            let missing: Vec<&&str> = needles.iter().filter(|n| !msg.contains(**n)).collect();
            (!missing.is_empty()).then(|| format!("{name}: `{msg}` lacks {missing:?}"))
        }
    }
}

/// `cases! { "name": TEXT, DIR, [SETS] => [NEEDLES]; ... }`: every case fails as stated.
macro_rules! cases {
    ($($name:literal: $text:expr, $dir:expr, [$($set:expr),* $(,)?] => [$($needle:expr),* $(,)?];)*) => {{
        let failures: Vec<String> = [
            $(check_err($name, &$text, &[$($set),*], $dir, &[$($needle),*])),*
        ]
        .into_iter()
        .flatten()
        .collect();
        assert!(failures.is_empty(), "{} cases failed:\n{}", failures.len(), failures.join("\n"));
    }};
}

#[test]
fn valid_bodies_pass() {
    let grid = cloud_dir(&grid_csv());
    let here = Path::new(".");
    for (name, text, sets, dir) in [
        ("lattice", LATTICE, &[][..], here),
        ("cloud", CLOUD, &[][..], grid.path()),
        // the shipped models reach outside the body on purpose: a pre-crack partly outside
        // is fine
        (
            "pre-crack partly outside",
            LATTICE,
            &["precrack.0.start=[-0.005, 0.005]"][..],
            here,
        ),
        (
            "notch partly outside",
            LATTICE,
            &["geometry.remove.0.start=[-0.01, 0.005]"][..],
            here,
        ),
    ] {
        let body = checked_body(&model(text, sets), dir);
        assert!(body.is_ok(), "{name}: {}", body.unwrap_err());
    }
    assert_eq!(
        checked_body(&model(CLOUD, &[]), grid.path()).unwrap().len(),
        24
    );
}

#[test]
fn every_shipped_model_passes_the_setup_checks() {
    let mut names: Vec<_> = std::fs::read_dir("models")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    names.sort();
    assert!(names.len() >= 10, "models/ holds the seed models");
    for path in names {
        let m = peridot::model::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
        if let Err(e) = checked_body(&m, Path::new("models")) {
            panic!("{}: {e}", path.display());
        }
    }
}

#[test]
fn point_cloud_files_are_checked_naming_line_and_column() {
    let grid = grid_csv();
    let lines: Vec<&str> = grid.lines().collect();
    let with_line = |k: usize, line: &str| {
        let mut l = lines.clone();
        l[k] = line;
        l.join("\n")
    };
    let garbage = cloud_dir(&with_line(3, "0.002,abc,1e-9"));
    let short = cloud_dir(&with_line(2, "0.002,1e-9"));
    let infinite = cloud_dir(&with_line(4, "inf,0,1e-9"));
    let zero_volume = cloud_dir(&with_line(5, "0.5,0.5,0"));
    let one = cloud_dir("x,y,volume\n0,0,1e-9\n");
    let empty = cloud_dir("x,y,volume\n");
    // line 9 (point 7: x = 1 mm, y = 1 mm) written again on line 20
    let duplicate = cloud_dir(&with_line(19, "1e-3,1e-3,2e-9"));
    // (a first line of no number is a header)
    let binary = cloud_dir("\u{0}\u{1},\u{2}\n\u{0}\u{1},\u{2},\u{3}\n");
    cases! {
        "missing file": CLOUD, Path::new("no/such/folder"), []
            => ["geometry.points_csv", "no/such/folder/cloud.csv", "cannot read"];
        "not a number": CLOUD, garbage.path(), []
            => ["geometry.points_csv", "line 4", "column 2 (y)", "'abc'"];
        "too few columns": CLOUD, short.path(), []
            => ["geometry.points_csv", "line 3", "2 columns", "x,y,volume"];
        "infinite coordinate": CLOUD, infinite.path(), []
            => ["geometry.points_csv", "line 5", "column 1 (x)", "inf is not finite"];
        "zero volume": CLOUD, zero_volume.path(), []
            => ["geometry.points_csv", "line 6", "column 3", "volume 0"];
        "one point": CLOUD, one.path(), [] => ["geometry.points_csv", "1 point", "at least 2"];
        "no point": CLOUD, empty.path(), [] => ["geometry.points_csv", "no points"];
        "repeated point": CLOUD, duplicate.path(), []
            => ["geometry.points_csv", "line 20", "repeats line 9", "1e-3, 1e-3"];
        "binary garbage": CLOUD, binary.path(), []
            => ["geometry.points_csv", "line 2", "column 1 (x)"];
    }
}

#[test]
fn empty_bodies_regions_and_shapes_outside_the_body_are_refused() {
    let grid = cloud_dir(&grid_csv());
    let here = Path::new(".");
    let remove_all = r#"geometry.remove.0={shape = "box", min = [-1, -1], max = [1, 1]}"#;
    let notch_outside =
        r#"geometry.remove.0={shape = "notch", start = [0.5, 0], end = [0.5, 0.01], width = 1e-3}"#;
    let circle_outside = r#"geometry.remove=[{shape = "circle", center = [1, 1], radius = 0.01}]"#;
    cases! {
        "everything removed": LATTICE, here, [remove_all] => ["geometry", "no nodes"];
        "one node": LATTICE, here,
            ["geometry.box.0.max=[0.0005, 0.0005]", "region.1.min=[0, 0]",
             "region.1.max=[0.0005, 0.0005]", "geometry.remove=[]", "precrack=[]"]
            => ["discretization.dx", "1 node", "at least 2"];
        "empty region": LATTICE, here, ["region.1.min=[0.5, 0]", "region.1.max=[0.6, 0.01]"]
            => ["region.1", "selects no node", "(5e-4, 5e-4) to (0.0195, 0.0095)"];
        "notch outside": LATTICE, here, [notch_outside]
            => ["geometry.remove.0", "entirely outside", "(0, 0) to (0.02, 0.01)"];
        "circle outside a cloud": CLOUD, grid.path(), [circle_outside]
            => ["geometry.remove.0", "entirely outside"];
        "pre-crack outside": LATTICE, here,
            ["precrack.0.start=[0.03, 0.0]", "precrack.0.end=[0.03, 0.01]"]
            => ["precrack.0", "entirely outside", "cuts no bond"];
        "second pre-crack outside": format!("{LATTICE}[[precrack]]\nstart = [0, -1]\nend = [1, -1]\n"),
            here, [] => ["precrack.1", "entirely outside"];
    }
}

// Issue 16, no silent geometry: a shape or crack inside the body that does nothing at this
// dx is refused by name, with dx. A circular hole of radius 0.3 mm centred between four
// lattice points (dx = 1 mm) removes none; a notch 0.8 mm wide along the line between two
// lattice rows removes none (the kalthoff_winkler_3d case: 1.5 mm slots at dx = 2.5 mm); a
// pre-crack 0.1 um long placed off every lattice line crosses no bond of radius 3.015 mm;
// an empty region names dx too.
#[test]
fn geometry_that_does_nothing_at_this_dx_is_refused() {
    let here = Path::new(".");
    let hole = r#"geometry.remove.0={shape = "circle", center = [0.01, 0.005], radius = 3e-4}"#;
    let slot = r#"geometry.remove.0={shape = "notch", start = [0.0, 0.005], end = [0.003, 0.005], width = 8e-4}"#;
    cases! {
        "hole between lattice points": LATTICE, here, [hole]
            => ["geometry.remove.0", "removes no node", "dx = 0.001 m"];
        "slot narrower than dx": LATTICE, here, [slot]
            => ["geometry.remove.0", "removes no node", "dx = 0.001 m", "[[precrack]]"];
        "pre-crack cutting no bond": LATTICE, here,
            ["precrack.0.start=[0.0060001, 0.0050003]", "precrack.0.end=[0.0060002, 0.0050004]"]
            => ["precrack.0", "cuts no bond", "dx = 0.001 m"];
        "empty region": LATTICE, here, ["region.1.min=[0.5, 0]", "region.1.max=[0.6, 0.01]"]
            => ["region.1", "selects no node at dx = 0.001 m"];
    }
}

#[test]
fn node_counts_beyond_the_index_limit_are_refused() {
    // 2e6 x 1e6 lattice points: refused from the boxes and dx, before any is placed
    cases! {
        "1e12 nodes": LATTICE, Path::new("."), ["discretization.dx=1e-8"]
            => ["discretization.dx", "1e-8", "2.0000e12 nodes", "2147483632"];
    }
}

#[test]
fn degenerate_materials_are_refused_naming_the_field() {
    let here = Path::new(".");
    let fracture = LATTICE.replace("critical_stretch = 0.01", "fracture_energy = 1e300");
    cases! {
        "modulus 1e-300": LATTICE, here, ["material.youngs_modulus=1e-300"]
            => ["material.youngs_modulus", "1e-300 Pa", "degenerate"];
        "LPS modulus 1e-300": LATTICE, here,
            ["material.model=lps", "material.poisson_ratio=0.3", "material.youngs_modulus=1e-300"]
            => ["material.youngs_modulus", "1e-300 Pa", "degenerate"];
        "modulus 1e300": LATTICE, here, ["material.youngs_modulus=1e300"]
            => ["material.youngs_modulus", "1e300 Pa"];
        "density 1e-300": LATTICE, here, ["material.density=1e-300"]
            => ["material.density", "1e-300 kg/m^3", "acceleration"];
        "critical stretch from the fracture energy overflows": fracture, here,
            ["material.youngs_modulus=1e-200"]
            => ["material.fracture_energy", "critical stretch inf", "1e-200 Pa"];
    }
}

#[test]
fn a_cloud_without_any_bond_is_refused_at_setup() {
    // two points 1 m apart: the body is fine, but no node has a neighbour
    let dir = cloud_dir("0,0,1e-9\n1,0,1e-9\n");
    let m = model(CLOUD, &[]);
    checked_body(&m, dir.path()).expect("two distinct points pass the body checks");
    let e = Problem::build(m, dir.path()).unwrap_err().to_string();
    assert!(e.contains("discretization.horizon_factor"), "{e}");
    assert!(e.contains("no bond"), "{e}");
    let m = model(
        &CLOUD.replace("horizon_factor = 3.015", "delta = 3e-3"),
        &[],
    );
    let e = Problem::build_lean(m, dir.path()).unwrap_err().to_string();
    assert!(e.contains("discretization.delta"), "{e}");
}

#[test]
fn an_unstable_run_advises_by_solver_kind() {
    // a body force of 1e300 N/m^3 drives the displacements past any bound at once
    let force = r#"boundary.1={region = "right", kind = "body-force", x = 1e300}"#;
    let explicit = common::problem(LATTICE, &[force]);
    let e = run_err(explicit);
    assert!(e.contains("unstable at step 10"), "{e}");
    assert!(e.contains("try a smaller solver.dt"), "{e}");
    let adr = common::problem(LATTICE, &[force, "solver.kind=adr"]);
    let e = run_err(adr);
    assert!(e.contains("ADR diverged at iteration 10"), "{e}");
    assert!(!e.contains("try a smaller solver.dt"), "{e}");
    for advice in ["loads", "material", "solver.load_steps", "solver.tolerance"] {
        assert!(e.contains(advice), "{e}");
    }
}

fn run_err(problem: Problem) -> String {
    let opts = peridot::solver::RunOptions {
        subdomains: None,
        backend: peridot::backend::BackendKind::CpuLoop,
        precision: peridot::Precision::F64,
        out_dir: None,
        quiet: true,
        cancel: None,
        process_start: None,
    };
    match peridot::solver::simulate::<f64>(problem, &opts) {
        Ok(_) => panic!("the run went to the end"),
        Err(e) => e.to_string(),
    }
}
