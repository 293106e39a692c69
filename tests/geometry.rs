//! Geometry: lattice fill, removal shapes, regions, CSV point clouds and pre-cracks. Node
//! counts on a lattice are integers, so most checks are exact; where a count depends on how a
//! curved boundary cuts the lattice the tolerance is stated next to it.

use peridot::geometry::{bond_crosses_precrack, build_body, region_nodes, Body};
use peridot::model::{Model, Precrack, Shape};
use peridot::neighbors::cell_list_families;
use peridot::Error;
use std::f64::consts::PI;
use std::io::Write;
use std::path::Path;

/// A model from its `[discretization]` lines and the rest (geometry, regions); material and
/// solver are fixed placeholders. Parsed without validation, which lives elsewhere.
fn model(disc: &str, rest: &str) -> Model {
    let text = format!(
        r#"
[material]
model = "pmb"
youngs_modulus = 72e9
density = 2440.0
critical_stretch = 0.001

[discretization]
{disc}

[solver]
kind = "explicit"
steps = 10

{rest}
"#
    );
    toml::from_str(&text).expect("test model parses")
}

fn body(disc: &str, rest: &str) -> Body {
    build_body(&model(disc, rest), Path::new(".")).expect("body builds")
}

/// The error of building a body, as (field, message).
fn body_error(disc: &str, rest: &str, dir: &Path) -> (String, String) {
    match build_body(&model(disc, rest), dir) {
        Err(Error::Model { field, message }) => (field, message),
        Err(e) => panic!("unexpected error kind: {e}"),
        Ok(b) => panic!("expected an error, got a body of {} nodes", b.len()),
    }
}

fn shape(toml_text: &str) -> Shape {
    toml::from_str(toml_text).expect("test shape parses")
}

const PLATE_2D: &str = r#"dimension = "plane-stress"
dx = 0.005
horizon_factor = 3.015
thickness = 0.01"#;

/// The seeds' plate: 1000 x 500 mm at dx = 5 mm is a 200 x 100 lattice, exactly 20,000
/// nodes (the per-axis count must not round 200.00000000000003 up to 201). Volumes dx^2 h.
#[test]
fn plate_has_20000_nodes() {
    let b = body(
        PLATE_2D,
        "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [1.0, 0.5]",
    );
    assert_eq!(b.len(), 20_000);
    assert_eq!(b.dim(), 2);
    assert!((b.delta - 3.015 * 0.005).abs() < 1e-15);
    assert_eq!(b.thickness, 0.01);
    let v = 0.005 * 0.005 * 0.01;
    assert!(b.volumes.iter().all(|&x| (x - v).abs() <= 1e-15 * v));
    // Cell-centred: the outermost nodes sit half a spacing inside the box.
    for (got, want) in b.bbox_min.iter().zip([0.0025, 0.0025, 0.0]) {
        assert!((got - want).abs() < 1e-12);
    }
    for (got, want) in b.bbox_max.iter().zip([0.9975, 0.4975, 0.0]) {
        assert!((got - want).abs() < 1e-12);
    }
    // x fastest, then y.
    assert!(b.positions[1][0] > b.positions[0][0] && b.positions[1][1] == b.positions[0][1]);
    assert!(b.positions[200][1] > b.positions[0][1] && b.positions[200][0] == b.positions[0][0]);
    assert!(b.positions.iter().all(|p| p[2] == 0.0));
}

/// 3D block 100 x 50 x 20 mm at dx = 5 mm: 20 x 10 x 4 = 800 nodes of volume dx^3, x fastest
/// then y then z; thickness is 1 in 3D whatever the file says.
#[test]
fn block_3d_count_volume_and_order() {
    let b = body(
        "dimension = \"3d\"\ndx = 0.005\ndelta = 0.015075",
        "[[geometry.box]]\nmin = [0.0, 0.0, 0.0]\nmax = [0.1, 0.05, 0.02]",
    );
    assert_eq!(b.len(), 800);
    assert_eq!(b.thickness, 1.0);
    assert_eq!(b.delta, 0.015075);
    assert!(b.volumes.iter().all(|&v| (v - 1.25e-7).abs() < 1e-20));
    assert!(b.positions[20][1] > b.positions[19][1]);
    assert!(b.positions[200][2] > b.positions[199][2]);
    assert!((b.bbox_max[2] - 0.0175).abs() < 1e-12);
}

