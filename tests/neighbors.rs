//! Neighbour search: the cell-linked list must give exactly the brute-force families (same
//! pair predicate, so equality is exact, not within a tolerance), symmetric and sorted, with
//! the lattice family sizes of `theory.md` section 1, at any thread count.

mod common;

use common::Rng;
use peridot::neighbors::{brute_force_families, cell_list_families, Families};
use std::time::Instant;

fn random_cloud(rng: &mut Rng, n: usize, dim: usize, size: f64) -> Vec<[f64; 3]> {
    (0..n)
        .map(|_| {
            let z = if dim == 3 { rng.unit() * size } else { 0.0 };
            [rng.unit() * size, rng.unit() * size, z]
        })
        .collect()
}

/// Cell-centred lattice of `n^dim` nodes of spacing `dx`, x fastest.
fn lattice(n: usize, dim: usize, dx: f64) -> Vec<[f64; 3]> {
    let nz = if dim == 3 { n } else { 1 };
    let mut p = Vec::with_capacity(n * n * nz);
    for k in 0..nz {
        for j in 0..n {
            for i in 0..n {
                let z = if dim == 3 { (k as f64 + 0.5) * dx } else { 0.0 };
                p.push([(i as f64 + 0.5) * dx, (j as f64 + 0.5) * dx, z]);
            }
        }
    }
    p
}

/// Families are CSR-consistent, sorted strictly ascending, free of self-bonds and symmetric.
fn check_well_formed(f: &Families, n: usize) {
    assert_eq!(f.offsets.len(), n + 1);
    assert_eq!(f.offsets[0], 0);
    assert_eq!(f.offsets[n], f.neighbors.len());
    for i in 0..n {
        let fam = f.family(i);
        assert!(fam.windows(2).all(|w| w[0] < w[1]), "family {i} not sorted");
        assert!(!fam.contains(&(i as u32)), "family {i} holds itself");
        for &j in fam {
            assert!(
                f.family(j as usize).binary_search(&(i as u32)).is_ok(),
                "bond {i} -> {j} has no reverse"
            );
        }
    }
}

/// Both searches agree exactly and the result is well formed.
fn check_against_brute(p: &[[f64; 3]], dim: usize, radius: f64) -> Families {
    let cell = cell_list_families(p, dim, radius);
    let brute = brute_force_families(p, dim, radius);
    assert_eq!(cell, brute, "dim {dim}, radius {radius}, n {}", p.len());
    check_well_formed(&cell, p.len());
    cell
}

/// Uniform random clouds in 2D (z = 0) at radii from sparse (about 1 neighbour) to dense
/// (about 100 neighbours): the cell list is exact, so it equals brute force bit for bit.
#[test]
fn cell_list_equals_brute_force_random_2d() {
    let mut rng = Rng(1);
    let p = random_cloud(&mut rng, 3000, 2, 1.0);
    for radius in [0.003, 0.01, 0.037, 0.1] {
        let f = check_against_brute(&p, 2, radius);
        assert!(f.bonds() > 0);
    }
}

/// Uniform random clouds in 3D at several radii, including one wider than the cloud (a single
/// cell holds every node, every pair is a bond).
#[test]
fn cell_list_equals_brute_force_random_3d() {
    let mut rng = Rng(2);
    let p = random_cloud(&mut rng, 2500, 3, 2.0);
    for radius in [0.02, 0.1, 0.23, 0.5] {
        check_against_brute(&p, 3, radius);
    }
    let small = random_cloud(&mut rng, 200, 3, 1.0);
    let all = check_against_brute(&small, 3, 10.0);
    assert_eq!(all.bonds(), 200 * 199);
}

/// Tight clusters far apart with a small radius: the uniform grid over the bounding box would
/// need about 1e12 cells; the clamp makes cells larger, which must stay exact.
#[test]
fn cell_list_equals_brute_force_clustered() {
    let mut rng = Rng(3);
    for dim in [2, 3] {
        let mut p = Vec::new();
        for c in 0..5 {
            let centre = [c as f64 * 1.0e3, (c * c) as f64 * 10.0, 0.0];
            for q in random_cloud(&mut rng, 400, dim, 0.01) {
                p.push([centre[0] + q[0], centre[1] + q[1], q[2]]);
            }
        }
        check_against_brute(&p, dim, 0.0008);
        check_against_brute(&p, dim, 0.003);
    }
}

/// Lattices with the radius exactly a lattice distance (3 dx, ties decided by rounding) and at
/// the usual 3.015 dx: ties must be decided the same way by both searches.
#[test]
fn cell_list_equals_brute_force_lattice() {
    let dx = 0.005;
    for dim in [2, 3] {
        let n = if dim == 2 { 30 } else { 12 };
        let p = lattice(n, dim, dx);
        for m in [1.0, 2.0, 3.0, 3.015, 3.515] {
            check_against_brute(&p, dim, m * dx);
        }
    }
}

