//! SpMV on the CPU: faer's sparse x dense product against the engine's row-parallel CSR SpMV
//! (`peridot::operators::spmv`) on the operators of a cube (3D LPS) or square (2D LPS) lattice,
//! in f64 and f32, on 1 thread and on all; then one force evaluation per backend.
//! The numbers in `docs/matrix-formulation.md` come from this program.
//!
//! ```text
//! cargo run --release --example spmv -- [side] [reps] [dim] [law]
//! ```
//! `side`: nodes per edge (default 40), `reps`: repetitions, the fastest is reported (default
//! 20), `dim`: `3d` (default) or `2d`, `law`: `lps` (default), `pmb` or `pmb-linear`.

use faer::sparse::linalg::matmul::sparse_dense_matmul;
use faer::{Accum, MatMut, MatRef, Par};
use peridot::backend::{Backend, CpuLoop, CpuMatrix};
use peridot::operators::spmv::spmv_interleaved;
use peridot::operators::{Mat, Operators, Storage};
use peridot::setup::Problem;
use peridot::Real;
use std::sync::Arc;
use std::time::Instant;

fn model(side: usize, dim: &str, law: &str) -> String {
    let l = side as f64 * 1e-3 - 0.5e-3;
    let (dimension, geometry) = if dim == "2d" {
        ("plane-stress\"\nthickness = 1e-3", format!("[{l}, {l}]"))
    } else {
        ("3d\"", format!("[{l}, {l}, {l}]"))
    };
    let dimension = format!("\"{dimension}");
    format!(
        "[material]\nmodel = \"{law}\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
         {}critical_stretch = 0.5\n[discretization]\n\
         dimension = {dimension}\ndx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
         box = [{{ min = {}, max = {geometry} }}]\n[solver]\nkind = \"explicit\"\nsteps = 1\n",
        if law == "lps" {
            "poisson_ratio = 0.25\n"
        } else {
            ""
        },
        if dim == "2d" { "[0, 0]" } else { "[0, 0, 0]" }
    )
}

/// Thread pools of 1 and of all threads, built once.
struct Pools {
    one: rayon::ThreadPool,
    all: rayon::ThreadPool,
}

/// Seconds one call of `f` takes.
fn timed(f: impl FnOnce()) -> f64 {
    let t0 = Instant::now();
    f();
    t0.elapsed().as_secs_f64()
}

/// The shortest of each variant's timings; `run(v)` times variant `v` once. The variants run
/// in turn, `reps` times after one warm-up round, so the load of a shared machine spreads
/// evenly over them; the shortest time is the one least disturbed by other processes.
fn fastest(variants: usize, reps: usize, mut run: impl FnMut(usize) -> f64) -> Vec<f64> {
    let mut t = vec![Vec::with_capacity(reps); variants];
    for rep in 0..=reps {
        for (v, tv) in t.iter_mut().enumerate() {
            let s = run(v);
            if rep > 0 {
                tv.push(s);
            }
        }
    }
    t.into_iter()
        .map(|v| v.into_iter().fold(f64::INFINITY, f64::min))
        .collect()
}

/// Times `y = M x` (`k` interleaved components) by faer and by the engine; checks that both
/// give bitwise the same result (each sums a row in storage order).
fn time_product<T: Real + faer::traits::ComplexField>(
    name: &str,
    m: &Mat<T>,
    k: usize,
    reps: usize,
    pools: &Pools,
) {
    let x: Vec<T> = (0..k * m.ncols())
        .map(|i| T::of(((i * 7919) % 1000) as f64 * 1e-6))
        .collect();
    let (mut y1, mut y2) = (
        vec![T::zero(); k * m.nrows()],
        vec![T::zero(); k * m.nrows()],
    );
    let t = fastest(3, reps, |v| match v {
        0 => timed(|| {
            pools.all.install(|| {
                let rhs = MatRef::from_row_major_slice(&x, m.ncols(), k);
                let dst = MatMut::from_row_major_slice_mut(&mut y1, m.nrows(), k);
                let par = Par::rayon(0);
                sparse_dense_matmul(dst, Accum::Replace, m.as_ref(), rhs, T::one(), par);
            })
        }),
        _ => {
            let pool = if v == 1 { &pools.one } else { &pools.all };
            timed(|| pool.install(|| spmv_interleaved(m, k, &x, &mut y2, |_, _, s| s)))
        }
    });
    let same = y1.iter().zip(&y2).all(|(a, b)| a == b);
    let nnz = m.symbolic().col_idx().len();
    println!(
        "{:4} {name:7} {:>9} {:>10} {:>10.5} {:>10.5} {:>10.5} {:>8.2} {same}",
        T::NAME,
        m.nrows(),
        nnz,
        t[0],
        t[1],
        t[2],
        t[0] / t[2]
    );
}

