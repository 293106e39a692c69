//! The slot-table form of the PMB bond loop (`pmb_kernel.rs`) for lattices: nodes whose
//! families are the same list of index offsets (`j - i`, one per slot) share one slot list,
//! so a run of consecutive nodes with the same list is evaluated [`LANES`] nodes at a time,
//! one node per vector lane: for slot `l` the neighbours of nodes `i..i + LANES` are the
//! consecutive nodes `i + offset[l]..`, read with plain vector loads from per-component
//! (structure of arrays) positions and displacements, and each lane sums its own node's
//! bonds in slot order in registers.
//!
//! Per bond it reads the status byte and the stored reference length (one masked gather per
//! slot, each lane from its own node's row: a square root fewer per bond than recomputing
//! it, which only an f32 run with partial volumes still does, in f64, as
//! `material::bonds::bond_length`); the neighbour index comes from the slot list, and the
//! weight is recomputed from the positions by the arithmetic that made the stored one (the
//! PMB weight `c lambda beta V_j` with `lambda = 1` and `beta` the partial-volume factor of
//! the length, `material::constants::partial_volume`). The table is only built where that
//! recomputation gives every bond's stored length and weight bit for bit
//! ([`SlotTable::build`] checks each one), and every bond goes through the same operations in
//! the same order as in the per-node loop (`laws::pmb`'s one-division terms), so the forces
//! and the broken bonds are bitwise those of that loop. Nodes outside such runs (a box's
//! faces across the run direction, the ends of a block) take the per-node loop.
//!
//! Units: positions m, volumes m^3 (3D; m^2 times the thickness in 2D), displacement m,
//! force density N/m^3.

use crate::model::PartialVolume;
use crate::setup::Problem;
use crate::Real;
use std::collections::HashMap;

/// Nodes evaluated together, one per vector lane (eight f64: one AVX-512 register).
pub const LANES: usize = 8;

#[path = "pmb_lanes.rs"]
mod lanes;

/// The stencil of a lattice, which slots of it each node's family has, per-component
/// positions and displacements, and what the weight of a bond is recomputed from.
pub struct SlotTable<T> {
    /// The union of all families' index offsets `j - i`, ascending (wrapping `u32`s): every
    /// family is a subsequence of it, in its CSR order.
    stencil: Vec<u32>,
    /// Per node: whether its family is the whole stencil.
    full: Vec<bool>,
    /// Per node: `words` bits, one per stencil slot its family has.
    present: Vec<u64>,
    words: usize,
    /// Node `i`'s entry in the per-node arrays below is `pad + i`; `pad` entries of zeros at
    /// either end let a lane read its slot's node even where its family lacks the slot.
    pad: usize,
    /// Reference positions, one array per component, m.
    position: [Vec<f64>; 3],
    /// Node volumes `V_j`.
    volume: Vec<f64>,
    /// Displacement per component (`dim` arrays, staged at each evaluation).
    displacement: Vec<Vec<T>>,
    /// Micromodulus `c`.
    c: f64,
    /// `beta = 1` up to this length (`delta - dx / 2`; `+inf` without partial volumes).
    full_up_to: f64,
    /// `beta = (edge - x) / dx` clamped to [0, 1] past it, `edge = delta + dx / 2`.
    edge: f64,
    dx: f64,
    /// Whether the CPU has AVX-512 VBMI2 (the lane masks' byte expansion in one load).
    vbmi2: bool,
}

/// Whether the CPU runs the lane kernel (AVX-512 F, VL, DQ and BW).
#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    use std::arch::is_x86_feature_detected as has;
    has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw")
}

/// Whether the CPU runs the lane kernel (never off x86-64).
#[cfg(not(target_arch = "x86_64"))]
fn avx512() -> bool {
    false
}

