//! The GPU loop backend against the CPU loop reference (design invariant 1): the same forces
//! (normwise relative difference `|f_gpu - f_cpu| / |f_cpu|` below 1e-12 in f64 and 1e-5 in
//! f32; the kernels do the CPU's arithmetic in the same order, so only fused multiply-adds
//! differ), the same dilatation, damage and energy, and in f64 the same broken bonds over a
//! short damaging run with the time loop on the device.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes; with
//! `PERIDOT_REQUIRE_GPU=1` a missing device fails them, so a run on a GPU machine cannot pass
//! by skipping.

mod common;
#[path = "gpu/neighbors.rs"]
mod neighbors;

use peridot::backend::{Backend, BackendKind, CpuLoop, GpuLoop};
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

/// Forces, dilatation, energy, bond breaking and damage of one problem in precision `T`.
fn compare<T: Real>(name: &str, p: Arc<Problem>, tol: f64) {
    let mut cpu = CpuLoop::<T>::new(p.clone());
    let mut gpu = GpuLoop::<T>::new(p.clone()).expect("gpu-loop sets up");
    let (n, d) = (p.body.len(), p.dim());
    assert!(p.precracked_bonds() > 0, "{name}: the pre-crack cuts bonds");
    assert_eq!(
        gpu.broken_bonds(),
        cpu.broken_bonds(),
        "{name}: pre-cracked bonds"
    );
    assert!(gpu.memory_bytes() > 0 && gpu.bytes_per_step() > 0);

    let u = displacement::<T>(&p, 1e-3);
    let (mut fc, mut fg) = (vec![T::zero(); n * d], vec![T::nan(); n * d]);
    cpu.internal_force(&u, &mut fc);
    gpu.internal_force(&u, &mut fg);
    let e_force = rel(&fg, &fc);
    assert!(
        e_force < tol,
        "{name}: force relative difference {e_force:.3e} (tolerance {tol:.0e})"
    );

    let (mut tc, mut tg) = (vec![T::zero(); n], vec![T::nan(); n]);
    assert_eq!(cpu.dilatation(&u, &mut tc), gpu.dilatation(&u, &mut tg));
    if p.material.name() == "lps" {
        let e = rel(&tg, &tc);
        assert!(e < tol, "{name}: dilatation relative difference {e:.3e}");
    }
    let (ec, eg) = (cpu.strain_energy(&u), gpu.strain_energy(&u));
    assert!(
        ((eg - ec) / ec).abs() < tol,
        "{name}: strain energy {eg:.9e} against {ec:.9e}"
    );

    // A strain past the critical stretch breaks bonds: the same ones in f64.
    let big = displacement::<T>(&p, 4.5e-3);
    let (bc, bg) = (cpu.break_bonds(&big), gpu.break_bonds(&big));
    assert!(bc > 0, "{name}: nothing broke");
    if T::NAME == "f64" {
        assert_eq!(bg, bc, "{name}: broken bond count");
        assert_eq!(gpu.bond_status(), cpu.bond_status(), "{name}: bond status");
    } else {
        let diff = gpu
            .bond_status()
            .iter()
            .zip(cpu.bond_status())
            .filter(|(a, b)| **a != *b)
            .count();
        assert!(
            diff * 1000 <= bc,
            "{name}: {diff} of {bc} broken bonds differ"
        );
    }
    assert_eq!(
        gpu.broken_bonds(),
        gpu.bond_status().iter().filter(|&&m| m == 0).count()
    );

    // Forces and damage with the broken bonds.
    cpu.internal_force(&u, &mut fc);
    gpu.internal_force(&u, &mut fg);
    let e = rel(&fg, &fc);
    assert!(
        e < tol,
        "{name}: force after breaking, relative difference {e:.3e}"
    );
    let (mut pc, mut pg) = (vec![T::zero(); n], vec![T::nan(); n]);
    cpu.damage(&mut pc);
    gpu.damage(&mut pg);
    let e = rel(&pg, &pc);
    assert!(e < tol, "{name}: damage relative difference {e:.3e}");
    say(&format!(
        "{name}: forces agree to {e_force:.1e}, {bc} bonds broken on the CPU, {bg} on the GPU"
    ));
}

fn forces_agree<T: Real>(tol: f64) {
    if !have_gpu() {
        return;
    }
    for dim in ["plane-stress", "3d"] {
        for (law, material, extra) in MATERIALS {
            let p = Arc::new(common::problem(&model(dim, material, extra), &[]));
            compare::<T>(&format!("{dim} {law} {}", T::NAME), p, tol);
        }
    }
}

#[test]
fn f64_forces_damage_and_energy_agree_with_cpu_loop() {
    forces_agree::<f64>(1e-12);
}

#[test]
fn f32_forces_damage_and_energy_agree_with_cpu_loop() {
    forces_agree::<f32>(1e-5);
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
/// multiply-adds grow slowly over 150 steps; a bond breaking differently would show as a
/// status mismatch and a much larger difference).
#[test]
fn f64_damaging_runs_break_the_same_bonds() {
    if !have_gpu() {
        return;
    }
    for (name, text) in [("pulled plate", PULLED_PLATE), ("lps block", LPS_BLOCK)] {
        let cpu = run::<f64>(text, BackendKind::CpuLoop);
        let gpu = run::<f64>(text, BackendKind::GpuLoop);
        assert_eq!(gpu.summary.backend, "gpu-loop");
        let precracked = common::problem(text, &[]).precracked_bonds();
        assert!(
            cpu.summary.broken_bonds > precracked,
            "{name}: the run must break bonds beyond the pre-crack"
        );
        assert_eq!(
            gpu.backend.bond_status(),
            cpu.backend.bond_status(),
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
            "{name}: {} bonds broken on both, u, v, f agree to {worst:.1e}",
            gpu.summary.broken_bonds
        ));
    }
}

/// The same runs in f32 without damage end in the same state to f32 round-off (1e-5).
#[test]
fn f32_runs_agree_with_cpu_loop() {
    if !have_gpu() {
        return;
    }
    for (name, text) in [("pulled plate", PULLED_PLATE), ("lps block", LPS_BLOCK)] {
        let text = text.replace("[solver]", "[solver]\ndamage = false");
        let cpu = run::<f32>(&text, BackendKind::CpuLoop);
        let gpu = run::<f32>(&text, BackendKind::GpuLoop);
        let e = rel(&gpu.state.u, &cpu.state.u);
        assert!(e < 1e-5, "{name}: u relative difference {e:.3e}");
        say(&format!("{name} f32: u agrees to {e:.1e}"));
    }
}
