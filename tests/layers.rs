//! Loading layers outside the body (`shape = "layer"`): exact lattice counts of the added
//! nodes, the body's own nodes left where they were, the region's boundary condition on the
//! layer's nodes, the same far-field strain as loading through an inside layer, the crack-tip
//! exclusion next to a layer, and errors naming the field.

mod common;

use peridot::geometry::{build_body, region_nodes, Body};
use peridot::model::Model;
use peridot::setup::Problem;
use peridot::Error;
use std::path::Path;

const PLATE: &str = include_str!("../models/plate_tension_2d.toml");

/// A 40 x 20 plate (dx = 5 mm, delta = 3.015 dx) with the given regions, no boundary.
fn plate(regions: &str) -> String {
    format!(
        r#"
[material]
model = "pmb"
youngs_modulus = 72e9
density = 2440.0
critical_stretch = 0.001

[discretization]
dimension = "plane-stress"
thickness = 0.01
dx = 0.005
horizon_factor = 3.015

[[geometry.box]]
min = [0.0, 0.0]
max = [0.2, 0.1]

{regions}

[solver]
kind = "explicit"
steps = 10
"#
    )
}

fn model(text: &str) -> Model {
    peridot::model::parse(text, "test.toml", &[]).expect("test model is valid")
}

fn body(text: &str) -> Body {
    build_body(&model(text), Path::new(".")).expect("body builds")
}

/// The error of reading and discretizing a model, as (field, message).
fn error(text: &str) -> (String, String) {
    let result = peridot::model::parse(text, "test.toml", &[])
        .and_then(|m| Problem::build(m, Path::new(".")));
    match result {
        Err(Error::Model { field, message }) => (field, message),
        Err(e) => panic!("unexpected error kind: {e}"),
        Ok(p) => panic!("expected an error, got a body of {} nodes", p.body.len()),
    }
}

const LAYER_BELOW: &str = "[[region]]\nname = \"grip\"\nshape = \"layer\"\nside = \"-y\"\n";

/// Lattice counts: 3 rows of 40 below (`depth_dx = 3`, and `depth_delta = 1` at 3.015 dx:
/// rows at 0.5, 1.5 and 2.5 dx below the face), 2 columns of 20 on the right (a depth of
/// 2.4 dx holds the columns at 0.5 and 1.5 dx). The body's own 800 nodes keep their
/// positions bit for bit; an `edge` region still measures from the body's face, not the
/// layer's.
#[test]
fn layer_adds_exact_lattice_rows() {
    let bare = body(&plate(""));
    assert_eq!(bare.len(), 800);
    for depth in ["depth_dx = 3", "depth_delta = 1"] {
        let b = body(&plate(&format!("{LAYER_BELOW}{depth}")));
        assert_eq!(b.len(), 800 + 120, "{depth}");
        assert_eq!(b.layer_node_count(), 120);
        let layer = &b.layers[0].nodes;
        let mut ys: Vec<f64> = layer.iter().map(|&i| b.positions[i][1]).collect();
        ys.dedup_by(|a, b| (*a - *b).abs() < 1e-12);
        for (got, want) in ys.iter().zip([-0.0125, -0.0075, -0.0025]) {
            assert!(
                (got - want).abs() < 1e-12,
                "layer row at {got}, want {want}"
            );
        }
        let core: Vec<[f64; 3]> = (0..b.len())
            .filter(|i| layer.binary_search(i).is_err())
            .map(|i| b.positions[i])
            .collect();
        assert_eq!(core, bare.positions, "the body's nodes moved");
        assert!((b.bbox_min[1] + 0.0125).abs() < 1e-12);
        assert!((b.core_min[1] - 0.0025).abs() < 1e-12);
        let edge: peridot::model::Shape =
            toml::from_str("shape = \"edge\"\nside = \"-y\"\ndepth_dx = 1").unwrap();
        let bottom = region_nodes(&b, &edge, "region.9").unwrap();
        assert_eq!(bottom.len(), 40);
        assert!(bottom
            .iter()
            .all(|&i| (b.positions[i][1] - 0.0025).abs() < 1e-12));
    }
    let right = body(&plate(
        "[[region]]\nname = \"r\"\nshape = \"layer\"\nside = \"+x\"\ndepth = 0.012",
    ));
    assert_eq!(right.layer_node_count(), 40);
    assert!(right.layers[0]
        .nodes
        .iter()
        .all(|&i| right.positions[i][0] > 0.2));
}

