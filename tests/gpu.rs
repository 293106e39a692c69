//! The GPU backends (`gpu-loop`, `gpu-matrix`) against the CPU loop reference (design
//! invariant 1), one shared body per check for every pair: the same forces (normwise relative
//! difference `|f_gpu - f_cpu| / |f_cpu|` below 1e-12 in f64 and 1e-5 in f32; the loop
//! kernels do the CPU's arithmetic in the same order, so only fused multiply-adds differ; the
//! matrix backend's bond kernels round as the CPU does and only cuSPARSE's summation order
//! differs), the same dilatation, damage and energy, and in f64 the same broken bonds over a
//! short damaging run with the time loop on the device.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes; with
//! `PERIDOT_REQUIRE_GPU=1` a missing device fails them, so a run on a GPU machine cannot pass
//! by skipping.

#[path = "gpu/baked.rs"]
mod baked;
#[path = "gpu/cache.rs"]
mod cache;
mod common;
#[path = "gpu/contact.rs"]
mod contact;
#[path = "gpu/crack_nodes.rs"]
mod crack_nodes;
#[path = "gpu/distributed.rs"]
mod distributed;
#[path = "gpu/distributed_adr.rs"]
mod distributed_adr;
#[path = "gpu/distributed_contact.rs"]
mod distributed_contact;
#[path = "gpu/fields.rs"]
mod fields;
#[path = "gpu/guard.rs"]
mod guard;
#[path = "gpu/initial.rs"]
mod initial;
#[path = "gpu/lean.rs"]
mod lean;
#[path = "gpu/lps_nonlinear.rs"]
mod lps_nonlinear;
#[path = "gpu/neighbors.rs"]
mod neighbors;
#[path = "gpu/probes.rs"]
mod probes;
#[path = "gpu/restart.rs"]
mod restart;
#[path = "gpu/session.rs"]
mod session;
#[path = "gpu/stream.rs"]
mod stream;

use peridot::backend::{self, Backend, BackendKind, CpuLoop, GpuLoop, GpuMatrix};
use peridot::dynamics::Forces;
use peridot::operators::Storage;
use peridot::setup::Problem;
use peridot::solver::{simulate, RunOptions};
use peridot::{Precision, Real};
use std::io::Write;
use std::sync::Arc;

/// A line on the terminal even when the harness captures test output.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Whether a CUDA device is there; otherwise says the test is skipped (or fails it under
/// `PERIDOT_REQUIRE_GPU=1`).
fn have_gpu() -> bool {
    match peridot::gpu::Gpu::get() {
        Ok(_) => true,
        Err(e) => {
            if std::env::var("PERIDOT_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("PERIDOT_REQUIRE_GPU=1 but no CUDA device: {e}");
            }
            say(&format!("skipped: no CUDA device ({e})"));
            false
        }
    }
}

/// `|a - b| / |b|` in f64.
fn rel<T: Real>(a: &[T], b: &[T]) -> f64 {
    assert_eq!(a.len(), b.len());
    let (mut num, mut den) = (0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        num += (x.f64() - y.f64()).powi(2);
        den += y.f64().powi(2);
    }
    (num / den).sqrt()
}

/// A 2D plate or 3D block with a pre-crack, a no-fail edge and the given material lines.
fn model(dim: &str, material: &str, extra: &str) -> String {
    let (geometry, thick, crack) = if dim == "3d" {
        (
            "box = [{ min = [-0.006, -0.006, -0.006], max = [0.006, 0.006, 0.006] }]",
            "",
            "[[precrack]]\norigin = [-0.007, -0.0005, -0.007]\nedge1 = [0.007, 0, 0]\n\
             edge2 = [0, 0, 0.014]",
        )
    } else {
        (
            "box = [{ min = [-0.02, -0.02], max = [0.02, 0.02] }]",
            "thickness = 1e-3",
            "[[precrack]]\nstart = [-0.021, 0.0005]\nend = [0.0, 0.0005]",
        )
    };
    format!(
        "[material]\nyoungs_modulus = 192e9\ndensity = 8000\n{material}\n\
         [discretization]\ndimension = \"{dim}\"\ndx = 1e-3\nhorizon_factor = 3.015\n{thick}\n\
         {extra}\n[geometry]\n{geometry}\n{crack}\n\
         [[region]]\nname = \"left\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 2\n\
         [[boundary]]\nregion = \"left\"\nkind = \"no-fail\"\n\
         [solver]\nkind = \"explicit\"\nsteps = 1\n"
    )
}

