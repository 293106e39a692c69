//! Point clouds with named columns (material, groups, initial displacement and velocity) and
//! the initial fields of a run (`[[initial]]` tables and the cloud's columns): in the body,
//! in the run's state at step 0 and in the step-0 snapshot.

mod common;

use peridot::backend::BackendKind;
use peridot::dynamics::State;
use peridot::geometry::{build_body, region_nodes, Body};
use peridot::model::{Model, Shape};
use peridot::setup::Problem;
use peridot::solver::{simulate, Outcome};
use peridot::{Error, Precision};
use std::path::{Path, PathBuf};

/// A model of the cloud `cloud.csv` in `dim` with `rest` appended.
fn cloud_model(dim: &str, rest: &str) -> String {
    let thickness = if dim == "3d" { "" } else { "thickness = 1.0" };
    format!(
        r#"
[material]
model = "pmb"
youngs_modulus = 72e9
density = 2440.0
critical_stretch = 0.01

[discretization]
dimension = "{dim}"
{thickness}
dx = 1.0
horizon_factor = 3.015

[geometry]
points_csv = "cloud.csv"

[solver]
kind = "explicit"
steps = 4

{rest}
"#
    )
}

fn body_of(csv: &str, dim: &str) -> Result<Body, (String, String)> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cloud.csv"), csv).unwrap();
    let model: Model = toml::from_str(&cloud_model(dim, "")).unwrap();
    build_body(&model, dir.path()).map_err(|e| match e {
        Error::Model { field, message } => (field, message),
        e => panic!("unexpected error kind {e}"),
    })
}

fn group(b: &Body, name: &str) -> Vec<usize> {
    let shape: Shape = toml::from_str(&format!("shape = \"group\"\ngroup = \"{name}\"")).unwrap();
    region_nodes(b, &shape, "region.0").expect("group selects nodes")
}