/// 3D: a 4 x 4 x 4 block with a layer two deep on +z adds 32 nodes; on an L of two boxes
/// the layer lies on the face of the box it names only (10 x 2 nodes), skipping nothing.
#[test]
fn layer_in_3d_and_on_a_named_box() {
    let text = plate("").replace(
        "dimension = \"plane-stress\"\nthickness = 0.01",
        "dimension = \"3d\"",
    );
    let text = text.replace(
        "min = [0.0, 0.0]\nmax = [0.2, 0.1]",
        "min = [0.0, 0.0, 0.0]\nmax = [0.02, 0.02, 0.02]",
    );
    let layer = "[[region]]\nname = \"top\"\nshape = \"layer\"\nside = \"+z\"\ndepth_dx = 2";
    let b = body(&format!("{text}\n{layer}"));
    assert_eq!(b.len(), 64 + 32);
    assert!(b.layers[0].nodes.iter().all(|&i| b.positions[i][2] > 0.02));

    let l_shape = plate(
        "[[geometry.box]]\nmin = [0.0, 0.1]\nmax = [0.05, 0.2]\n\
         [[region]]\nname = \"cap\"\nshape = \"layer\"\nside = \"+y\"\ndepth_dx = 2\nbox = 1",
    );
    let b = body(&l_shape);
    // box 1 is 10 x 20 = 200 nodes above the 800; its +y face is 10 nodes wide
    assert_eq!(b.len(), 800 + 200 + 20);
    assert!(b.layers[0].nodes.iter().all(|&i| {
        let p = b.positions[i];
        p[1] > 0.2 && p[0] < 0.05
    }));
}

/// The layer's nodes carry the boundary condition of its region: a y displacement on a layer
/// above and a fixed layer below hold every layer node at exactly the prescribed value after
/// 10 explicit steps (prescribed dofs are set, not integrated; x of the upper layer is free),
/// while the body between moves.
#[test]
fn layer_nodes_get_the_region_condition() {
    let text = plate(
        "[[region]]\nname = \"low\"\nshape = \"layer\"\nside = \"-y\"\ndepth_dx = 3\n\
         [[region]]\nname = \"high\"\nshape = \"layer\"\nside = \"+y\"\ndepth_dx = 3\n\
         [[boundary]]\nregion = \"low\"\nkind = \"fixed\"\n\
         [[boundary]]\nregion = \"high\"\nkind = \"displacement\"\ny = 1e-6\n",
    );
    let problem = common::problem(&text, &[]);
    let low = problem.region("low").to_vec();
    let high = problem.region("high").to_vec();
    assert_eq!((low.len(), high.len()), (120, 120));
    let out = common::run::<f64>(problem.clone());
    let u = &out.state.u;
    for &i in &high {
        assert_eq!(u[2 * i + 1], 1e-6, "node {i}");
    }
    for &i in &low {
        assert_eq!((u[2 * i], u[2 * i + 1]), (0.0, 0.0), "node {i}");
    }
    let moved = (0..problem.body.len())
        .filter(|i| !high.contains(i) && !low.contains(i))
        .any(|i| u[2 * i + 1] > 0.0);
    assert!(moved, "the body next to the displaced layer did not move");
}

/// Mean axial strain of the nodes in the middle quarter (|x| < 0.125 m, |y| < 0.0625 m) of
/// the seed's tension plate, relaxed by ADR.
fn middle_strain(overrides: &[&str]) -> f64 {
    let problem = common::problem(PLATE, overrides);
    let out = common::run::<f64>(problem.clone());
    assert_eq!(out.summary.converged, Some(true), "ADR did not converge");
    let pts: Vec<(f64, f64)> = problem
        .body
        .positions
        .iter()
        .enumerate()
        .filter(|(_, x)| x[0].abs() < 0.125 && x[1].abs() < 0.0625)
        .map(|(i, x)| (x[0], out.state.u[2 * i]))
        .collect();
    common::slope(&pts)
}

