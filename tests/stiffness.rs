//! The global stiffness `K(mu) = B^T W M (A_d + G S Theta M) B` (`theory.md` section 4) on
//! small 2D and 3D models, PMB (linearized and nonlinear) and LPS, each with a pre-crack and
//! further broken bonds:
//!
//! - `K` is symmetric: `max |K_ij - K_ji| <= 1e-14 max |K|` (round-off of the products);
//! - `K u = -f_int(u)` for a random `u`, with `f_int` in newtons (the loop backend's force
//!   density times `V_i`), normwise to 1e-12 relative (linear laws);
//! - rigid translations and linearized rotations are in its null space:
//!   `|K r|_inf <= 1e-12 max_i sum_j |K_ij| |r|_inf`;
//! - `K` equals the central finite-difference Jacobian of the loop backend's force on a tiny
//!   model, normwise to 1e-7 (all laws at `u = 0`) and, for nonlinear PMB at a displacement of
//!   strain ~1e-6, to 1e-5 (the tangent moves by the strain);
//! - full and half storage give the same `K` to 1e-13 relative.

mod common;

use peridot::backend::{self, Backend, BackendKind};
use peridot::operators::stiffness::{assemble_stiffness, stiffness};
use peridot::operators::{Mat, Operators, Storage};
use peridot::setup::Problem;
use std::sync::Arc;

const LAWS: [&str; 3] = ["pmb", "pmb-linear", "lps"];
const DIMS: [&str; 2] = ["plane-stress", "3d"];

/// The small model with its pre-crack, plus every 7th further pair broken (both directions).
fn damaged(law: &str, dim: &str) -> Problem {
    let mut p = common::problem(&common::small_model(law, dim, true, ""), &[]);
    let reverse = p.families.reverse_bonds();
    for b in (0..p.families.bonds()).step_by(7) {
        p.initial_mu[b] = 0;
        p.initial_mu[reverse[b]] = 0;
    }
    p
}

fn entries(m: &Mat<f64>) -> Vec<(usize, usize, f64)> {
    let sym = m.symbolic();
    let (ptr, cols) = (sym.row_ptr(), sym.col_idx());
    (0..sym.nrows())
        .flat_map(|r| {
            (ptr[r] as usize..ptr[r + 1] as usize).map(move |e| (r, cols[e] as usize, m.val()[e]))
        })
        .collect()
}

/// Entry `(i, j)` of a CSR matrix with sorted columns (0 if not stored).
fn at(m: &Mat<f64>, i: usize, j: usize) -> f64 {
    let sym = m.symbolic();
    let (s, e) = (sym.row_ptr()[i] as usize, sym.row_ptr()[i + 1] as usize);
    match sym.col_idx()[s..e].binary_search(&(j as u32)) {
        Ok(k) => m.val()[s + k],
        Err(_) => 0.0,
    }
}

fn multiply(m: &Mat<f64>, x: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; m.nrows()];
    peridot::operators::spmv::spmv(m, x, &mut y);
    y
}

/// Internal force in newtons, `f_int = L_i V_i`, from the loop backend.
fn force_newtons(backend: &mut dyn Backend<f64>, p: &Problem, u: &[f64]) -> Vec<f64> {
    let d = p.dim();
    let mut f = vec![0.0; u.len()];
    backend.internal_force(u, &mut f).unwrap();
    f.iter()
        .enumerate()
        .map(|(k, x)| x * p.body.volumes[k / d])
        .collect()
}

fn max_abs(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(0.0, |m, x| m.max(x.abs()))
}

#[test]
fn stiffness_is_symmetric_and_reproduces_the_loop_forces() {
    for law in LAWS {
        for dim in DIMS {
            let p = damaged(law, dim);
            let k = assemble_stiffness(&p, &p.initial_mu).unwrap();
            let scale = max_abs(k.val().iter().copied());
            let asym = max_abs(entries(&k).into_iter().map(|(i, j, v)| v - at(&k, j, i)));
            println!(
                "{law} {dim}: {} dofs, nnz {}, max |K - K^T| / max |K| = {:.2e}",
                k.nrows(),
                k.val().len(),
                asym / scale
            );
            assert!(asym <= 1e-14 * scale, "{law} {dim}: asymmetry {asym:e}");
            if law == "pmb" {
                continue; // nonlinear: checked against the finite-difference Jacobian
            }
            let u: Vec<f64> = common::random_vector(k.nrows(), 11)
                .iter()
                .map(|x| 1e-6 * x)
                .collect();
            let p = Arc::new(p);
            let mut backend =
                backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
            let f = force_newtons(backend.as_mut(), &p, &u);
            let ku: Vec<f64> = multiply(&k, &u).iter().map(|x| -x).collect();
            let err = common::rel_diff(&ku, &f);
            println!("{law} {dim}: |K u + f_int| / |f_int| = {err:.2e}");
            assert!(err < 1e-12, "{law} {dim}: K u vs -f_int: {err:e}");
        }
    }
}

