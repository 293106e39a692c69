//! The operators as `sprs` and `nalgebra-sparse` matrices (cargo features `sprs`,
//! `nalgebra-sparse`; `cargo test --release --features sprs,nalgebra-sparse --test convert`; CI builds
//! it with the `mpi` feature too, beside `tests/mpi.rs`, in one build).
//! Without the features the file is empty.
#![cfg(all(feature = "sprs", feature = "nalgebra-sparse"))]

mod common;

use nalgebra_sparse::na::DMatrix;
use peridot::operators::convert::{to_nalgebra, to_sprs};
use peridot::operators::spmv::spmv;
use peridot::operators::stiffness::stiffness;
use peridot::operators::{Operators, Storage};

/// `K` and `B` of a small pre-cracked LPS model converted: the copies hold faer's row
/// pointers, column indices and values exactly, and each crate's own matrix-vector product
/// equals faer's to round-off (1e-13 of the row's largest term times its length: the crates
/// may sum a row in another order).
#[test]
fn converted_operators_hold_the_same_entries() {
    let text = common::small_model("lps", "plane-strain", true, "");
    let problem = common::problem(&text, &[]);
    let ops = Operators::<f64>::assemble(&problem, Storage::Full).expect("operators");
    let k = stiffness(&ops, &ops.row_status(&problem.initial_mu)).expect("K");
    for (name, m) in [("K", &k), ("B", &ops.b)] {
        let sym = m.symbolic();
        let indptr: Vec<usize> = sym.row_ptr().iter().map(|&p| p as usize).collect();
        let indices: Vec<usize> = sym.col_idx().iter().map(|&c| c as usize).collect();
        let s = to_sprs(m);
        assert_eq!(s.shape(), (m.nrows(), m.ncols()), "{name}");
        assert_eq!(
            s.indptr().raw_storage(),
            &indptr[..],
            "{name}: sprs row pointers"
        );
        assert_eq!(s.indices(), &indices[..], "{name}: sprs columns");
        assert_eq!(s.data(), m.val(), "{name}: sprs values");
        let n = to_nalgebra(m);
        assert_eq!((n.nrows(), n.ncols()), (m.nrows(), m.ncols()), "{name}");
        assert_eq!(n.row_offsets(), &indptr[..], "{name}: nalgebra row offsets");
        assert_eq!(n.col_indices(), &indices[..], "{name}: nalgebra columns");
        assert_eq!(n.values(), m.val(), "{name}: nalgebra values");

        let x = common::random_vector(m.ncols(), 7);
        let mut reference = vec![0.0; m.nrows()];
        spmv(m, &x, &mut reference);
        let xs = sprs::CsVec::new(x.len(), (0..x.len()).collect(), x.clone());
        let ys = &s * &xs;
        let yn = &n * &DMatrix::from_column_slice(x.len(), 1, &x);
        for (i, r) in reference.iter().enumerate() {
            let row = indptr[i]..indptr[i + 1];
            let terms = row.clone().map(|p| (m.val()[p] * x[indices[p]]).abs());
            let tol = 1e-13 * terms.fold(0.0, f64::max) * row.len().max(1) as f64;
            let sprs_value = ys.get(i).copied().unwrap_or(0.0);
            assert!((sprs_value - r).abs() <= tol, "{name} sprs row {i}");
            assert!((yn[(i, 0)] - r).abs() <= tol, "{name} nalgebra row {i}");
        }
    }
}