/// Overlapping boxes share one lattice: an L of two 10 x 2 arms overlapping in a 2 x 2 corner
/// has 20 + 20 - 4 nodes, none duplicated; far-apart boxes cost only their own nodes.
#[test]
fn box_union_shares_one_lattice() {
    let disc = "dimension = \"plane-strain\"\ndx = 1.0\nhorizon_factor = 3.015";
    let l = body(
        disc,
        "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [10.0, 2.0]\n\
         [[geometry.box]]\nmin = [0.0, 0.0]\nmax = [2.0, 10.0]",
    );
    assert_eq!(l.len(), 36);
    let mut sorted = l.positions.clone();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    sorted.dedup();
    assert_eq!(sorted.len(), 36);
    // 1e9 x 1e9 lattice spacings apart: visited by index ranges, not the whole hull.
    let far = body(
        disc,
        "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [3.0, 3.0]\n\
         [[geometry.box]]\nmin = [1e9, 1e9]\nmax = [1000000002.0, 1000000002.0]",
    );
    assert_eq!(far.len(), 9 + 4);
}

/// A circular hole of radius r removes about pi r^2 / dx^2 nodes. The error of a lattice count
/// in a disc is bounded by the nodes along its perimeter, 2 pi r / dx (here 126); every node
/// left is outside the disc.
#[test]
fn hole_removes_disc_area() {
    let dx = 0.001;
    let r = 0.02;
    let full = 200 * 200;
    let b = body(
        "dimension = \"plane-stress\"\ndx = 0.001\nhorizon_factor = 3.015",
        "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [0.2, 0.2]\n\
         [[geometry.remove]]\nshape = \"circle\"\ncenter = [0.1013, 0.0991]\nradius = 0.02",
    );
    let removed = (full - b.len()) as f64;
    let expected = PI * r * r / (dx * dx);
    assert!(
        (removed - expected).abs() <= 2.0 * PI * r / dx,
        "removed {removed}, expected about {expected}"
    );
    let d2 = |p: &[f64; 3]| (p[0] - 0.1013).powi(2) + (p[1] - 0.0991).powi(2);
    assert!(b.positions.iter().all(|p| d2(p) > r * r));
}

/// 3D removals: a sphere removes about 4/3 pi r^3 / dx^3 nodes (tolerance: its surface in
/// nodes, 4 pi r^2 / dx^2); a z-axis cylinder through a 4-layer block removes the same disc
/// from every layer, and a bounded one (half_length 1 dx around z = 2 dx) from the middle two
/// layers only (z = 1.5 and 2.5 dx; 1.5 dx would reach the outer layers, inclusively).
#[test]
fn sphere_and_cylinder_removal_3d() {
    let disc = "dimension = \"3d\"\ndx = 1.0\nhorizon_factor = 3.015";
    let block = "[[geometry.box]]\nmin = [0.0, 0.0, 0.0]\nmax = [40.0, 40.0, 40.0]\n";
    let sphere = body(
        disc,
        &format!(
            "{block}[[geometry.remove]]\nshape = \"circle\"\ncenter = [20.1, 19.7, 20.3]\n\
             radius = 10.0"
        ),
    );
    let removed = (64_000 - sphere.len()) as f64;
    let expected = 4.0 / 3.0 * PI * 1000.0;
    assert!((removed - expected).abs() <= 4.0 * PI * 100.0);

    let slab = "[[geometry.box]]\nmin = [0.0, 0.0, 0.0]\nmax = [40.0, 40.0, 4.0]\n";
    let hole = "[[geometry.remove]]\nshape = \"cylinder\"\ncenter = [20.1, 19.7, 2.0]\n\
                axis = [0.0, 0.0, 2.0]\nradius = 8.0\n";
    let through = body(disc, &format!("{slab}{hole}"));
    let removed = 6400 - through.len();
    assert_eq!(removed % 4, 0, "the same disc in every layer");
    let per_layer = (removed / 4) as f64;
    assert!((per_layer - PI * 64.0).abs() <= 2.0 * PI * 8.0);
    let bounded = body(disc, &format!("{slab}{hole}half_length = 1.0\n"));
    assert_eq!(6400 - bounded.len(), removed / 2);
}