#[test]
fn rigid_motions_are_in_the_null_space() {
    for law in LAWS {
        for dim in DIMS {
            let p = damaged(law, dim);
            let k = assemble_stiffness(&p, &p.initial_mu).unwrap();
            let d = p.dim();
            let row_sum = (0..k.nrows())
                .map(|i| {
                    let (s, e) = (
                        k.symbolic().row_ptr()[i] as usize,
                        k.symbolic().row_ptr()[i + 1] as usize,
                    );
                    k.val()[s..e].iter().map(|x| x.abs()).sum::<f64>()
                })
                .fold(0.0, f64::max);
            let mut modes: Vec<(String, Vec<f64>)> = (0..d)
                .map(|c| {
                    let u = (0..k.nrows())
                        .map(|dof| f64::from(u8::from(dof % d == c)))
                        .collect();
                    (format!("translation {c}"), u)
                })
                .collect();
            let axes: &[usize] = if d == 2 { &[2] } else { &[0, 1, 2] };
            for &a in axes {
                let u = p
                    .body
                    .positions
                    .iter()
                    .flat_map(|x| {
                        let mut e = [0.0; 3];
                        e[a] = 1.0;
                        let v = [
                            e[1] * x[2] - e[2] * x[1],
                            e[2] * x[0] - e[0] * x[2],
                            e[0] * x[1] - e[1] * x[0],
                        ];
                        v[..d].to_vec()
                    })
                    .collect();
                modes.push((format!("rotation {a}"), u));
            }
            for (name, r) in modes {
                let kr = multiply(&k, &r);
                let ratio = max_abs(kr.into_iter()) / (row_sum * max_abs(r.iter().copied()));
                println!("{law} {dim} {name}: |K r| / (|K| |r|) = {ratio:.2e}");
                assert!(ratio < 1e-12, "{law} {dim} {name}: {ratio:e}");
            }
        }
    }
}

#[test]
fn full_and_half_storage_give_the_same_stiffness() {
    for law in LAWS {
        for dim in DIMS {
            let p = damaged(law, dim);
            let full = Operators::<f64>::assemble(&p, Storage::Full).unwrap();
            let half = Operators::<f64>::assemble(&p, Storage::Half).unwrap();
            let kf = stiffness(&full, &full.row_status(&p.initial_mu)).unwrap();
            let kh = stiffness(&half, &half.row_status(&p.initial_mu)).unwrap();
            let scale = max_abs(kf.val().iter().copied());
            let diff = max_abs(
                entries(&kf)
                    .into_iter()
                    .map(|(i, j, v)| v - at(&kh, i, j))
                    .chain(entries(&kh).into_iter().map(|(i, j, v)| v - at(&kf, i, j))),
            );
            assert!(diff <= 1e-13 * scale, "{law} {dim}: {diff:e} of {scale:e}");
        }
    }
}

/// A tiny model: a 5 x 4 (x 3) block of nodes, a pre-crack, LPS with nu = 0.22.
fn tiny(law: &str, dim: &str) -> Problem {
    let text = common::small_model(law, dim, true, "")
        .replace("max = [0.011, 0.009, 0.005]", "max = [0.004, 0.003, 0.002]")
        .replace("max = [0.011, 0.009]", "max = [0.004, 0.003]")
        .replace("start = [-0.001, 0.0045]", "start = [-0.001, 0.0015]")
        .replace("end = [0.006, 0.0045]", "end = [0.0025, 0.0015]")
        .replace(
            "origin = [-0.001, 0.0045, -0.001]",
            "origin = [-0.001, 0.0015, -0.001]",
        )
        .replace("edge1 = [0.007, 0, 0]", "edge1 = [0.0035, 0, 0]");
    common::problem(&text, &[])
}

/// Normwise relative difference between `-K` and the central-difference Jacobian of the loop
/// force in newtons at `u0`, with steps `h`.
fn jacobian_error(p: Problem, u0: &[f64], h: f64) -> f64 {
    let k = assemble_stiffness(&p, &p.initial_mu).unwrap();
    let p = Arc::new(p);
    let mut backend = backend::create::<f64>(BackendKind::CpuLoop, p.clone(), None).unwrap();
    let n = u0.len();
    let (mut diff, mut norm) = (0.0, 0.0);
    for j in 0..n {
        let mut up = u0.to_vec();
        let mut um = u0.to_vec();
        up[j] += h;
        um[j] -= h;
        let fp = force_newtons(backend.as_mut(), &p, &up);
        let fm = force_newtons(backend.as_mut(), &p, &um);
        for i in 0..n {
            let fd = (fp[i] - fm[i]) / (2.0 * h);
            let kij = -at(&k, i, j);
            diff += (fd - kij).powi(2);
            norm += kij * kij;
        }
    }
    (diff / norm).sqrt()
}

#[test]
fn stiffness_is_the_jacobian_of_the_loop_force() {
    for law in LAWS {
        for dim in DIMS {
            let p = tiny(law, dim);
            let n = p.body.len() * p.dim();
            let err = jacobian_error(p, &vec![0.0; n], 1e-9);
            println!("{law} {dim}: |K - J_fd| / |K| at u = 0: {err:.2e}");
            assert!(err < 1e-10, "{law} {dim}: {err:e}");
        }
    }
    for dim in DIMS {
        let p = tiny("pmb", dim);
        let n = p.body.len() * p.dim();
        // displacements of 1e-9 m over 1 mm spacings: strains of about 1e-6
        let u0: Vec<f64> = common::random_vector(n, 3)
            .iter()
            .map(|x| 1e-9 * x)
            .collect();
        let err = jacobian_error(p, &u0, 1e-10);
        println!("pmb {dim}: |K - J_fd| / |K| at strain ~1e-6: {err:.2e}");
        assert!(err < 1e-5, "pmb {dim} at small u: {err:e}");
    }
}
