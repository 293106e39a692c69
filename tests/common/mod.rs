//! Helpers shared by the integration tests: build problems from TOML text, run them in memory.
#![allow(dead_code)]

pub mod cli;
pub mod contact;
pub mod pieces;
pub mod ranks;

use peridot::backend::{Backend, BackendKind};
use peridot::dynamics::explicit::{Explicit, ExplicitCall, StepTimes};
use peridot::dynamics::loads::Loads;
use peridot::dynamics::State;
use peridot::setup::Problem;
use peridot::solver::run::choose_dt;
use peridot::solver::{simulate, Outcome, RunOptions};
use peridot::{Precision, Real};
use std::path::{Path, PathBuf};

/// The keys `contract.md` requires in every `summary.json`.
pub const SUMMARY_KEYS: [&str; 14] = [
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
    "status",
];

/// Parse, validate (with `--set` overrides) and discretize a model given as TOML text.
pub fn problem(text: &str, overrides: &[&str]) -> Problem {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let model = peridot::model::parse(text, "test.toml", &overrides).expect("valid test model");
    Problem::build(model, Path::new(".")).expect("test model discretizes")
}

/// Options of a quiet run on `backend` in `precision` writing into `out` (nothing without),
/// with no cancel flag, no subdomains and no process start.
pub fn options(backend: BackendKind, precision: Precision, out: Option<&Path>) -> RunOptions {
    RunOptions {
        cancel: None,
        process_start: None,
        subdomains: None,
        backend,
        precision,
        out_dir: out.map(Path::to_path_buf),
        quiet: true,
    }
}

/// Run a problem in memory on the CPU loop backend (no files).
pub fn run<T: Real>(problem: Problem) -> Outcome<T> {
    let opts = options(BackendKind::CpuLoop, Precision::F64, None);
    simulate::<T>(problem, &opts).expect("run succeeds")
}

/// Least-squares slope of `y` against `x`.
pub fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let sxx: f64 = points.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    sxy / sxx
}

/// Material table for tests.
pub fn material(law: &str, nu: Option<f64>) -> String {
    let nu = nu
        .map(|v| format!("poisson_ratio = {v}\n"))
        .unwrap_or_default();
    format!("[material]\nmodel = \"{law}\"\nyoungs_modulus = 200e9\ndensity = 8000\n{nu}")
}

/// splitmix64: a small deterministic generator, so every run tests the same values.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Deterministic pseudo-random numbers in [-1, 1) (splitmix64), for test fields.
pub fn random_vector(len: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng(seed);
    (0..len)
        .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
        .collect()
}

/// A 3D LPS bar (nu 0.3), `length` x 5 x 5 mm, clamped at -x (3 layers), pulled by a
/// 50 MPa traction at +x (1 layer), relaxed by ADR with the `solver` lines given.
pub fn lps_bar(length: f64, solver: &str) -> String {
    format!(
        r#"name = "lps_bar"
{}
[discretization]
dimension = "3d"
dx = 1e-3
horizon_factor = 3.015
[geometry]
box = [{{ min = [0, 0, 0], max = [{length}, 0.005, 0.005] }}]
[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 3
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
x = 50e6
[solver]
kind = "adr"
{solver}
"#,
        material("lps", Some(0.3))
    )
}

/// A plane-strain strip 30 x 10 mm, fixed on the left, its right edge displaced by
/// `displacement` along x, relaxed by ADR (`solver`: the solver lines after `kind`); with
/// `precrack`, a crack from the bottom edge at mid-length. `material`: a `[material]` table.
pub fn adr_strip(material: &str, displacement: &str, solver: &str, precrack: bool) -> String {
    let crack = if precrack {
        "[[precrack]]\nstart = [0.015, -0.001]\nend = [0.015, 0.004]\n"
    } else {
        ""
    };
    format!(
        r#"name = "strip"
{material}
[discretization]
dimension = "plane-strain"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015
[geometry]
box = [{{ min = [0, 0], max = [0.03, 0.01] }}]
{crack}[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 3
[[region]]
name = "right"
shape = "edge"
side = "+x"
depth_dx = 3
[[boundary]]
region = "left"
kind = "fixed"
[[boundary]]
region = "right"
kind = "displacement"
x = {displacement}
[solver]
kind = "adr"
{solver}
"#
    )
}

/// Largest absolute difference over the largest absolute value of `b`.
pub fn rel_max(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "vectors of different lengths");
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = a
        .iter()
        .zip(b)
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// Normwise relative difference `|a - b| / |b|` (0 when both are zero).
pub fn rel_diff<A: Real, B: Real>(a: &[A], b: &[B]) -> f64 {
    assert_eq!(a.len(), b.len(), "vectors of different lengths");
    let diff: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x.f64() - y.f64()).powi(2))
        .sum();
    let norm: f64 = b.iter().map(|y| y.f64().powi(2)).sum();
    if norm == 0.0 {
        diff.sqrt()
    } else {
        (diff / norm).sqrt()
    }
}