/// Whether the CPU has AVX-512 VBMI2.
fn vbmi2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return is_x86_feature_detected!("avx512vbmi2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The stencil may hold at most this many slots, and at most twice the largest family (else
/// the families do not share offsets, as on an irregular node set, and lanes would compute
/// mostly absent slots).
const MAX_SLOTS: usize = 1024;

impl<T: Real> SlotTable<T> {
    /// The slot table of `p`'s PMB bonds, or `None` where it would not give the stored
    /// `length` and `weight` of every bond bitwise (several materials, surface correction,
    /// a law other than PMB), where the families do not share index offsets, or where the
    /// CPU lacks AVX-512.
    pub fn build(p: &Problem, length: &[T], weight: &[T]) -> Option<Self> {
        let crate::material::Law::Pmb { c, .. } = p.material.law else {
            return None;
        };
        if !avx512() {
            return None;
        }
        if p.materials.is_some() || p.bonds.correction.is_some() || p.families.nodes() == 0 {
            return None;
        }
        let fam = &p.families;
        let n = fam.nodes();
        let largest = (0..n).map(|i| fam.range(i).len()).max().unwrap_or(0);
        let limit = MAX_SLOTS.min(2 * largest + LANES);
        let mut offsets = std::collections::HashSet::new();
        for i in 0..n {
            for &j in fam.family(i) {
                if offsets.insert(j as i64 - i as i64) && offsets.len() > limit {
                    return None;
                }
            }
        }
        let mut stencil: Vec<i64> = offsets.into_iter().collect();
        stencil.sort_unstable();
        let slot_of: HashMap<i64, usize> =
            stencil.iter().enumerate().map(|(l, &o)| (o, l)).collect();
        let words = stencil.len().div_ceil(64);
        let mut present = vec![0u64; n * words];
        for (i, bits) in present.chunks_mut(words.max(1)).enumerate().take(n) {
            let mut last = None;
            for &j in fam.family(i) {
                let l = slot_of[&(j as i64 - i as i64)];
                // (a lane sums its bonds in stencil order: the family's order must be it,
                // as where families are sorted by neighbour index; a subdomain's local
                // numbering need not be)
                if last.is_some_and(|k| k >= l) {
                    return None;
                }
                last = Some(l);
                bits[l / 64] |= 1 << (l % 64);
            }
        }
        let pad = stencil
            .iter()
            .map(|o| o.unsigned_abs() as usize)
            .max()
            .unwrap_or(0)
            + LANES;
        let padded = |v: &mut dyn Iterator<Item = f64>| -> Vec<f64> {
            let mut out = vec![0.0; pad];
            out.extend(v);
            out.resize(pad + n + pad, 0.0);
            out
        };
        let (delta, dx) = (p.body.delta, p.body.dx);
        let full_up_to = match p.model.discretization.partial_volume {
            PartialVolume::None => f64::INFINITY,
            PartialVolume::Linear | PartialVolume::LinearTruncated => delta - 0.5 * dx,
        };
        let pos = &p.body.positions;
        let table = SlotTable {
            full: (0..n)
                .map(|i| fam.range(i).len() == stencil.len())
                .collect(),
            stencil: stencil.iter().map(|&o| o as i32 as u32).collect(),
            present,
            words,
            pad,
            position: std::array::from_fn(|k| padded(&mut pos.iter().map(|x| x[k]))),
            volume: padded(&mut p.body.volumes.iter().copied()),
            displacement: vec![vec![T::zero(); pad + n + pad]; p.dim()],
            c,
            full_up_to,
            edge: delta + 0.5 * dx,
            dx,
            vbmi2: vbmi2(),
        };
        let same = fam.per_bond(|i, b, j| {
            let (x, w) = table.length_and_weight(i, j);
            let bits = |v: T| v.f64().to_bits();
            bits(T::of(x)) == bits(length[b]) && bits(T::of(w)) == bits(weight[b])
        });
        same.iter().all(|&s| s).then_some(table)
    }

    /// Reference length of bond `i -> j` and its weight, in f64, by the kernel's arithmetic.
    fn length_and_weight(&self, i: usize, j: usize) -> (f64, f64) {
        let (p, i, j) = (&self.position, self.pad + i, self.pad + j);
        let d: [f64; 3] = std::array::from_fn(|k| p[k][j] - p[k][i]);
        let x = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
        (x, self.c * (self.beta(x) * self.volume[j]))
    }

    /// Partial-volume factor of a bond of length `x`.
    #[inline(always)]
    fn beta(&self, x: f64) -> f64 {
        if x <= self.full_up_to {
            1.0
        } else {
            ((self.edge - x) / self.dx).clamp(0.0, 1.0)
        }
    }

    /// Copy the node-major displacement `u` (`dim` per node) into the per-component arrays.
    pub fn stage_displacement(&mut self, u: &[T]) {
        use rayon::prelude::*;
        let (d, pad) = (self.displacement.len(), self.pad);
        for (k, comp) in self.displacement.iter_mut().enumerate() {
            let n = comp.len() - 2 * pad;
            comp[pad..pad + n]
                .par_iter_mut()
                .zip(u.par_chunks(d))
                .for_each(|(c, v)| *c = v[k]);
        }
    }

    /// Force density on the `offsets.len() - 1` (1 to [`LANES`]) nodes from `i0`, written
    /// into `force` (`D` per node from node `i0`); `status` and `length` (the stored
    /// reference lengths) hold their bonds from the first, in CSR order, node `i0 + w`'s
    /// from `offsets[w] - offsets[0]` (`offsets` the CSR offsets from node `i0`). Every
    /// `INTACT` bond whose stretch exceeds `s0` is marked `BROKEN` before its force is added.
    /// Returns the bonds broken.
    ///
    /// # Safety
    /// The CPU has AVX-512 (F, VL, DQ, BW): [`SlotTable::build`] makes a table only where it
    /// has.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    pub unsafe fn lanes<const D: usize, const LIN: bool>(
        &self,
        i0: usize,
        offsets: &[usize],
        s0: T,
        status: &mut [u8],
        length: &[T],
        force: &mut [T],
    ) -> usize {
        use std::any::TypeId;
        let count = offsets.len() - 1;
        assert!((1..=LANES).contains(&count), "1 to {LANES} nodes");
        // (lanes past the last node have no bonds)
        let rows: [usize; LANES + 1] = std::array::from_fn(|w| offsets[w.min(count)] - offsets[0]);
        // (`T` is f64 or f32: the casts below are to the type itself)
        if TypeId::of::<T>() == TypeId::of::<f64>() {
            let t = &*(self as *const Self as *const SlotTable<f64>);
            let x = &*(length as *const [T] as *const [f64]);
            let f = &mut *(force as *mut [T] as *mut [f64]);
            lanes::kernel::<f64, D, LIN>(t, i0, count, &rows, s0.f64(), status, x, f)
        } else {
            let t = &*(self as *const Self as *const SlotTable<f32>);
            let x = &*(length as *const [T] as *const [f32]);
            let f = &mut *(force as *mut [T] as *mut [f32]);
            let s0 = s0.f64() as f32;
            lanes::kernel::<f32, D, LIN>(t, i0, count, &rows, s0, status, x, f)
        }
    }

    /// Whether the lanes read each bond's stored length (all but an f32 run with partial
    /// volumes, which recomputes it in f64 for the partial-volume factor).
    pub fn reads_length(&self) -> bool {
        std::mem::size_of::<T>() == 8 || !self.full_up_to.is_finite()
    }

    /// Nodes whose family is the whole stencil (the rest have lanes that skip slots).
    pub fn full_nodes(&self) -> usize {
        self.full.iter().filter(|&&f| f).count()
    }

    /// Host bytes of the table: the stencil, the per-node slot bits and flags, and the
    /// padded positions, volumes and displacement.
    pub fn memory_bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let padded = self.volume.len();
        4 * self.stencil.len()
            + 8 * self.present.len()
            + self.full.len()
            + padded * (3 * 8 + 8 + self.displacement.len() * t)
    }
}