/// The materials every agreement test covers: PMB nonlinear (with partial volumes and the
/// surface correction), PMB linearized, LPS.
const MATERIALS: [(&str, &str, &str); 3] = [
    (
        "pmb",
        "model = \"pmb\"\ncritical_stretch = 0.004\nsurface_correction = true",
        "partial_volume = \"linear\"",
    ),
    (
        "pmb-linear",
        "model = \"pmb-linear\"\ncritical_stretch = 0.004",
        "",
    ),
    (
        "lps",
        "model = \"lps\"\npoisson_ratio = 0.3\ncritical_stretch = 0.004",
        "",
    ),
];

/// A displacement with strain about `eps`: affine stretch and shear, a wave, and a rigid
/// translation (so the f32 kernels see large values of `u` with small differences).
fn displacement<T: Real>(p: &Problem, eps: f64) -> Vec<T> {
    let d = p.dim();
    p.body
        .positions
        .iter()
        .flat_map(|x| {
            let wave = (x[0] * 700.0).sin() * (x[1] * 500.0 + 0.3).cos();
            let c = [
                eps * (x[0] + 0.4 * x[1]) + 0.2 * eps * 1e-3 * wave + 1e-4,
                eps * (0.7 * x[1] - 0.2 * x[2]) - 0.1 * eps * 1e-3 * wave - 2e-4,
                eps * (0.5 * x[2] + 0.3 * x[0]) + 0.1 * eps * 1e-3 * wave,
            ];
            (0..d).map(move |k| T::of(c[k]))
        })
        .collect()
}

/// The GPU backend `kind` for `p` (a failure to set up fails the test).
fn make<T: Real>(kind: BackendKind, p: Arc<Problem>) -> Box<dyn Backend<T>> {
    backend::create::<T>(kind, p, None).unwrap_or_else(|e| panic!("{} sets up: {e}", kind.name()))
}

