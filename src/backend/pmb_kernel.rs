//! The PMB bond loop of the CPU loop backend: force density of every node with the bond-break
//! check fused in, in one pass over the bonds (`theory.md` section 2).
//!
//! Each node's family is walked in lanes of [`LANES`] bonds: the bond vectors and relative
//! displacements of a lane are gathered into small arrays, the stretch and force scale of the
//! whole lane are computed in straight-line code the compiler turns into SIMD instructions,
//! and the lane is then added to the node's force in CSR order. The arithmetic per bond is
//! exactly that of [`crate::material::laws`] (same operations in the same order, no fused
//! multiply-add), and every node sums its own bonds in CSR order, so results are bitwise those
//! of a plain loop, on any machine and at any thread count.
//!
//! Where the CPU has AVX2, the same code is compiled a second time with AVX2 enabled and
//! chosen at run time (IEEE arithmetic gives the same bits either way).
//!
//! Units: displacement m, force density N/m^3.

use super::blocks::par_node_blocks_with;
use crate::Real;
use std::ops::Range;

/// Bonds per lane: two AVX2 registers of `f64`, one of `f32`.
pub const LANES: usize = 8;

/// Bond status: broken.
pub const BROKEN: u8 = 0;
/// Bond status: intact, breaks past the critical stretch.
pub const INTACT: u8 = 1;
/// Bond status: intact and never breaks (an end node is in a no-fail zone).
pub const KEPT: u8 = 2;

/// What the PMB loop reads besides the displacement.
pub struct PmbBonds<'a, T> {
    pub offsets: &'a [usize],
    pub neighbors: &'a [u32],
    /// Reference positions, m (f64: bond vectors are formed in f64, then rounded).
    pub positions: &'a [[f64; 3]],
    /// Reference bond length `|xi|` per bond (computed in f64, rounded to `T`).
    pub length: &'a [T],
    /// Per-bond weight `c lambda beta V_j`.
    pub weight: &'a [T],
    /// Linearized PMB (`s = n . eta / x`, force along `xi`) instead of the nonlinear law.
    pub linearized: bool,
}