/// A notch of width 2 dx along y = 0.5 from x = 0 to 0.3 on a 100 x 100 lattice (dx = 0.01)
/// removes the two rows at distance dx/2 of the segment for x <= 0.3 (30 columns) plus the
/// column at x = 0.305 (within dx/sqrt(2) < dx of the end point): 62 nodes, exactly. In 3D a
/// notch given in 2 components is extruded through z; with 3 it is a tube around the segment.
#[test]
fn notch_removes_slot() {
    let notch = "[[geometry.remove]]\nshape = \"notch\"\nwidth = 0.02\n";
    let b = body(
        "dimension = \"plane-stress\"\ndx = 0.01\nhorizon_factor = 3.015",
        &format!(
            "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [1.0, 1.0]\n{notch}\
             start = [0.0, 0.5]\nend = [0.3, 0.5]"
        ),
    );
    assert_eq!(b.len(), 10_000 - 62);
    let disc3 = "dimension = \"3d\"\ndx = 0.01\nhorizon_factor = 3.015";
    let block = "[[geometry.box]]\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 1.0, 0.05]\n";
    let extruded = body(
        disc3,
        &format!("{block}{notch}start = [0.0, 0.5]\nend = [0.3, 0.5]"),
    );
    assert_eq!(extruded.len(), 5 * (10_000 - 62));
    let tube = body(
        disc3,
        &format!("{block}{notch}start = [0.0, 0.5, 0.025]\nend = [0.3, 0.5, 0.025]"),
    );
    // Layers z = 0.015, 0.025, 0.035: the middle one loses the 62 nodes of the 2D slot; the
    // neighbouring ones are at distance sqrt(0.005^2 + 0.01^2) = 0.0112 > 0.01: kept.
    assert_eq!(tube.len(), 5 * 10_000 - 62);
}

/// Edge layers on a 40 x 20 lattice: depth_dx = 1 is exactly one column (20 nodes) and
/// depth_delta = 1 at delta = 3.015 dx four columns (offsets 0..3 dx < 3.015 dx); a depth of
/// exactly 2 dx is strict, so two rows (40 nodes each) even though the third row sits at 2 dx.
#[test]
fn edge_layers() {
    let b = body(
        "dimension = \"plane-stress\"\ndx = 0.005\nhorizon_factor = 3.015",
        "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [0.2, 0.1]",
    );
    let count = |s: &str| region_nodes(&b, &shape(s), "region.0").map(|v| v.len());
    assert_eq!(
        count("shape = \"edge\"\nside = \"-x\"\ndepth_dx = 1.0").unwrap(),
        20
    );
    assert_eq!(
        count("shape = \"edge\"\nside = \"+x\"\ndepth_delta = 1.0").unwrap(),
        80
    );
    assert_eq!(
        count("shape = \"edge\"\nside = \"-y\"\ndepth = 0.01").unwrap(),
        80
    );
    assert_eq!(
        count("shape = \"edge\"\nside = \"+y\"\ndepth_dx = 2.5").unwrap(),
        120
    );
    let left = region_nodes(
        &b,
        &shape("shape = \"edge\"\nside = \"-x\"\ndepth_dx = 1.0"),
        "r",
    )
    .unwrap();
    assert!(left.windows(2).all(|w| w[0] < w[1]));
    assert!(left.iter().all(|&i| b.positions[i][0] == b.bbox_min[0]));

    let b3 = body(
        "dimension = \"3d\"\ndx = 0.005\nhorizon_factor = 3.015",
        "[[geometry.box]]\nmin = [0.0, 0.0, 0.0]\nmax = [0.05, 0.05, 0.05]",
    );
    let top = region_nodes(
        &b3,
        &shape("shape = \"edge\"\nside = \"+z\"\ndepth_dx = 1"),
        "r",
    );
    assert_eq!(top.unwrap().len(), 100);
}

/// Regions: `all` selects every node; box, circle and cylinder selections are inclusive, so a
/// box whose faces lie exactly on lattice nodes (x = 0.0025 and 0.0125 here) keeps them.
#[test]
fn region_shapes() {
    let b = body(
        PLATE_2D,
        "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [0.1, 0.1]",
    );
    let all = region_nodes(&b, &shape("shape = \"all\""), "region.0").unwrap();
    assert_eq!(all, (0..400).collect::<Vec<_>>());
    let boxed = region_nodes(
        &b,
        &shape("shape = \"box\"\nmin = [0.0025, 0.0025]\nmax = [0.0125, 0.0025]"),
        "region.1",
    )
    .unwrap();
    assert_eq!(boxed, vec![0, 1, 2]);
    let disc = region_nodes(
        &b,
        &shape("shape = \"circle\"\ncenter = [0.0525, 0.0525]\nradius = 0.005"),
        "region.2",
    )
    .unwrap();
    assert_eq!(
        disc.len(),
        5,
        "centre and its 4 nearest neighbours at exactly r"
    );
}

