//! The PMB bond loop of the CPU loop backend: force density of every node with the bond-break
//! check fused in, in one pass over the bonds (`theory.md` section 2).
//!
//! Per node, three short loops over its family: (1) gather the bond vectors `xi` and relative
//! displacements `eta` as 4-wide records (each node's position and displacement are kept
//! padded to four components in one 64-byte [`NodeRecord`], so a neighbour costs one cache
//! line, two vector loads and two subtractions); (2) compute the stretch
//! and the force term of every bond in straight-line code the compiler vectorizes across
//! bonds; (3) walk the bonds in CSR order, break the over-stretched ones and add the others'
//! terms. The arithmetic per bond is that of [`crate::material::laws`] (same operations in
//! the same order, no fused multiply-add), and every node sums its own bonds in CSR order,
//! so results are bitwise those of a plain loop, on any machine and at any thread count.
//!
//! The same code is also compiled with AVX2 and with AVX-512 enabled, and the best build the
//! CPU supports is chosen at run time (IEEE arithmetic without contraction into fused
//! multiply-adds gives the same bits in every build).
//!
//! Units: displacement m, force density N/m^3.

use super::blocks::par_node_blocks_with;
use super::pmb_slots::SlotTable;
use crate::material::laws::pmb;
use crate::Real;
use std::ops::Range;

pub use super::status::{BROKEN, INTACT, KEPT};

/// A node's vector padded to four components (unused ones zero).
pub type Quad<T> = [T; 4];

/// What the bond loop reads of a neighbour, in one cache line: its reference position and
/// its current displacement, both padded.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub struct NodeRecord<T> {
    pub position: Quad<f64>,
    pub displacement: Quad<T>,
}

/// What the PMB loop reads besides the displacement.
pub struct PmbBonds<'a, T> {
    pub offsets: &'a [usize],
    pub neighbors: &'a [u32],
    /// Reference bond length `|xi|` per bond (computed in f64, rounded to `T`).
    pub length: &'a [T],
    /// Per-bond weight `c lambda beta V_j`.
    pub weight: &'a [T],
    /// Linearized PMB (`s = n . eta / x`, force along `xi`) instead of the nonlinear law.
    pub linearized: bool,
    /// The lattice's slot table (its displacement staged): runs of nodes that share a slot
    /// list are evaluated by it, [`super::pmb_slots::LANES`] at a time, bitwise as here.
    pub slots: Option<&'a SlotTable<T>>,
}

/// Node records for reference positions `positions` (displacements zero).
pub fn node_records<T: Real>(positions: &[[f64; 3]]) -> Vec<NodeRecord<T>> {
    positions
        .iter()
        .map(|x| NodeRecord {
            position: [x[0], x[1], x[2], 0.0],
            displacement: [T::zero(); 4],
        })
        .collect()
}

/// Copy the node-major displacement `u` (`dim` per node) into the node records.
pub fn stage_displacement<T: Real>(u: &[T], dim: usize, recs: &mut [NodeRecord<T>]) {
    use rayon::prelude::*;
    recs.par_iter_mut()
        .zip(u.par_chunks(dim))
        .for_each(|(q, v)| q.displacement[..dim].copy_from_slice(v));
}

/// Force density of every node into `force` (`dim` per node, overwritten) at the padded
/// displacement `u` (unread, and may be empty, where `bonds.slots` is given: the slot table
/// has its own copy), by the build of the loop for `simd` ([`Simd::detect`]: the best this
/// CPU has; every build gives the same bits). Before its force is added, every `INTACT` bond
/// whose stretch exceeds `s0` is marked `BROKEN` in `status` (pass `s0 = +inf` to break
/// none). Returns the number of bonds broken.
pub fn forces_and_breaks<T: Real>(
    simd: Simd,
    bonds: &PmbBonds<T>,
    dim: usize,
    recs: &[NodeRecord<T>],
    s0: T,
    status: &mut [u8],
    force: &mut [T],
) -> usize {
    // (later variants need less of the CPU)
    let simd = simd.max(Simd::detect());
    let n = bonds.offsets.len() - 1;
    assert!(force.len() == dim * n && (bonds.slots.is_some() || recs.len() == n));
    assert!(status.len() == bonds.length.len() && bonds.weight.len() == bonds.length.len());
    let pass = Pass { bonds, recs, s0 };
    par_node_blocks_with(bonds.offsets, status, force, dim, |nodes, status, force| {
        let b = Block {
            nodes,
            status,
            force,
        };
        match (dim, bonds.linearized) {
            (2, false) => block::<T, 2, false>(simd, pass, b),
            (2, true) => block::<T, 2, true>(simd, pass, b),
            (_, false) => block::<T, 3, false>(simd, pass, b),
            (_, true) => block::<T, 3, true>(simd, pass, b),
        }
    })
}