/// Degenerate inputs: no node, one node, coincident nodes (all in one cell, zero extent on
/// every axis), a 3D slab one node thick (flat z), a line, and a zero radius.
#[test]
fn degenerate_inputs() {
    for dim in [2, 3] {
        let empty = cell_list_families(&[], dim, 1.0);
        assert_eq!(empty.nodes(), 0);
        assert_eq!(empty.offsets, vec![0]);
        let one = check_against_brute(&[[1.0, 2.0, 3.0]], dim, 1.0);
        assert_eq!(one.bonds(), 0);
        let same = vec![[0.5, 0.5, 0.0]; 7];
        assert_eq!(check_against_brute(&same, dim, 0.1).bonds(), 42);
        assert_eq!(check_against_brute(&same, dim, 0.0).bonds(), 42);
        let line: Vec<[f64; 3]> = (0..100).map(|i| [i as f64 * 0.1, 0.0, 0.0]).collect();
        check_against_brute(&line, dim, 0.25);
    }
    let mut slab = lattice(20, 2, 0.01);
    for p in &mut slab {
        p[2] = 7.0;
    }
    let f = check_against_brute(&slab, 3, 0.03015);
    assert_eq!(f.size_stats().2, 28);
}

/// `theory.md` section 1: at delta = 3.015 dx an interior lattice node has 28 neighbours in 2D
/// and 122 in 3D (integer vectors with |v|^2 <= 9.09); exact integer counts, no tolerance.
#[test]
fn interior_family_sizes() {
    let dx = 0.001;
    let p2 = lattice(21, 2, dx);
    let f2 = cell_list_families(&p2, 2, 3.015 * dx);
    assert_eq!(f2.family(10 * 21 + 10).len(), 28);
    assert_eq!(f2.size_stats().2, 28);
    let p3 = lattice(13, 3, dx);
    let f3 = cell_list_families(&p3, 3, 3.015 * dx);
    assert_eq!(f3.family((6 * 13 + 6) * 13 + 6).len(), 122);
    assert_eq!(f3.size_stats().2, 122);
}

/// The `linear` partial-volume family radius delta + dx/2 = 3.515 dx: interior counts equal the
/// brute-force counts and the integer lattice sums (36 in 2D, 178 in 3D).
#[test]
fn interior_family_sizes_partial_volume_radius() {
    let dx = 0.002;
    let m: f64 = 3.515;
    for (dim, n, expected) in [(2usize, 21usize, 36usize), (3, 13, 178)] {
        let mut lattice_sum = 0;
        let span = -4i64..=4;
        let zs = if dim == 3 { span.clone() } else { 0..=0 };
        for i in span.clone() {
            for j in span.clone() {
                for k in zs.clone() {
                    let r2 = (i * i + j * j + k * k) as f64;
                    lattice_sum += usize::from(r2 > 0.0 && r2 <= m * m);
                }
            }
        }
        assert_eq!(lattice_sum, expected);
        let p = lattice(n, dim, dx);
        let f = check_against_brute(&p, dim, m * dx);
        let c = n / 2;
        let centre = if dim == 3 {
            (c * n + c) * n + c
        } else {
            c * n + c
        };
        assert_eq!(f.family(centre).len(), expected);
    }
}

/// Determinism: the same families with 1, 2 and 5 threads (the fill is parallel).
#[test]
fn same_result_at_any_thread_count() {
    let mut rng = Rng(4);
    let p = random_cloud(&mut rng, 20_000, 3, 1.0);
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("thread pool")
            .install(|| cell_list_families(&p, 3, 0.06))
    };
    let one = run(1);
    check_well_formed(&one, p.len());
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
}

/// Timing of the 1 M-node 3D lattice at radius 3.015 dx (run with `--ignored --nocapture`);
/// checks the interior family size and the total bond count against the lattice sum bound.
#[test]
#[ignore]
fn million_node_lattice_timing() {
    let dx = 0.001;
    let p = lattice(100, 3, dx);
    let t = Instant::now();
    let f = cell_list_families(&p, 3, 3.015 * dx);
    let secs = t.elapsed().as_secs_f64();
    let (min, mean, max) = f.size_stats();
    println!(
        "1M-node 3D lattice: {} nodes, {} bonds, family min/mean/max {min}/{mean:.1}/{max}, \
         {secs:.2} s on {} threads",
        f.nodes(),
        f.bonds(),
        rayon::current_num_threads()
    );
    assert_eq!(f.nodes(), 1_000_000);
    assert_eq!(max, 122);
    assert_eq!(f.family((50 * 100 + 50) * 100 + 50).len(), 122);
}

/// Regression: with `delta = 3 dx` exactly (the Ha-Bobaru glass setup, dx = 1/3 mm), bonds of
/// length exactly 3 dx are ties whose computed length rounds either way depending on the
/// coordinates. Every interior node must still get the same 28 neighbours; before the family
/// radius was widened by 1e-10 relative, some got 24, making the lattice heterogeneous and
/// suppressing crack branching.
#[test]
fn lattice_ties_at_three_spacings_are_included_everywhere() {
    let dx = 1.0e-3 / 3.0;
    let (nx, ny) = (300, 120);
    let positions: Vec<[f64; 3]> = (0..ny)
        .flat_map(|j| {
            (0..nx).map(move |i| {
                [
                    -0.05 + (i as f64 + 0.5) * dx,
                    -0.02 + (j as f64 + 0.5) * dx,
                    0.0,
                ]
            })
        })
        .collect();
    let fam = cell_list_families(&positions, 2, 1.0e-3);
    for j in 4..ny - 4 {
        for i in 4..nx - 4 {
            let k = j * nx + i;
            assert_eq!(fam.family(k).len(), 28, "node ({i}, {j})");
        }
    }
}
