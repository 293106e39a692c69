//! Force evaluation of every available backend on a small 2D and a small 3D PMB model, in f64
//! and f32: `internal_force` alone, and `break_bonds_and_force` (what a time step with damage
//! checking calls). Backends this build cannot run are skipped with a line on stderr; adding
//! one to `KINDS` is all a new backend needs. Throughput is reported in nodes per second.
//!
//! Run: `cargo bench --bench forces` (the whole explicit step at scale: `peridot bench`).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use peridot::backend::{self, Backend, BackendKind};
use peridot::setup::Problem;
use peridot::Real;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

/// Backends to time, skipped where `backend::create` says they are not available.
const KINDS: [BackendKind; 4] = [
    BackendKind::CpuLoop,
    BackendKind::CpuMatrix,
    BackendKind::GpuLoop,
    BackendKind::GpuMatrix,
];

/// A PMB block with a critical stretch: 100 x 50 nodes in 2D, 16^3 in 3D, delta 3.015 dx.
fn problem(dim: &str) -> Problem {
    let (disc, geometry) = match dim {
        "2d" => (
            "dimension = \"plane-stress\"\nthickness = 1e-3",
            "box = [{ min = [0, 0], max = [0.1, 0.05] }]",
        ),
        _ => (
            "dimension = \"3d\"",
            "box = [{ min = [0, 0, 0], max = [0.016, 0.016, 0.016] }]",
        ),
    };
    let text = format!(
        "[material]\nmodel = \"pmb\"\nyoungs_modulus = 192e9\ndensity = 8000\n\
         critical_stretch = 0.005\n[discretization]\n{disc}\ndx = 1e-3\nhorizon_factor = 3.015\n\
         [geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 1\n"
    );
    let model = peridot::model::parse(&text, "bench.toml", &[]).expect("valid bench model");
    Problem::build(model, Path::new(".")).expect("bench model discretizes")
}

/// A smooth displacement below the critical stretch (so timing repeats the same work).
fn displacement<T: Real>(p: &Problem) -> Vec<T> {
    let d = p.dim();
    p.body
        .positions
        .iter()
        .flat_map(|x| {
            let w = 1e-3 * ((x[0] * 300.0).sin() + (x[1] * 200.0).cos());
            [T::of(w * 1e-3), T::of(-w * 5e-4), T::of(w * 2e-4)]
                .into_iter()
                .take(d)
        })
        .collect()
}

fn bench_precision<T: Real>(c: &mut Criterion, dim: &str, p: &Arc<Problem>) {
    let u = displacement::<T>(p);
    let mut force = vec![T::zero(); u.len()];
    let mut group = c.benchmark_group(format!("forces_{dim}_{}", T::NAME));
    group.throughput(Throughput::Elements(p.body.len() as u64));
    for kind in KINDS {
        let mut backend: Box<dyn Backend<T>> = match backend::create::<T>(kind, p.clone(), None) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("skip {} {dim} {}: {e}", kind.name(), T::NAME);
                continue;
            }
        };
        group.bench_function(BenchmarkId::new("internal_force", kind.name()), |b| {
            b.iter(|| backend.internal_force(black_box(&u), &mut force).unwrap())
        });
        group.bench_function(
            BenchmarkId::new("break_bonds_and_force", kind.name()),
            |b| {
                b.iter(|| {
                    backend
                        .break_bonds_and_force(black_box(&u), &mut force)
                        .unwrap()
                })
            },
        );
    }
    group.finish();
}

fn forces(c: &mut Criterion) {
    for dim in ["2d", "3d"] {
        let p = Arc::new(problem(dim));
        bench_precision::<f64>(c, dim, &p);
        bench_precision::<f32>(c, dim, &p);
    }
}

criterion_group!(benches, forces);
criterion_main!(benches);