/// What every block of one pass reads: the bonds, the padded node records and the stretch
/// past which a bond breaks.
#[derive(Clone, Copy)]
struct Pass<'a, T> {
    bonds: &'a PmbBonds<'a, T>,
    recs: &'a [NodeRecord<T>],
    s0: T,
}

/// One block of consecutive nodes: their bonds' status (from `offsets[nodes.start]`) and
/// their `D` force components each.
struct Block<'a, T> {
    nodes: Range<usize>,
    status: &'a mut [u8],
    force: &'a mut [T],
}

/// The instruction sets the bond loop is compiled for, best first (a build is only ever run
/// where the CPU has it: [`forces_and_breaks`] takes the lesser of the one asked for and
/// [`Simd::detect`]).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Simd {
    Avx512,
    Avx2,
    Baseline,
}

impl Simd {
    /// The best build this CPU runs.
    #[cfg(target_arch = "x86_64")]
    pub fn detect() -> Simd {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw") {
            Simd::Avx512
        } else if has!("avx2") {
            Simd::Avx2
        } else {
            Simd::Baseline
        }
    }

    /// The best build this CPU runs.
    #[cfg(not(target_arch = "x86_64"))]
    pub fn detect() -> Simd {
        Simd::Baseline
    }
}

/// One block of consecutive nodes, with the build of the loop for `simd`.
fn block<T: Real, const D: usize, const LIN: bool>(simd: Simd, p: Pass<T>, b: Block<T>) -> usize {
    #[cfg(target_arch = "x86_64")]
    match simd {
        // SAFETY: the CPU supports these instruction sets (checked by `Simd::detect`).
        Simd::Avx512 => unsafe { return block_avx512::<T, D, LIN>(p, b) },
        // SAFETY: as above.
        Simd::Avx2 => unsafe { return block_avx2::<T, D, LIN>(p, b) },
        Simd::Baseline => {}
    }
    let _ = simd;
    block_body::<T, D, LIN>(p, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2")]
unsafe fn block_avx512<T: Real, const D: usize, const LIN: bool>(p: Pass<T>, b: Block<T>) -> usize {
    block_body::<T, D, LIN>(p, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn block_avx2<T: Real, const D: usize, const LIN: bool>(p: Pass<T>, b: Block<T>) -> usize {
    block_body::<T, D, LIN>(p, b)
}

/// The nodes of block `b`, one after another.
#[inline(always)]
fn block_body<T: Real, const D: usize, const LIN: bool>(p: Pass<T>, b: Block<T>) -> usize {
    let (
        Pass { bonds, recs, s0 },
        Block {
            nodes,
            status,
            force,
        },
    ) = (p, b);
    let base = bonds.offsets[nodes.start];
    let first = nodes.start;
    let mut scratch = Scratch::<T>::default();
    let mut broken = 0;
    let mut i = nodes.start;
    while i < nodes.end {
        let range = bonds.offsets[i]..bonds.offsets[i + 1];
        #[cfg(target_arch = "x86_64")]
        if let Some(t) = bonds.slots {
            let (st, x, f) = (
                &mut status[range.start - base..],
                &bonds.length[range.start..],
                &mut force[D * (i - first)..],
            );
            let count = super::pmb_slots::LANES.min(nodes.end - i);
            let offsets = &bonds.offsets[i..=i + count];
            // SAFETY: a slot table exists only where the CPU has AVX-512 (`SlotTable::build`).
            broken += unsafe { t.lanes::<D, LIN>(i, offsets, s0, st, x, f) };
            i += count;
            continue;
        }
        let st = &mut status[range.start - base..range.end - base];
        let (f, b) = node::<T, D, LIN>(bonds, recs, s0, i, range, st, &mut scratch);
        force[D * (i - first)..D * (i - first + 1)].copy_from_slice(&f[..D]);
        broken += b;
        i += 1;
    }
    broken
}

/// One family: bond vectors and relative displacements in, force terms and over-stretched
/// flags out, one padded record per bond.
#[derive(Default)]
struct Scratch<T> {
    xi: Vec<Quad<T>>,
    eta: Vec<Quad<T>>,
    term: Vec<Quad<T>>,
    over: Vec<bool>,
}

/// Force density on node `i` from its bonds `range` (status `st`), and the bonds it broke.
#[inline(always)]
fn node<T: Real, const D: usize, const LIN: bool>(
    bonds: &PmbBonds<T>,
    recs: &[NodeRecord<T>],
    s0: T,
    i: usize,
    range: Range<usize>,
    st: &mut [u8],
    sc: &mut Scratch<T>,
) -> (Quad<T>, usize) {
    let len = range.len();
    let zero = [T::zero(); 4];
    sc.xi.resize(len, zero);
    sc.eta.resize(len, zero);
    sc.term.resize(len, zero);
    sc.over.resize(len, false);
    gather(bonds, recs, i, range.clone(), &mut sc.xi, &mut sc.eta);
    let (length, weight) = (&bonds.length[range.clone()], &bonds.weight[range]);
    let (xi, eta) = (&sc.xi[..len], &sc.eta[..len]);
    terms::<T, D, LIN>(xi, eta, length, weight, s0, &mut sc.term, &mut sc.over);
    let (term, over, st) = (&sc.term[..len], &sc.over[..len], &mut st[..len]);
    let mut f = zero;
    let mut broken = 0;
    for l in 0..len {
        let s = &mut st[l];
        if *s == BROKEN {
            continue;
        }
        if *s == INTACT && over[l] {
            *s = BROKEN;
            broken += 1;
            continue;
        }
        for k in 0..4 {
            f[k] += term[l][k];
        }
    }
    (f, broken)
}

/// Bond vectors (`f64` differences rounded to `T`) and relative displacements of the bonds
/// `range` of node `i`, as padded records.
#[inline(always)]
fn gather<T: Real>(
    bonds: &PmbBonds<T>,
    recs: &[NodeRecord<T>],
    i: usize,
    range: Range<usize>,
    xi: &mut [Quad<T>],
    eta: &mut [Quad<T>],
) {
    let nb = &bonds.neighbors[range];
    let len = nb.len();
    let (xi, eta) = (&mut xi[..len], &mut eta[..len]);
    let (pi, ui) = (recs[i].position, recs[i].displacement);
    for l in 0..len {
        let j = nb[l] as usize;
        let (pj, uj) = (&recs[j].position, &recs[j].displacement);
        for k in 0..4 {
            xi[l][k] = T::of(pj[k] - pi[k]);
            eta[l][k] = uj[k] - ui[k];
        }
    }
}

/// Per bond: the force term `scale * direction` and whether the stretch exceeds `s0`, by the
/// law's own formulas (`laws::pmb::linearized_term`, `nonlinear_term`) from the dot products
/// taken here over the bond's `D` components (the padding component only ever adds zeros
/// to itself); a stretch within `pmb::Band` of `s0` is decided by the criterion's own
/// stretch (`pmb::linearized_stretch`, `laws::stretch_of`), in a second loop over the bonds
/// run only where one is.
#[inline(always)]
fn terms<T: Real, const D: usize, const LIN: bool>(
    xi: &[Quad<T>],
    eta: &[Quad<T>],
    length: &[T],
    weight: &[T],
    s0: T,
    term: &mut [Quad<T>],
    over: &mut [bool],
) {
    let len = length.len();
    let (xi, eta, weight) = (&xi[..len], &eta[..len], &weight[..len]);
    let (term, over) = (&mut term[..len], &mut over[..len]);
    let band = pmb::Band::around(s0);
    let mut near = false;
    for l in 0..len {
        let (s, scale, dir) = bond::<T, D, LIN>(&xi[l], &eta[l], length[l], weight[l]);
        over[l] = s > s0;
        near |= band.holds(s);
        for k in 0..4 {
            term[l][k] = scale * dir[k];
        }
    }
    if near {
        for l in 0..len {
            let (s, _, _) = bond::<T, D, LIN>(&xi[l], &eta[l], length[l], weight[l]);
            if band.holds(s) {
                over[l] = criterion::<T, D, LIN>(&xi[l], &eta[l], length[l]) > s0;
            }
        }
    }
}

/// Dot products of the bond vector `a` and relative displacement `e` over `D` components:
/// `a . e`, `e . (2 a + e)` and `|a + e|^2`, and `y = a + e`.
#[inline(always)]
fn dots<T: Real, const D: usize>(a: &Quad<T>, e: &Quad<T>) -> (T, T, T, Quad<T>) {
    let two = T::one() + T::one();
    let y: Quad<T> = std::array::from_fn(|k| a[k] + e[k]);
    let mut dot = a[0] * e[0];
    let mut y2 = y[0] * y[0];
    let mut num = e[0] * (two * a[0] + e[0]);
    for k in 1..D {
        dot += a[k] * e[k];
        y2 += y[k] * y[k];
        num += e[k] * (two * a[k] + e[k]);
    }
    (dot, num, y2, y)
}

/// One bond of length `x` and weight `w`: its stretch (one-division form), the scale of
/// its force term and the term's direction.
#[inline(always)]
fn bond<T: Real, const D: usize, const LIN: bool>(
    a: &Quad<T>,
    e: &Quad<T>,
    x: T,
    w: T,
) -> (T, T, Quad<T>) {
    let (dot, num, y2, y) = dots::<T, D>(a, e);
    if LIN {
        // s = (n . eta) / x, force along xi
        let (s, scale) = pmb::linearized_term(dot, x, w);
        (s, scale, *a)
    } else {
        // y = xi + eta; s = eta . (2 xi + eta) / (x (|y| + x)); force along y
        let (s, scale) = pmb::nonlinear_term(num, y2, x, w);
        (s, scale, y)
    }
}

/// The criterion's stretch of one bond of length `x` (`pmb::criterion_stretch`'s
/// arithmetic).
#[inline(always)]
fn criterion<T: Real, const D: usize, const LIN: bool>(a: &Quad<T>, e: &Quad<T>, x: T) -> T {
    let (dot, num, y2, _) = dots::<T, D>(a, e);
    match LIN {
        true => pmb::linearized_stretch(dot, x),
        false => crate::material::laws::stretch_of(num, y2, x).0,
    }
}

#[cfg(test)]
mod tests {
    //! Every build of the loop (baseline, AVX2, AVX-512, where the CPU has them) gives the
    //! same bits: forces, bond status and the count of broken bonds.
    use super::*;
    use crate::material::bonds::bond_length;
    use crate::setup::Problem;

    fn problem(dim: &str, law: &str) -> Problem {
        let text = format!(
            "[material]\nmodel = \"{law}\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
             critical_stretch = 0.004\n[discretization]\ndimension = \"{dim}\"\n\
             thickness = 1e-3\ndx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
             box = [{{ min = [0, 0, 0], max = [0.008, 0.007, 0.006] }}]\n\
             [solver]\nkind = \"explicit\"\nsteps = 1\n"
        );
        let text = if dim == "3d" {
            text.replace("thickness = 1e-3\n", "")
        } else {
            text.replace("[0, 0, 0]", "[0, 0]")
                .replace("[0.008, 0.007, 0.006]", "[0.012, 0.01]")
        };
        let model = crate::model::parse(&text, "test.toml", &[]).expect("valid model");
        Problem::build(model, std::path::Path::new(".")).expect("builds")
    }

    fn run<T: Real>(p: &Problem, simd: Simd) -> (Vec<T>, Vec<u8>, usize) {
        let (n, d) = (p.body.len(), p.dim());
        let fam = &p.families;
        let pos = &p.body.positions;
        let length: Vec<T> = (0..n)
            .flat_map(|i| fam.family(i).iter().map(move |&j| (i, j as usize)))
            .map(|(i, j)| T::of(bond_length(pos, i, j)))
            .collect();
        let weight: Vec<T> = (0..length.len())
            .map(|b| T::of(1.0 + 0.01 * b as f64))
            .collect();
        let mut recs = node_records::<T>(pos);
        // A wavy displacement that stretches some bonds past 0.004.
        let u: Vec<T> = (0..n * d)
            .map(|k| T::of(4e-6 * ((k as f64 * 0.37).sin() + (k as f64 * 0.11).cos())))
            .collect();
        stage_displacement(&u, d, &mut recs);
        let mut status: Vec<u8> = (0..length.len()).map(|b| [1, 1, 2, 0][b % 4]).collect();
        let mut force = vec![T::zero(); n * d];
        let linearized = p.material.name() == "pmb-linear";
        let bonds = PmbBonds {
            offsets: &fam.offsets,
            neighbors: &fam.neighbors,
            length: &length,
            weight: &weight,
            linearized,
            slots: None,
        };
        let s0 = T::of(0.004);
        let broken = forces_and_breaks(simd, &bonds, d, &recs, s0, &mut status, &mut force);
        (force, status, broken)
    }

    fn same_bits<T: Real>(p: &Problem) {
        let reference = run::<T>(p, Simd::Baseline);
        assert!(reference.2 > 0, "the displacement breaks bonds");
        let best = Simd::detect();
        for simd in [Simd::Avx2, Simd::Avx512] {
            let supported = matches!((best, simd), (Simd::Avx512, _) | (Simd::Avx2, Simd::Avx2));
            if !supported {
                continue;
            }
            let (f, st, broken) = run::<T>(p, simd);
            assert_eq!(broken, reference.2);
            assert_eq!(st, reference.1);
            let bits = |v: &[T]| v.iter().map(|x| x.f64().to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&f), bits(&reference.0));
        }
    }

    #[test]
    fn every_simd_build_gives_the_same_bits() {
        for dim in ["3d", "plane-stress"] {
            for law in ["pmb", "pmb-linear"] {
                let p = problem(dim, law);
                same_bits::<f64>(&p);
                same_bits::<f32>(&p);
            }
        }
    }
}
