//! Host-side checks of what `gpu-matrix` uploads: matrix images keep the bond status, and the
//! device operators give the CPU backend's products (no GPU needed).

use super::{device_operators, MatrixImage};
use crate::operators::spmv::{spmv, spmv_interleaved, spmv_with};
use crate::operators::{Operators, Storage};
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
        let lower = rows * (p.dim() * 2 * (4 + 8) + 8 * 7 + 8 + 1);
        assert!(
            image.bytes() > lower,
            "{storage:?}: {} bytes",
            image.bytes()
        );
    }
}

/// The device operators give the CPU backend's products: `A x I_d` the interleaved
/// differences bit for bit, the force operator the transposed product with its `-1/V`
/// epilogue to round-off, in both storages and for every law.
#[test]
fn device_operators_give_the_cpu_products() {
    for law in ["pmb", "pmb-linear", "lps"] {
        let p = problem(law);
        let (n, d) = (p.body.len(), p.dim());
        for storage in [Storage::Half, Storage::Full] {
            let ops = Operators::<f64>::assemble(&p, storage).unwrap();
            let nr = ops.rows();
            let [diff, force] = device_operators(&p, &ops);
            assert_eq!(diff.row_ptr.len(), d * nr + 1);
            assert_eq!(force.row_ptr.len(), d * n + 1);
            let u = field(d * n, 1);
            let (mut eta, mut eta_ref) = (vec![0.0; d * nr], vec![0.0; d * nr]);
            spmv(&diff.to_mat(), &u, &mut eta);
            spmv_interleaved(&ops.incidence, d, &u, &mut eta_ref, |_, _, s| s);
            assert!(eta == eta_ref, "{law} {}: eta", storage.name());
            let inv: Vec<f64> = p.body.volumes.iter().map(|v| -1.0 / v).collect();
            let per = if ops.incidence_t.is_some() { d } else { 1 };
            assert_eq!(force.ncols, per * nr);
            let z = field(per * nr, 2);
            let (mut f, mut f_ref) = (vec![0.0; d * n], vec![0.0; d * n]);
            spmv(&force.to_mat(), &z, &mut f);
            match &ops.incidence_t {
                Some(at) => spmv_interleaved(at, d, &z, &mut f_ref, |i, _, s| s * inv[i]),
                None => spmv_with(&ops.bt, &z, &mut f_ref, |k, s| s * inv[k / d]),
            }
            let (num, den) = f.iter().zip(&f_ref).fold((0.0, 0.0), |(a, b), (x, y)| {
                (a + (x - y) * (x - y), b + y * y)
            });
            let rel = (num / den).sqrt();
            assert!(rel < 1e-15, "{law} {}: force {rel:.2e}", storage.name());
        }
    }
}
