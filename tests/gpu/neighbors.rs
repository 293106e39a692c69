//! The neighbour search on the device against the CPU cell list: the same families EXACTLY
//! (row offsets and neighbour indices, bit for bit; no tolerance), on 2D and 3D lattices at
//! the usual horizon, at `delta = 3 dx` (neighbours at exactly the radius) and at the
//! partial-volume radius `delta + dx / 2`, on random clouds with nodes exactly on and one ulp
//! either side of cell borders, pairs within an ulp of the radius, exact ties and duplicate
//! nodes, and with families too large for a warp's shared row (sorted in global memory).
//! `Problem::build_with` on the device gives the problem the CPU search gives.
//!
//! Without a CUDA device each test prints `skipped: no CUDA device` and passes (except the
//! last, which then checks the fallback to the CPU search).

use super::{have_gpu, say};
use crate::common::Rng;
use peridot::gpu::neighbors::{device_families, device_families_with, DeviceSearch, Download};
use peridot::neighbors::{cell_list_families, Families};
use peridot::setup::{NeighborSearch, Problem};
use peridot::Precision;
use std::time::Instant;

/// Cell-centred lattice of `n` nodes per axis of spacing `dx` from `origin`, x fastest.
fn lattice(n: usize, dim: usize, dx: f64, origin: [f64; 3]) -> Vec<[f64; 3]> {
    let nz = if dim == 3 { n } else { 1 };
    let mut p = Vec::with_capacity(n * n * nz);
    for k in 0..nz {
        for j in 0..n {
            for i in 0..n {
                let z = if dim == 3 {
                    origin[2] + (k as f64 + 0.5) * dx
                } else {
                    0.0
                };
                p.push([
                    origin[0] + (i as f64 + 0.5) * dx,
                    origin[1] + (j as f64 + 0.5) * dx,
                    z,
                ]);
            }
        }
    }
    p
}

/// The first node whose family differs, as a message; `None` when equal.
fn first_difference(a: &Families, b: &Families) -> Option<String> {
    if a == b {
        return None;
    }
    if a.offsets.len() != b.offsets.len() {
        return Some(format!("{} vs {} nodes", a.nodes(), b.nodes()));
    }
    (0..a.nodes())
        .find(|&i| a.family(i) != b.family(i))
        .map(|i| format!("node {i}: device {:?}\n cpu {:?}", a.family(i), b.family(i)))
        .or(Some("offsets differ".into()))
}

/// The device search of `p` equals the CPU search exactly; the device result is returned.
fn check(name: &str, p: &[[f64; 3]], dim: usize, radius: f64) -> DeviceSearch {
    let t = Instant::now();
    let cpu = cell_list_families(p, dim, radius);
    let cpu_s = t.elapsed().as_secs_f64();
    let gpu = peridot::gpu::Gpu::get().expect("device");
    let d = device_families(&gpu, Precision::F64, p, dim, radius).expect("device search runs");
    if let Some(diff) = first_difference(&d.families, &cpu) {
        panic!("{name}: device and CPU families differ: {diff}");
    }
    let (min, mean, max) = cpu.size_stats();
    say(&format!(
        "{name}: {} nodes, {} bonds (family {min}..{max}, mean {mean:.1}), {} sorted in global \
         memory: device == cpu (device {:.4} s, kernels {:.4} s; cpu {cpu_s:.4} s)",
        cpu.nodes(),
        cpu.bonds(),
        d.sorted_in_global,
        d.times.total(),
        d.times.device()
    ));
    assert_eq!(d.largest_family, max, "{name}: largest family");
    d
}

#[test]
fn device_search_equals_cpu_on_2d_lattices() {
    if !have_gpu() {
        return;
    }
    let dx = 1e-3;
    let p = lattice(150, 2, dx, [-0.05, -0.03, 0.0]);
    check("2D lattice, delta 3.015 dx", &p, 2, 3.015 * dx);
    check("2D lattice, delta 3 dx (ties)", &p, 2, 3.0 * dx);
    check(
        "2D lattice, partial-volume radius",
        &p,
        2,
        3.015 * dx + 0.5 * dx,
    );
    check("2D lattice, delta 1 dx", &p, 2, dx);
}