/// Forces, dilatation, energy, bond breaking and damage of one problem in precision `T`,
/// GPU backend `kind` against cpu-loop.
fn compare<T: Real>(kind: BackendKind, name: &str, p: Arc<Problem>, tol: f64) {
    let mut cpu = CpuLoop::<T>::new(p.clone());
    let mut gpu = make::<T>(kind, p.clone());
    assert_eq!(gpu.name(), kind.name());
    let (n, d) = (p.body.len(), p.dim());
    assert!(p.precracked_bonds() > 0, "{name}: the pre-crack cuts bonds");
    assert_eq!(
        gpu.broken_bonds(),
        cpu.broken_bonds(),
        "{name}: pre-cracked bonds"
    );
    assert!(gpu.footprint().memory_bytes > 0 && gpu.footprint().bytes_per_step > 0);

    let u = displacement::<T>(&p, 1e-3);
    let (mut fc, mut fg) = (vec![T::zero(); n * d], vec![T::nan(); n * d]);
    cpu.internal_force(&u, &mut fc).unwrap();
    gpu.internal_force(&u, &mut fg).unwrap();
    let e_force = rel(&fg, &fc);
    assert!(
        e_force < tol,
        "{name}: force relative difference {e_force:.3e} (tolerance {tol:.0e})"
    );

    let (mut tc, mut tg) = (vec![T::zero(); n], vec![T::nan(); n]);
    assert_eq!(
        cpu.dilatation(&u, &mut tc).unwrap(),
        gpu.dilatation(&u, &mut tg).unwrap()
    );
    if p.material.name().starts_with("lps") {
        let e = rel(&tg, &tc);
        assert!(e < tol, "{name}: dilatation relative difference {e:.3e}");
    }
    let (ec, eg) = (
        cpu.strain_energy(&u).unwrap(),
        gpu.strain_energy(&u).unwrap(),
    );
    assert!(
        ((eg - ec) / ec).abs() < tol,
        "{name}: strain energy {eg:.9e} against {ec:.9e}"
    );

    // A strain past the critical stretch breaks bonds: the same ones in f64.
    let big = displacement::<T>(&p, 4.5e-3);
    let (bc, bg) = (
        cpu.break_bonds(&big).unwrap(),
        gpu.break_bonds(&big).unwrap(),
    );
    assert!(bc > 0, "{name}: nothing broke");
    let differ = gpu
        .bond_status()
        .unwrap()
        .iter()
        .zip(cpu.bond_status().unwrap())
        .filter(|(a, b)| **a != *b)
        .count();
    if T::NAME == "f64" {
        assert_eq!(bg, bc, "{name}: broken bond count");
        assert_eq!(
            gpu.bond_status().unwrap(),
            cpu.bond_status().unwrap(),
            "{name}: bond status"
        );
    } else {
        assert!(
            differ * 1000 <= bc,
            "{name}: {differ} of {bc} broken bonds differ"
        );
    }
    assert_eq!(
        gpu.broken_bonds(),
        gpu.bond_status()
            .unwrap()
            .iter()
            .filter(|&&m| m == 0)
            .count()
    );

    // Forces and damage with the broken bonds.
    cpu.internal_force(&u, &mut fc).unwrap();
    gpu.internal_force(&u, &mut fg).unwrap();
    let e = rel(&fg, &fc);
    assert!(
        e < tol,
        "{name}: force after breaking, relative difference {e:.3e}"
    );
    let (mut pc, mut pg) = (vec![T::zero(); n], vec![T::nan(); n]);
    cpu.damage(&mut pc).unwrap();
    gpu.damage(&mut pg).unwrap();
    let e_damage = rel(&pg, &pc);
    assert!(
        e_damage < tol,
        "{name}: damage relative difference {e_damage:.3e}"
    );
    // the fused step: breaking then forces at the same u, against the two calls on the CPU
    let bigger = displacement::<T>(&p, 5.0e-3);
    let (mut fs, mut gs) = (vec![T::zero(); n * d], vec![T::nan(); n * d]);
    let bc2 = cpu.break_bonds_and_force(&bigger, &mut fs).unwrap();
    let bg2 = gpu.break_bonds_and_force(&bigger, &mut gs).unwrap();
    let same = gpu.bond_status().unwrap() == cpu.bond_status().unwrap();
    if T::NAME == "f64" {
        assert_eq!(bg2, bc2, "{name}: bonds broken by the fused step");
        assert!(same, "{name}: bond status after the fused step");
    }
    // (in f32 a bond whose stretch lies within round-off of s0 may break on one side only;
    // its force alone would exceed the tolerance, so forces are compared with equal status)
    let e_fused = rel(&gs, &fs);
    assert!(
        !same || e_fused < tol,
        "{name}: fused break and force, relative difference {e_fused:.3e}"
    );
    say(&format!(
        "{} {name}: forces agree to {e_force:.1e} (fused step {e_fused:.1e}, damage \
         {e_damage:.1e}), {bc} bonds broken on the CPU, {bg} on the GPU, {differ} differ",
        kind.name()
    ));
}

fn forces_agree<T: Real>(kind: BackendKind, tol: f64) {
    if !have_gpu() {
        return;
    }
    for dim in ["plane-stress", "3d"] {
        for (law, material, extra) in MATERIALS {
            let p = Arc::new(common::problem(&model(dim, material, extra), &[]));
            compare::<T>(kind, &format!("{dim} {law} {}", T::NAME), p, tol);
        }
    }
}

#[test]
fn f64_forces_damage_and_energy_agree_with_cpu_loop() {
    forces_agree::<f64>(BackendKind::GpuLoop, 1e-12);
}

#[test]
fn f32_forces_damage_and_energy_agree_with_cpu_loop() {
    forces_agree::<f32>(BackendKind::GpuLoop, 1e-5);
}

/// The f32 kernels read positions relative to the centre of the body (`node_records_f32` in
/// `backend/gpu/bond_loop/records.rs`), so a body far from the origin agrees with cpu-loop as well as one around
/// it (positions themselves rounded to f32 10 m out would be 6e-7 m off, 6e-4 of dx).
#[test]
fn f32_forces_agree_far_from_the_origin() {
    if !have_gpu() {
        return;
    }
    let (law, material, extra) = MATERIALS[0];
    let mut p = common::problem(&model("3d", material, extra), &[]);
    let shift = [10.0, -7.0, 3.0];
    let body = &mut p.body;
    for x in body
        .positions
        .iter_mut()
        .chain([&mut body.bbox_min, &mut body.bbox_max])
    {
        for (c, s) in x.iter_mut().zip(shift) {
            *c += s;
        }
    }
    let name = format!("3d {law} f32, 10 m from the origin");
    compare::<f32>(BackendKind::GpuLoop, &name, Arc::new(p), 1e-5);
}

#[test]
fn gpu_matrix_f64_forces_damage_and_energy_agree_with_cpu_loop() {
    forces_agree::<f64>(BackendKind::GpuMatrix, 1e-12);
}

