//! Helpers of the command-line tests: a tiny model, the `peridot` binary run with arguments
//! (in a folder of choice), a model written to a folder, a process's stderr as text.

use std::path::Path;
use std::process::{Command, Output};

/// 200 nodes (2D plate 20 x 10 mm, dx 1 mm), a pre-crack, a velocity on the top edge
/// probed, 40 explicit steps, a snapshot every 20.
pub const TINY: &str = r#"
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
[[boundary]]
region = "top"
kind = "velocity"
y = 5.0
[solver]
kind = "explicit"
steps = 40
[output]
vtk_every = 20
probes = ["top"]
"#;

/// The tiny plate relaxed by ADR: bottom held, top pulled by a displacement ramped over the
/// iterations until bonds break.
pub const TINY_ADR: &str = r#"
name = "tiny_adr"
[material]
model = "pmb"
youngs_modulus = 200e9
density = 8000
critical_stretch = 0.002
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
region = "bottom"
kind = "fixed"
[[boundary]]
region = "top"
kind = "displacement"
y = 1e-4
ramp = "linear"
ramp_time = 40
[solver]
kind = "adr"
steps = 60
[output]
vtk_every = 10
probes = ["top"]
"#;

/// `peridot ARGS`.
pub fn peridot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_peridot"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `peridot run MODEL --backend cpu-loop --quiet --out OUT` with a `--set` for each of
/// `sets`, VTK and image output off; panics with the run's stderr when it fails.
pub fn run_quiet(model: &str, out: &Path, sets: &[&str]) {
    let mut args = vec!["run", model, "--backend", "cpu-loop", "--quiet"];
    let out = out.to_str().expect("a UTF-8 path");
    args.extend(["--out", out]);
    for s in sets
        .iter()
        .chain(&["output.vtk=false", "output.image=false"])
    {
        args.extend(["--set", s]);
    }
    let o = peridot(&args);
    assert!(o.status.success(), "{}", stderr(&o));
}

/// `peridot ARGS` run in the folder `cwd`.
pub fn peridot_in(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_peridot"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("the binary runs")
}

/// `text` written to `dir/model.toml`; its path.
pub fn write_model(dir: &Path, text: &str) -> String {
    let path = dir.join("model.toml");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// A process's stderr as text.
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}
