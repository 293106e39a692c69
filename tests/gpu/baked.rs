//! `gpu-loop`'s baked PMB loop (the stencil compiled into the kernel,
//! `backend/gpu/baked.rs`) against the slot-table loop it replaces, on full box lattices in
//! 2D and 3D, nonlinear and linearized PMB: the same bonds broken and bond status, and the
//! forces of a damaging evaluation within round-off (the two loops do the same arithmetic
//! with the same numbers; only the compiler's fusing of multiply-adds may differ: 1e-12 of
//! the largest force in f64, 1e-5 in f32, the design's tolerances); then 40 steps of the
//! device time loop with the same bonds broken and displacements within 1e-9.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes.

use super::{displacement, have_gpu, say};
use crate::common;
use peridot::backend::GpuLoop;
use peridot::dynamics::Forces;
use peridot::setup::Problem;
use peridot::Real;
use std::sync::Arc;

/// A pre-cracked box of plain PMB (no partial volumes, no surface correction: the slot
/// table's loop), pulled in x, in `dim` ("3d" or "plane-stress"), law `law`.
fn plain_box(dim: &str, law: &str) -> Problem {
    let (geometry, crack, thick) = match dim {
        "3d" => (
            "box = [{ min = [0, 0, 0], max = [0.013, 0.009, 0.007] }]",
            "[[precrack]]\norigin = [-0.001, 0.0045, -0.001]\nedge1 = [0.006, 0, 0]\n\
             edge2 = [0, 0, 0.01]\n",
            "",
        ),
        _ => (
            "box = [{ min = [0, 0], max = [0.031, 0.011] }]",
            "[[precrack]]\nstart = [-0.001, 0.0055]\nend = [0.012, 0.0055]\n",
            "thickness = 1e-3\n",
        ),
    };
    let text = format!(
        "name = \"baked\"\n[material]\nmodel = \"{law}\"\nyoungs_modulus = 70e9\ndensity = 2400\n\
         critical_stretch = 0.002\n[discretization]\ndimension = \"{dim}\"\n{thick}dx = 1e-3\n\
         horizon_factor = 3.015\n[geometry]\n{geometry}\n{crack}\
         [[region]]\nname = \"left\"\nshape = \"edge\"\nside = \"-x\"\ndepth_dx = 3\n\
         [[region]]\nname = \"right\"\nshape = \"edge\"\nside = \"+x\"\ndepth_dx = 3\n\
         [[boundary]]\nregion = \"left\"\nkind = \"fixed\"\n\
         [[boundary]]\nregion = \"right\"\nkind = \"velocity\"\nx = 4.0\n\
         [solver]\nkind = \"explicit\"\nsteps = 40\n"
    );
    common::problem(&text, &[])
}

/// The largest difference of `a` and `b` over the largest magnitude of `b`.
fn rel<T: Real>(a: &[T], b: &[T]) -> f64 {
    let scale = b.iter().fold(0.0f64, |m, x| m.max(x.f64().abs()));
    let diff = a.iter().zip(b).map(|(x, y)| (x.f64() - y.f64()).abs());
    diff.fold(0.0, f64::max) / scale
}

/// One damaging evaluation of the baked and the table loop in precision `T`: the forces'
/// difference (relative to the largest), and the bonds broken (asserted equal, with the
/// status).
fn one_evaluation<T: Real>(p: &Arc<Problem>, eps: f64) -> (f64, usize) {
    let u = displacement::<T>(p, eps);
    let mut baked = GpuLoop::<T>::new(p.clone()).unwrap();
    let mut table = GpuLoop::<T>::with_slot_table_loop(p.clone()).unwrap();
    assert!(
        baked.runs_baked_loop() && !table.runs_baked_loop(),
        "both loops made"
    );
    let (mut fa, mut fb) = (vec![T::zero(); u.len()], vec![T::zero(); u.len()]);
    let broken = baked.break_bonds_and_force(&u, &mut fa).unwrap();
    assert_eq!(
        broken,
        table.break_bonds_and_force(&u, &mut fb).unwrap(),
        "broken"
    );
    assert_eq!(
        baked.bond_status().unwrap(),
        table.bond_status().unwrap(),
        "status"
    );
    (rel(&fa, &fb), broken)
}

#[test]
fn baked_loop_equals_the_slot_table_loop() {
    if !have_gpu() {
        return;
    }
    for dim in ["3d", "plane-stress"] {
        for law in ["pmb", "pmb-linear"] {
            let p = Arc::new(plain_box(dim, law));
            let (e64, broken) = one_evaluation::<f64>(&p, 2.5e-3);
            assert!(broken > 0, "{dim} {law}: the evaluation must break bonds");
            assert!(e64 < 1e-12, "{dim} {law}: f64 force {e64:.2e}");
            let (e32, _) = one_evaluation::<f32>(&p, 2.5e-3);
            assert!(e32 < 1e-5, "{dim} {law}: f32 force {e32:.2e}");
            let mut baked = GpuLoop::<f64>::new(p.clone()).unwrap();
            let mut table = GpuLoop::<f64>::with_slot_table_loop(p.clone()).unwrap();
            let (sa, ba) = common::chunked_run(&p, &mut baked, &[7, 13, 1, 19]);
            let (sb, bb) = common::chunked_run(&p, &mut table, &[7, 13, 1, 19]);
            assert_eq!(ba, bb, "{dim} {law}: bonds broken in 40 steps");
            let eu = rel(&sa.u, &sb.u);
            assert!(
                eu < 1e-9,
                "{dim} {law}: displacement after 40 steps {eu:.2e}"
            );
            say(&format!(
                "baked against table, {dim} {law}: force {e64:.1e} (f64) {e32:.1e} (f32), u \
                 after 40 steps {eu:.1e}, {broken} + {ba} bonds broken"
            ));
        }
    }
}