/// A small model for backend and operator comparisons: `law` (`pmb`, `pmb-linear`, `lps`) in
/// `dim` (`plane-stress`, `plane-strain`, `3d`), a box of about 12 x 10 (x 6) spacings of
/// 1 mm, with a pre-crack through its middle if `precrack`; `extra` is appended (regions,
/// boundaries; a one-step explicit `[solver]` unless `extra` has one). Partial volumes
/// `linear`; the PMB surface correction on.
pub fn small_model(law: &str, dim: &str, precrack: bool, extra: &str) -> String {
    let solver = if extra.contains("[solver]") {
        ""
    } else {
        "[solver]\nkind = \"explicit\"\nsteps = 1\n"
    };
    let nu = if law.starts_with("lps") {
        Some(0.22)
    } else {
        None
    };
    let corr = if law.starts_with("lps") {
        ""
    } else {
        "surface_correction = true\n"
    };
    let (geometry, thick, crack) = if dim == "3d" {
        (
            "box = [{ min = [0, 0, 0], max = [0.011, 0.009, 0.005] }]",
            "",
            "[[precrack]]\norigin = [-0.001, 0.0045, -0.001]\nedge1 = [0.007, 0, 0]\n\
             edge2 = [0, 0, 0.008]\n",
        )
    } else {
        (
            "box = [{ min = [0, 0], max = [0.011, 0.009] }]",
            "thickness = 1e-3\n",
            "[[precrack]]\nstart = [-0.001, 0.0045]\nend = [0.006, 0.0045]\n",
        )
    };
    format!(
        "{}{corr}critical_stretch = 0.002\n[discretization]\ndimension = \"{dim}\"\n{thick}\
         dx = 1e-3\nhorizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n{geometry}\n\
         {}{extra}\n{solver}",
        material(law, nu),
        if precrack { crack } else { "" },
    )
}

/// A bar 60 spacings long (17 cell slabs of the family radius), pre-cracked along its
/// length through about half the slabs, pulled apart at both ends with `steps` steps.
pub fn partition_bar(law: &str, dim: &str, steps: usize) -> Problem {
    problem(&partition_bar_text(law, dim, steps), &[])
}

/// [`partition_bar`] with the failure keys `keys` (a damage law, `alpha`, `break_timing`) in
/// place of its critical stretch.
pub fn partition_bar_with(law: &str, dim: &str, keys: &str, steps: usize) -> Problem {
    let text = partition_bar_text(law, dim, steps);
    problem(&text.replacen("critical_stretch = 0.002\n", keys, 1), &[])
}

/// [`partition_bar`] as a lean problem (`Problem::build_lean`: no bond stored on the host).
pub fn partition_bar_lean(law: &str, dim: &str, steps: usize) -> Problem {
    let text = partition_bar_text(law, dim, steps);
    let model = peridot::model::parse(&text, "test.toml", &[]).expect("valid test model");
    Problem::build_lean(model, Path::new(".")).expect("test model discretizes")
}

