//! One physics, several executions (design invariant 1): every pair of backends gives the same
//! forces (normwise relative difference 1e-12 in f64, 1e-5 in f32), dilatation, damage and
//! strain energy, and in f64 breaks the same bonds over a short damaging explicit run.
//!
//! One shared body, [`compare`], runs over PMB linearized and nonlinear and LPS, 2D (plane
//! stress) and 3D, with and without a pre-crack, before and after some bonds are broken. A new
//! backend pair is one `pair!` line; half against full storage of the matrix backend uses the
//! same body.

mod common;

use peridot::backend::{self, Backend, BackendKind, CpuMatrix};
use peridot::dynamics::explicit::{Explicit, StepTimes};
use peridot::dynamics::loads::Loads;
use peridot::dynamics::State;
use peridot::operators::Storage;
use peridot::setup::Problem;
use peridot::solver::run::choose_dt;
use peridot::solver::{simulate, Outcome};
use peridot::{Precision, Real};
use std::sync::Arc;

const LAWS: [&str; 3] = ["pmb-linear", "pmb", "lps"];
const DIMS: [&str; 2] = ["plane-stress", "3d"];

/// Makes a backend for a problem; `None` when this machine cannot run it (no GPU; with
/// `PERIDOT_REQUIRE_GPU=1` that fails the test instead).
type Make<T> = Box<dyn Fn(Arc<Problem>) -> Option<Box<dyn Backend<T>>>>;

/// An execution under test: a name for messages and a way to make it.
struct Exec<T: Real> {
    name: String,
    make: Make<T>,
}

fn kind<T: Real>(k: BackendKind) -> Exec<T> {
    let gpu = matches!(k, BackendKind::GpuLoop | BackendKind::GpuMatrix);
    Exec {
        name: k.name().into(),
        make: Box::new(move |p| match backend::create::<T>(k, p, None) {
            Ok(b) => Some(b),
            Err(e) if gpu && std::env::var("PERIDOT_REQUIRE_GPU").as_deref() != Ok("1") => {
                eprintln!("skipping {}: {e}", k.name());
                None
            }
            Err(e) => panic!("{}: {e}", k.name()),
        }),
    }
}

fn matrix<T: Real>(storage: Storage) -> Exec<T> {
    Exec {
        name: format!("cpu-matrix ({})", storage.name()),
        make: Box::new(move |p| Some(Box::new(CpuMatrix::<T>::new(p, storage).unwrap()))),
    }
}

/// The tolerance of the design invariant for precision `T`.
fn tolerance<T: Real>() -> f64 {
    if T::NAME == "f32" {
        1e-5
    } else {
        1e-12
    }
}

/// The largest differences seen by one comparison (reported with `--nocapture`).
#[derive(Debug, Default, Clone, Copy)]
struct Worst {
    force: f64,
    dilatation: f64,
    damage: f64,
    energy: f64,
}

impl Worst {
    fn max(self, o: Worst) -> Worst {
        Worst {
            force: self.force.max(o.force),
            dilatation: self.dilatation.max(o.dilatation),
            damage: self.damage.max(o.damage),
            energy: self.energy.max(o.energy),
        }
    }
}

/// The shared body: `a` and `b` agree on every law, dimension and pre-crack case. Returns the
/// largest differences seen, or `None` if either execution is unavailable here.
fn compare<T: Real>(a: &Exec<T>, b: &Exec<T>) -> Option<Worst> {
    compare_models(a, b, |law, dim, precrack| {
        common::small_model(law, dim, precrack, "")
    })
}

/// [`compare`] on the models `text(law, dim, precrack)` gives.
fn compare_models<T: Real>(
    a: &Exec<T>,
    b: &Exec<T>,
    text: impl Fn(&str, &str, bool) -> String,
) -> Option<Worst> {
    let mut worst = Worst::default();
    for law in LAWS {
        for dim in DIMS {
            for precrack in [false, true] {
                let text = text(law, dim, precrack);
                let p = Arc::new(common::problem(&text, &[]));
                let case = format!("{} vs {}, {law} {dim} precrack={precrack}", a.name, b.name);
                let mut ba = (a.make)(p.clone())?;
                let mut bb = (b.make)(p.clone())?;
                worst = worst.max(compare_states(&p, ba.as_mut(), bb.as_mut(), 1, &case));
                break_some_bonds(&p, ba.as_mut(), bb.as_mut(), &case);
                worst = worst.max(compare_states(&p, ba.as_mut(), bb.as_mut(), 2, &case));
            }
        }
    }
    println!(
        "{} vs {} ({}): largest differences {worst:?}",
        a.name,
        b.name,
        T::NAME
    );
    Some(worst)
}

