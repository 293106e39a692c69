//! Determinism and precision (design invariants 3 and 5): the same model gives bitwise the same
//! results at any thread count on the CPU, and the f32 path agrees with the f64 one to f32
//! round-off.

mod common;

use peridot::backend::{BackendKind, CpuLoop, CpuMatrix};
use peridot::dynamics::Forces;
use peridot::operators::Storage;
use peridot::solver::simulate;
use std::sync::Arc;

const PLATE: &str = r#"
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
[[boundary]]
region = "bottom"
kind = "velocity"
y = -50.0
[solver]
kind = "explicit"
steps = 150
"#;

fn run_with_threads(threads: usize, text: &str) -> (Vec<f64>, Vec<u8>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let out = common::run::<f64>(common::problem(text, &[]));
        (out.state.u, out.backend.bond_status().unwrap())
    })
}

/// A damaging explicit run (bonds break during it) gives bitwise identical displacements and
/// bond status on 1, 2 and 3 threads.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    let (u1, mu1) = run_with_threads(1, PLATE);
    assert!(
        mu1.iter().filter(|&&m| m == 0).count() > 200,
        "the run must break bonds"
    );
    for threads in [2, 3] {
        let (u, mu) = run_with_threads(threads, PLATE);
        assert_eq!(mu, mu1, "bond status differs on {threads} threads");
        assert!(
            u.iter().zip(&u1).all(|(a, b)| a.to_bits() == b.to_bits()),
            "displacements differ on {threads} threads"
        );
    }
}

/// f32 forces equal f64 forces to normwise relative 1e-5 (f32 has 6e-8 unit round-off; the
/// bond sums of ~30 terms and the stretch formula keep the error well below 1e-5).
#[test]
fn f32_forces_agree_with_f64() {
    for law in ["pmb", "pmb-linear"] {
        let p = Arc::new(common::problem(
            &PLATE.replace("\"pmb\"", &format!("\"{law}\"")),
            &[],
        ));
        let n = p.body.len() * 2;
        let u64s: Vec<f64> = (0..n)
            .map(|k| 1e-5 * ((k as f64 * 0.618).sin() + 0.3 * (k as f64 * 0.17).cos()))
            .collect();
        let u32s: Vec<f32> = u64s.iter().map(|&x| x as f32).collect();
        let (mut f64s, mut f32s) = (vec![0.0f64; n], vec![0.0f32; n]);
        CpuLoop::<f64>::new(p.clone())
            .internal_force(&u64s, &mut f64s)
            .unwrap();
        CpuLoop::<f32>::new(p.clone())
            .internal_force(&u32s, &mut f32s)
            .unwrap();
        let diff: f64 = f64s
            .iter()
            .zip(&f32s)
            .map(|(a, &b)| (a - b as f64).powi(2))
            .sum();
        let norm: f64 = f64s.iter().map(|a| a * a).sum();
        let rel = (diff / norm).sqrt();
        assert!(
            rel < 1e-5,
            "{law}: f32 vs f64 relative difference {rel:.2e}"
        );
    }
}

fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

/// The matrix backend is as deterministic as the loop: a damaging run through `simulate`
/// (`--backend cpu-matrix`) gives bitwise identical displacements and bond status on 1, 2 and
/// 3 threads, and so do the forces and energy of both storages (LPS, whose dilatation adds a
/// product and a gather).
#[test]
fn cpu_matrix_results_do_not_depend_on_the_thread_count() {
    let run = |threads| {
        in_pool(threads, || {
            let opts = common::options(BackendKind::CpuMatrix, peridot::Precision::F64, None);
            let out = simulate::<f64>(common::problem(PLATE, &[]), &opts).unwrap();
            (out.state.u, out.backend.bond_status().unwrap())
        })
    };
    let (u1, mu1) = run(1);
    assert!(
        mu1.iter().filter(|&&m| m == 0).count() > 200,
        "the run must break bonds"
    );
    let lps = PLATE.replace("model = \"pmb\"", "model = \"lps\"\npoisson_ratio = 0.3");
    let p = Arc::new(common::problem(&lps, &[]));
    let u: Vec<f64> = common::random_vector(2 * p.body.len(), 5)
        .iter()
        .map(|x| 1e-5 * x)
        .collect();
    let forces = |threads, storage| {
        in_pool(threads, || {
            let mut b = CpuMatrix::<f64>::new(p.clone(), storage).unwrap();
            let mut f = vec![0.0; u.len()];
            b.internal_force(&u, &mut f).unwrap();
            (f, b.strain_energy(&u).unwrap())
        })
    };
    let reference = [forces(1, Storage::Full), forces(1, Storage::Half)];
    for threads in [2, 3] {
        let (u, mu) = run(threads);
        assert_eq!(mu, mu1, "bond status differs on {threads} threads");
        assert!(
            u.iter().zip(&u1).all(|(a, b)| a.to_bits() == b.to_bits()),
            "displacements differ on {threads} threads"
        );
        for (k, storage) in [Storage::Full, Storage::Half].into_iter().enumerate() {
            let (f, e) = forces(threads, storage);
            let same = f
                .iter()
                .zip(&reference[k].0)
                .all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "{storage:?} forces differ on {threads} threads");
            assert_eq!(e.to_bits(), reference[k].1.to_bits(), "{storage:?} energy");
        }
    }
}

/// The leapfrog writes an acceleration only where its bits change (so that on a rank of a
/// distributed run the dofs of other ranks' nodes, +0 and never written, take no resident
/// memory: `docs/distributed.md`, "what a rank holds whole"). The comparison is bitwise,
/// not by value: on the undeformed plate at rest (forces and body force +0) an acceleration
/// preset to -0 becomes the +0 the step computes, on every dof, as it would with an
/// unconditional write; a value equal by `==` but of the other sign would otherwise stay.
/// Every other entry of the state is as `start` leaves it from a state at rest.
#[test]
fn the_step_zero_acceleration_is_written_bit_for_bit() {
    use peridot::dynamics::{Explicit, Loads, State};
    let problem = common::problem(PLATE, &["boundary=[]", "precrack=[]"]);
    let integrator = Explicit::of(&problem, 1e-8, 0.0, true);
    let loads = Loads::new(&problem, 1e-8);
    let mut backend = CpuLoop::<f64>::new(Arc::new(problem.clone()));
    let mut preset = State::<f64>::initial(&problem);
    preset.a.iter_mut().for_each(|a| *a = -0.0);
    integrator.start(&mut preset, &loads, &mut backend).unwrap();
    assert!(
        preset.a.iter().all(|a| a.to_bits() == 0.0f64.to_bits()),
        "every acceleration +0 after step zero"
    );
    let mut plain = State::<f64>::initial(&problem);
    integrator.start(&mut plain, &loads, &mut backend).unwrap();
    for (a, b) in [
        (&preset.u, &plain.u),
        (&preset.v, &plain.v),
        (&preset.f, &plain.f),
    ] {
        assert!(a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));
    }
}