/// The model text of [`partition_bar`].
pub fn partition_bar_text(law: &str, dim: &str, steps: usize) -> String {
    let nu = if law.starts_with("lps") {
        Some(0.22)
    } else {
        None
    };
    let (geometry, thick, crack) = if dim == "3d" {
        (
            "box = [{ min = [0, 0, 0], max = [0.059, 0.005, 0.004] }]",
            "",
            "origin = [-0.001, 0.0025, -0.001]\nedge1 = [0.026, 0, 0]\nedge2 = [0, 0, 0.006]",
        )
    } else {
        (
            "box = [{ min = [0, 0], max = [0.059, 0.011] }]",
            "thickness = 1e-3\n",
            "start = [-0.001, 0.0055]\nend = [0.025, 0.0055]",
        )
    };
    let corr = if law.starts_with("lps") {
        ""
    } else {
        "surface_correction = true\n"
    };
    format!(
        "{}{corr}critical_stretch = 0.002\n[discretization]\ndimension = \"{dim}\"\n{thick}\
         dx = 1e-3\nhorizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n\
         {geometry}\n[[precrack]]\n{crack}\n\
         [[region]]\nname = \"left\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 3\n\
         [[region]]\nname = \"right\"\nshape = \"edge\"\nside = \"+x\"\ndepth_dx = 3\n\
         [[boundary]]\nregion = \"left\"\nkind = \"velocity\"\nx = -20.0\n\
         [[boundary]]\nregion = \"right\"\nkind = \"velocity\"\nx = 20.0\n\
         [solver]\nkind = \"explicit\"\nsteps = {steps}\n",
        material(law, nu)
    )
}

/// Assert `a` and `b` are bitwise equal, naming the first differing entry and the count.
pub fn assert_bitwise(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    let differ: Vec<usize> = (0..a.len())
        .filter(|&k| a[k].to_bits() != b[k].to_bits())
        .collect();
    if let Some(&k) = differ.first() {
        panic!(
            "{what}: {} of {} entries differ, first [{k}]: {:e} vs {:e}",
            differ.len(),
            a.len(),
            a[k],
            b[k]
        );
    }
}

/// How closely a partitioned backend must reproduce the in-core one: normwise relative
/// tolerances of the forces and of damage and dilatation (0: bitwise).
#[derive(Clone, Copy)]
pub struct Agreement {
    pub forces: f64,
    pub fields: f64,
}

/// The loop scheme: everything bitwise.
pub const BITWISE: Agreement = Agreement {
    forces: 0.0,
    fields: 0.0,
};
/// The matrix scheme: local operators sum a row's entries in another order.
pub const ROUND_OFF: Agreement = Agreement {
    forces: 1e-12,
    fields: 1e-14,
};

/// `a` against `b` within `tol` normwise relative, or bitwise for `tol = 0`.
fn assert_close(a: &[f64], b: &[f64], tol: f64, what: &str) {
    if tol == 0.0 {
        assert_bitwise(a, b, what);
    } else {
        let r = rel_f64(a, b);
        assert!(r <= tol, "{what}: {r:e} > {tol:e}");
    }
}