/// Named columns in any order: positions, volumes, material ids, a group by name, a group by
/// membership, initial displacement and velocity (missing components 0), exactly as written.
#[test]
fn cloud_columns_by_header_name() {
    let csv = "volume, y, x, Material, region, region:clamp, ux, vy\n\
               0.5, 0, 0, 1, left, 1, 1e-3, 2\n\
               0.5, 0, 1, 1, , no, 0, -2\n\
               0.25, 1, 0, 7, left, true, 0, 0\n";
    let b = body_of(csv, "plane-stress").expect("cloud with columns builds");
    assert_eq!(
        b.positions,
        vec![[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    );
    assert_eq!(b.volumes, vec![0.5, 0.5, 0.25]);
    assert_eq!(b.material_ids, Some(vec![1, 1, 7]));
    assert_eq!(group(&b, "left"), vec![0, 2]);
    assert_eq!(group(&b, "clamp"), vec![0, 2]);
    let u = b.initial_displacement.as_ref().expect("ux column");
    assert_eq!(u, &vec![[1e-3, 0.0, 0.0], [0.0; 3], [0.0; 3]]);
    let v = b.initial_velocity.as_ref().expect("vy column");
    assert_eq!(v, &vec![[0.0, 2.0, 0.0], [0.0, -2.0, 0.0], [0.0; 3]]);
    // a plain header keeps the positional columns and gives none of these
    let b = body_of("x,y,volume\n0,0,1\n1,0,1\n", "plane-stress").unwrap();
    assert!(b.material_ids.is_none() && b.initial_velocity.is_none() && b.groups.is_empty());
}

/// Each bad cell or header is an error naming the file's line and the column.
#[test]
fn cloud_column_errors_name_row_and_column() {
    let cases = [
        (
            "x,y,volume,vx\n0,0,1,a\n1,0,1,0\n",
            "line 2",
            "column 4 (vx) 'a'",
        ),
        (
            "x,y,volume,material\n0,0,1,1\n1,0,1,2.5\n",
            "line 3",
            "column 4 (material) '2.5'",
        ),
        (
            "x,y,volume,region:top\n0,0,1,maybe\n1,0,1,0\n",
            "line 2",
            "column 4 (region:top)",
        ),
        (
            "x,y,volume,vx\n0,0,1,inf\n1,0,1,0\n",
            "line 2",
            "column 4 (vx): inf",
        ),
        (
            "x,y,volume,uz\n0,0,1,0\n1,0,1,0\n",
            "line 1",
            "column 4 'uz' is a z component",
        ),
        (
            "x,y,volume,vx,colour\n0,0,1,0,0\n1,0,1,0,0\n",
            "line 1",
            "column 5 'colour'",
        ),
        ("x,volume,vx\n0,1,0\n1,1,0\n", "line 1", "no 'y' column"),
        (
            "x,y,volume,vx,vx\n0,0,1,0,0\n",
            "line 1",
            "column 5 'vx' repeats column 4",
        ),
        (
            "x,y,volume,vx\n0,0,1\n",
            "line 2",
            "3 columns; expected 4 (x,y,volume,vx)",
        ),
    ];
    for (csv, line, what) in cases {
        let (field, msg) = body_of(csv, "plane-stress").expect_err(csv);
        assert_eq!(field, "geometry.points_csv", "{csv}");
        assert!(msg.contains(line) && msg.contains(what), "{csv}: {msg}");
    }
}

/// The step-0 snapshot of an output folder (the first `.vtu` in name order).
fn first_snapshot(dir: &Path) -> PathBuf {
    common::snapshots(dir)
        .into_iter()
        .next()
        .expect("a snapshot")
}

/// Run `problem` on `cpu-loop` in f64 with its outputs in `out`.
fn run_into(problem: Problem, out: &Path) -> Outcome<f64> {
    let opts = common::options(BackendKind::CpuLoop, Precision::F64, Some(out));
    simulate::<f64>(problem, &opts).expect("run succeeds")
}

/// Total momentum `sum rho V_i v_i`, kg m/s, per component.
fn momentum(state: &State<f64>, volumes: &[f64], density: f64, d: usize) -> Vec<f64> {
    (0..d)
        .map(|k| {
            (0..volumes.len())
                .map(|i| density * volumes[i] * state.v[d * i + k])
                .sum()
        })
        .collect()
}

const TET_CUBE: &str = r#"
[material]
model = "pmb"
youngs_modulus = 1e9
density = 1000.0
critical_stretch = 0.5

[discretization]
dimension = "3d"
dx = 0.25
horizon_factor = 2.0

[geometry]
mesh = "unit_cube_tet.msh"

[[region]]
name = "floor"
shape = "group"
group = "bottom"

[[initial]]
region = "floor"
velocity = [0.5, -0.25, 2.0]

[solver]
kind = "explicit"
steps = 20

[output]
vtk_every = 10
image = false
"#;

/// A uniform initial velocity on a region of a mesh body (the cells on the tetrahedral
/// cube's bottom face, unequal volumes) gives the body the momentum `m_region v` at step 0,
/// and the internal forces, equal and opposite per bond weighted by both volumes, keep it
/// through 20 steps to round-off (1e-12 of it). The step-0 snapshot holds that velocity on
/// the region and zero elsewhere, exactly, and no displacement.
#[test]
fn uniform_initial_velocity_on_a_mesh_region() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mesh");
    let model = peridot::model::parse(TET_CUBE, "cube.toml", &[]).expect("valid model");
    let problem = Problem::build(model, &dir).expect("mesh problem");
    let region = problem.region("floor").to_vec();
    assert!(!region.is_empty() && region.len() < problem.body.len() / 2);
    let volumes = problem.body.volumes.clone();
    let v0 = [0.5, -0.25, 2.0];
    let mass: f64 = region.iter().map(|&i| 1000.0 * volumes[i]).sum();
    let out = tempfile::tempdir().unwrap();
    let outcome = run_into(problem, out.path());
    let p = momentum(&outcome.state, &volumes, 1000.0, 3);
    for k in 0..3 {
        let expected = mass * v0[k];
        assert!(
            (p[k] - expected).abs() < 1e-12 * mass * 2.0,
            "p{k} = {} vs {expected}",
            p[k]
        );
    }
    // the region moved, so its bonds to the rest stretched: the velocity spread
    let moved = (0..volumes.len())
        .filter(|i| !region.contains(i))
        .any(|i| outcome.state.v[3 * i + 2] != 0.0);
    assert!(moved, "no force reached the rest of the body");
    let snap = first_snapshot(out.path());
    let v = common::vtu_array(&snap, "velocity");
    let u = common::vtu_array(&snap, "displacement");
    for i in 0..volumes.len() {
        let want = if region.contains(&i) { v0 } else { [0.0; 3] };
        assert_eq!(v[3 * i..3 * i + 3], want, "node {i}");
    }
    assert!(u.iter().all(|&x| x == 0.0));
}

const GRID: &str = r#"
[material]
model = "pmb"
youngs_modulus = 1e9
density = 1000.0
critical_stretch = 0.5

[discretization]
dimension = "plane-stress"
thickness = 1.0
dx = 1.0
horizon_factor = 3.015

[geometry]
points_csv = "cloud.csv"

[[region]]
name = "corner"
shape = "box"
min = [-0.5, -0.5]
max = [1.5, 1.5]

[[initial]]
region = "corner"
velocity = [0.0, 7.0]

[solver]
kind = "explicit"
steps = 2

[output]
vtk_every = 1
image = false
"#;

/// Per-node initial fields from a cloud's columns reach the step-0 snapshot as written, and
/// an `[[initial]]` table after them sets its region's whole velocity vector over them
/// (later wins); the columns' displacement stays (the table gives none).
#[test]
fn per_node_fields_from_cloud_columns() {
    let mut csv = String::from("x,y,volume,ux,vx,vy\n");
    let mut expect_u = Vec::new();
    let mut expect_v = Vec::new();
    for j in 0..6 {
        for i in 0..6 {
            let (ux, vx, vy) = (1e-6 * i as f64, 0.1 * j as f64, -0.2 * i as f64);
            csv += &format!("{i},{j},1,{ux},{vx},{vy}\n");
            expect_u.push([ux, 0.0, 0.0]);
            let corner = i <= 1 && j <= 1;
            expect_v.push(if corner {
                [0.0, 7.0, 0.0]
            } else {
                [vx, vy, 0.0]
            });
        }
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cloud.csv"), csv).unwrap();
    let model = peridot::model::parse(GRID, "grid.toml", &[]).expect("valid model");
    let problem = Problem::build(model, dir.path()).expect("cloud problem");
    let out = tempfile::tempdir().unwrap();
    run_into(problem, out.path());
    let snap = first_snapshot(out.path());
    let (u, v) = (
        common::vtu_array(&snap, "displacement"),
        common::vtu_array(&snap, "velocity"),
    );
    for i in 0..36 {
        assert_eq!(u[3 * i..3 * i + 3], expect_u[i], "u of node {i}");
        assert_eq!(v[3 * i..3 * i + 3], expect_v[i], "v of node {i}");
    }
}

/// Bad `[[initial]]` tables are refused naming the field.
#[test]
fn initial_tables_are_checked() {
    let cases: [(&str, &str, &str); 5] = [
        (
            "region = \"nowhere\"\nvelocity = [1.0, 0.0]",
            "initial.0.region",
            "nowhere",
        ),
        (
            "velocity = [1.0, 0.0, 0.0]",
            "initial.0.velocity",
            "3 components",
        ),
        (
            "displacement = [1.0, nan]",
            "initial.0.displacement",
            "component 2",
        ),
        ("region = \"corner\"", "initial.0", "gives no field"),
        (
            "velocity = [1.0, 0.0]\n[solver]\nkind = \"adr\"\nsteps = 10",
            "initial.0.velocity",
            "ADR",
        ),
    ];
    for (table, field, what) in cases {
        let text = GRID.replace(
            "[[initial]]\nregion = \"corner\"\nvelocity = [0.0, 7.0]\n\n[solver]\nkind = \"explicit\"\nsteps = 2\n",
            "",
        );
        let text = if table.contains("[solver]") {
            format!("{text}\n[[initial]]\n{table}\n")
        } else {
            format!("{text}\n[solver]\nkind = \"explicit\"\nsteps = 2\n[[initial]]\n{table}\n")
        };
        match peridot::model::parse(&text, "m.toml", &[]) {
            Err(Error::Model { field: f, message }) => {
                assert_eq!(f, field, "{table}: {message}");
                assert!(message.contains(what), "{table}: {message}");
            }
            other => panic!("{table}: expected a model error, got {other:?}"),
        }
    }
}

/// An initial displacement is a deformation measured from the reference positions: the same
/// displacement on every node is a rigid shift, whose bonds keep their length exactly (each
/// bond's `eta = u_j - u_i` is 0), so the body stays where it was put, at rest, bit for bit;
/// the same displacement on one corner stretches the bonds out of it, and the body moves.
#[test]
fn initial_displacement_deforms_the_body() {
    let mut csv = String::from("x,y,volume\n");
    for j in 0..6 {
        for i in 0..6 {
            csv += &format!("{i},{j},1\n");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cloud.csv"), csv).unwrap();
    for (region, rigid) in [("", true), ("region = \"corner\"\n", false)] {
        let text = GRID.replace(
            "[[initial]]\nregion = \"corner\"\nvelocity = [0.0, 7.0]\n",
            &format!("[[initial]]\n{region}displacement = [1e-3, -2e-3]\n"),
        );
        let model = peridot::model::parse(&text, "grid.toml", &[]).expect("valid model");
        let problem = Problem::build(model, dir.path()).expect("cloud problem");
        let out = tempfile::tempdir().unwrap();
        let end = run_into(problem, out.path()).state;
        let shifted = (0..36).all(|i| end.u[2 * i] == 1e-3 && end.u[2 * i + 1] == -2e-3);
        let at_rest = end.v.iter().all(|&v| v == 0.0);
        assert_eq!(shifted && at_rest, rigid, "region '{region}'");
    }
}