/// Region errors name the field: an empty selection (and says the body's extent), a vector of
/// the wrong length, a z side in 2D, two depths at once.
#[test]
fn region_errors_name_the_field() {
    let b = body(
        PLATE_2D,
        "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [0.1, 0.1]",
    );
    let err = |s: &str| match region_nodes(&b, &shape(s), "region.3") {
        Err(Error::Model { field, message }) => (field, message),
        other => panic!("expected a model error, got {other:?}"),
    };
    let (f, m) = err("shape = \"circle\"\ncenter = [5.0, 5.0]\nradius = 0.01");
    assert_eq!(f, "region.3");
    assert!(
        m.contains("no node") && m.contains("(0.0025, 0.0025)"),
        "{m}"
    );
    let (f, m) = err("shape = \"box\"\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 1.0, 1.0]");
    assert_eq!(f, "region.3.min");
    assert!(m.contains("3 components"), "{m}");
    let (f, m) = err("shape = \"edge\"\nside = \"+z\"\ndepth_dx = 1.0");
    assert_eq!(f, "region.3.side");
    assert!(m.contains("-x, +x, -y, +y"), "{m}");
    let (f, _) = err("shape = \"edge\"\nside = \"-x\"\ndepth_dx = 1.0\ndepth = 0.1");
    assert_eq!(f, "region.3.depth");
}

/// Removal refuses edge and all (they would need the body being built), naming the entry;
/// removing everything, or giving no geometry, is an error naming `geometry`; a spacing that
/// would need more than 2^32 nodes is refused before allocating.
#[test]
fn body_errors_name_the_field() {
    let dir = Path::new(".");
    let plate = "[[geometry.box]]\nmin = [0.0, 0.0]\nmax = [0.1, 0.1]\n";
    let (f, _) = body_error(
        PLATE_2D,
        &format!("{plate}[[geometry.remove]]\nshape = \"circle\"\ncenter = [0.0, 0.0]\nradius = 1.0\n[[geometry.remove]]\nshape = \"all\""),
        dir,
    );
    assert_eq!(f, "geometry.remove.1");
    let (f, _) = body_error(
        PLATE_2D,
        &format!("{plate}[[geometry.remove]]\nshape = \"edge\"\nside = \"-x\"\ndepth = 0.01"),
        dir,
    );
    assert_eq!(f, "geometry.remove.0");
    let (f, m) = body_error(
        PLATE_2D,
        &format!(
            "{plate}[[geometry.remove]]\nshape = \"circle\"\ncenter = [0.05, 0.05]\nradius = 1.0"
        ),
        dir,
    );
    assert_eq!(f, "geometry");
    assert!(m.contains("no nodes"), "{m}");
    let (f, _) = body_error(PLATE_2D, "[geometry]", dir);
    assert_eq!(f, "geometry");
    let (f, _) = body_error(
        "dimension = \"3d\"\ndx = 1e-6\nhorizon_factor = 3.015",
        "[[geometry.box]]\nmin = [0.0, 0.0, 0.0]\nmax = [1.0, 1.0, 1.0]",
        dir,
    );
    assert_eq!(f, "discretization.dx");
}

fn write_csv(dir: &Path, name: &str, text: &str) {
    let mut f = std::fs::File::create(dir.join(name)).expect("create csv");
    f.write_all(text.as_bytes()).expect("write csv");
}