/// Break bonds at a random displacement whose stretches straddle the critical stretch
/// (0.002): both executions see bitwise the same bond differences and must break exactly the
/// same bonds, in either precision.
fn break_some_bonds<T: Real>(
    p: &Problem,
    a: &mut dyn Backend<T>,
    b: &mut dyn Backend<T>,
    case: &str,
) {
    let amplitude = 0.8 * 0.002 * p.body.dx;
    let u = random_field::<T>(p, amplitude, 3);
    let (na, nb) = (a.break_bonds(&u).unwrap(), b.break_bonds(&u).unwrap());
    assert_eq!(na, nb, "{case}: bonds broken by one call");
    let total = p.families.bonds();
    assert!(na > 0 && na < total / 2, "{case}: {na} of {total} broke");
    assert_eq!(a.broken_bonds(), b.broken_bonds(), "{case}: broken bonds");
    assert!(
        a.bond_status().unwrap() == b.bond_status().unwrap(),
        "{case}: bond status"
    );
}

fn random_field<T: Real>(p: &Problem, amplitude: f64, seed: u64) -> Vec<T> {
    common::random_vector(p.dim() * p.body.len(), seed)
        .into_iter()
        .map(|x| T::of(amplitude * x))
        .collect()
}

/// Forces, dilatation, damage and strain energy at a random displacement of 1% of `dx`.
fn compare_states<T: Real>(
    p: &Problem,
    a: &mut dyn Backend<T>,
    b: &mut dyn Backend<T>,
    seed: u64,
    case: &str,
) -> Worst {
    let tol = tolerance::<T>();
    let (n, d) = (p.body.len(), p.dim());
    let u = random_field::<T>(p, 0.01 * p.body.dx, seed);
    let (mut fa, mut fb) = (vec![T::zero(); d * n], vec![T::zero(); d * n]);
    a.internal_force(&u, &mut fa).unwrap();
    b.internal_force(&u, &mut fb).unwrap();
    let force = common::rel_diff(&fb, &fa);
    assert!(
        force < tol,
        "{case}: force rel. diff {force:.2e} >= {tol:.0e}"
    );
    let (mut ta, mut tb) = (vec![T::zero(); n], vec![T::zero(); n]);
    let has = a.dilatation(&u, &mut ta).unwrap();
    assert_eq!(
        has,
        b.dilatation(&u, &mut tb).unwrap(),
        "{case}: dilatation offered"
    );
    let dilatation = if has { common::rel_diff(&tb, &ta) } else { 0.0 };
    assert!(
        dilatation < tol,
        "{case}: dilatation rel. diff {dilatation:.2e}"
    );
    // damage: fractions of sums of ~30-120 volumes, absolute difference at round-off
    let (mut pa, mut pb) = (vec![T::zero(); n], vec![T::zero(); n]);
    a.damage(&mut pa).unwrap();
    b.damage(&mut pb).unwrap();
    let damage = pa
        .iter()
        .zip(&pb)
        .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y.f64()).abs()));
    assert!(damage < tol, "{case}: damage abs. diff {damage:.2e}");
    // energy: accumulated in f64 from the same per-bond quantities
    let (ea, eb) = (a.strain_energy(&u).unwrap(), b.strain_energy(&u).unwrap());
    let energy = (ea - eb).abs() / ea.abs();
    assert!(energy < tol, "{case}: energy rel. diff {energy:.2e}");
    Worst {
        force,
        dilatation,
        damage,
        energy,
    }
}

/// A plate pulled apart at its edges at 5 m/s, with a pre-crack: bonds break within 80 steps.
fn damaging_model(law: &str, dim: &str) -> String {
    common::small_model(law, dim, true, DAMAGING)
}

