//! Point clouds with named columns (material, groups, initial displacement and velocity) and
//! the initial fields of a run (`[[initial]]` tables and the cloud's columns): in the body,
//! in the run's state at step 0 and in the step-0 snapshot.

mod common;

use peridot::geometry::{build_body, region_nodes, Body};
use peridot::model::{Model, Shape};
use peridot::Error;

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