/// In-core `core` and partitioned `part` backends of `problem`: break bonds and compute
/// forces at a damaging random field, then forces at another field with the bonds as broken;
/// the same bonds broken and bond status exactly, forces, damage and dilatation within
/// `agree`, the strain energy (summed per subdomain) to 1e-12 relative.
pub fn check_partitioned(
    problem: &Problem,
    core: &mut dyn Backend<f64>,
    part: &mut dyn Backend<f64>,
    agree: Agreement,
    case: &str,
) {
    let n = problem.body.len() * problem.dim();
    for seed in [1, 2] {
        let u: Vec<f64> = random_vector(n, seed).iter().map(|x| 4e-6 * x).collect();
        let (mut f_core, mut f_part) = (vec![0.0; n], vec![7.0; n]);
        let broken = core.break_bonds_and_force(&u, &mut f_core).unwrap();
        assert_eq!(
            part.break_bonds_and_force(&u, &mut f_part).unwrap(),
            broken,
            "{case}"
        );
        assert!(seed > 1 || broken > 0, "{case}: the field breaks bonds");
        assert_close(&f_part, &f_core, agree.forces, &format!("{case}: forces"));
        core.internal_force(&u, &mut f_core).unwrap();
        part.internal_force(&u, &mut f_part).unwrap();
        let what = format!("{case}: forces without breaking");
        assert_close(&f_part, &f_core, agree.forces, &what);
    }
    assert_eq!(
        part.bond_status().unwrap(),
        core.bond_status().unwrap(),
        "{case}: bond status"
    );
    assert_eq!(part.broken_bonds(), core.broken_bonds(), "{case}");
    let nodes = problem.body.len();
    let (mut d_core, mut d_part) = (vec![0.0; nodes], vec![1.0; nodes]);
    core.damage(&mut d_core).unwrap();
    part.damage(&mut d_part).unwrap();
    assert_close(&d_part, &d_core, agree.fields, &format!("{case}: damage"));
    let u = random_vector(n, 3);
    let (mut t_core, mut t_part) = (d_core.clone(), d_part.clone());
    assert_eq!(
        core.dilatation(&u, &mut t_core).unwrap(),
        part.dilatation(&u, &mut t_part).unwrap()
    );
    assert_close(
        &t_part,
        &t_core,
        agree.fields,
        &format!("{case}: dilatation"),
    );
    let (e_core, e_part) = (
        core.strain_energy(&u).unwrap(),
        part.strain_energy(&u).unwrap(),
    );
    assert!(
        (e_part - e_core).abs() <= 1e-12 * e_core.abs(),
        "{case}: energy {e_part} vs {e_core}"
    );
}

/// An undamped, damaging explicit integrator for `problem` at its stable step, its loads and
/// the state at rest after `Explicit::start` on `backend`.
fn start_run(
    problem: &Problem,
    backend: &mut dyn Backend<f64>,
) -> (Explicit, Loads, State<f64>, StepTimes) {
    let (dt, _, _) = choose_dt(problem).unwrap();
    let integrator = Explicit::of(problem, dt, 0.0, true);
    let loads = Loads::new(problem, dt);
    let mut state = State::at_rest(problem.body.len() * problem.dim());
    integrator.start(&mut state, &loads, backend).unwrap();
    (integrator, loads, state, StepTimes::default())
}

/// `steps` damaging explicit steps on `backend`: the final state and the bonds broken.
pub fn explicit_run(problem: &Problem, backend: &mut dyn Backend<f64>) -> (State<f64>, usize) {
    let (integrator, loads, mut state, mut times) = start_run(problem, backend);
    let broken = (0..problem.model.solver.steps)
        .map(|_| {
            integrator
                .step(&mut state, &loads, backend, &mut times)
                .unwrap()
        })
        .sum();
    (state, broken)
}

/// A pre-cracked 2D bar with a fixed end, a displacement-ramped end, and a velocity and a body
/// force on its top edge: every kind of condition an explicit step treats, with bonds
/// breaking within 40 steps.
pub fn conditions_bar() -> Problem {
    let text = format!(
        "{}critical_stretch = 0.002\n[discretization]\ndimension = \"plane-stress\"\n\
         thickness = 1e-3\ndx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
         box = [{{ min = [0, 0], max = [0.059, 0.011] }}]\n\
         [[precrack]]\nstart = [-0.001, 0.0055]\nend = [0.025, 0.0055]\n\
         [[region]]\nname = \"left\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 3\n\
         [[region]]\nname = \"right\"\nshape = \"edge\"\nside = \"+x\"\ndepth_dx = 3\n\
         [[region]]\nname = \"top\"\nshape = \"edge\"\nside = \"+y\"\ndepth_dx = 2\n\
         [[boundary]]\nregion = \"left\"\nkind = \"fixed\"\n\
         [[boundary]]\nregion = \"right\"\nkind = \"displacement\"\nx = 2e-4\n\
         ramp = \"linear\"\nramp_steps = 30\n\
         [[boundary]]\nregion = \"top\"\nkind = \"velocity\"\ny = 3.0\n\
         [[boundary]]\nregion = \"top\"\nkind = \"body-force\"\nx = 5e9\n\
         [solver]\nkind = \"explicit\"\nsteps = 40\n",
        material("pmb", None)
    );
    problem(&text, &[])
}