/// The seed's plate (coarsened to dx = 10 mm: 100 x 50 nodes) pulled by 200 MPa through its
/// own edge columns, and through one column added outside each end: the far-field strain is
/// the same within 1% (both are the same traction on the same plate; what differs is the
/// loaded material at the ends, far from the middle), and both are within 5% of P / E
/// (the lattice's stiffness at delta = 3.015 dx, `tests/tension.rs`).
#[test]
fn outside_layer_gives_the_far_field_strain_of_an_inside_one() {
    let coarse = "discretization.dx=0.01";
    let inside = middle_strain(&[coarse]);
    let outside = middle_strain(&[
        coarse,
        "region.0={name = \"left\", shape = \"layer\", side = \"-x\", depth_dx = 1}",
        "region.1={name = \"right\", shape = \"layer\", side = \"+x\", depth_dx = 1}",
    ]);
    let continuum = 200e6 / 200e9;
    println!("middle strain: inside {inside:.6e}, outside {outside:.6e}, P/E {continuum:.6e}");
    assert!(
        (outside / inside - 1.0).abs() < 0.01,
        "outside {outside} vs inside {inside}"
    );
    for s in [inside, outside] {
        assert!((s / continuum - 1.0).abs() < 0.05, "{s} vs P/E {continuum}");
    }
}

/// The crack-tip finder ignores damage within one horizon of a layer, loaded or not: with
/// three rows below the plate (no condition on them) the plate's bottom rows have full
/// families, yet rows 0 to 2 (1 to 3 spacings from the layer's top row, within 3.015 dx) are
/// excluded and row 3 (4 spacings) is not, away from the sides.
#[test]
fn tips_ignore_damage_next_to_a_layer() {
    let problem = common::problem(&plate(&format!("{LAYER_BELOW}depth_dx = 3")), &[]);
    let excluded = peridot::solver::excluded_nodes(&problem);
    let b = &problem.body;
    for (i, p) in b.positions.iter().enumerate() {
        let row = ((p[1] - 0.0025) / 0.005).round() as i64;
        let middle = p[0] > 0.03 && p[0] < 0.17;
        if row < 0 || (row <= 2 && middle) {
            assert!(excluded[i], "node {i} at {p:?} (row {row}) is read");
        }
        if (3..=5).contains(&row) && middle {
            assert!(!excluded[i], "node {i} at {p:?} (row {row}) is excluded");
        }
    }
}

/// Bad layers: each error names the field, the value and what is allowed.
#[test]
fn bad_layers_are_errors_naming_the_field() {
    let cases: [(&str, &str, &[&str]); 6] = [
        (
            "[[region]]\nname = \"g\"\nshape = \"layer\"\nside = \"-z\"\ndepth_dx = 3",
            "region.0.side",
            &["-z", "-x, +x, -y, +y"],
        ),
        (
            "[[region]]\nname = \"g\"\nshape = \"layer\"\nside = \"up\"\ndepth_dx = 3",
            "region.0.side",
            &["up", "-x"],
        ),
        (
            "[[region]]\nname = \"g\"\nshape = \"layer\"\nside = \"-y\"\ndepth_dx = 0",
            "region.0.depth_dx",
            &["0", "> 0"],
        ),
        (
            "[[region]]\nname = \"g\"\nshape = \"layer\"\nside = \"-y\"",
            "region.0.depth",
            &["depth_dx", "depth_delta"],
        ),
        (
            "[[region]]\nname = \"g\"\nshape = \"layer\"\nside = \"-y\"\ndepth_dx = 1\nbox = 2",
            "region.0.box",
            &["2", "0 to 0"],
        ),
        (
            // the slab of box 0's +y face lies inside box 1: nothing to add
            "[[geometry.box]]\nmin = [0.0, 0.1]\nmax = [0.2, 0.2]\n\
             [[region]]\nname = \"g\"\nshape = \"layer\"\nside = \"+y\"\ndepth_dx = 1\nbox = 0",
            "region.0",
            &["adds no node", "dx = 0.005"],
        ),
    ];
    for (regions, field, words) in cases {
        let (f, message) = error(&plate(regions));
        assert_eq!(f, field, "{regions}: {message}");
        for w in words {
            assert!(message.contains(w), "{field}: '{message}' lacks '{w}'");
        }
    }
    let two_boxes = plate(
        "[[geometry.box]]\nmin = [0.0, 0.1]\nmax = [0.05, 0.2]\n\
         [[region]]\nname = \"g\"\nshape = \"layer\"\nside = \"-y\"\ndepth_dx = 1",
    );
    let (f, message) = error(&two_boxes);
    assert_eq!(f, "region.0.box", "{message}");
    assert!(message.contains("2 boxes"), "{message}");
    let removal = plate("[[geometry.remove]]\nshape = \"layer\"\nside = \"-y\"\ndepth_dx = 1");
    let (f, message) = error(&removal);
    assert_eq!(f, "geometry.remove.0.shape", "{message}");
    assert!(message.contains("layer"), "{message}");
}