#[cfg(test)]
mod tests {
    //! The slot-table form gives the per-node loop's bits: forces, bond status and the count
    //! of broken bonds, in 3D and 2D, nonlinear and linearized, with and without partial
    //! volumes (whose weights it recomputes by a division near the horizon).
    use super::*;
    use crate::backend::coefficients::bond_weight;
    use crate::backend::cpu::pmb_kernel::{
        forces_and_breaks, node_records, stage_displacement, PmbBonds, Simd,
    };
    use crate::material::bonds::bond_length;

    fn problem(dim: &str, law: &str, pv: &str) -> Problem {
        // (cell-centred: 23 x 9 x 9 nodes, a few with the whole stencil, most near a face, and
        // the last block's nodes not a whole number of lane groups)
        let max = match dim {
            "3d" => "[0.023, 0.009, 0.009]",
            _ => "[0.023, 0.012]",
        };
        let min = if dim == "3d" { "[0, 0, 0]" } else { "[0, 0]" };
        let thickness = if dim == "3d" {
            ""
        } else {
            "thickness = 1e-3\n"
        };
        let text = format!(
            "[material]\nmodel = \"{law}\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
             critical_stretch = 0.004\n[discretization]\ndimension = \"{dim}\"\n{thickness}\
             dx = 1e-3\nhorizon_factor = 3.015\npartial_volume = \"{pv}\"\n[geometry]\n\
             box = [{{ min = {min}, max = {max} }}]\n[solver]\nkind = \"explicit\"\nsteps = 1\n"
        );
        let model = crate::model::parse(&text, "test.toml", &[]).expect("valid model");
        Problem::build(model, std::path::Path::new(".")).expect("builds")
    }

    /// A wavy displacement that stretches some bonds past 0.004 (`uniform`: a uniform
    /// strain 0.008 along x instead, under which the linearized stretch of every bond at 45
    /// degrees to x is 0.004 to round-off, where the one-division stretch is too close to
    /// decide and the criterion's own decides).
    fn field<T: Real>(p: &Problem, uniform: bool) -> Vec<T> {
        let (n, d) = (p.body.len(), p.dim());
        (0..n * d)
            .map(|k| match uniform {
                true => T::of(if k % d == 0 {
                    0.008 * p.body.positions[k / d][0]
                } else {
                    0.0
                }),
                false => T::of(4e-6 * ((k as f64 * 0.37).sin() + (k as f64 * 0.11).cos())),
            })
            .collect()
    }