#[test]
fn gpu_matrix_f32_forces_damage_and_energy_agree_with_cpu_loop() {
    forces_agree::<f32>(BackendKind::GpuMatrix, 1e-5);
}

/// What gpu-matrix holds on the device is its estimate (`peridot info`) plus the cuSPARSE
/// workspaces, for every law and both storages.
#[test]
fn gpu_matrix_memory_matches_its_estimate() {
    if !have_gpu() {
        return;
    }
    for dim in ["plane-stress", "3d"] {
        for (law, material, extra) in MATERIALS {
            let p = Arc::new(common::problem(&model(dim, material, extra), &[]));
            for storage in [Storage::Half, Storage::Full] {
                let m = GpuMatrix::<f32>::new(p.clone(), storage).expect("gpu-matrix sets up");
                let estimate = GpuMatrix::<f32>::memory_estimate(&p, storage, 4);
                assert_eq!(
                    m.memory_bytes() - m.workspace_bytes(),
                    estimate,
                    "{dim} {law} {}",
                    storage.name()
                );
                say(&format!(
                    "gpu-matrix {dim} {law} f32 {}: {} bytes, workspaces {}",
                    storage.name(),
                    m.memory_bytes(),
                    m.workspace_bytes()
                ));
            }
        }
    }
}

/// Full storage agrees with cpu-loop too (the default is half storage).
#[test]
fn gpu_matrix_full_storage_agrees_with_cpu_loop() {
    if !have_gpu() {
        return;
    }
    for (law, material, extra) in MATERIALS {
        let p = Arc::new(common::problem(&model("3d", material, extra), &[]));
        let mut full = GpuMatrix::<f64>::new(p.clone(), Storage::Full).expect("sets up");
        let mut cpu = CpuLoop::<f64>::new(p.clone());
        let u = displacement::<f64>(&p, 4.5e-3);
        let n = p.dim() * p.body.len();
        let (mut fc, mut fg) = (vec![0.0; n], vec![f64::NAN; n]);
        let bc = cpu.break_bonds_and_force(&u, &mut fc).unwrap();
        let bg = full.break_bonds_and_force(&u, &mut fg).unwrap();
        assert_eq!(bg, bc, "{law}: bonds broken");
        assert_eq!(
            full.bond_status().unwrap(),
            cpu.bond_status().unwrap(),
            "{law}: bond status"
        );
        let e = rel(&fg, &fc);
        assert!(e < 1e-12, "{law}: full storage force difference {e:.3e}");
        say(&format!(
            "gpu-matrix full storage 3d {law}: forces agree to {e:.1e}"
        ));
    }
}