#[test]
fn device_search_equals_cpu_on_3d_lattices() {
    if !have_gpu() {
        return;
    }
    let dx = 1e-3;
    let p = lattice(32, 3, dx, [0.0, 0.0, 0.0]);
    check("3D lattice, delta 3.015 dx", &p, 3, 3.015 * dx);
    check("3D lattice, delta 3 dx (ties)", &p, 3, 3.0 * dx);
    check(
        "3D lattice, partial-volume radius",
        &p,
        3,
        3.015 * dx + 0.5 * dx,
    );
    let q = lattice(20, 3, 0.7e-3, [-0.004, 0.001, -0.0021]);
    check(
        "3D lattice, shifted, partial-volume radius",
        &q,
        3,
        3.015 * 0.7e-3 + 0.35e-3,
    );
    // 29 M bonds: more than one pinned buffer of the staged download (16 M), the last one
    // partly filled; the pageable download gives the same
    let big = lattice(64, 3, dx, [0.0, 0.0, 0.0]);
    let d = check("3D lattice 64^3, staged download", &big, 3, 3.015 * dx);
    let gpu = peridot::gpu::Gpu::get().unwrap();
    let pageable = device_families_with(
        &gpu,
        Precision::F64,
        &big,
        3,
        3.015 * dx,
        Download::Pageable,
    )
    .expect("device search runs");
    assert!(first_difference(&pageable.families, &d.families).is_none());
    assert!(d.times.download_copy > 0.0 && pageable.times.download_copy == 0.0);
}

/// Bigger than a warp's shared row (512): a 3D lattice at 5.5 dx (about 700 neighbours
/// inside, fewer at the faces, so both paths) and a 2D cloud in one cell (every node a
/// neighbour of every other).
#[test]
fn device_search_sorts_large_families_in_global_memory() {
    if !have_gpu() {
        return;
    }
    let dx = 1e-3;
    let p = lattice(24, 3, dx, [0.0, 0.0, 0.0]);
    let d = check("3D lattice, 5.5 dx", &p, 3, 5.5 * dx);
    assert!(d.sorted_in_global > 0 && d.sorted_in_global < p.len());
    let mut rng = Rng(7);
    let cloud: Vec<[f64; 3]> = (0..3000).map(|_| [rng.unit(), rng.unit(), 0.0]).collect();
    let d = check("2D cloud in one cell", &cloud, 2, 2.0);
    assert_eq!(d.sorted_in_global, cloud.len());
}

/// A random cloud in `[0, size)^dim` with the cases where a search can go wrong:
/// nodes exactly on the cell borders of the grid and one ulp either side, nodes on a lattice
/// of spacing `radius` (a power of two: neighbours at exactly the radius), partners within
/// an ulp or so of the widened radius `r sqrt(1 + 1e-10)` (where rounding decides), and
/// duplicate nodes (distance 0: each is in the other's family).
fn hard_cloud(rng: &mut Rng, n: usize, dim: usize, size: f64, radius: f64) -> Vec<[f64; 3]> {
    let pick = |rng: &mut Rng| {
        let z = if dim == 3 { rng.unit() * size } else { 0.0 };
        [rng.unit() * size, rng.unit() * size, z]
    };
    let mut p: Vec<[f64; 3]> = (0..n).map(|_| pick(rng)).collect();
    // the bounding box: pin the corners so the grid is known
    p.push([0.0, 0.0, 0.0]);
    p.push([size, size, if dim == 3 { size } else { 0.0 }]);
    // borderline partners
    let widened = radius * (1.0 + 1e-10f64).sqrt();
    for k in 0..n / 4 {
        let a = p[k];
        let (theta, phi) = (
            rng.unit() * std::f64::consts::TAU,
            rng.unit() * std::f64::consts::PI,
        );
        let dir = if dim == 3 {
            [phi.sin() * theta.cos(), phi.sin() * theta.sin(), phi.cos()]
        } else {
            [theta.cos(), theta.sin(), 0.0]
        };
        let scale = widened * (1.0 + (k % 7) as f64 * f64::EPSILON - 3.0 * f64::EPSILON);
        let b = [
            a[0] + scale * dir[0],
            a[1] + scale * dir[1],
            a[2] + scale * dir[2],
        ];
        if (0..dim).all(|c| b[c] > 0.0 && b[c] < size) {
            p.push(b);
        }
    }
    // ties: a lattice of spacing radius
    let m = (size / radius) as usize;
    for i in 1..m {
        for j in 1..m {
            let z = if dim == 3 {
                (1 + (i * j) % (m - 1)) as f64 * radius
            } else {
                0.0
            };
            p.push([i as f64 * radius, j as f64 * radius, z]);
        }
    }
    // cell borders, as the CPU grid places them (cells of edge >= radius over [0, size])
    let edge = radius * (1.0 + 1e-9) + 16.0 * f64::EPSILON * size;
    let cells = (size / edge).floor();
    let inv = cells / size;
    for k in 1..cells as usize {
        let x = k as f64 / inv;
        for v in [
            f64::from_bits(x.to_bits() - 1),
            x,
            f64::from_bits(x.to_bits() + 1),
        ] {
            for _ in 0..3 {
                let mut q = pick(rng);
                q[0] = v;
                p.push(q);
                let mut q = pick(rng);
                q[1] = v;
                p.push(q);
                if dim == 3 {
                    let mut q = pick(rng);
                    q[2] = v;
                    q[0] = v;
                    p.push(q);
                }
            }
        }
    }
    // duplicates
    for k in 0..50 {
        p.push(p[k * 3]);
    }
    p
}

