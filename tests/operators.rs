//! The sparse operators of the matrix formulation (`theory.md` section 4) against the bond
//! formulas they encode and against the loop backend, in full and half storage.

mod common;

use peridot::backend::{CpuLoop, CpuMatrix};
use peridot::dynamics::Forces;
use peridot::operators::spmv::{spmv, spmv_interleaved, spmv_with};
use peridot::operators::{footprint, nnz, transpose, Mat, Operators, Storage};
use peridot::setup::Problem;
use std::sync::Arc;

const LAWS: [&str; 3] = ["pmb", "pmb-linear", "lps"];
const DIMS: [&str; 2] = ["plane-stress", "3d"];

fn problem(law: &str, dim: &str) -> Arc<Problem> {
    Arc::new(common::problem(
        &common::small_model(law, dim, true, ""),
        &[],
    ))
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

/// Row by row, `A u` is exactly `u_j - u_i` (bitwise: the same two-term sum as the loop
/// backend), and `B u` is `n . (u_j - u_i)` up to the rounding of a six-term sum (relative to
/// the largest extension, 1e-14). `B^T` holds exactly the entries of `B`, transposed.
#[test]
fn incidence_and_extension_operators_encode_the_bonds() {
    for law in LAWS {
        for dim in DIMS {
            let p = problem(law, dim);
            let (n, d) = (p.body.len(), p.dim());
            let u = common::random_vector(d * n, 7);
            for storage in [Storage::Full, Storage::Half] {
                let ops = Operators::<f64>::assemble(&p, storage).unwrap();
                let rows = ops.rows();
                let expected_rows = match storage {
                    Storage::Full => p.families.bonds(),
                    Storage::Half => p.families.bonds() / 2,
                };
                assert_eq!(rows, expected_rows, "{law} {dim} {storage:?}: rows");
                assert_eq!(nnz(&ops.b), 2 * d * rows);
                let mut eta = vec![0.0; d * rows];
                spmv_interleaved(&ops.incidence, d, &u, &mut eta, |_, _, s| s);
                let mut e = vec![0.0; rows];
                spmv(&ops.b, &u, &mut e);
                let emax = e.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                for r in 0..rows {
                    let (i, j) = ops.rows.ends(r);
                    let pi = &p.body.positions[i];
                    let pj = &p.body.positions[j];
                    let xi: Vec<f64> = (0..d).map(|k| pj[k] - pi[k]).collect();
                    let x = xi.iter().map(|c| c * c).sum::<f64>().sqrt();
                    let mut ext = 0.0;
                    for k in 0..d {
                        let diff = u[d * j + k] - u[d * i + k];
                        assert_eq!(eta[d * r + k].to_bits(), diff.to_bits(), "A u, row {r}");
                        ext += xi[k] / x * diff;
                    }
                    assert!((e[r] - ext).abs() <= 1e-14 * emax, "B u, row {r}");
                }
                let mut b: Vec<_> = entries(&ops.b)
                    .into_iter()
                    .map(|(r, c, v)| (c, r, v.to_bits()))
                    .collect();
                b.sort();
                let bt: Vec<_> = entries(&ops.bt)
                    .into_iter()
                    .map(|(r, c, v)| (r, c, v.to_bits()))
                    .collect();
                assert_eq!(
                    b, bt,
                    "{law} {dim} {storage:?}: B^T is not the transpose of B"
                );
                // the general CSR transpose gives the same matrix as the assembly
                let bits: Vec<_> = entries(&transpose(&ops.b))
                    .into_iter()
                    .map(|(r, c, v)| (r, c, v.to_bits()))
                    .collect();
                assert_eq!(bits, bt, "{law} {dim} {storage:?}: transpose(B)");
            }
        }
    }
}

/// Dilatation, damage and forces from the operators equal the loop backend's. Tolerances:
/// relative 1e-12 in f64 (sums of about 30-120 terms in a different order; the round-off is
/// near 1e-15), damage absolute 1e-14 (a fraction of sums of volumes).
#[test]
fn operators_reproduce_the_loop_backend() {
    for law in LAWS {
        for dim in DIMS {
            let p = problem(law, dim);
            let (n, d) = (p.body.len(), p.dim());
            let u: Vec<f64> = common::random_vector(d * n, 11)
                .iter()
                .map(|x| 1e-5 * x)
                .collect();
            let mut reference = CpuLoop::<f64>::new(p.clone());
            let mut f_loop = vec![0.0; d * n];
            reference.internal_force(&u, &mut f_loop).unwrap();
            let mut phi_loop = vec![0.0; n];
            reference.damage(&mut phi_loop).unwrap();
            let mut theta_loop = vec![0.0; n];
            let lps = reference.dilatation(&u, &mut theta_loop).unwrap();
            for storage in [Storage::Full, Storage::Half] {
                let ops = Operators::<f64>::assemble(&p, storage).unwrap();
                let mu: Vec<f64> = ops
                    .row_status(&p.initial_mu)
                    .iter()
                    .map(|&m| m as f64)
                    .collect();
                let broken: Vec<f64> = mu.iter().map(|m| 1.0 - m).collect();
                let mut phi = vec![0.0; n];
                spmv(&ops.damage, &broken, &mut phi);
                let worst = phi
                    .iter()
                    .zip(&phi_loop)
                    .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
                assert!(
                    worst < 1e-14,
                    "{law} {dim} {storage:?}: damage off by {worst:.1e}"
                );
                let f = operator_force(&p, &ops, &u, &mu, lps.then_some(&theta_loop));
                let rel = common::rel_diff(&f, &f_loop);
                assert!(
                    rel < 1e-12,
                    "{law} {dim} {storage:?}: force rel. diff {rel:.1e}"
                );
            }
        }
    }
}

/// `f = -B^T (w o t) / V` (linear laws) or `-A^T (w o t o y/|y|) / V` (nonlinear PMB), written
/// out from the theory with the operators; checks `Theta (mu o e)` against `theta_loop`.
fn operator_force(
    p: &Problem,
    ops: &Operators<f64>,
    u: &[f64],
    mu: &[f64],
    theta_loop: Option<&Vec<f64>>,
) -> Vec<f64> {
    let (n, d, rows) = (p.body.len(), p.dim(), ops.rows());
    let mut eta = vec![0.0; d * rows];
    spmv_interleaved(&ops.incidence, d, u, &mut eta, |_, _, s| s);
    let half = ops.storage == Storage::Half;
    let ext = |r: usize| -> (f64, f64) {
        let xi = &ops.vectors.xi[d * r..d * r + d];
        let x = ops.vectors.length[r];
        let y: f64 = (0..d).map(|k| (xi[k] + eta[d * r + k]).powi(2)).sum();
        let lin: f64 = (0..d).map(|k| xi[k] * eta[d * r + k]).sum::<f64>() / x;
        (lin, y.sqrt() - x)
    };
    let inv_v: Vec<f64> = p.body.volumes.iter().map(|v| -1.0 / v).collect();
    let mut f = vec![0.0; d * n];
    if let Some(m) = &ops.incidence_t {
        let mut z = vec![0.0; d * rows];
        for r in 0..rows {
            let (_, e) = ext(r);
            let ly = e + ops.vectors.length[r];
            for k in 0..d {
                let y = ops.vectors.xi[d * r + k] + eta[d * r + k];
                z[d * r + k] = ops.vectors.w[r] * mu[r] * ops.vectors.a[r] * e * y / ly;
            }
        }
        spmv_interleaved(m, d, &z, &mut f, |i, _, s| s * inv_v[i]);
        return f;
    }
    let me: Vec<f64> = (0..rows).map(|r| mu[r] * ext(r).0).collect();
    let mut theta = vec![0.0; n];
    if let Some(m) = &ops.theta {
        spmv(m, &me, &mut theta);
        let rel = common::rel_diff(&theta, theta_loop.unwrap());
        assert!(
            rel < 1e-12,
            "{:?}: dilatation rel. diff {rel:.1e}",
            ops.storage
        );
    }
    let z: Vec<f64> = (0..rows)
        .map(|r| {
            let (i, j) = ops.rows.ends(r);
            let mut t = ops.vectors.a[r] * me[r];
            if !ops.vectors.g.is_empty() {
                t += mu[r] * ops.vectors.g[r] * theta[i];
            }
            if half && !ops.vectors.g_second.is_empty() {
                t += mu[r] * ops.vectors.g_second[r] * theta[j];
            }
            ops.vectors.w[r] * t
        })
        .collect();
    spmv_with(&ops.bt, &z, &mut f, |k, s| s * inv_v[k / d]);
    f
}

/// The footprint computed from counts equals the bytes of the assembled operators, for every
/// law, dimension, storage and precision; half storage needs less than full.
#[test]
fn footprint_predicts_the_assembled_bytes() {
    for law in LAWS {
        for dim in DIMS {
            let p = problem(law, dim);
            for storage in [Storage::Full, Storage::Half] {
                let f64s = Operators::<f64>::assemble(&p, storage).unwrap();
                let f32s = Operators::<f32>::assemble(&p, storage).unwrap();
                assert_eq!(footprint(&p, storage, 8).assembled(), f64s.bytes());
                assert_eq!(footprint(&p, storage, 4).assembled(), f32s.bytes());
                let named: Vec<_> = footprint(&p, storage, 8)
                    .operators
                    .iter()
                    .map(|o| (o.name, o.nnz))
                    .collect();
                assert_eq!(named, f64s.nnz(), "{law} {dim} {storage:?}: non-zeros");
            }
            let (full, half) = (
                footprint(&p, Storage::Full, 8),
                footprint(&p, Storage::Half, 8),
            );
            assert!(half.assembled() < full.assembled());
        }
    }
}

/// Half storage: each pair row maps to the bonds `(i -> j)` and `(j -> i)`, and a symmetric
/// bond status survives the round trip through row status.
#[test]
fn half_storage_pairs_map_to_both_directed_bonds() {
    let p = problem("lps", "plane-stress");
    let ops = Operators::<f64>::assemble(&p, Storage::Half).unwrap();
    let fam = &p.families;
    let pairs = ops.rows.pairs.as_ref().unwrap();
    for (r, &[ij, ji]) in pairs.iter().enumerate() {
        let (i, j) = ops.rows.ends(r);
        assert!(i < j);
        assert!(fam.range(i).contains(&(ij as usize)));
        assert_eq!(fam.neighbors[ij as usize] as usize, j);
        assert!(fam.range(j).contains(&(ji as usize)));
        assert_eq!(fam.neighbors[ji as usize] as usize, i);
    }
    assert!(p.precracked_bonds() > 0, "the model must have a pre-crack");
    assert_eq!(
        ops.bond_status(&ops.row_status(&p.initial_mu)),
        p.initial_mu
    );
}

/// The matrix backend holds exactly the bytes `peridot info` predicts for it.
#[test]
fn matrix_backend_memory_matches_its_estimate() {
    for law in LAWS {
        for dim in DIMS {
            let p = problem(law, dim);
            for storage in [Storage::Full, Storage::Half] {
                let b64 = CpuMatrix::<f64>::new(p.clone(), storage).unwrap();
                let b32 = CpuMatrix::<f32>::new(p.clone(), storage).unwrap();
                let case = format!("{law} {dim} {storage:?}");
                assert_eq!(
                    b64.memory_bytes(),
                    CpuMatrix::<f64>::memory_estimate(&p, storage),
                    "{case}"
                );
                assert_eq!(
                    b32.memory_bytes(),
                    CpuMatrix::<f32>::memory_estimate(&p, storage),
                    "{case}"
                );
            }
        }
    }
}

/// Half storage with the pairs that reach the nodes `late..` last (`Problem::ghosts_from`,
/// how a rank's part orders its rows so those that read no ghost are a prefix): rows
/// `0..early` reach no such node, every later row does, and each node's rows stay
/// ascending (the assembly's sorted-pattern check would panic otherwise). The forces are
/// bitwise those of the usual order (each node sums its bonds in family order in both), and
/// so are those of the evaluation split at `early` (`CpuMatrix::bond_rows`), breaking
/// included, with the same bonds broken: the split changes no row's arithmetic. The
/// displacement `u_y = c t^2` (`t` the height above the bottom) stretches the top rows past
/// the critical stretch and not the bottom ones.
#[test]
fn half_storage_with_late_rows_gives_the_usual_forces_bitwise_whole_or_split() {
    for law in LAWS {
        for dim in DIMS {
            let p = problem(law, dim);
            let n = p.body.len();
            let late = Arc::new(Problem {
                ghosts_from: Some(n / 3),
                ..(*p).clone()
            });
            let case = format!("{law} {dim}");
            let ops = Operators::<f64>::assemble(&late, Storage::Half).unwrap();
            let early = ops.rows.early;
            assert!(0 < early && early < ops.rows.len(), "{case}: both blocks");
            for r in 0..ops.rows.len() {
                let (i, j) = ops.rows.ends(r);
                assert!(i < j, "{case}: row {r}");
                assert_eq!(r < early, j < n / 3, "{case}: row {r} ({i}, {j})");
            }
            let bottom = p.body.positions.iter().fold(f64::MAX, |m, x| m.min(x[1]));
            let top = p.body.positions.iter().fold(f64::MIN, |m, x| m.max(x[1]));
            let s0 = p.material.critical_stretch.expect("a critical stretch");
            let d = p.dim();
            let mut u = vec![0.0; d * n];
            for (k, x) in p.body.positions.iter().enumerate() {
                u[d * k + 1] = s0 / (top - bottom) * (x[1] - bottom).powi(2);
            }
            let mut usual = CpuMatrix::<f64>::new(p.clone(), Storage::Half).unwrap();
            let broken = usual.break_bonds(&u).unwrap();
            let mut f_usual = vec![0.0; d * n];
            usual.internal_force(&u, &mut f_usual).unwrap();
            let total = p.families.bonds() - p.precracked_bonds();
            assert!(
                0 < broken && broken < total,
                "{case}: {broken} of {total} break"
            );
            let bits = |f: &[f64]| f.iter().map(|x| x.to_bits()).collect::<Vec<_>>();

            let mut whole = CpuMatrix::<f64>::new(late.clone(), Storage::Half).unwrap();
            assert_eq!(whole.break_bonds(&u).unwrap(), broken, "{case}: whole");
            let mut f = vec![0.0; d * n];
            whole.internal_force(&u, &mut f).unwrap();
            assert!(bits(&f) == bits(&f_usual), "{case}: whole, late rows last");
            assert_eq!(whole.bond_status().unwrap(), usual.bond_status().unwrap());

            let mut split = CpuMatrix::<f64>::new(late.clone(), Storage::Half).unwrap();
            let rows = split.row_count();
            let mut rows_broken = split.bond_rows(&u, 0..early, true);
            rows_broken += split.bond_rows(&u, early..rows, true);
            if law == "lps" {
                split.theta_product();
                split.lps_force_scalars(0..early);
                split.lps_force_scalars(early..rows);
            }
            let mut f = vec![0.0; d * n];
            split.transposed_product(&mut f);
            assert_eq!(2 * rows_broken, broken, "{case}: split");
            assert!(bits(&f) == bits(&f_usual), "{case}: split at the ghosts");
            assert_eq!(split.bond_status().unwrap(), usual.bond_status().unwrap());
        }
    }
}