/// A CSV point cloud is read as given (volumes too), relative to the model folder, with a
/// header, comments, blank lines and a leading byte-order mark skipped; removal shapes apply
/// to it as well.
#[test]
fn csv_point_cloud() {
    let dir = tempfile::tempdir().expect("temp dir");
    write_csv(
        dir.path(),
        "pts.csv",
        "x, y, volume\n# a comment\n\n0.0,0.0,1e-6\n0.01, 0.0, 2e-6 # trailing\n0.0,0.02,3e-6\r\n",
    );
    let disc = "dimension = \"plane-stress\"\ndx = 0.01\nhorizon_factor = 3.015";
    let m = model(disc, "[geometry]\npoints_csv = \"pts.csv\"");
    let b = build_body(&m, dir.path()).expect("cloud builds");
    assert_eq!(
        b.positions,
        vec![[0.0, 0.0, 0.0], [0.01, 0.0, 0.0], [0.0, 0.02, 0.0]]
    );
    assert_eq!(b.volumes, vec![1e-6, 2e-6, 3e-6]);
    assert_eq!((b.bbox_min, b.bbox_max), ([0.0; 3], [0.01, 0.02, 0.0]));

    write_csv(dir.path(), "p3.csv", "1,2,3,0.5\n4,5,6,0.25\n1,2,4,0.5\n");
    let m = model(
        "dimension = \"3d\"\ndx = 1.0\nhorizon_factor = 3.015",
        "[geometry]\npoints_csv = \"p3.csv\"\n\
         [[geometry.remove]]\nshape = \"circle\"\ncenter = [4.0, 5.0, 6.0]\nradius = 0.1",
    );
    let b = build_body(&m, dir.path()).expect("cloud builds");
    assert_eq!(b.positions, vec![[1.0, 2.0, 3.0], [1.0, 2.0, 4.0]]);
    assert_eq!(b.volumes, vec![0.5, 0.5]);

    // A byte-order mark (spreadsheet exports) before the first number is not an error.
    write_csv(dir.path(), "bom.csv", "\u{feff}1,2,0.5\n1,2.01,0.5\n");
    let m = model(disc, "[geometry]\npoints_csv = \"bom.csv\"");
    let b = build_body(&m, dir.path()).expect("cloud builds");
    assert_eq!(b.positions, vec![[1.0, 2.0, 0.0], [1.0, 2.01, 0.0]]);
}

/// Each CSV problem is an error naming `geometry.points_csv`, with the line number where one
/// applies and what is wrong; none panics.
#[test]
fn csv_errors() {
    let dir = tempfile::tempdir().expect("temp dir");
    let disc = "dimension = \"plane-stress\"\ndx = 0.01\nhorizon_factor = 3.015";
    let cases = [
        ("x,y,volume\n0,0,1\n1,1\n", "line 3", "2 columns"),
        ("0,0,1\n0,zero,1\n", "line 2", "'zero' is not a number"),
        ("# c\n0,0,0\n", "line 2", "volume 0"),
        ("0,0,-1\n", "line 1", "volume -1"),
        ("0,0,NaN\n", "line 1", "volume NaN"),
        ("0,0,inf\n", "line 1", "volume inf"),
        ("inf,0,1\n", "line 1", "not finite"),
        ("x,y,volume\n# nothing\n\n", "no points", "x,y,volume"),
        ("", "no points", "x,y,volume"),
    ];
    for (k, (text, where_, what)) in cases.iter().enumerate() {
        let name = format!("bad{k}.csv");
        write_csv(dir.path(), &name, text);
        let (f, m) = body_error(
            disc,
            &format!("[geometry]\npoints_csv = \"{name}\""),
            dir.path(),
        );
        assert_eq!(f, "geometry.points_csv");
        assert!(m.contains(where_) && m.contains(what), "case {k}: {m}");
    }
    let (f, m) = body_error(disc, "[geometry]\npoints_csv = \"missing.csv\"", dir.path());
    assert_eq!(f, "geometry.points_csv");
    assert!(m.contains("missing.csv"), "{m}");
}

/// Number of bonds of node `i` (at radius delta) that cross `crack`, and its family size.
fn broken_of(b: &Body, crack: &Precrack, i: usize) -> (usize, usize) {
    let f = cell_list_families(&b.positions, b.dim(), b.delta);
    let fam = f.family(i);
    let xi = &b.positions[i];
    let broken = fam
        .iter()
        .filter(|&&j| bond_crosses_precrack(crack, b.dim(), xi, &b.positions[j as usize]))
        .count();
    (broken, fam.len())
}

fn node_at(b: &Body, p: [f64; 3]) -> usize {
    b.positions
        .iter()
        .position(|q| (0..3).all(|a| (q[a] - p[a]).abs() < 1e-9))
        .expect("node exists")
}

