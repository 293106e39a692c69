//! The cuSPARSE products of `gpu-matrix` on the GPU: each sparse matrix-vector product of one
//! force evaluation (and the damage's) timed alone, then the whole force evaluation (products
//! and bond kernels, bond check on), in f64 and f32, on a model scaled to about the asked
//! node count (as `peridot bench --sizes` scales it). For each product it prints rows,
//! columns, non-zeros, the minimal bytes it moves (row pointers, column indices and values
//! read once, `x` read once, `y` written once), the fastest time and those bytes over it.
//! The SpMV table of `docs/gpu-validation.md` comes from this program.
//!
//! ```text
//! cargo run --release --example gpu_spmv -- MODEL [NODES] [REPS] [KEY=VALUE]...
//! ```
//! `NODES`: wanted node count (`0`, the default: the model as given), `REPS`: timed
//! repetitions, the fastest is reported (default 20), then `--set`-style overrides.

use peridot::backend::GpuMatrix;
use peridot::dynamics::Forces;
use peridot::operators::Storage;
use peridot::setup::Problem;
use peridot::Real;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

fn run<T: Real>(p: &Arc<Problem>, reps: usize) -> anyhow::Result<()> {
    let t0 = Instant::now();
    let mut m = GpuMatrix::<T>::new(p.clone(), Storage::Half)?;
    let setup = t0.elapsed().as_secs_f64();
    let (n, d) = (p.body.len(), p.dim());
    println!(
        "\n{} half storage: setup (assembly and upload) {setup:.1} s, {:.1} MiB on the GPU, \
         cuSPARSE workspaces {} bytes",
        T::NAME,
        m.memory_bytes() as f64 / (1 << 20) as f64,
        m.workspace_bytes()
    );
    // a small affine strain, so the bond kernels see ordinary values (nothing breaks)
    let u: Vec<T> = p
        .body
        .positions
        .iter()
        .flat_map(|x| (0..d).map(move |k| T::of(1e-4 * x[k] + 1e-7 * x[(k + 1) % d])))
        .collect();
    let mut f = vec![T::zero(); n * d];
    m.internal_force(&u, &mut f).unwrap();
    println!(
        "{:26} {:>11} {:>11} {:>11} {:>12} {:>10} {:>8}",
        "product", "rows", "cols", "nnz", "bytes", "seconds", "GB/s"
    );
    let timings = m.time_products(reps)?;
    let mut in_force = 0.0;
    for t in &timings {
        println!(
            "{:26} {:>11} {:>11} {:>11} {:>12} {:>10.6} {:>8.1}",
            t.name,
            t.nrows,
            t.ncols,
            t.nnz,
            t.bytes,
            t.seconds,
            t.bytes as f64 / t.seconds / 1e9
        );
        if !t.name.starts_with("phi") {
            in_force += t.seconds;
        }
    }
    let force = m.time_force(reps)?;
    let bytes = m.bytes_per_step();
    println!(
        "force evaluation with bond check: {force:.6} s ({:.1} GB/s of bytes_per_step {bytes}); \
         its products {in_force:.6} s ({:.0}%), bond kernels {:.6} s",
        bytes as f64 / force / 1e9,
        100.0 * in_force / force,
        force - in_force
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(model) = args.first() else {
        anyhow::bail!("usage: gpu_spmv MODEL [NODES] [REPS] [KEY=VALUE]...");
    };
    let nodes: usize = args.get(1).map_or(Ok(0), |s| s.parse())?;
    let reps: usize = args.get(2).map_or(Ok(20), |s| s.parse())?;
    let sets: Vec<String> = args.iter().skip(3).cloned().collect();
    let t0 = Instant::now();
    let scaled = peridot::bench::scaled_problem(
        &PathBuf::from(model),
        &sets,
        (nodes > 0).then_some(nodes),
        &|_| Ok(()),
    )?;
    let p = Arc::new(scaled.problem);
    println!(
        "{}: {} nodes, {} bonds, {} ({}; built in {:.1} s)",
        p.name,
        p.body.len(),
        p.families.bonds(),
        p.material.name(),
        scaled.overrides.join(" "),
        t0.elapsed().as_secs_f64()
    );
    if let Ok(gpu) = peridot::gpu::Gpu::get() {
        println!("device {} ({})", gpu.name, gpu.arch);
    }
    run::<f64>(&p, reps)?;
    run::<f32>(&p, reps)?;
    Ok(())
}
