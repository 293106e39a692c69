//! SpMV on the CPU: faer's sparse x dense product against the engine's row-parallel CSR SpMV
//! (`peridot::operators::spmv`) on the operators of a cube (3D LPS) or square (2D LPS) lattice,
//! in f64 and f32, on 1 thread and on all; then one force evaluation per backend.
//! The numbers in `docs/matrix-formulation.md` come from this program.
//!
//! ```text
//! cargo run --release --example spmv -- [side] [reps] [dim]
//! ```
//! `side`: nodes per edge (default 40), `reps`: repetitions, the median is reported (default
//! 20), `dim`: `3d` (default) or `2d`.

use faer::sparse::linalg::matmul::sparse_dense_matmul;
use faer::{Accum, MatMut, MatRef, Par};
use peridot::backend::{Backend, CpuLoop, CpuMatrix};
use peridot::operators::spmv::spmv_interleaved;
use peridot::operators::{Mat, Operators, Storage};
use peridot::setup::Problem;
use peridot::Real;
use std::sync::Arc;
use std::time::Instant;

fn model(side: usize, dim: &str) -> String {
    let l = side as f64 * 1e-3 - 0.5e-3;
    let (dimension, geometry) = if dim == "2d" {
        ("plane-stress\"\nthickness = 1e-3", format!("[{l}, {l}]"))
    } else {
        ("3d\"", format!("[{l}, {l}, {l}]"))
    };
    let dimension = format!("\"{dimension}");
    format!(
        "[material]\nmodel = \"lps\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
         poisson_ratio = 0.25\ncritical_stretch = 0.01\n[discretization]\n\
         dimension = {dimension}\ndx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
         box = [{{ min = {}, max = {geometry} }}]\n[solver]\nkind = \"explicit\"\nsteps = 1\n",
        if dim == "2d" { "[0, 0]" } else { "[0, 0, 0]" }
    )
}

/// Median of `reps` timings of `f`, seconds.
fn median(reps: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let t0 = Instant::now();
            f();
            t0.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[reps / 2]
}

fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// Times `y = M x` (`k` interleaved components) by faer and by the engine; checks that both
/// give bitwise the same result (each sums a row in storage order).
fn time_product<T: Real + faer::traits::ComplexField>(
    name: &str,
    m: &Mat<T>,
    k: usize,
    reps: usize,
    threads: usize,
) {
    let x: Vec<T> = (0..k * m.ncols())
        .map(|i| T::of(((i * 7919) % 1000) as f64 * 1e-6))
        .collect();
    let (mut y1, mut y2) = (
        vec![T::zero(); k * m.nrows()],
        vec![T::zero(); k * m.nrows()],
    );
    let faer_s = in_pool(threads, || {
        median(reps, || {
            let rhs = MatRef::from_row_major_slice(&x, m.ncols(), k);
            let dst = MatMut::from_row_major_slice_mut(&mut y1, m.nrows(), k);
            sparse_dense_matmul(
                dst,
                Accum::Replace,
                m.as_ref(),
                rhs,
                T::one(),
                Par::rayon(0),
            );
        })
    });
    let ours_1 = in_pool(1, || {
        median(reps, || spmv_interleaved(m, k, &x, &mut y2, |_, _, s| s))
    });
    let ours_n = in_pool(threads, || {
        median(reps, || spmv_interleaved(m, k, &x, &mut y2, |_, _, s| s))
    });
    let same = y1.iter().zip(&y2).all(|(a, b)| a == b);
    let nnz = m.symbolic().col_idx().len();
    println!(
        "{:4} {name:7} {:>9} {:>10} {faer_s:>10.5} {ours_1:>10.5} {ours_n:>10.5} {:>8.2} {same}",
        T::NAME,
        m.nrows(),
        nnz,
        faer_s / ours_n
    );
}

fn products<T: Real + faer::traits::ComplexField>(p: &Problem, reps: usize, threads: usize) {
    for storage in [Storage::Full, Storage::Half] {
        let ops = Operators::<T>::assemble(p, storage).unwrap();
        println!("-- {} storage, {} rows", storage.name(), ops.rows());
        let d = p.dim();
        time_product(&format!("A (x{d})"), &ops.incidence, d, reps, threads);
        time_product("Theta", ops.theta.as_ref().unwrap(), 1, reps, threads);
        time_product("B^T", &ops.bt, 1, reps, threads);
        time_product("B", &ops.b, 1, reps, threads);
    }
}

fn forces<T: Real>(p: &Arc<Problem>, reps: usize, threads: usize) {
    let n = p.dim() * p.body.len();
    let u: Vec<T> = (0..n)
        .map(|i| T::of(((i * 7919) % 1000) as f64 * 1e-8))
        .collect();
    let mut f = vec![T::zero(); n];
    let mut backends: Vec<(String, Box<dyn Backend<T>>)> = vec![
        ("cpu-loop".into(), Box::new(CpuLoop::<T>::new(p.clone()))),
        (
            "cpu-matrix full".into(),
            Box::new(CpuMatrix::<T>::new(p.clone(), Storage::Full).unwrap()),
        ),
        (
            "cpu-matrix half".into(),
            Box::new(CpuMatrix::<T>::new(p.clone(), Storage::Half).unwrap()),
        ),
    ];
    for (name, b) in backends.iter_mut() {
        let s = in_pool(threads, || median(reps, || b.internal_force(&u, &mut f)));
        let s1 = in_pool(1, || median(reps, || b.internal_force(&u, &mut f)));
        println!(
            "{:4} {name:16} force evaluation {s1:>9.5} s (1 thread) {s:>9.5} s ({threads} threads), \
             {:.1} MiB",
            T::NAME,
            b.memory_bytes() as f64 / (1 << 20) as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: usize = args.get(1).map_or(40, |s| s.parse().expect("side"));
    let reps: usize = args.get(2).map_or(20, |s| s.parse().expect("reps"));
    let dim = args.get(3).map_or("3d", |s| s.as_str());
    let threads = rayon::current_num_threads();
    let model = peridot::model::parse(&model(side, dim), "spmv.toml", &[]).unwrap();
    let p = Arc::new(Problem::build(model, std::path::Path::new(".")).unwrap());
    println!(
        "{dim} LPS, {} nodes, {} bonds, {threads} threads, median of {reps}",
        p.body.len(),
        p.families.bonds()
    );
    println!(
        "prec op          rows        nnz    faer(s)  ours 1(s)  ours {threads}(s)  faer/ours same"
    );
    products::<f64>(&p, reps, threads);
    products::<f32>(&p, reps, threads);
    forces::<f64>(&p, reps, threads);
    forces::<f32>(&p, reps, threads);
}
