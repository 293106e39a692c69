//! Host-side checks of what `gpu-matrix` uploads: matrix images keep the bond status, and the
//! incidence form gives the CPU backend's operators and products (no GPU needed).

use super::{MatrixImage, SignedIncidence};
use crate::operators::spmv::{spmv_interleaved, spmv_with};
use crate::operators::{IncidenceOperators, Operators, Storage};
use crate::setup::Problem;
use std::sync::Arc;

fn problem(law: &str) -> Problem {
    let text = format!(
        "[material]\nmodel = \"{law}\"\nyoungs_modulus = 200e9\ndensity = 8000\n{}\
         critical_stretch = 0.01\n[discretization]\ndimension = \"3d\"\ndx = 1e-3\n\
         horizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n\
         box = [{{ min = [0, 0, 0], max = [0.006, 0.005, 0.004] }}]\n\
         [solver]\nkind = \"explicit\"\nsteps = 1\n",
        if law == "lps" {
            "poisson_ratio = 0.25\n"
        } else {
            ""
        }
    );
    let model = crate::model::parse(&text, "t.toml", &[]).unwrap();
    Problem::build(model, std::path::Path::new(".")).unwrap()
}

fn field(len: usize, seed: usize) -> Vec<f64> {
    (0..len)
        .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f64 - 1001.0) * 1e-6)
        .collect()
}

/// A matrix image (what a streamed subdomain keeps on the host between uploads) holds the
/// problem's bond status as row status and gives it back per directed bond, in both
/// storages; a status written into it (as a download after a pass does) reads back the
/// same; its upload size counts every array once.
#[test]
fn matrix_images_keep_the_bond_status() {
    let mut p = problem("pmb");
    // some bonds broken, both directions of a pair alike (as breaking leaves them)
    let fam = p.families.clone();
    p.initial_mu = (0..p.body.len())
        .flat_map(|i| {
            fam.family(i)
                .iter()
                .map(move |&j| u8::from((i + j as usize) % 7 != 3))
        })
        .collect();
    assert!(p.initial_mu.contains(&0));
    for storage in [Storage::Full, Storage::Half] {
        let mut image = MatrixImage::<f64>::assemble(Arc::new(p.clone()), storage).unwrap();
        assert_eq!(image.bond_status(), p.initial_mu, "{storage:?}");
        let rows = image.rows();
        let written: Vec<u8> = (0..rows).map(|r| u8::from(r % 5 != 0)).collect();
        image.row_status_mut().copy_from_slice(&written);
        let status = image.bond_status();
        let ops = Operators::<f64>::assemble(&p, storage).unwrap();
        assert_eq!(ops.row_status(&status), written, "{storage:?}");
        // the signed A^T (two 4-byte entries a row), Phi (at least one 12-byte entry a row),
        // the PMB vectors (xi, length, a, w in f64), the row ends and the status
        let lower = rows * (2 * 4 + 12 + 8 * (p.dim() + 3) + 8 + 1);
        assert!(
            image.bytes() > lower,
            "{storage:?}: {} bytes",
            image.bytes()
        );
    }
}

/// The incidence form the device gets gives the CPU backend's operators and products: the
/// same rows, bond vectors, `Theta` and `Phi` bit for bit; the row differences `u_j - u_i`
/// (what the bond kernel forms from a row's ends) equal `A u` bit for bit; and the force
/// sum `-diag(1/V) A^T Z` over the rows' force vectors (`Z = z xi / x` for the linear laws,
/// `d` given values per row for nonlinear PMB) equals the CPU's `-B^T z / V` or
/// `-(A^T x I_d) z / V` to round-off (1e-15 relative: a few roundings per entry, summed over
/// about 100 rows per node), in both storages and for every law.
#[test]
fn incidence_form_gives_the_cpu_products() {
    for law in ["pmb", "pmb-linear", "lps"] {
        let p = problem(law);
        let (n, d) = (p.body.len(), p.dim());
        for storage in [Storage::Half, Storage::Full] {
            let ops = Operators::<f64>::assemble(&p, storage).unwrap();
            let inc = IncidenceOperators::<f64>::assemble(&p, storage).unwrap();
            let nr = ops.rows();
            let what = format!("{law} {}", storage.name());
            assert_eq!(inc.rows.first, ops.rows.first, "{what}: rows");
            assert_eq!(inc.rows.second, ops.rows.second, "{what}: rows");
            assert_eq!(inc.vectors.all(), ops.vectors.all(), "{what}: bond vectors");
            let parts = |m: &crate::operators::Mat<f64>| {
                let sym = m.symbolic();
                (
                    sym.row_ptr().to_vec(),
                    sym.col_idx().to_vec(),
                    m.val().to_vec(),
                )
            };
            assert!(parts(&inc.damage) == parts(&ops.damage), "{what}: Phi");
            assert!(
                inc.theta.as_ref().map(parts) == ops.theta.as_ref().map(parts),
                "{what}: Theta"
            );
            let u = field(d * n, 1);
            let mut eta_ref = vec![0.0; d * nr];
            spmv_interleaved(&ops.incidence, d, &u, &mut eta_ref, |_, _, s| s);
            let eta: Vec<f64> = (0..d * nr)
                .map(|q| {
                    let (r, k) = (q / d, q % d);
                    let (i, j) = (ops.rows.first[r] as usize, ops.rows.second[r] as usize);
                    u[d * j + k] - u[d * i + k]
                })
                .collect();
            assert!(eta == eta_ref, "{what}: eta");
            let nonlinear = ops.incidence_t.is_some();
            let z = field(if nonlinear { d * nr } else { nr }, 2);
            let v = &inc.vectors;
            let big_z: Vec<f64> = match nonlinear {
                true => z.clone(),
                false => (0..d * nr)
                    .map(|q| z[q / d] * (v.xi[q] / v.length[q / d]))
                    .collect(),
            };
            let at = SignedIncidence::of(&inc.incidence_t);
            let scaled = at.to_mat(nr, |k| -1.0 / p.body.volumes[k]);
            let mut f = vec![0.0; d * n];
            spmv_interleaved(&scaled, d, &big_z, &mut f, |_, _, s| s);
            let inv: Vec<f64> = p.body.volumes.iter().map(|v| -1.0 / v).collect();
            let mut f_ref = vec![0.0; d * n];
            match &ops.incidence_t {
                Some(at) => spmv_interleaved(at, d, &z, &mut f_ref, |i, _, s| s * inv[i]),
                None => spmv_with(&ops.bt, &z, &mut f_ref, |k, s| s * inv[k / d]),
            }
            let (num, den) = f.iter().zip(&f_ref).fold((0.0, 0.0), |(a, b), (x, y)| {
                (a + (x - y) * (x - y), b + y * y)
            });
            let rel = (num / den).sqrt();
            assert!(rel < 1e-15, "{what}: force {rel:.2e}");
        }
    }
}