/// A pre-cracked plate pulled apart (velocity conditions), as in `tests/determinism.rs`.
const PULLED_PLATE: &str = r#"
[material]
model = "pmb"
youngs_modulus = 192e9
density = 8000
critical_stretch = 0.004
[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 0.5e-3
horizon_factor = 3.015
[geometry]
box = [{ min = [-0.01, -0.01], max = [0.01, 0.01] }]
[[precrack]]
start = [-0.003, 0.0]
end = [0.003, 0.0]
[[region]]
name = "top"
shape = "edge"
side = "+y"
depth_dx = 3
[[region]]
name = "bottom"
shape = "edge"
side = "-y"
depth_dx = 3
[[boundary]]
region = "top"
kind = "velocity"
y = 50.0
ramp = "smooth"
ramp_steps = 20
[[boundary]]
region = "bottom"
kind = "velocity"
y = -50.0
[solver]
kind = "explicit"
steps = 150
"#;

/// A 3D LPS block with a traction on one face, the other face held by a displacement
/// condition, damping, and damage.
const LPS_BLOCK: &str = r#"
[material]
model = "lps"
youngs_modulus = 192e9
poisson_ratio = 0.3
density = 8000
critical_stretch = 0.0008
[discretization]
dimension = "3d"
dx = 1e-3
horizon_factor = 3.015
[geometry]
box = [{ min = [-0.008, -0.004, -0.004], max = [0.008, 0.004, 0.004] }]
[[precrack]]
origin = [0.0, -0.005, -0.005]
edge1 = [0, 0.005, 0]
edge2 = [0, 0, 0.01]
[[region]]
name = "left"
shape = "edge"
side = "-x"
depth_dx = 2
[[region]]
name = "right"
shape = "edge"
side = "+x"
depth_dx = 2
[[boundary]]
region = "left"
kind = "displacement"
x = 0.0
y = 0.0
z = 0.0
[[boundary]]
region = "right"
kind = "traction"
x = 1.5e8
ramp = "linear"
ramp_steps = 30
[solver]
kind = "explicit"
steps = 120
damping = 1e5
"#;

fn run<T: Real>(text: &str, backend: BackendKind) -> peridot::solver::Outcome<T> {
    let opts = RunOptions {
        cancel: None,
        process_start: None,
        subdomains: None,
        backend,
        precision: if T::NAME == "f32" {
            Precision::F32
        } else {
            Precision::F64
        },
        out_dir: None,
        quiet: true,
    };
    simulate::<T>(common::problem(text, &[]), &opts).expect("run succeeds")
}

/// A short damaging run with the explicit loop on the device breaks the same bonds as the
/// CPU run in f64 and ends in the same state to 1e-10 (rounding differences of fused
/// multiply-adds or summation order grow slowly over 150 steps; a bond breaking differently
/// would show as a status mismatch and a much larger difference).
fn damaging_runs(kind: BackendKind) {
    if !have_gpu() {
        return;
    }
    for (name, text) in [("pulled plate", PULLED_PLATE), ("lps block", LPS_BLOCK)] {
        let cpu = run::<f64>(text, BackendKind::CpuLoop);
        let gpu = run::<f64>(text, kind);
        assert_eq!(gpu.summary.backend, kind.name());
        let precracked = common::problem(text, &[]).precracked_bonds();
        assert!(
            cpu.summary.broken_bonds > precracked,
            "{name}: the run must break bonds beyond the pre-crack"
        );
        assert_eq!(
            gpu.backend.bond_status().unwrap(),
            cpu.backend.bond_status().unwrap(),
            "{name}: bond status"
        );
        assert_eq!(gpu.summary.broken_bonds, cpu.summary.broken_bonds);
        assert_eq!(gpu.state.step, cpu.state.step);
        assert_eq!(gpu.state.time, cpu.state.time);
        let mut worst: f64 = 0.0;
        for (what, a, b) in [
            ("u", &gpu.state.u, &cpu.state.u),
            ("v", &gpu.state.v, &cpu.state.v),
            ("f", &gpu.state.f, &cpu.state.f),
        ] {
            let e = rel(a, b);
            assert!(e < 1e-10, "{name}: {what} relative difference {e:.3e}");
            worst = worst.max(e);
        }
        say(&format!(
            "{} {name}: {} bonds broken on both, u, v, f agree to {worst:.1e}",
            kind.name(),
            gpu.summary.broken_bonds
        ));
    }
}

#[test]
fn f64_damaging_runs_break_the_same_bonds() {
    damaging_runs(BackendKind::GpuLoop);
}

#[test]
fn gpu_matrix_f64_damaging_runs_break_the_same_bonds() {
    damaging_runs(BackendKind::GpuMatrix);
}

/// The same runs in f32 without damage end in the same state to f32 round-off (1e-5).
fn f32_runs(kind: BackendKind) {
    if !have_gpu() {
        return;
    }
    for (name, text) in [("pulled plate", PULLED_PLATE), ("lps block", LPS_BLOCK)] {
        let text = text.replace("[solver]", "[solver]\ndamage = false");
        let cpu = run::<f32>(&text, BackendKind::CpuLoop);
        let gpu = run::<f32>(&text, kind);
        let e = rel(&gpu.state.u, &cpu.state.u);
        assert!(e < 1e-5, "{name}: u relative difference {e:.3e}");
        say(&format!("{} {name} f32: u agrees to {e:.1e}", kind.name()));
    }
}

#[test]
fn f32_runs_agree_with_cpu_loop() {
    f32_runs(BackendKind::GpuLoop);
}

#[test]
fn gpu_matrix_f32_runs_agree_with_cpu_loop() {
    f32_runs(BackendKind::GpuMatrix);
}

/// `GpuLoop::device_bytes`, the count the out-of-memory check and `peridot info` use before
/// allocating, covers what the backend then holds: at least the allocated bytes and at most
/// 1% more (placeholders of one value for arrays a law does not use are left out).
#[test]
fn device_memory_estimate_covers_the_allocations() {
    if !have_gpu() {
        return;
    }
    for dim in ["plane-stress", "3d"] {
        for (law, material, extra) in MATERIALS {
            let p = Arc::new(common::problem(&model(dim, material, extra), &[]));
            let estimate = GpuLoop::<f64>::device_bytes(&p);
            let held = GpuLoop::<f64>::new(p).unwrap().memory_bytes();
            let ratio = estimate as f64 / held as f64;
            say(&format!(
                "{dim} {law}: estimate {estimate} B, held {held} B"
            ));
            assert!(
                (1.0..1.01).contains(&ratio),
                "{dim} {law}: estimate {estimate} B against {held} B held"
            );
        }
    }
}

/// A model larger than the free device memory is a clear error naming the bytes and the
/// way out, never a failed allocation.
#[test]
fn a_model_too_large_for_the_gpu_is_a_clear_error() {
    if !have_gpu() {
        return;
    }
    let gpu = peridot::gpu::Gpu::get().unwrap();
    let (free, total) = gpu.memory_info().unwrap();
    assert!(free > 0 && free <= total, "free {free} of {total} bytes");
    assert!(gpu.ensure_fits("gpu-loop", free / 2).is_ok());
    let e = gpu
        .ensure_fits("gpu-loop", 2 * total)
        .unwrap_err()
        .to_string();
    say(&format!("too large: {e}"));
    for part in [
        "gpu-loop",
        "GiB",
        &format!("{} bytes", 2 * total),
        "--precision f32",
    ] {
        assert!(e.contains(part), "{part:?} missing from: {e}");
    }
}

/// Adaptive dynamic relaxation with the iteration on the device reaches the CPU's equilibrium.
/// Not bit for bit: the device sums the residual and the Rayleigh quotient of the damping
/// coefficient `c` in another order, and its force kernels fuse multiply-adds, and ADR's
/// path is sensitive to `c` (on the CPU, scaling `c` by one ulp turns the strip's 699
/// iterations into 799). So both runs must converge, in a similar number of iterations
/// (within 30%), to the same displacement within what the tolerance allows (1e-5 relative
/// at a residual tolerance of 1e-9; 1e-3 in f32, whose round-off limits the residual), and
/// a damaging run must break about the same bonds (within 5%).
#[test]
fn adr_on_the_device_agrees_with_the_cpu() {
    if !have_gpu() {
        return;
    }
    let strip = |material: String, disp: &str, solver: &str| {
        common::adr_strip(&material, disp, solver, true)
    };
    let bar = |solver: &str| common::lps_bar(0.012, solver);
    let cases = [
        (
            "strip, pmb-linear, displacement",
            strip(
                common::material("pmb-linear", None),
                "1e-5",
                "steps = 20000\ntolerance = 1e-9",
            ),
        ),
        (
            "3D LPS bar, traction",
            bar("steps = 20000\ntolerance = 1e-9"),
        ),
        (
            "3D LPS bar, traction in 4 load steps",
            bar("steps = 4000\nload_steps = 4\ntolerance = 1e-9"),
        ),
        (
            "cracking strip, pmb, ramped displacement",
            strip(
                common::material("pmb", None) + "critical_stretch = 0.002\n",
                "4e-5\nramp = \"linear\"\nramp_steps = 300",
                "steps = 3000\ntolerance = 1e-7",
            ),
        ),
    ];
    for ((name, text), kind) in cases
        .iter()
        .flat_map(|c| [(c, BackendKind::GpuLoop), (c, BackendKind::GpuMatrix)])
    {
        let cpu = run::<f64>(text, BackendKind::CpuLoop);
        let gpu = run::<f64>(text, kind);
        assert_eq!(gpu.summary.backend, kind.name());
        let (ig, ic) = (gpu.state.step as f64, cpu.state.step as f64);
        let e = rel(&gpu.state.u, &cpu.state.u);
        let (bg, bc) = (gpu.summary.broken_bonds, cpu.summary.broken_bonds);
        say(&format!(
            "ADR {name} {} f64: {ig} iterations on the GPU, {ic} on the CPU, residual {:.2e} / \
             {:.2e}, {bg} / {bc} bonds broken, u agrees to {e:.1e}",
            kind.name(),
            gpu.summary.static_residual.unwrap_or(f64::NAN),
            cpu.summary.static_residual.unwrap_or(f64::NAN),
        ));
        assert_eq!(cpu.summary.converged, Some(true), "{name}: CPU converged");
        assert_eq!(gpu.summary.converged, Some(true), "{name}: GPU converged");
        assert!(
            (0.7..1.3).contains(&(ig / ic)),
            "{name}: iterations {ig} vs {ic}"
        );
        if name.starts_with("cracking") {
            let precracked = common::problem(text, &[]).precracked_bonds();
            assert!(bc > precracked, "{name}: must crack");
            let r = bg as f64 / bc as f64;
            assert!((0.95..1.05).contains(&r), "{name}: broken {bg} vs {bc}");
            continue;
        }
        assert!(e < 1e-5, "{name}: u relative difference {e:.3e}");
        let cpu = run::<f32>(text, BackendKind::CpuLoop);
        let gpu = run::<f32>(text, kind);
        let e = rel(&gpu.state.u, &cpu.state.u);
        say(&format!(
            "ADR {name} {} f32: {} / {} iterations, u agrees to {e:.1e}",
            kind.name(),
            gpu.state.step,
            cpu.state.step
        ));
        assert!(e < 1e-3, "{name} f32: u relative difference {e:.3e}");
    }
}

/// `gpu-loop` counts each node's intact bonds on its status bits for the bond-count damage
/// of a snapshot, without sending the bond status over: the same numbers, bit for bit, as
/// the count over the downloaded status, on the list and on a lattice's stencil.
#[test]
fn bond_count_damage_from_the_status_bits() {
    if !have_gpu() {
        return;
    }
    for p in [
        common::conditions_bar(),
        common::partition_bar("pmb", "3d", 1),
    ] {
        let p = Arc::new(p);
        let u = displacement::<f64>(&p, 4e-3);
        for mut gpu in [
            GpuLoop::<f64>::new(p.clone()).unwrap(),
            GpuLoop::<f64>::with_neighbour_list(p.clone()).unwrap(),
        ] {
            let mut f = vec![0.0; u.len()];
            let broken = gpu.break_bonds_and_force(&u, &mut f).unwrap();
            assert!(broken > 0, "the evaluation must break bonds");
            let offsets = &p.families.offsets;
            let counted = gpu.bond_count_damage(offsets).unwrap();
            let status = gpu.bond_status().unwrap();
            let expected =
                peridot::dynamics::forces::bond_count_damage::<f64>(offsets, &status, None);
            common::assert_bitwise(&counted, &expected, "bond-count damage");
            assert!(counted.iter().any(|&d| d > 0.0), "some node is damaged");
        }
    }
}

/// On a full box lattice of one node volume, the plain PMB loop reads each bond's vector,
/// length and inverse length from a table of the stencil's slots (`pmb_force_lattice_table`),
/// computed in f64 from the lattice step and rounded once, where the list form subtracts the
/// two rounded positions. The two differ by the rounding of the bond vector: forces agree to
/// 1e-12 of the largest (f64) and 1e-5 (f32), the same bonds break, and 40 damaging steps of
/// the device time loop end within 1e-9 of the largest displacement.
#[test]
fn lattice_slot_table_agrees_with_the_neighbour_list() {
    if !have_gpu() {
        return;
    }
    let p = Arc::new(common::conditions_bar());
    let u = displacement::<f64>(&p, 2e-3);
    let rel = |a: &[f64], b: &[f64]| {
        let scale = b.iter().fold(0.0f64, |m, x| m.max(x.abs()));
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max)
            / scale
    };
    let mut table = GpuLoop::<f64>::new(p.clone()).unwrap();
    let mut list = GpuLoop::<f64>::with_neighbour_list(p.clone()).unwrap();
    let (mut fa, mut fb) = (vec![0.0; u.len()], vec![0.0; u.len()]);
    let broken = table.break_bonds_and_force(&u, &mut fa).unwrap();
    assert_eq!(
        broken,
        list.break_bonds_and_force(&u, &mut fb).unwrap(),
        "broken"
    );
    assert!(broken > 0, "the evaluation must break bonds");
    assert!(
        !fa.iter().zip(&fb).all(|(a, b)| a == b),
        "the table form ran"
    );
    let e = rel(&fa, &fb);
    assert!(e < 1e-12, "f64 force: {e:.2e}");
    assert_eq!(table.bond_status().unwrap(), list.bond_status().unwrap());
    let u32: Vec<f32> = u.iter().map(|&x| x as f32).collect();
    let (mut ga, mut gb) = (vec![0f32; u.len()], vec![0f32; u.len()]);
    GpuLoop::<f32>::new(p.clone())
        .unwrap()
        .break_bonds_and_force(&u32, &mut ga)
        .unwrap();
    GpuLoop::<f32>::with_neighbour_list(p.clone())
        .unwrap()
        .break_bonds_and_force(&u32, &mut gb)
        .unwrap();
    let widen = |v: &[f32]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let e32 = rel(&widen(&ga), &widen(&gb));
    assert!(e32 < 1e-5, "f32 force: {e32:.2e}");
    let mut table = GpuLoop::<f64>::new(p.clone()).unwrap();
    let mut list = GpuLoop::<f64>::with_neighbour_list(p.clone()).unwrap();
    let (sa, ba) = common::chunked_run(&p, &mut table, &[7, 13, 1, 19]);
    let (sb, bb) = common::chunked_run(&p, &mut list, &[7, 13, 1, 19]);
    assert!(bb > 0, "the run must break bonds");
    assert_eq!(ba, bb, "bonds broken in 40 steps");
    let eu = rel(&sa.u, &sb.u);
    assert!(eu < 1e-9, "displacement after 40 steps: {eu:.2e}");
    say(&format!(
        "slot table against the list: force {e:.1e} (f64) {e32:.1e} (f32), u after 40 steps \
         {eu:.1e}, {broken} + {ba} bonds broken"
    ));
}

