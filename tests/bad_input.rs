//! Bad model input: every schema and range rule gives an error naming the field (with array
//! indices) and, where meaningful, the offending value; the valid models pass.
//!
//! Most bad variants are derived from two valid models with `--set` overrides, so these tests
//! also exercise the override path. Each case is checked and all failures are listed together,
//! by case name.

use peridot::model::{parse, Model};

/// A valid plane-stress PMB model using most 2D features.
const BASE_2D: &str = r#"
name = "plate"

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

[[geometry.remove]]
shape = "circle"
center = [0.05, 0.02]
radius = 0.005

[[geometry.remove]]
shape = "notch"
start = [0, 0.02]
end = [0.01, 0.02]
width = 2e-3

[[precrack]]
start = [0.04, 0.02]
end = [0.045, 0.02]

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

[[region]]
name = "hole"
shape = "circle"
center = [0.05, 0.02]
radius = 0.008

[[boundary]]
region = "left"
kind = "fixed"

[[boundary]]
region = "right"
kind = "velocity"
x = 0.5
ramp = "linear"
ramp_time = 1e-5

[[boundary]]
region = "hole"
kind = "no-fail"

[solver]
kind = "explicit"
steps = 1000
safety_factor = 0.8

[output]
probes = ["right"]
probe_every = 10
"#;

/// A valid 3D LPS model with ADR using most 3D features.
const BASE_3D: &str = r#"
[material]
model = "lps"
youngs_modulus = 200e9
poisson_ratio = 0.3
density = 7850
critical_stretch = 0.01

[discretization]
dimension = "3d"
dx = 1e-3
delta = 3.015e-3
partial_volume = "linear"

[[geometry.box]]
min = [0, 0, 0]
max = [0.02, 0.01, 0.01]

[[geometry.remove]]
shape = "cylinder"
center = [0.01, 0.005, 0.005]
axis = [0, 0, 1]
radius = 0.002
half_length = 0.01

[[geometry.remove]]
shape = "notch"
start = [0, 0.005]
end = [0.003, 0.005]
width = 2e-3

[[precrack]]
origin = [0.005, 0, 0.005]
edge1 = [0, 0.005, 0]
edge2 = [0, 0, 0.005]

[[region]]
name = "bottom"
shape = "edge"
side = "-z"
depth = 2e-3

[[region]]
name = "top"
shape = "edge"
side = "+z"
depth_delta = 1

[[region]]
name = "everything"
shape = "all"

[[boundary]]
region = "bottom"
kind = "fixed"

[[boundary]]
region = "top"
kind = "displacement"
z = 1e-5
ramp = "smooth"
ramp_steps = 100

[[boundary]]
region = "everything"
kind = "body-force"
z = -77000

[solver]
kind = "adr"
steps = 5000
tolerance = 1e-8
load_steps = 5
damping = 0

[output]
vtk_every = 100
"#;

/// `text` without the line `line` (which must be there).
fn without(text: &str, line: &str) -> String {
    assert!(text.contains(line), "base model lacks `{line}`");
    text.replacen(&format!("\n{line}\n"), "\n", 1)
}

fn run(text: &str, sets: &[&str]) -> peridot::Result<Model> {
    let overrides: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    parse(text, "test.toml", &overrides)
}

/// Check one bad case: an error whose message contains every needle. Returns a failure line.
fn check_err(name: &str, text: &str, sets: &[&str], needles: &[&str]) -> Option<String> {
    match run(text, sets) {
        Ok(_) => Some(format!(
            "{name}: accepted, expected an error with {needles:?}"
        )),
        Err(e) => {
            let msg = e.to_string();
            let missing: Vec<&&str> = needles.iter().filter(|n| !msg.contains(**n)).collect();
            (!missing.is_empty()).then(|| format!("{name}: `{msg}` lacks {missing:?}"))
        }
    }
}

/// Run a table of `(name, text, sets, needles)` cases and fail listing every failing case.
fn check_all(cases: &[(&str, &str, &[&str], &[&str])]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, text, sets, needles)| check_err(name, text, sets, needles))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// `cases! { "name": TEXT, [SETS] => [NEEDLES]; ... }` runs [`check_all`] on the table.
macro_rules! cases {
    ($($name:literal: $text:expr, [$($set:expr),* $(,)?] => [$($needle:expr),* $(,)?];)*) => {
        check_all(&[$(($name, &*$text, &[$($set),*][..], &[$($needle),*][..])),*])
    };
}