/// Undamped explicit steps through `backend.advance_explicit`, in calls of `chunks` steps
/// (after `Explicit::start`): the final state and the bonds broken.
pub fn chunked_run(
    problem: &Problem,
    backend: &mut dyn Backend<f64>,
    chunks: &[usize],
) -> (State<f64>, usize) {
    let (integrator, loads, mut state, mut times) = start_run(problem, backend);
    let mut broken = 0;
    for &steps in chunks {
        broken += backend
            .advance_explicit(ExplicitCall {
                integrator: &integrator,
                loads: &loads,
                state: &mut state,
                times: &mut times,
                steps,
                full_sync: true,
            })
            .unwrap();
    }
    (state, broken)
}

/// The fused explicit loop of `part` over calls of uneven length (7, 13, 1, 19 steps) ends
/// bitwise where the reference run `core` (state, bonds broken) ended.
pub fn assert_chunked_run_equals(
    problem: &Problem,
    part: &mut dyn Backend<f64>,
    core: &(State<f64>, usize),
    case: &str,
) {
    let (state, broken) = chunked_run(problem, part, &[7, 13, 1, 19]);
    assert_same_run(&state, broken, &core.0, core.1, case);
}

/// Two runs ended in the bitwise-same state with the same bonds broken.
pub fn assert_same_run(
    a: &State<f64>,
    broken_a: usize,
    b: &State<f64>,
    broken_b: usize,
    case: &str,
) {
    assert_eq!(a.step, b.step, "{case}: steps");
    assert_eq!(broken_a, broken_b, "{case}: bonds broken");
    assert_bitwise(&a.u, &b.u, &format!("{case}: displacement"));
    assert_bitwise(&a.v, &b.v, &format!("{case}: velocity"));
    assert_bitwise(&a.a, &b.a, &format!("{case}: acceleration"));
    assert_bitwise(&a.f, &b.f, &format!("{case}: force"));
    assert_eq!(a.time.to_bits(), b.time.to_bits(), "{case}: time");
}

/// The laws and dimensions the subdomain tests run (CPU emulation and GPU).
pub const PARTITION_CASES: [(&str, &str); 6] = [
    ("pmb", "plane-stress"),
    ("pmb", "3d"),
    ("pmb-linear", "plane-stress"),
    ("pmb-linear", "3d"),
    ("lps", "plane-strain"),
    ("lps", "3d"),
];

/// `|a - b| / |b|`.
pub fn rel_f64(a: &[f64], b: &[f64]) -> f64 {
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    (num / den).sqrt()
}

/// [`small_model`] with two materials: the first (`soft`, E 200 GPa, s0 0.002) takes the
/// nodes left of x = 5.5 mm, the second (`stiff`, E 500 GPa, s0 0.003, region `right`) the
/// rest; `interface`: `[[interface]]` lines (none: the default rule, the softer).
pub fn two_materials(law: &str, dim: &str, precrack: bool, interface: &str, extra: &str) -> String {
    let text = small_model(law, dim, precrack, extra);
    let first = &text[..text
        .find("[discretization]")
        .expect("a [discretization] table")];
    let second = first
        .replacen(
            "[material]\n",
            "[[material]]\nname = \"stiff\"\nregions = [\"right\"]\n",
            1,
        )
        .replace("youngs_modulus = 200e9", "youngs_modulus = 500e9")
        .replace("critical_stretch = 0.002", "critical_stretch = 0.003");
    let (min, max) = match dim {
        "3d" => ("[0.0055, -1, -1]", "[1, 1, 1]"),
        _ => ("[0.0055, -1]", "[1, 1]"),
    };
    format!(
        "{}{second}{interface}\n[[region]]\nname = \"right\"\nshape = \"box\"\nmin = {min}\n\
         max = {max}\n",
        text.replacen("[material]\n", "[[material]]\nname = \"soft\"\n", 1)
    )
}