/// The loads and solver of [`damaging_model`].
const DAMAGING: &str =
    "[[region]]\nname = \"top\"\nshape = \"edge\"\nside = \"+y\"\ndepth_dx = 2\n\
                 [[region]]\nname = \"bottom\"\nshape = \"edge\"\nside = \"-y\"\ndepth_dx = 2\n\
                 [[boundary]]\nregion = \"top\"\nkind = \"velocity\"\ny = 5.0\n\
                 [[boundary]]\nregion = \"bottom\"\nkind = \"velocity\"\ny = -5.0\n\
                 [solver]\nkind = \"explicit\"\nsteps = 80\n";

/// A short explicit run with the solver's own integrator; returns the final bond status and
/// displacement.
fn explicit_run<T: Real>(p: Arc<Problem>, backend: &mut dyn Backend<T>) -> (Vec<u8>, Vec<T>) {
    let (dt, _, _) = choose_dt(&p).unwrap();
    let integrator = Explicit::of(&p, dt, 0.0, true);
    let loads = Loads::new(&p, dt);
    let mut state = State::<T>::at_rest(p.dim() * p.body.len());
    let mut times = StepTimes::default();
    integrator.start(&mut state, &loads, backend).unwrap();
    for _ in 0..p.model.solver.steps {
        integrator
            .step(&mut state, &loads, backend, &mut times)
            .unwrap();
    }
    (backend.bond_status().unwrap(), state.u)
}

/// Short damaging runs in f64 break the same bonds. The runs are 80 steps, short enough that
/// round-off differences (1e-16 relative per step) cannot move a stretch across the critical
/// one; long fracture runs are chaotic and are compared by statistics instead.
fn compare_runs(a: &Exec<f64>, b: &Exec<f64>) -> Option<f64> {
    compare_model_runs(a, b, damaging_model)
}

/// [`compare_runs`] on the models `text(law, dim)` gives.
fn compare_model_runs(
    a: &Exec<f64>,
    b: &Exec<f64>,
    text: impl Fn(&str, &str) -> String,
) -> Option<f64> {
    let mut worst = 0.0f64;
    for law in LAWS {
        for dim in DIMS {
            let p = Arc::new(common::problem(&text(law, dim), &[]));
            let case = format!("{} vs {}, {law} {dim} run", a.name, b.name);
            let mut ba = (a.make)(p.clone())?;
            let mut bb = (b.make)(p.clone())?;
            let (sa, ua) = explicit_run(p.clone(), ba.as_mut());
            let (sb, ub) = explicit_run(p.clone(), bb.as_mut());
            let broken = sa.iter().filter(|&&m| m == 0).count() - p.precracked_bonds();
            assert!(broken > 20, "{case}: the run must break bonds ({broken})");
            assert!(sa == sb, "{case}: different bonds broke");
            // displacements: same physics, summation order only; 1e-10 allows the growth of
            // round-off over 80 steps of an unstable (fracturing) motion
            let du = common::rel_diff(&ub, &ua);
            assert!(du < 1e-10, "{case}: displacement rel. diff {du:.2e}");
            worst = worst.max(du);
        }
    }
    println!(
        "{} vs {} runs: largest displacement difference {worst:.2e}",
        a.name, b.name
    );
    Some(worst)
}

/// Two runs through `simulate` of one damaging model: the same broken bonds, count and
/// status, and displacements within 1e-10 (the growth of round-off over a short fracturing
/// run); returns the displacement difference.
fn assert_runs_match(a: &Outcome<f64>, b: &Outcome<f64>, case: &str) -> f64 {
    assert_eq!(a.summary.broken_bonds, b.summary.broken_bonds, "{case}");
    assert!(
        a.backend.bond_status().unwrap() == b.backend.bond_status().unwrap(),
        "{case}: bond status"
    );
    let du = common::rel_diff(&b.state.u, &a.state.u);
    assert!(du < 1e-10, "{case}: displacement rel. diff {du:.2e}");
    du
}

/// Bond failure with a history (softening laws, `alpha`, breaking after the force):
/// `gpu-loop` against `cpu-loop` (`agreement/history.rs`).
#[path = "agreement/history.rs"]
mod history;