/// `theory.md` section 1: at delta = 3.015 dx a node next to a straight cut between two
/// lattice rows loses 11 of its 28 bonds in 2D (phi = 0.39). 40 x 40 lattice, crack y = 0
/// across the whole plate, node (0.5 dx, 0.5 dx) is 19.5 dx from every edge: full family.
/// Exact counts. Crossing is symmetric in the bond's ends.
#[test]
fn precrack_2d_node_loses_11_of_28() {
    let b = body(
        "dimension = \"plane-stress\"\ndx = 0.001\nhorizon_factor = 3.015",
        "[[geometry.box]]\nmin = [-0.02, -0.02]\nmax = [0.02, 0.02]",
    );
    let crack = Precrack {
        start: Some(vec![-0.03, 0.0]),
        end: Some(vec![0.03, 0.0]),
        origin: None,
        edge1: None,
        edge2: None,
    };
    let i = node_at(&b, [0.0005, 0.0005, 0.0]);
    assert_eq!(broken_of(&b, &crack, i), (11, 28));
    let j = node_at(&b, [0.0005, -0.0005, 0.0]);
    assert_eq!(broken_of(&b, &crack, j), (11, 28));
    // Two rows away from the cut: only the bonds reaching 2 and 3 rows down cross (5 + 1).
    let k = node_at(&b, [0.0005, 0.0015, 0.0]);
    assert_eq!(broken_of(&b, &crack, k), (6, 28));
    for (p, q) in [(i, j), (j, k), (k, i)] {
        let (a, c) = (&b.positions[p], &b.positions[q]);
        assert_eq!(
            bond_crosses_precrack(&crack, 2, a, c),
            bond_crosses_precrack(&crack, 2, c, a)
        );
    }
}

/// The 3D count: a node next to a plane cut z = 0 between lattice layers loses 47 of its 122
/// bonds (25 + 21 + 1 bonds reaching 1, 2, 3 layers across). 20^3 lattice, rectangle wider
/// than the block, node (0.5, 0.5, 0.5) dx is 9.5 dx from every face: full family.
#[test]
fn precrack_3d_node_loses_47_of_122() {
    let b = body(
        "dimension = \"3d\"\ndx = 0.001\nhorizon_factor = 3.015",
        "[[geometry.box]]\nmin = [-0.01, -0.01, -0.01]\nmax = [0.01, 0.01, 0.01]",
    );
    let crack = Precrack {
        start: None,
        end: None,
        origin: Some(vec![-0.011, -0.011, 0.0]),
        edge1: Some(vec![0.022, 0.0, 0.0]),
        edge2: Some(vec![0.0, 0.022, 0.0]),
    };
    let i = node_at(&b, [0.0005, 0.0005, 0.0005]);
    assert_eq!(broken_of(&b, &crack, i), (47, 122));
    let j = node_at(&b, [0.0005, 0.0005, -0.0005]);
    assert_eq!(broken_of(&b, &crack, j), (47, 122));
}

/// The touching rule (strict): a bond ending exactly on the crack line, a bond the crack tip
/// only touches, and a collinear bond do not cross; a bond beyond the crack tip does not
/// either. In 3D, a node on the plane or a crossing outside the rectangle does not cross.
#[test]
fn precrack_touching_rule() {
    let seg = Precrack {
        start: Some(vec![0.0, 0.0]),
        end: Some(vec![1.0, 0.0]),
        origin: None,
        edge1: None,
        edge2: None,
    };
    let c = |a: [f64; 2], b: [f64; 2]| {
        bond_crosses_precrack(&seg, 2, &[a[0], a[1], 0.0], &[b[0], b[1], 0.0])
    };
    assert!(c([0.5, 1.0], [0.5, -1.0]));
    assert!(c([0.5, -1.0], [0.5, 1.0]));
    assert!(!c([0.5, 0.0], [0.5, -1.0]), "node on the crack line");
    assert!(!c([1.0, 1.0], [1.0, -1.0]), "crack tip on the bond");
    assert!(!c([0.2, 0.0], [0.8, 0.0]), "collinear");
    assert!(!c([1.5, 1.0], [1.5, -1.0]), "beyond the tip");

    let rect = Precrack {
        start: None,
        end: None,
        origin: Some(vec![0.0, 0.0, 0.0]),
        edge1: Some(vec![1.0, 0.0, 0.0]),
        edge2: Some(vec![0.0, 1.0, 1.0]),
    };
    let c3 = |a: [f64; 3], b: [f64; 3]| bond_crosses_precrack(&rect, 3, &a, &b);
    assert!(c3([0.5, 0.5, 1.0], [0.5, 0.5, 0.0]));
    assert!(c3([0.5, 0.5, 0.0], [0.5, 0.5, 1.0]));
    assert!(!c3([0.5, 0.5, 0.5], [0.5, 0.5, 0.0]), "node on the plane");
    assert!(
        !c3([1.5, 0.5, 1.0], [1.5, 0.5, 0.0]),
        "outside the rectangle"
    );
    assert!(!c3([0.5, 2.0, 3.0], [0.5, 2.0, 1.0]), "outside along edge2");
}
