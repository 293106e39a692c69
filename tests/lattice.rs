//! The stencil of a full box lattice (`backend::gpu::lattice`), with which `gpu-loop` runs
//! without a neighbour list: it must give every node exactly its family, in the families'
//! order, and the initial bond status, for stored and lean problems; bodies that are not a
//! full box must not get one. (The kernels' side is checked on the GPU: `tests/gpu.rs`,
//! `lattice_form_equals_the_neighbour_list_bitwise`.)

mod common;

use peridot::backend::gpu::lattice::Stencil;
use peridot::setup::Problem;

/// Every node's present slots are its family in order, and the status bits read back in CSR
/// order are the initial status.
fn assert_reproduces(p: &Problem, stencil: &Stencil, case: &str) {
    for i in 0..p.body.len() {
        let present: Vec<u32> = (0..stencil.slots())
            .filter_map(|k| stencil.neighbor(i, k))
            .map(|j| j as u32)
            .collect();
        assert_eq!(present, p.families.family(i), "{case}: family of node {i}");
    }
    let words = stencil.status_words(p);
    let expect: Vec<u8> = p.initial_mu.iter().map(|&m| u8::from(m != 0)).collect();
    assert_eq!(
        stencil.to_csr(&words, &p.families),
        expect,
        "{case}: status"
    );
    assert!(expect.contains(&0), "{case}: the pre-crack cuts bonds");
}

#[test]
fn a_box_lattice_gets_a_stencil_that_reproduces_its_families() {
    for (law, dim) in common::PARTITION_CASES {
        let case = format!("{law} {dim}");
        let p = common::partition_bar(law, dim, 1);
        let stencil = Stencil::of(&p).unwrap_or_else(|| panic!("{case}: a full box lattice"));
        // lattice points within delta + dx/2 = 3.515 dx (partial volumes widen the radius):
        // 36 in the disc; in the 3D bar, whose section is 5 x 4 nodes, the steps that fit it
        // (|y| <= 4, |z| <= 3): 178
        let expected = if dim == "3d" { 178 } else { 36 };
        assert_eq!(stencil.slots(), expected, "{case}: slots");
        assert_reproduces(&p, &stencil, &case);
        // the kernels find slot m's node offset at index 32 m
        let dev = stencil.device_offsets();
        assert_eq!(dev.len(), 32 * stencil.slots());
        let centre = p.body.len() / 2;
        for k in 0..stencil.slots() {
            if let Some(j) = stencil.neighbor(centre, k) {
                assert_eq!(centre as i64 + i64::from(dev[32 * k]), j as i64, "{case}");
            }
        }
        // a lean problem (no family stored) gets the same stencil and the same status bits
        let lean = common::partition_bar_lean(law, dim, 1);
        let lean_stencil = Stencil::of(&lean).expect("lean: a full box lattice");
        assert_eq!(lean_stencil, stencil, "{case}: lean stencil");
        assert_eq!(
            lean_stencil.status_words(&lean),
            stencil.status_words(&p),
            "{case}: lean status bits"
        );
    }
}

#[test]
fn bodies_that_are_not_a_full_box_get_no_stencil() {
    let hole = common::small_model(
        "pmb",
        "plane-stress",
        false,
        "[[geometry.remove]]\nshape = \"circle\"\ncenter = [0.005, 0.004]\nradius = 0.002\n",
    );
    let p = common::problem(&hole, &[]);
    assert!(Stencil::of(&p).is_none(), "a plate with a hole");
    let l_shape = common::small_model("pmb", "plane-stress", false, "").replace(
        "box = [{ min = [0, 0], max = [0.011, 0.009] }]",
        "box = [{ min = [0, 0], max = [0.011, 0.004] }, { min = [0, 0], max = [0.004, 0.009] }]",
    );
    let p = common::problem(&l_shape, &[]);
    assert!(Stencil::of(&p).is_none(), "an L-shaped plate");
}