#[test]
fn device_search_equals_cpu_on_random_clouds() {
    if !have_gpu() {
        return;
    }
    let mut rng = Rng(2024);
    let p = hard_cloud(&mut rng, 20_000, 2, 2.0, 0.125);
    check(
        "2D random cloud with borders, ties, borderline pairs",
        &p,
        2,
        0.125,
    );
    let p = hard_cloud(&mut rng, 20_000, 3, 1.0, 0.125);
    check(
        "3D random cloud with borders, ties, borderline pairs",
        &p,
        3,
        0.125,
    );
    // not a power of two: the radius and the cell edge are not exact
    let p = hard_cloud(&mut rng, 8_000, 3, 1.0, 0.1);
    check("3D random cloud, radius 0.1", &p, 3, 0.1);
    // a sparse cloud (the grid is clamped to about 2 n cells) and tiny inputs
    let sparse: Vec<[f64; 3]> = (0..2000)
        .map(|_| [rng.unit() * 1e3, rng.unit(), rng.unit() * 1e-3])
        .collect();
    check("3D sparse cloud", &sparse, 3, 0.05);
    check("one node", &[[1.0, 2.0, 3.0]], 3, 0.1);
    check("two nodes", &[[0.0, 0.0, 0.0], [0.1, 0.0, 0.0]], 2, 0.1);
    let gpu = peridot::gpu::Gpu::get().unwrap();
    let empty = device_families(&gpu, Precision::F64, &[], 3, 0.1).unwrap();
    assert_eq!(empty.families, cell_list_families(&[], 3, 0.1));
}

/// `Problem::build_with(.., NeighborSearch::Device)` gives the problem of `Problem::build`
/// (families, pre-cracked bonds, bond data) and records where the search ran; without a
/// device it falls back to the CPU search.
#[test]
fn build_with_device_search_gives_the_cpu_problem() {
    let on_device = have_gpu();
    for (law, dim) in [("pmb", "plane-stress"), ("lps", "3d")] {
        let text = crate::common::small_model(law, dim, true, "");
        let model = peridot::model::parse(&text, "test.toml", &[]).expect("valid model");
        let dir = std::path::Path::new(".");
        let cpu = Problem::build(model.clone(), dir).unwrap();
        let dev = Problem::build_with(model, dir, NeighborSearch::Device(Precision::F64)).unwrap();
        assert_eq!(cpu.neighbor_search, NeighborSearch::Cpu);
        let expected = if on_device {
            NeighborSearch::Device(Precision::F64)
        } else {
            NeighborSearch::Cpu
        };
        assert_eq!(dev.neighbor_search, expected, "{law} {dim}");
        assert!(first_difference(&dev.families, &cpu.families).is_none());
        assert_eq!(dev.initial_mu, cpu.initial_mu);
        assert_eq!(dev.bonds.horizon_volume, cpu.bonds.horizon_volume);
    }
    assert_eq!(
        peridot::backend::BackendKind::GpuLoop.neighbor_search(Precision::F32),
        NeighborSearch::Device(Precision::F32)
    );
    assert_eq!(
        peridot::backend::BackendKind::CpuLoop.neighbor_search(Precision::F64),
        NeighborSearch::Cpu
    );
}