const D2: &str = BASE_2D;
const D3: &str = BASE_3D;

#[test]
fn valid_models_pass() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("base 2D", D2, &[]),
        ("base 3D", D3, &[]),
        (
            "LPS plane stress nu = 0.5",
            D2,
            &["material.model=lps", "material.poisson_ratio=0.5"],
        ),
        (
            "PMB plane stress nu = 1/3",
            D2,
            &["material.poisson_ratio=0.3334"],
        ),
        (
            "PMB plane strain nu = 1/4",
            D2,
            &[
                "discretization.dimension=plane-strain",
                "material.poisson_ratio=0.25",
            ],
        ),
        (
            "pmb-linear 3D without nu",
            &without(D3, "poisson_ratio = 0.3"),
            &["material.model=pmb-linear"],
        ),
        (
            "LPS influence one with critical stretch",
            D3,
            &["material.influence=one"],
        ),
        (
            "integers for floats",
            D2,
            &[
                "discretization.dx=1",
                "solver.steps=2000",
                "material.density=2000",
            ],
        ),
        (
            "3D edge +z with depth_dx",
            D3,
            &["region.1.depth_delta=0.5"],
        ),
        (
            "explicit dt given",
            D2,
            &["solver.dt=1e-8", "solver.damping=10"],
        ),
        (
            "traction on an edge region",
            D2,
            &[
                r#"boundary.2={region = "left", kind = "traction", x = -1e6, ramp = "linear",
                ramp_steps = 10}"#,
            ],
        ),
        (
            "ADR ramp time (iterations)",
            D3,
            &[
                r#"boundary.1={region = "top", kind = "displacement", z = 1e-5, ramp = "linear",
                ramp_time = 100}"#,
            ],
        ),
        (
            "no critical stretch nor energy",
            &without(D3, "critical_stretch = 0.01"),
            &[],
        ),
        (
            "point cloud",
            D3,
            &["geometry.box=[]", "geometry.points_csv=cloud.csv"],
        ),
    ];
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, text, sets)| {
            run(text, sets)
                .err()
                .map(|e| format!("{name}: rejected: {e}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn material_rules() {
    let no_nu = without(D3, "poisson_ratio = 0.3");
    cases! {
        "E negative": D2, ["material.youngs_modulus=-2e11"]
            => ["material.youngs_modulus", "-2e11", "> 0 Pa"];
        "E zero": D2, ["material.youngs_modulus=0"] => ["material.youngs_modulus", "got 0"];
        "E NaN": D2, ["material.youngs_modulus=nan"] => ["material.youngs_modulus", "NaN"];
        "E infinite": D3, ["material.youngs_modulus=inf"] => ["material.youngs_modulus", "inf"];
        "density zero": D2, ["material.density=0"] => ["material.density", "got 0"];
        "density negative": D3, ["material.density=-7850"] => ["material.density", "-7850"];
        "LPS without nu": no_nu, [] => ["material.poisson_ratio", "required", "lps"];
        "LPS 3D nu = 0.5": D3, ["material.poisson_ratio=0.5"]
            => ["material.poisson_ratio", "(-1, 0.5)", "got 0.5"];
        "LPS 3D nu = -1": D3, ["material.poisson_ratio=-1"]
            => ["material.poisson_ratio", "got -1"];
        "LPS plane strain nu = 0.5": D2,
            ["material.model=lps", "material.poisson_ratio=0.5",
             "discretization.dimension=plane-strain"]
            => ["material.poisson_ratio", "(-1, 0.5)", "plane-strain"];
        "LPS plane stress nu = 0.6": D2, ["material.model=lps", "material.poisson_ratio=0.6"]
            => ["material.poisson_ratio", "(-1, 0.5]", "got 0.6"];
        "PMB plane stress nu = 0.3": D2, ["material.poisson_ratio=0.3"]
            => ["material.poisson_ratio", "fixes", "1/3", "got 0.3"];
        "PMB plane strain nu = 1/3": D2,
            ["material.poisson_ratio=0.3333", "discretization.dimension=plane-strain"]
            => ["material.poisson_ratio", "1/4", "0.3333"];
        "pmb-linear 3D nu = 0.3": D3, ["material.model=pmb-linear"]
            => ["material.poisson_ratio", "bond-based", "1/4"];
        "both G0 and s0": D3, ["material.fracture_energy=10"]
            => ["material.critical_stretch", "not both"];
        "G0 negative": D2, ["material.fracture_energy=-1"]
            => ["material.fracture_energy", "got -1"];
        "s0 above 1": D3, ["material.critical_stretch=1.5"]
            => ["material.critical_stretch", "(0, 1)", "1.5"];
        "s0 zero": D3, ["material.critical_stretch=0"] => ["material.critical_stretch", "got 0"];
        "LPS influence one with G0": D2,
            ["material.model=lps", "material.poisson_ratio=0.3", "material.influence=one"]
            => ["material.fracture_energy", "\"one\"", "critical_stretch"];
        "LPS surface correction": D3, ["material.surface_correction=true"]
            => ["material.surface_correction", "lps"];
        "PMB influence one": D2, ["material.influence=one"] => ["material.influence", "lps"];
        "unknown model": D2, ["material.model=foo"] => ["material.model", "foo"];
    }
}

#[test]
fn discretization_rules() {
    let no_horizon = without(D2, "horizon_factor = 3.015");
    let no_thickness = without(D2, "thickness = 1e-3");
    cases! {
        "dx zero": D2, ["discretization.dx=0"] => ["discretization.dx", "got 0"];
        "dx negative": D3, ["discretization.dx=-1e-3"] => ["discretization.dx", "-0.001"];
        "horizon = spacing": D2, ["discretization.horizon_factor=1"]
            => ["discretization.horizon_factor", "(1, 20]", "got 1"];
        "horizon < spacing": D2, ["discretization.horizon_factor=0.5"]
            => ["discretization.horizon_factor", "got 0.5"];
        "horizon factor too large": D2, ["discretization.horizon_factor=25"]
            => ["discretization.horizon_factor", "got 25"];
        "delta = dx": D3, ["discretization.delta=1e-3"]
            => ["discretization.delta", "got 0.001"];
        "both horizon forms": D2, ["discretization.delta=3e-3"]
            => ["discretization.delta", "not both"];
        "no horizon": no_horizon, [] => ["discretization.horizon_factor", "delta"];
        "2D without thickness": no_thickness, [] => ["discretization.thickness", "required"];
        "thickness zero": D2, ["discretization.thickness=0"]
            => ["discretization.thickness", "got 0"];
        "thickness in 3D": D3, ["discretization.thickness=1e-3"]
            => ["discretization.thickness", "3D"];
        "unknown dimension": D2, ["discretization.dimension=2d"]
            => ["discretization.dimension", "2d"];
        "unknown partial volume": D3, ["discretization.partial_volume=cubic"]
            => ["discretization.partial_volume", "cubic"];
    }
}

#[test]
fn geometry_rules() {
    let cyl_2d = r#"geometry.remove.0={shape = "cylinder", center = [0, 0], axis = [0, 0, 1],
        radius = 1e-3}"#;
    let circle_3d = r#"geometry.remove.0={shape = "circle", center = [0, 0], radius = 1e-3}"#;
    let edge = r#"geometry.remove.0={shape = "edge", side = "-x", depth = 1e-3}"#;
    let all = r#"geometry.remove.0={shape = "all"}"#;
    cases! {
        "no body": D3, ["geometry.box=[]"] => ["geometry.box", "points_csv"];
        "box and CSV": D2, ["geometry.points_csv=points.csv"]
            => ["geometry.points_csv", "not both"];
        "empty CSV name": D3, ["geometry.box=[]", "geometry.points_csv="]
            => ["geometry.points_csv", "CSV"];
        "box min 3 components in 2D": D2, ["geometry.box.0.min=[0, 0, 0]"]
            => ["geometry.box.0.min", "2 components", "got 3"];
        "box max 2 components in 3D": D3, ["geometry.box.0.max=[1, 1]"]
            => ["geometry.box.0.max", "3 components"];
        "box min = max": D2, ["geometry.box.0.max.1=0"]
            => ["geometry.box.0.max", "greater than min", "component 1"];
        "box infinite": D2, ["geometry.box.0.max.0=inf"] => ["geometry.box.0.max.0", "finite"];
        "remove radius zero": D2, ["geometry.remove.0.radius=0"]
            => ["geometry.remove.0.radius", "got 0"];
        "remove notch width negative": D2, ["geometry.remove.1.width=-1e-3"]
            => ["geometry.remove.1.width", "-0.001"];
        "notch 3 components in 2D": D2, ["geometry.remove.1.end=[0.01, 0.02, 0]"]
            => ["geometry.remove.1.end", "2 components"];
        "notch 1 component in 3D": D3, ["geometry.remove.1.end=[0.01]"]
            => ["geometry.remove.1.end", "2 or 3 components"];
        "notch mixed components in 3D": D3, ["geometry.remove.1.end=[0.01, 0, 0]"]
            => ["geometry.remove.1.end", "as many components as start"];
        "cylinder in 2D": D2, [cyl_2d] => ["geometry.remove.0.shape", "circle"];
        "cylinder zero axis": D3, ["geometry.remove.0.axis=[0, 0, 0]"]
            => ["geometry.remove.0.axis", "non-zero"];
        "cylinder half length zero": D3, ["geometry.remove.0.half_length=0"]
            => ["geometry.remove.0.half_length", "got 0"];
        "circle center 2 components in 3D": D3, [circle_3d]
            => ["geometry.remove.0.center", "3 components"];
        "edge in remove": D2, [edge] => ["geometry.remove.0.shape", "edge"];
        "all in remove": D3, [all] => ["geometry.remove.0.shape", "all"];
        "unknown remove shape": D2, ["geometry.remove.0.shape=blob"]
            => ["geometry.remove.0", "blob"];
        "unknown key in remove": D2, ["geometry.remove.1.depth=1"]
            => ["geometry.remove.1", "depth"];
        "unknown key in box": D2, ["geometry.box.0.centre=[0, 0]"]
            => ["geometry.box.0", "centre"];
    }
}

#[test]
fn precrack_rules() {
    let half = format!("{D2}\n[[precrack]]\nstart = [0, 0]\n");
    cases! {
        "2D start = end": D2, ["precrack.0.end=[0.04, 0.02]"]
            => ["precrack.0.end", "differ", "[0.04, 0.02]"];
        "2D with origin": D2, ["precrack.0.origin=[0, 0]"] => ["precrack.0.origin", "not used"];
        "2D without end": half, [] => ["precrack.1.end", "required"];
        "2D start 3 components": D2, ["precrack.0.start=[0, 0, 0]"]
            => ["precrack.0.start", "2 components"];
        "3D parallel edges": D3, ["precrack.0.edge2=[0, 0.01, 0]"]
            => ["precrack.0.edge2", "parallel"];
        "3D zero edge": D3, ["precrack.0.edge1=[0, 0, 0]"] => ["precrack.0.edge1", "non-zero"];
        "3D with start": D3, ["precrack.0.start=[0, 0, 0]"] => ["precrack.0.start", "not used"];
        "3D without origin": D3, [r#"precrack.0={edge1 = [0, 1, 0], edge2 = [0, 0, 1]}"#]
            => ["precrack.0.origin", "required"];
        "3D edge 2 components": D3, ["precrack.0.edge1=[0, 1]"]
            => ["precrack.0.edge1", "3 components"];
        "unknown key": D2, ["precrack.0.width=1"] => ["precrack.0", "width"];
    }
}

#[test]
fn region_rules() {
    let nameless = format!("{D2}\n[[region]]\nshape = \"all\"\n");
    let no_depth = without(D2, "depth_dx = 3");
    let cylinder = r#"region.2={name = "c", shape = "cylinder", center = [0, 0],
        axis = [0, 0, 1], radius = 1}"#;
    let no_radius = r#"region.2={name = "hole", shape = "circle", center = [0, 0]}"#;
    cases! {
        "empty name": D2, ["region.0.name=\"\""] => ["region.0.name", "empty"];
        "duplicate name": D2, ["region.1.name=left"]
            => ["region.1.name", "\"left\"", "region.0"];
        "circle radius negative": D2, ["region.2.radius=-1"] => ["region.2.radius", "got -1"];
        "box min > max": D2, ["region.1.min=[0.2, 0]"] => ["region.1.max", "greater than min"];
        "edge side +z in 2D": D2, ["region.0.side=+z"]
            => ["region.0.side", "\"+z\"", "-x, +x, -y, +y"];
        "edge side unknown in 3D": D3, ["region.0.side=top"]
            => ["region.0.side", "-z, +z", "\"top\""];
        "edge two depths": D2, ["region.0.depth=1e-3"] => ["region.0.depth_dx", "only one"];
        "edge no depth": no_depth, [] => ["region.0.depth", "depth_dx"];
        "edge depth zero": D2, ["region.0.depth_dx=0"] => ["region.0.depth_dx", "got 0"];
        "cylinder region in 2D": D2, [cylinder] => ["region.2.shape", "circle"];
        "unknown key in box region": D2, ["region.1.colour=1"] => ["region.1", "colour"];
        "unknown key in edge region": D3, ["region.0.depth_mm=1"] => ["region.0", "depth_mm"];
        "unknown key in all region": D3, ["region.2.radius=1"] => ["region.2", "radius"];
        "unknown region shape": D2, ["region.1.shape=blob"] => ["region.1", "blob"];
        "region without name": nameless, [] => ["region.3", "name"];
        "region without radius": D2, [no_radius] => ["region.2", "radius"];
    }
}

#[test]
fn boundary_rules() {
    cases! {
        "undefined region": D2, ["boundary.1.region=rigth"]
            => ["boundary.1.region", "\"rigth\"", "\"left\", \"right\", \"hole\""];
        "z in 2D": D2, ["boundary.1.z=1"] => ["boundary.1.z", "3D"];
        "displacement without components": D3, ["boundary.0.kind=displacement"]
            => ["boundary.0", "at least one of x, y, z"];
        "velocity without components": D2, ["boundary.0.kind=velocity"]
            => ["boundary.0", "at least one of x, y"];
        "initial velocity without components": D2, ["boundary.2.kind=initial-velocity"]
            => ["boundary.2", "initial-velocity"];
        "body force without components": D2, ["boundary.0.kind=body-force"]
            => ["boundary.0", "body-force", "N/m^3"];
        "traction on a box region": D2, [r#"boundary.2={region = "right", kind = "traction", x = 1}"#]
            => ["boundary.2.region", "\"right\"", "edge"];
        "traction without components": D2, [r#"boundary.2={region = "left", kind = "traction"}"#]
            => ["boundary.2", "traction", "Pa"];
        "fixed with component": D2, ["boundary.0.x=0"]
            => ["boundary.0.x", "fixed", "no components"];
        "no-fail with component": D2, ["boundary.2.y=1"] => ["boundary.2.y", "no-fail"];
        "value NaN": D2, ["boundary.1.x=nan"] => ["boundary.1.x", "NaN"];
        "value infinite": D3, ["boundary.2.z=-inf"] => ["boundary.2.z", "-inf"];
        "ramp none with ramp_time": D2, ["boundary.1.ramp=none"]
            => ["boundary.1.ramp_time", "none"];
        "ramp none with ramp_steps": D3, ["boundary.1.ramp=none"]
            => ["boundary.1.ramp_steps", "none"];
        "ramp without duration": D3, ["boundary.2.ramp=linear"]
            => ["boundary.2.ramp", "ramp_time", "ramp_steps"];
        "ramp with both durations": D2, ["boundary.1.ramp_steps=10"]
            => ["boundary.1.ramp_steps", "not both"];
        "ramp time zero": D2, ["boundary.1.ramp_time=0"] => ["boundary.1.ramp_time", "got 0"];
        "ramp steps zero": D3, ["boundary.1.ramp_steps=0"]
            => ["boundary.1.ramp_steps", "got 0"];
        "ramp on fixed": D2, ["boundary.0.ramp=linear"] => ["boundary.0.ramp", "fixed"];
        "ramp on initial velocity": D2,
            ["boundary.2.kind=initial-velocity", "boundary.2.x=1", "boundary.2.ramp=smooth"]
            => ["boundary.2.ramp", "initial-velocity"];
        "unknown kind": D2, ["boundary.0.kind=clamped"] => ["boundary.0.kind", "clamped"];
        "unknown ramp": D2, ["boundary.1.ramp=cubic"] => ["boundary.1.ramp", "cubic"];
        "wrong type": D2, ["boundary.1.x=fast"] => ["boundary.1.x", "string"];
        "unknown key": D2, ["boundary.1.speed=1"] => ["boundary.1", "speed"];
        "missing region": D2, [r#"boundary.0={kind = "fixed"}"#] => ["boundary.0", "region"];
    }
}

#[test]
fn solver_and_output_rules() {
    cases! {
        "steps zero": D2, ["solver.steps=0"] => ["solver.steps", "got 0"];
        "steps negative": D2, ["solver.steps=-5"] => ["solver.steps", "-5"];
        "steps too many": D2, ["solver.steps=2000000000"] => ["solver.steps", "1..=1000000000"];
        "steps float": D2, ["solver.steps=1e3"] => ["solver.steps"];
        "dt with ADR": D3, ["solver.dt=1e-7"] => ["solver.dt", "explicit"];
        "dt negative": D2, ["solver.dt=-1e-8"] => ["solver.dt", "-1e-8"];
        "dt zero": D2, ["solver.dt=0"] => ["solver.dt", "got 0"];
        "safety factor above 1": D2, ["solver.safety_factor=1.5"]
            => ["solver.safety_factor", "(0, 1]", "1.5"];
        "safety factor zero": D3, ["solver.safety_factor=0"]
            => ["solver.safety_factor", "got 0"];
        "damping negative": D2, ["solver.damping=-1"] => ["solver.damping", "got -1"];
        "tolerance with explicit": D2, ["solver.tolerance=1e-6"]
            => ["solver.tolerance", "adr"];
        "tolerance 1": D3, ["solver.tolerance=1"] => ["solver.tolerance", "(0, 1)", "got 1"];
        "load steps with explicit": D2, ["solver.load_steps=3"]
            => ["solver.load_steps", "adr"];
        "load steps zero": D3, ["solver.load_steps=0"] => ["solver.load_steps", "got 0"];
        "unknown solver kind": D2, ["solver.kind=implicit"] => ["solver.kind", "implicit"];
        "probe undefined region": D2, ["output.probes=[\"nowhere\"]"]
            => ["output.probes.0", "\"nowhere\""];
        "second probe undefined": D3, ["output.probes=[\"top\", \"x\"]"]
            => ["output.probes.1", "\"x\""];
        "probe every zero": D2, ["output.probe_every=0"] => ["output.probe_every", "got 0"];
        "empty name": D2, ["name="] => ["name", "empty"];
    }
}

#[test]
fn the_name_is_a_plain_file_name() {
    // `name` names the output folder and its files, so a path is refused by validation,
    // naming the field and the value: a parent folder, an absolute path, a separator, `.`.
    cases! {
        "parent folder": D2, ["name=\"../escape\""] => ["name", "\"../escape\"", "plain file name"];
        "absolute": D2, ["name=\"/tmp/abs\""] => ["name", "\"/tmp/abs\"", "absolute"];
        "separator": D3, ["name=\"a/b\""] => ["name", "\"a/b\"", "separator"];
        "backslash": D2, ["name='a\\b'"] => ["name", "plain file name"];
        "dot dot": D2, ["name=\"..\""] => ["name", "\"..\""];
        "dot": D3, ["name=\".\""] => ["name", "\".\""];
    }
    // a plain name with dots and dashes is fine
    assert!(run(D2, &["name=\"plate-v1.2_a\""]).is_ok());
}

#[test]
fn schema_rules() {
    let no_density = without(D2, "density = 2440");
    let solver = "[solver]\nkind = \"explicit\"\nsteps = 1000\nsafety_factor = 0.8\n";
    let no_solver = D2.replace(solver, "");
    let broken = D2.replacen("[material]", "[material", 1);
    cases! {
        "unknown top-level key": D2, ["colour=1"] => ["colour"];
        "unknown key in material": D2, ["material.colour=1"] => ["material", "colour"];
        "unknown key in solver": D3, ["solver.max_steps=1"] => ["solver", "max_steps"];
        "unknown table": D2, ["plot.dpi=300"] => ["plot"];
        "missing density": no_density, [] => ["material", "density"];
        "missing solver": no_solver, [] => ["solver"];
        "wrong type for modulus": D2, ["material.youngs_modulus=high"]
            => ["material.youngs_modulus", "string"];
        "wrong type for probes": D2, ["output.probes=right"] => ["output.probes"];
        "TOML syntax": broken, [] => ["test.toml", "line"];
    }
}

#[test]
fn errors_name_the_model_field() {
    // A model error displays as `field: message`, with the value and the allowed range.
    let e = run(D2, &["material.youngs_modulus=-2e11"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "material.youngs_modulus: must be a finite number > 0 Pa (got -2e11)"
    );
    assert!(
        matches!(e, peridot::Error::Model { ref field, .. } if field == "material.youngs_modulus")
    );
    // A schema error names the file, then the field with its array index.
    let e = run(D2, &["region.1.colour=1"]).unwrap_err();
    assert!(e.to_string().starts_with("test.toml: region.1: "), "{e}");
}