/// On a full box lattice `gpu-loop` takes its neighbours from the stencil instead of a list
/// (`backend::gpu::lattice`): the same bonds in the same order, so the forces, bonds broken,
/// bond status and damage of a damaging evaluation, and a run of the device time loop, equal
/// the list form's bit for bit (f64; f32 forces too).
#[test]
fn lattice_form_equals_the_neighbour_list_bitwise() {
    if !have_gpu() {
        return;
    }
    for (law, dim) in common::PARTITION_CASES {
        let case = format!("{law} {dim}");
        let p = Arc::new(common::partition_bar(law, dim, 40));
        assert!(
            peridot::backend::gpu::lattice::Stencil::of(&p).is_some(),
            "{case}: a full box lattice"
        );
        let u = displacement::<f64>(&p, 4e-3);
        let mut lattice = GpuLoop::<f64>::new(p.clone()).unwrap();
        let mut list = GpuLoop::<f64>::with_neighbour_list(p.clone()).unwrap();
        let (mut fa, mut fb) = (vec![0.0; u.len()], vec![0.0; u.len()]);
        let broken = lattice.break_bonds_and_force(&u, &mut fa).unwrap();
        assert_eq!(
            broken,
            list.break_bonds_and_force(&u, &mut fb).unwrap(),
            "{case}: broken"
        );
        assert!(broken > 0, "{case}: the evaluation must break bonds");
        common::assert_bitwise(&fa, &fb, &format!("{case}: force"));
        assert_eq!(
            lattice.bond_status().unwrap(),
            list.bond_status().unwrap(),
            "{case}: status"
        );
        let (mut da, mut db) = (vec![0.0; p.body.len()], vec![0.0; p.body.len()]);
        lattice.damage(&mut da).unwrap();
        list.damage(&mut db).unwrap();
        common::assert_bitwise(&da, &db, &format!("{case}: damage"));
        let u32: Vec<f32> = u.iter().map(|&x| x as f32).collect();
        let mut lat32 = GpuLoop::<f32>::new(p.clone()).unwrap();
        let mut list32 = GpuLoop::<f32>::with_neighbour_list(p.clone()).unwrap();
        let (mut ga, mut gb) = (vec![0f32; u.len()], vec![0f32; u.len()]);
        lat32.break_bonds_and_force(&u32, &mut ga).unwrap();
        list32.break_bonds_and_force(&u32, &mut gb).unwrap();
        assert!(
            ga.iter().zip(&gb).all(|(a, b)| a.to_bits() == b.to_bits()),
            "{case}: f32 force"
        );
        let mut lattice = GpuLoop::<f64>::new(p.clone()).unwrap();
        let mut list = GpuLoop::<f64>::with_neighbour_list(p.clone()).unwrap();
        let (sa, ba) = common::chunked_run(&p, &mut lattice, &[7, 13, 1, 19]);
        let (sb, bb) = common::chunked_run(&p, &mut list, &[7, 13, 1, 19]);
        assert!(ba > 0, "{case}: the run must break bonds");
        common::assert_same_run(&sa, ba, &sb, bb, &format!("{case}: 40 steps"));
        say(&format!(
            "{case}: lattice form bitwise the list form ({broken} bonds broken in one \
             evaluation, {ba} in 40 steps)"
        ));
    }
}