/// Tests for one pair of backend kinds: forces in f64 and f32, and damaging runs in f64.
macro_rules! pair {
    ($name:ident, $a:expr, $b:expr) => {
        mod $name {
            use super::*;

            #[test]
            fn forces_agree_f64() {
                compare::<f64>(&kind($a), &kind($b));
            }

            #[test]
            fn forces_agree_f32() {
                compare::<f32>(&kind($a), &kind($b));
            }

            #[test]
            fn damaging_runs_break_the_same_bonds() {
                compare_runs(&kind($a), &kind($b));
            }
        }
    };
}

pair!(
    cpu_loop_vs_cpu_matrix,
    BackendKind::CpuLoop,
    BackendKind::CpuMatrix
);

// The GPU backends skip where no GPU is (tests/gpu.rs has their device-loop runs).
pair!(
    cpu_loop_vs_gpu_matrix,
    BackendKind::CpuLoop,
    BackendKind::GpuMatrix
);

pair!(
    cpu_matrix_vs_gpu_matrix,
    BackendKind::CpuMatrix,
    BackendKind::GpuMatrix
);

/// Half storage against full storage of the matrix backend, with the same body.
mod half_vs_full {
    use super::*;

    #[test]
    fn forces_agree_f64() {
        compare::<f64>(&matrix(Storage::Full), &matrix(Storage::Half));
    }

    #[test]
    fn forces_agree_f32() {
        compare::<f32>(&matrix(Storage::Full), &matrix(Storage::Half));
    }

    #[test]
    fn damaging_runs_break_the_same_bonds() {
        compare_runs(&matrix(Storage::Full), &matrix(Storage::Half));
    }
}

/// Through the `simulate` API (`--backend cpu-matrix`): the run reports its backend and breaks
/// the same bonds as the loop backend.
#[test]
fn simulate_with_cpu_matrix() {
    let text = damaging_model("pmb", "plane-stress");
    let run = |backend| {
        let opts = common::options(backend, Precision::F64, None);
        simulate::<f64>(common::problem(&text, &[]), &opts).unwrap()
    };
    let (lp, mx) = (run(BackendKind::CpuLoop), run(BackendKind::CpuMatrix));
    assert_eq!(mx.summary.backend, "cpu-matrix");
    assert!(lp.summary.broken_bonds > 0, "the run must break bonds");
    assert_eq!(mx.summary.broken_bonds, lp.summary.broken_bonds);
    assert!(lp.backend.bond_status().unwrap() == mx.backend.bond_status().unwrap());
}

/// Two materials (`common::two_materials`: E 200 and 500 GPa, s0 0.002 and 0.003, an
/// interface through the body) on every law, dimension and pre-crack case, with the default
/// rule (the softer) and with an explicit interface: the matrix form (full and half storage)
/// gives the loop's forces, dilatation, damage and energy to 1e-12 in f64 and breaks the
/// same bonds in a damaging run (the bond's critical stretch read from the pair table by both);
/// so do `gpu-loop` (its kernels read the pair table) and `gpu-matrix` against `cpu-matrix`
/// (the rows' coefficients from the same assembly, each row's critical stretch and each
/// node's `K_d` from the pair table; skipped without a GPU). `gpu-matrix` in subdomains
/// refuses several materials by name (`tests/materials.rs`).
mod two_materials {
    use super::*;

    const EXPLICIT: &str = "[[interface]]\nmaterials = [\"soft\", \"stiff\"]\n\
                            rule = \"explicit\"\ncritical_stretch = 0.0015\n";

    fn text(law: &str, dim: &str, precrack: bool) -> String {
        common::two_materials(law, dim, precrack, "", "")
    }

    fn explicit(law: &str, dim: &str, precrack: bool) -> String {
        // (PMB: the interface's own micromodulus, from E 350 GPa)
        let stiffness = match law.starts_with("pmb") {
            true => "youngs_modulus = 350e9\n",
            false => "",
        };
        common::two_materials(law, dim, precrack, &format!("{EXPLICIT}{stiffness}"), "")
    }

    fn damaging(law: &str, dim: &str) -> String {
        common::two_materials(law, dim, true, "", DAMAGING)
    }

    #[test]
    fn cpu_loop_vs_cpu_matrix_f64() {
        for storage in [Storage::Full, Storage::Half] {
            compare_models::<f64>(&kind(BackendKind::CpuLoop), &matrix(storage), text);
            compare_models::<f64>(&kind(BackendKind::CpuLoop), &matrix(storage), explicit);
        }
    }