/// Force density of every node into `force` (`d` per node, overwritten) at displacement `u`.
/// Before its force is added, every `INTACT` bond whose stretch exceeds `s0` is marked
/// `BROKEN` in `status` (pass `s0 = +inf` to break none). Returns the number of bonds broken.
pub fn forces_and_breaks<T: Real>(
    bonds: &PmbBonds<T>,
    dim: usize,
    u: &[T],
    s0: T,
    status: &mut [u8],
    force: &mut [T],
) -> usize {
    let n = bonds.offsets.len() - 1;
    assert!(u.len() == dim * n && force.len() == dim * n && status.len() == bonds.length.len());
    let avx2 = has_avx2();
    par_node_blocks_with(bonds.offsets, status, force, dim, |nodes, st, f| {
        match (dim, bonds.linearized) {
            (2, false) => block::<T, 2, false>(avx2, bonds, u, s0, nodes, st, f),
            (2, true) => block::<T, 2, true>(avx2, bonds, u, s0, nodes, st, f),
            (_, false) => block::<T, 3, false>(avx2, bonds, u, s0, nodes, st, f),
            (_, true) => block::<T, 3, true>(avx2, bonds, u, s0, nodes, st, f),
        }
    })
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

#[cfg(not(target_arch = "x86_64"))]
fn has_avx2() -> bool {
    false
}

/// One block of consecutive nodes, with the AVX2 build of the loop where `avx2`.
fn block<T: Real, const D: usize, const LIN: bool>(
    avx2: bool,
    bonds: &PmbBonds<T>,
    u: &[T],
    s0: T,
    nodes: Range<usize>,
    status: &mut [u8],
    force: &mut [T],
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: the CPU supports AVX2 (checked at run time by `has_avx2`).
        return unsafe { block_avx2::<T, D, LIN>(bonds, u, s0, nodes, status, force) };
    }
    let _ = avx2;
    block_body::<T, D, LIN>(bonds, u, s0, nodes, status, force)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_avx2<T: Real, const D: usize, const LIN: bool>(
    bonds: &PmbBonds<T>,
    u: &[T],
    s0: T,
    nodes: Range<usize>,
    status: &mut [u8],
    force: &mut [T],
) -> usize {
    block_body::<T, D, LIN>(bonds, u, s0, nodes, status, force)
}

/// Nodes `nodes`; `status` holds their bonds (from `offsets[nodes.start]`), `force` their
/// `D` components each.
#[inline(always)]
fn block_body<T: Real, const D: usize, const LIN: bool>(
    bonds: &PmbBonds<T>,
    u: &[T],
    s0: T,
    nodes: Range<usize>,
    status: &mut [u8],
    force: &mut [T],
) -> usize {
    let base = bonds.offsets[nodes.start];
    let first = nodes.start;
    let mut broken = 0;
    for i in nodes {
        let range = bonds.offsets[i]..bonds.offsets[i + 1];
        let st = &mut status[range.start - base..range.end - base];
        let (f, b) = node::<T, D, LIN>(bonds, u, s0, i, range, st);
        force[D * (i - first)..D * (i - first + 1)].copy_from_slice(&f);
        broken += b;
    }
    broken
}

/// One lane of bonds, structure of arrays.
struct Lane<T, const D: usize> {
    xi: [[T; LANES]; D],
    eta: [[T; LANES]; D],
    length: [T; LANES],
    weight: [T; LANES],
}

/// Force density on node `i` from its bonds `range` (status `st`), and the bonds it broke.
#[inline(always)]
fn node<T: Real, const D: usize, const LIN: bool>(
    bonds: &PmbBonds<T>,
    u: &[T],
    s0: T,
    i: usize,
    range: Range<usize>,
    st: &mut [u8],
) -> ([T; D], usize) {
    let pi = bonds.positions[i];
    let ui: [T; D] = std::array::from_fn(|k| u[D * i + k]);
    let mut f = [T::zero(); D];
    let mut broken = 0;
    let mut start = range.start;
    while start < range.end {
        let m = (range.end - start).min(LANES);
        let lane = gather::<T, D>(bonds, u, &pi, &ui, start, m);
        let (scale, dir, over) = lane_forces::<T, D, LIN>(&lane, s0);
        for l in 0..m {
            let s = &mut st[start - range.start + l];
            if *s == BROKEN {
                continue;
            }
            if *s == INTACT && over[l] {
                *s = BROKEN;
                broken += 1;
                continue;
            }
            for k in 0..D {
                f[k] += scale[l] * dir[k][l];
            }
        }
        start += m;
    }
    (f, broken)
}

/// Bond vectors (`f64` differences rounded to `T`), relative displacements, lengths and
/// weights of bonds `start..start + m`. Unused lanes hold a unit bond at rest with weight 0.
#[inline(always)]
fn gather<T: Real, const D: usize>(
    bonds: &PmbBonds<T>,
    u: &[T],
    pi: &[f64; 3],
    ui: &[T; D],
    start: usize,
    m: usize,
) -> Lane<T, D> {
    let mut lane = Lane {
        xi: [[T::zero(); LANES]; D],
        eta: [[T::zero(); LANES]; D],
        length: [T::one(); LANES],
        weight: [T::zero(); LANES],
    };
    lane.xi[0] = [T::one(); LANES];
    let nb = &bonds.neighbors[start..start + m];
    for (l, &j) in nb.iter().enumerate() {
        let j = j as usize;
        let pj = &bonds.positions[j];
        let uj = &u[D * j..D * j + D];
        for k in 0..D {
            lane.xi[k][l] = T::of(pj[k] - pi[k]);
            lane.eta[k][l] = uj[k] - ui[k];
        }
    }
    lane.length[..m].copy_from_slice(&bonds.length[start..start + m]);
    lane.weight[..m].copy_from_slice(&bonds.weight[start..start + m]);
    lane
}

/// Per bond of a lane: the force scale, the direction it multiplies and whether the stretch
/// exceeds `s0`. The operations are those of `laws::stretch` and `laws::extension`.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn lane_forces<T: Real, const D: usize, const LIN: bool>(
    lane: &Lane<T, D>,
    s0: T,
) -> ([T; LANES], [[T; LANES]; D], [bool; LANES]) {
    let mut scale = [T::zero(); LANES];
    let mut dir = [[T::zero(); LANES]; D];
    let mut over = [false; LANES];
    let (xi, eta) = (&lane.xi, &lane.eta);
    for l in 0..LANES {
        let x = lane.length[l];
        if LIN {
            // s = (n . eta) / x, force along xi
            let mut dot = xi[0][l] * eta[0][l];
            for k in 1..D {
                dot += xi[k][l] * eta[k][l];
            }
            let s = dot / x / x;
            scale[l] = lane.weight[l] * s / x;
            over[l] = s > s0;
            for k in 0..D {
                dir[k][l] = xi[k][l];
            }
        } else {
            // y = xi + eta; s = eta . (2 xi + eta) / (x (|y| + x)); force along y
            let two = T::one() + T::one();
            let mut y2 = T::zero();
            let mut num = T::zero();
            for k in 0..D {
                let y = xi[k][l] + eta[k][l];
                let w = two * xi[k][l] + eta[k][l];
                if k == 0 {
                    y2 = y * y;
                    num = eta[k][l] * w;
                } else {
                    y2 += y * y;
                    num += eta[k][l] * w;
                }
                dir[k][l] = y;
            }
            let ly = y2.sqrt();
            let s = num / (x * (ly + x));
            scale[l] = lane.weight[l] * s / ly;
            over[l] = s > s0;
        }
    }
    (scale, dir, over)
}