fn products<T: Real + faer::traits::ComplexField>(p: &Problem, reps: usize, pools: &Pools) {
    for storage in [Storage::Full, Storage::Half] {
        let t0 = Instant::now();
        let ops = Operators::<T>::assemble(p, storage).unwrap();
        println!(
            "-- {} storage, {} rows, assembled in {:.3} s",
            storage.name(),
            ops.rows(),
            t0.elapsed().as_secs_f64()
        );
        let d = p.dim();
        time_product(&format!("A (x{d})"), &ops.incidence, d, reps, pools);
        if let Some(theta) = &ops.theta {
            time_product("Theta", theta, 1, reps, pools);
        }
        if let Some(at) = &ops.incidence_t {
            time_product(&format!("A^T (x{d})"), at, d, reps, pools);
        }
        time_product("B^T", &ops.bt, 1, reps, pools);
        time_product("B", &ops.b, 1, reps, pools);
    }
}

/// One force evaluation per backend, on 1 thread and on all, interleaved.
fn forces<T: Real>(p: &Arc<Problem>, reps: usize, pools: &Pools) {
    let n = p.dim() * p.body.len();
    let u: Vec<T> = (0..n)
        .map(|i| T::of(((i * 7919) % 1000) as f64 * 1e-8))
        .collect();
    let mut backends: Vec<(&str, Box<dyn Backend<T>>)> = vec![
        ("cpu-loop", Box::new(CpuLoop::<T>::new(p.clone()))),
        (
            "cpu-matrix full",
            Box::new(CpuMatrix::<T>::new(p.clone(), Storage::Full).unwrap()),
        ),
        (
            "cpu-matrix half",
            Box::new(CpuMatrix::<T>::new(p.clone(), Storage::Half).unwrap()),
        ),
    ];
    let names: Vec<&str> = backends.iter().map(|b| b.0).collect();
    let memory: Vec<usize> = backends
        .iter()
        .map(|b| b.1.footprint().memory_bytes)
        .collect();
    let mut f = vec![T::zero(); n];
    // variant 4k + m: backend k; m = 0, 1: force on 1 / all threads; m = 2, 3: a step's bond
    // check and force (the critical stretch, 0.5, is never reached, so nothing changes)
    let t = fastest(4 * backends.len(), reps, |v| {
        let pool = if v % 2 == 0 { &pools.one } else { &pools.all };
        let step = v % 4 >= 2;
        let b = &mut backends[v / 4].1;
        timed(|| {
            pool.install(|| {
                if step {
                    b.break_bonds(&u).unwrap();
                }
                b.internal_force(&u, &mut f).unwrap()
            })
        })
    });
    for (k, name) in names.iter().enumerate() {
        println!(
            "{:4} {name:16} force {:>8.5} s (1 thread) {:>8.5} s (all); break + force {:>8.5} s \
             (1 thread) {:>8.5} s (all); {:.1} MiB",
            T::NAME,
            t[4 * k],
            t[4 * k + 1],
            t[4 * k + 2],
            t[4 * k + 3],
            memory[k] as f64 / (1 << 20) as f64
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let side: usize = args.get(1).map_or(40, |s| s.parse().expect("side"));
    let reps: usize = args.get(2).map_or(20, |s| s.parse().expect("reps"));
    let dim = args.get(3).map_or("3d", |s| s.as_str());
    let law = args.get(4).map_or("lps", |s| s.as_str());
    let threads = rayon::current_num_threads();
    let pool = |n| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    };
    let pools = Pools {
        one: pool(1),
        all: pool(threads),
    };
    let model = peridot::model::parse(&model(side, dim, law), "spmv.toml", &[]).unwrap();
    let p = Arc::new(Problem::build(model, std::path::Path::new(".")).unwrap());
    println!(
        "{dim} {law}, {} nodes, {} bonds, {threads} threads, fastest of {reps}, variants interleaved",
        p.body.len(),
        p.families.bonds()
    );
    println!(
        "prec op          rows        nnz    faer(s)  ours 1(s)  ours {threads}(s)  faer/ours same"
    );
    products::<f64>(&p, reps, &pools);
    products::<f32>(&p, reps, &pools);
    forces::<f64>(&p, reps, &pools);
    forces::<f32>(&p, reps, &pools);
}