    #[test]
    fn cpu_loop_vs_cpu_matrix_f32() {
        compare_models::<f32>(&kind(BackendKind::CpuLoop), &matrix(Storage::Half), text);
    }

    #[test]
    fn damaging_runs_break_the_same_bonds() {
        let (lp, mx) = (kind(BackendKind::CpuLoop), matrix(Storage::Half));
        compare_model_runs(&lp, &mx, damaging);
    }

    #[test]
    fn cpu_loop_vs_gpu_loop_f64() {
        let (lp, gl) = (kind(BackendKind::CpuLoop), kind(BackendKind::GpuLoop));
        compare_models::<f64>(&lp, &gl, text);
        compare_models::<f64>(&lp, &gl, explicit);
    }

    #[test]
    fn cpu_loop_vs_gpu_loop_f32() {
        compare_models::<f32>(
            &kind(BackendKind::CpuLoop),
            &kind(BackendKind::GpuLoop),
            text,
        );
    }

    #[test]
    fn gpu_loop_damaging_runs_break_the_same_bonds() {
        let (lp, gl) = (kind(BackendKind::CpuLoop), kind(BackendKind::GpuLoop));
        compare_model_runs(&lp, &gl, damaging);
    }

    #[test]
    fn cpu_matrix_vs_gpu_matrix_f64() {
        let (cm, gm) = (kind(BackendKind::CpuMatrix), kind(BackendKind::GpuMatrix));
        compare_models::<f64>(&cm, &gm, text);
        compare_models::<f64>(&cm, &gm, explicit);
    }

    #[test]
    fn cpu_matrix_vs_gpu_matrix_f32() {
        let (cm, gm) = (kind(BackendKind::CpuMatrix), kind(BackendKind::GpuMatrix));
        compare_models::<f32>(&cm, &gm, text);
    }

    #[test]
    fn gpu_matrix_damaging_runs_break_the_same_bonds() {
        let (cm, gm) = (kind(BackendKind::CpuMatrix), kind(BackendKind::GpuMatrix));
        compare_model_runs(&cm, &gm, damaging);
    }

    /// Two materials of different densities (the stiff one four times lighter), a damaging
    /// run through `simulate`: the device's time loop (`gpu-loop` fused, `gpu-matrix`
    /// unfused) takes each node's density as the host's leapfrog does, so the runs break
    /// the same bonds and their displacements agree within 1e-10 (the bound of every
    /// fracturing run here); one density for both would move the stiff half twice as slowly
    /// (its waves), far outside it.
    #[test]
    fn different_densities_run_alike_on_the_device_loops() {
        for (host, device) in [
            (BackendKind::CpuLoop, BackendKind::GpuLoop),
            (BackendKind::CpuMatrix, BackendKind::GpuMatrix),
        ] {
            for dim in DIMS {
                let text = damaging("pmb", dim);
                let at = text.find("name = \"stiff\"").expect("the stiff material");
                let (head, tail) = text.split_at(at);
                let text = format!(
                    "{head}{}",
                    tail.replacen("density = 8000", "density = 2000", 1)
                );
                let run = |backend| {
                    let opts = common::options(backend, Precision::F64, None);
                    simulate::<f64>(common::problem(&text, &[]), &opts)
                };
                let a = run(host).unwrap();
                let b = match run(device) {
                    Ok(b) => b,
                    Err(e) if std::env::var("PERIDOT_REQUIRE_GPU").as_deref() != Ok("1") => {
                        eprintln!("skipping {}: {e}", device.name());
                        return;
                    }
                    Err(e) => panic!("{}: {e}", device.name()),
                };
                let case = format!(
                    "{} vs {}, two densities, pmb {dim}",
                    host.name(),
                    device.name()
                );
                assert!(
                    a.problem.node_densities().is_some(),
                    "{case}: two densities"
                );
                assert!(
                    a.summary.broken_bonds > 20,
                    "{case}: the run must break bonds"
                );
                let du = assert_runs_match(&a, &b, &case);
                println!("{case}: displacement {du:.2e}");
            }
        }
    }
}