/// [`two_materials`] pre-cracked, the stiff material's density 2000 kg/m^3 (the soft one's
/// 8000), its top and bottom edges pulled apart at 5 m/s for `steps` explicit steps: a
/// damaging run whose nodes differ in density.
pub fn two_densities(law: &str, dim: &str, steps: usize) -> Problem {
    let pull = format!(
        "[[region]]\nname = \"top\"\nshape = \"edge\"\nside = \"+y\"\ndepth_dx = 2\n\
         [[region]]\nname = \"bottom\"\nshape = \"edge\"\nside = \"-y\"\ndepth_dx = 2\n\
         [[boundary]]\nregion = \"top\"\nkind = \"velocity\"\ny = 5.0\n\
         [[boundary]]\nregion = \"bottom\"\nkind = \"velocity\"\ny = -5.0\n\
         [solver]\nkind = \"explicit\"\nsteps = {steps}\n"
    );
    let text = two_materials(law, dim, true, "", &pull);
    let at = text.find("name = \"stiff\"").expect("the stiff material");
    let text = format!(
        "{}{}",
        &text[..at],
        text[at..].replacen("density = 8000", "density = 2000", 1)
    );
    let p = problem(&text, &[]);
    assert!(p.node_densities().is_some(), "two densities");
    p
}

/// The 8-byte values of array `name` of one of our `.vtu` snapshots (raw appended, UInt64
/// headers), as little-endian words.
pub fn vtu_words(path: &Path, name: &str) -> Vec<[u8; 8]> {
    let bytes = std::fs::read(path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let tag_at = text
        .find(&format!("Name=\"{name}\""))
        .unwrap_or_else(|| panic!("array {name} in {}", path.display()));
    let tag = &text[tag_at..tag_at + text[tag_at..].find('>').unwrap()];
    let key = "offset=\"";
    let start = tag.find(key).unwrap() + key.len();
    let offset: usize = tag[start..start + tag[start..].find('"').unwrap()]
        .parse()
        .unwrap();
    let marker = b"<AppendedData encoding=\"raw\">";
    let at = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap();
    let data = &bytes[at + bytes[at..].iter().position(|&b| b == b'_').unwrap() + 1..];
    let len = u64::from_le_bytes(data[offset..offset + 8].try_into().unwrap()) as usize;
    data[offset + 8..offset + 8 + len]
        .chunks_exact(8)
        .map(|c| c.try_into().unwrap())
        .collect()
}

/// Array `name` (Float64) of one of our `.vtu` snapshots.
pub fn vtu_array(path: &Path, name: &str) -> Vec<f64> {
    vtu_words(path, name)
        .into_iter()
        .map(f64::from_le_bytes)
        .collect()
}

/// Array `name` (Int64) of one of our `.vtu` snapshots.
pub fn vtu_ints(path: &Path, name: &str) -> Vec<i64> {
    vtu_words(path, name)
        .into_iter()
        .map(i64::from_le_bytes)
        .collect()
}

/// The `.vtu` snapshots of an output folder, in name (step) order.
pub fn snapshots(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "vtu"))
        .collect();
    files.sort();
    files
}

/// A plate of 48 x 12 nodes (1 mm) pre-cracked from its left edge to a third of its length
/// at mid-height, top and bottom layers pulled apart at 6 m/s for `steps` steps: the crack
/// runs along x, across the cuts between ranks (slabs across x); PMB with the surface
/// correction and partial volumes, or LPS; no outputs.
pub fn cracked_plate(law: &str, steps: usize) -> Problem {
    problem(&cracked_plate_text(law, steps), &[])
}

/// The model text of [`cracked_plate`].
pub fn cracked_plate_text(law: &str, steps: usize) -> String {
    cracked_plate_model(law, steps, (48, 12), 6.0, "image = false\ntips_every = 0\n")
}