    fn run<T: Real>(
        p: &Problem,
        table: Option<&mut SlotTable<T>>,
        u: &[T],
    ) -> (Vec<T>, Vec<u8>, usize) {
        let (n, d) = (p.body.len(), p.dim());
        let (fam, pos) = (&p.families, &p.body.positions);
        let length = fam.per_bond(|i, _, j| T::of(bond_length(pos, i, j)));
        let weight = fam.per_bond(|i, b, j| T::of(bond_weight(p, b, i, j, bond_length(pos, i, j))));
        let mut recs = node_records::<T>(pos);
        stage_displacement(u, d, &mut recs);
        let slots = table.map(|t| {
            t.stage_displacement(u);
            &*t
        });
        let mut status: Vec<u8> = (0..length.len()).map(|b| [1, 1, 2, 0][b % 4]).collect();
        let mut force = vec![T::zero(); n * d];
        let bonds = PmbBonds {
            offsets: &fam.offsets,
            neighbors: &fam.neighbors,
            length: &length,
            weight: &weight,
            linearized: p.material.name() == "pmb-linear",
            slots,
        };
        let s0 = T::of(0.004);
        let broken = forces_and_breaks(
            Simd::detect(),
            &bonds,
            d,
            &recs,
            s0,
            &mut status,
            &mut force,
        );
        (force, status, broken)
    }

    fn same_bits<T: Real>(p: &Problem) {
        let (fam, pos) = (&p.families, &p.body.positions);
        let length = fam.per_bond(|i, _, j| T::of(bond_length(pos, i, j)));
        let weight = fam.per_bond(|i, b, j| T::of(bond_weight(p, b, i, j, bond_length(pos, i, j))));
        let mut table = SlotTable::build(p, &length, &weight).expect("a lattice's slot table");
        let full = table.full_nodes();
        assert!(
            full > 0 && full < p.body.len(),
            "{full} nodes with the whole stencil"
        );
        // (the lane masks with VBMI2 where the CPU has it, and without)
        let expand = [table.vbmi2, false];
        for (uniform, vbmi2) in [false, true]
            .into_iter()
            .flat_map(|u| expand.map(|v| (u, v)))
        {
            table.vbmi2 = vbmi2;
            let u = field::<T>(p, uniform);
            let reference = run::<T>(p, None, &u);
            assert!(reference.2 > 0, "the displacement breaks bonds");
            let (f, st, broken) = run::<T>(p, Some(&mut table), &u);
            assert_eq!(broken, reference.2);
            assert_eq!(st, reference.1);
            let bits = |v: &[T]| v.iter().map(|x| x.f64().to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&f), bits(&reference.0));
            assert_eq!(
                st,
                criterion_breaks(p, &u),
                "the criterion's own stretch decides"
            );
        }
    }

    /// The status after one pass from the test's initial status: every `INTACT` bond whose
    /// criterion stretch (`pmb::criterion_stretch`, as a breaking pass takes it) exceeds
    /// 0.004 broken.
    fn criterion_breaks<T: Real>(p: &Problem, u: &[T]) -> Vec<u8> {
        use crate::backend::cpu::pmb_kernel::{BROKEN, INTACT};
        let (fam, pos, d) = (&p.families, &p.body.positions, p.dim());
        let linearized = p.material.name() == "pmb-linear";
        fam.per_bond(|i, b, j| {
            let status = [1, 1, 2, 0][b % 4];
            let xi: [T; 3] = std::array::from_fn(|k| T::of(pos[j][k] - pos[i][k]));
            let eta: [T; 3] = std::array::from_fn(|k| {
                if k < d {
                    u[d * j + k] - u[d * i + k]
                } else {
                    T::zero()
                }
            });
            let x = T::of(bond_length(pos, i, j));
            let s = crate::material::laws::pmb::criterion_stretch(linearized, &xi, &eta, x);
            match status == INTACT && s > T::of(0.004) {
                true => BROKEN,
                false => status,
            }
        })
    }

    #[test]
    fn slot_table_gives_the_per_node_loops_bits() {
        for dim in ["3d", "plane-stress"] {
            for law in ["pmb", "pmb-linear"] {
                for pv in ["none", "linear"] {
                    let p = problem(dim, law, pv);
                    same_bits::<f64>(&p);
                    same_bits::<f32>(&p);
                }
            }
        }
    }

    #[test]
    fn no_table_where_the_weights_are_not_recomputed() {
        // surface correction: per-bond factors the table does not hold
        let text = problem("3d", "pmb", "none").model;
        let mut model = text.clone();
        model.material.surface_correction = true;
        let p = Problem::build(model, std::path::Path::new(".")).expect("builds");
        let w = vec![1.0f64; p.families.bonds()];
        assert!(SlotTable::<f64>::build(&p, &w, &w).is_none());
    }
}
