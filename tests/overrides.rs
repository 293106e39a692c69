//! `--set KEY=VALUE` overrides: each value form and path form changes the model as asked, and
//! each malformed override is an error naming `--set`, the key and what is allowed.

use peridot::model::{overrides::apply, parse, BoundaryKind, MaterialModel, Model, Shape};
use peridot::Error;

const MODEL: &str = r#"
[material]
model = "pmb"
youngs_modulus = 72e9
density = 2440
fracture_energy = 3.8

[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015

[[geometry.box]]
min = [0, 0]
max = [0.1, 0.04]

[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 3

[[region]]
name = "right"
shape = "box"
min = [0.097, 0]
max = [0.1, 0.04]

[[boundary]]
region = "left"
kind = "fixed"

[[boundary]]
region = "right"
kind = "velocity"
x = 0.5

[solver]
kind = "explicit"
steps = 1000
"#;

fn with(sets: &[&str]) -> Model {
    let overrides: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    match parse(MODEL, "test.toml", &overrides) {
        Ok(model) => model,
        Err(e) => panic!("{sets:?} rejected: {e}"),
    }
}

/// The usage error of applying `assignment` to the model tree.
fn usage_error(assignment: &str) -> (String, String) {
    let mut tree: toml::Table = MODEL.parse().expect("test model parses");
    match apply(&mut tree, assignment) {
        Err(Error::Usage { option, message }) => (option, message),
        Err(e) => panic!("{assignment}: expected a usage error, got {e}"),
        Ok(()) => panic!("{assignment}: accepted, expected an error"),
    }
}

fn assert_usage(assignment: &str, option: &str, needles: &[&str]) {
    let (got_option, message) = usage_error(assignment);
    assert_eq!(got_option, option, "{assignment}: {message}");
    for n in needles {
        assert!(message.contains(n), "{assignment}: `{message}` lacks `{n}`");
    }
}

#[test]
fn float_integer_and_exponent_values() {
    let m = with(&["discretization.dx=0.5e-3", "material.youngs_modulus=70e9"]);
    assert_eq!(m.discretization.dx, 0.5e-3);
    assert_eq!(m.material.youngs_modulus, Some(70e9));
    // An integer where a float is expected is taken as that float.
    let m = with(&["discretization.dx=1", "solver.steps=2000"]);
    assert_eq!(m.discretization.dx, 1.0);
    assert_eq!(m.solver.steps, 2000);
}

#[test]
fn booleans_strings_and_bare_strings() {
    let m = with(&["solver.damage=false", "name=\"my run\"", "output.vtk=false"]);
    assert!(!m.solver.damage);
    assert!(!m.output.vtk);
    assert_eq!(m.name.as_deref(), Some("my run"));
    // Text that is not a TOML value is a bare string.
    let m = with(&["material.model=lps", "material.poisson_ratio=0.3"]);
    assert_eq!(m.material.model, MaterialModel::Lps);
    assert_eq!(
        with(&["material.model=pmb-linear"]).material.model,
        MaterialModel::PmbLinear
    );
    assert_eq!(with(&["name=plate 2"]).name.as_deref(), Some("plate 2"));
    // Only the first `=` splits; spaces around key and value are dropped.
    assert_eq!(with(&["name=a=b"]).name.as_deref(), Some("a=b"));
    assert_eq!(
        with(&[" discretization.dx = 2e-3 "]).discretization.dx,
        2e-3
    );
}

#[test]
fn arrays_of_tables_and_plain_arrays_by_index() {
    let m = with(&[
        "boundary.1.x=2",
        "boundary.1.y=-1",
        "region.1.min=[0.09, 0]",
    ]);
    assert_eq!((m.boundary[1].x, m.boundary[1].y), (Some(2.0), Some(-1.0)));
    match &m.region[1].shape {
        Shape::Box { min, .. } => assert_eq!(min, &[0.09, 0.0]),
        other => panic!("region.1 is {other:?}"),
    }
    let m = with(&["geometry.box.0.max=[0.2, 0.05]"]);
    assert_eq!(m.geometry.boxes[0].max, [0.2, 0.05]);
    // A numeric segment indexes a plain array too.
    let m = with(&["geometry.box.0.max.1=0.08"]);
    assert_eq!(m.geometry.boxes[0].max, [0.1, 0.08]);
    // A whole entry can be replaced by an inline table.
    let m = with(&[r#"boundary.1={region = "right", kind = "displacement", x = 1e-4}"#]);
    assert_eq!(m.boundary[1].kind, BoundaryKind::Displacement);
    assert_eq!(m.boundary[1].x, Some(1e-4));
}

#[test]
fn missing_keys_and_tables_are_created() {
    let m = with(&["solver.dt=1e-8"]);
    assert_eq!(m.solver.dt, Some(1e-8));
    // `[output]` is absent from the model: it is created.
    let m = with(&["output.probe_every=5", "output.probes=[\"right\"]"]);
    assert_eq!(m.output.probe_every, Some(5));
    assert_eq!(m.output.probes, ["right"]);
    // The later of two overrides of one key wins.
    assert_eq!(with(&["solver.steps=5", "solver.steps=7"]).solver.steps, 7);
}

#[test]
fn created_unknown_keys_are_refused_by_the_schema() {
    for (set, key) in [
        ("solver.max_steps=10", "max_steps"),
        ("plot.dpi=300", "plot"),
        ("region.0.colour=1", "colour"),
    ] {
        let e = parse(MODEL, "test.toml", &[set.to_string()]).expect_err(set);
        assert!(e.to_string().contains(key), "{set}: {e}");
    }
}

#[test]
fn override_values_are_validated() {
    let e = parse(MODEL, "test.toml", &["discretization.dx=-1".to_string()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "discretization.dx: must be a finite number > 0 m (got -1)"
    );
}

#[test]
fn missing_equals_sign() {
    assert_usage(
        "discretization.dx",
        "--set",
        &["`discretization.dx`", "KEY=VALUE"],
    );
}

#[test]
fn empty_key_or_segment() {
    assert_usage("=1", "--set", &["`=1` has no key", "KEY=VALUE"]);
    assert_usage(
        "material..model=lps",
        "--set material..model",
        &["non-empty"],
    );
    assert_usage("solver.=1", "--set solver.", &["non-empty"]);
}

#[test]
fn index_out_of_range() {
    assert_usage(
        "boundary.5.x=1",
        "--set boundary.5.x",
        &["index 5", "`boundary` has 2 entries (indices 0 to 1)"],
    );
    assert_usage(
        "geometry.box.0.max.2=1",
        "--set geometry.box.0.max.2",
        &["index 2", "`geometry.box.0.max`", "0 to 1"],
    );
    assert_usage(
        "geometry.box.1.min=[0, 0]",
        "--set geometry.box.1.min",
        &["index 1", "`geometry.box` has 1 entry (index 0)"],
    );
}

#[test]
fn indexing_into_a_table_or_an_absent_array() {
    assert_usage(
        "material.0=1",
        "--set material.0",
        &["`material` is a table, not an array"],
    );
    assert_usage("0=1", "--set 0", &["not an array"]);
    assert_usage(
        "precrack.0.start=[0, 0]",
        "--set precrack.0.start",
        &["`precrack` is not in the model", "existing array entry"],
    );
}

#[test]
fn name_segment_into_an_array() {
    assert_usage(
        "boundary.right.x=1",
        "--set boundary.right.x",
        &[
            "`boundary` is an array",
            "`right` must be an index",
            "0 to 1",
        ],
    );
}

#[test]
fn path_through_a_plain_value() {
    assert_usage(
        "discretization.dx.value=1",
        "--set discretization.dx.value",
        &["`discretization.dx` is a float", "`value`"],
    );
    assert_usage(
        "boundary.1.x.0=1",
        "--set boundary.1.x.0",
        &["`boundary.1.x` is a float"],
    );
}

#[test]
fn usage_errors_reach_parse() {
    let e = parse(MODEL, "test.toml", &["boundary.9.x=1".to_string()]).unwrap_err();
    assert!(
        e.to_string().starts_with("--set boundary.9.x: index 9"),
        "{e}"
    );
}