/// A plate of `nx` x `ny` nodes (1 mm) pre-cracked from its left edge to a third of its
/// length at mid-height, its top and bottom layers (3 nodes deep) pulled apart at `speed`
/// m/s for `steps` steps; PMB with the surface correction and partial volumes, or LPS;
/// `output` the keys of its `[output]` table.
pub fn cracked_plate_model(
    law: &str,
    steps: usize,
    (nx, ny): (usize, usize),
    speed: f64,
    output: &str,
) -> String {
    let nu = law.starts_with("lps").then_some(0.22);
    let corr = match law {
        "pmb" => "surface_correction = true\n",
        _ => "",
    };
    let mm = |x: f64| x / 1000.0;
    let (lx, ly) = (mm((nx - 1) as f64), mm((ny - 1) as f64));
    let (tip, mid) = (mm((nx / 3) as f64), mm((ny - 1) as f64 / 2.0));
    format!(
        "{}{corr}critical_stretch = 0.002\n[discretization]\ndimension = \"plane-stress\"\n\
         thickness = 1e-3\ndx = 1e-3\nhorizon_factor = 3.015\npartial_volume = \"linear\"\n\
         [geometry]\nbox = [{{ min = [0, 0], max = [{lx:?}, {ly:?}] }}]\n\
         [[precrack]]\nstart = [-0.001, {mid:?}]\nend = [{tip:?}, {mid:?}]\n\
         [[region]]\nname = \"bottom\"\nshape = \"edge\"\nside = \"-y\"\ndepth_dx = 3\n\
         [[region]]\nname = \"top\"\nshape = \"edge\"\nside = \"+y\"\ndepth_dx = 3\n\
         [[boundary]]\nregion = \"bottom\"\nkind = \"velocity\"\ny = {:?}\n\
         [[boundary]]\nregion = \"top\"\nkind = \"velocity\"\ny = {speed:?}\n\
         [solver]\nkind = \"explicit\"\nsteps = {steps}\n\
         [output]\n{output}",
        material(law, nu),
        -speed
    )
}

/// What a run ends with: the final displacement and velocity, the bond status in CSR order
/// and the bonds broken.
pub struct RunEnd {
    pub u: Vec<f64>,
    pub v: Vec<f64>,
    pub status: Vec<u8>,
    pub broken: usize,
}

/// The end of a single-process run of `problem` on `backend` in f64.
pub fn run_end(problem: &Problem, backend: BackendKind) -> RunEnd {
    let opts = options(backend, Precision::F64, None);
    let o = simulate::<f64>(problem.clone(), &opts).expect("run succeeds");
    RunEnd {
        status: o.backend.bond_status().expect("bond status"),
        broken: o.summary.broken_bonds,
        u: o.state.u,
        v: o.state.v,
    }
}

/// The end of a run of `problem` on `backend` in f64 across `ranks` ranks, each a thread
/// of this process (`peridot::distributed::ThreadComm`), as every rank sees it.
pub fn distributed_end(problem: &Problem, backend: BackendKind, ranks: usize) -> Vec<RunEnd> {
    use peridot::solver::distributed::simulate_distributed;
    use peridot::solver::Ranks;
    peridot::distributed::run_ranks(ranks, |comm| {
        let opts = options(backend, Precision::F64, None);
        let ranks = Ranks { comm, stop: None };
        let o = simulate_distributed::<f64>(problem.clone(), &opts, ranks)
            .unwrap_or_else(|e| panic!("distributed run: {e}"));
        // (collective: every rank asks)
        let status = o.backend.bond_status().expect("bond status");
        RunEnd {
            status,
            broken: o.summary.broken_bonds,
            u: o.state.u,
            v: o.state.v,
        }
    })
}

/// Assert every rank's end of a distributed run equals `one`'s bit for bit (`what` names
/// the run), and that bonds broke (a run that breaks none would not test the crack across
/// the cuts).
pub fn assert_same_end(one: &RunEnd, ranks: &[RunEnd], what: &str) {
    assert!(
        one.broken > 0,
        "{what}: the crack must grow (no bond broke)"
    );
    for (r, end) in ranks.iter().enumerate() {
        let what = format!("{what}, rank {r} of {}", ranks.len());
        assert_bitwise(&end.u, &one.u, &format!("{what}: displacement"));
        assert_bitwise(&end.v, &one.v, &format!("{what}: velocity"));
        assert_eq!(end.broken, one.broken, "{what}: bonds broken");
        assert!(end.status == one.status, "{what}: bond status differs");
    }
}
