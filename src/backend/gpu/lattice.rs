//! `gpu-loop` without a neighbour list, for a body that is a full box lattice.
//!
//! Where every lattice point of the body's bounding box is a node, the family of node `i` is
//! `i + o_k` over one stencil of node offsets `o_k`, less the slots that leave the box
//! (`neighbors/stencil.rs` owns the stencil). The device then stores no neighbour index:
//! every node has the stencil's `K` slots in the sliced order (`gpu/layout.rs`, all families `K` long), a slot
//! outside the box is a bond whose status bit is 0 from the start, and the kernels take the
//! neighbour of slot offset `32 m` from `stencil[32 m]` (`kernels/common.cuh`, `BondWalk`).
//! A bond then costs one status bit instead of a 4-byte index and a bit, and its gathers no
//! longer wait on an index load.
//!
//! [`Stencil::of`] decides: the positions must be the box lattice in fill order, and the
//! stencil (the lattice steps within the family radius by the families' own predicate) must
//! give every node its family: checked bond by bond against stored families, and by family
//! size for a lean problem (whose families are not stored).
//!
//! Units: m (positions, `dx`).

use crate::geometry::Body;
use crate::gpu::layout::{SlicedLayout, SLICE};
use crate::material::constants::family_radius;
use crate::model::Model;
use crate::neighbors::Families;
use crate::setup::Problem;
use crate::Real;
use rayon::prelude::*;

pub use crate::neighbors::Stencil;

impl Stencil {
    /// The stencil of `problem` where its body is a full box lattice whose families the
    /// stencil reproduces; `None` otherwise (point clouds, removed shapes, several boxes
    /// that leave gaps).
    pub fn of(problem: &Problem) -> Option<Stencil> {
        let stencil = Stencil::of_body(&problem.model, &problem.body)?;
        stencil.reproduces(problem).then_some(stencil)
    }

    /// The stencil of `body`'s families where it is a full box lattice in fill order
    /// ([`Stencil::of_lattice`]), before any family is known: what [`Stencil::of`] then
    /// checks against the families. A run on `gpu-loop` asks it to set such a body up lean
    /// (no family held on the host).
    pub fn of_body(model: &Model, body: &Body) -> Option<Stencil> {
        let radius = family_radius(model.discretization.partial_volume, body.delta, body.dx);
        Stencil::of_lattice(body, radius)
    }

    /// The bond geometry of each slot as `kernels/bonds.cuh`'s `SlotGeometry` reads it, 8
    /// values a slot in the kernel's precision `T`: the bond vector `xi = step dx` (m), its
    /// length and inverse length (computed in f64, rounded once), and the slot's node offset
    /// as the bits of a 32- or 64-bit integer (`offset_bits`; the kernel reads them back
    /// without a conversion); `None` where an offset exceeds `2^24`.
    pub fn slot_geometry<T: Real>(&self, dx: f64) -> Option<Vec<T>> {
        if self.offsets.iter().any(|o| o.unsigned_abs() > 1 << 24) {
            return None;
        }
        let mut out = Vec::with_capacity(8 * self.slots());
        for slot in self.slot_bonds::<T>(dx) {
            out.extend(slot.xi);
            out.extend([slot.x, slot.rx, offset_bits(slot.offset)]);
            out.extend([T::zero(), T::zero()]);
        }
        Some(out)
    }

    /// Each slot's bond in the kernels' precision `T`, in slot order: the bond vector
    /// `xi = step dx` (m), its length and inverse length computed in f64 and rounded once,
    /// and the node offset. What the slot table holds and the baked loop compiles in.
    pub fn slot_bonds<T: Real>(&self, dx: f64) -> impl Iterator<Item = SlotBond<T>> + '_ {
        self.steps
            .iter()
            .zip(&self.offsets)
            .map(move |(step, &offset)| {
                let xi = step.map(|s| s as f64 * dx);
                let x = (xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]).sqrt();
                SlotBond {
                    xi: xi.map(T::of),
                    x: T::of(x),
                    rx: T::of(1.0 / x),
                    offset,
                }
            })
    }

    /// Whether every node's family is its present slots: bond by bond for stored families,
    /// by size for a lean problem.
    fn reproduces(&self, problem: &Problem) -> bool {
        let f = &problem.families;
        (0..problem.body.len()).into_par_iter().all(|i| {
            let present = (0..self.slots()).filter_map(|k| self.neighbor(i, k));
            if problem.bonds_stored {
                present.eq(f.family(i).iter().map(|&j| j as usize))
            } else {
                present.count() == f.range(i).len()
            }
        })
    }

    /// The sliced order of `n` nodes with every family [`slots`](Self::slots) long.
    pub fn layout(&self, n: usize) -> SlicedLayout {
        SlicedLayout::uniform(n, self.slots())
    }

    /// What the kernels read as `stencil`: the node offset of slot `m` at index `32 m`.
    pub fn device_offsets(&self) -> Vec<i32> {
        let mut out = vec![0i32; SLICE * self.slots().max(1)];
        for (m, &o) in self.offsets.iter().enumerate() {
            out[SLICE * m] = o as i32;
        }
        out
    }

    /// The initial status bits of `problem` in this stencil's sliced order (`layout`): slot
    /// `k` of node `i` is bit `i % 32` of word `(i / 32) K + k`, set where the slot is in the
    /// box and its bond intact (stored: `initial_mu`; lean: tested against the pre-cracks near
    /// them).
    pub fn status_words(&self, problem: &Problem) -> Vec<u32> {
        let (n, k) = (problem.body.len(), self.slots());
        let zone = problem.precrack_zone();
        let mut words = vec![0u32; n.div_ceil(SLICE) * k];
        words
            .par_chunks_mut(k.max(1))
            .enumerate()
            .for_each(|(s, slice)| {
                for i in s * SLICE..((s + 1) * SLICE).min(n) {
                    let bit = 1u32 << (i % SLICE);
                    let mut m = problem.families.offsets[i];
                    let test = !problem.bonds_stored && zone.near(&problem.body.positions[i]);
                    self.for_each_slot(i, |slot, j| {
                        let intact = match problem.bonds_stored {
                            true => problem.initial_mu[m] != 0,
                            false => !test || problem.initially_intact(i, j),
                        };
                        m += 1;
                        if intact {
                            slice[slot] |= bit;
                        }
                    });
                }
            });
        words
    }

    /// Status per directed bond (CSR order of `families`, 1 intact) from the device's bits.
    pub fn to_csr(&self, words: &[u32], families: &Families) -> Vec<u8> {
        let k = self.slots();
        let n = families.nodes();
        (0..n)
            .into_par_iter()
            .flat_map_iter(|i| {
                let lane = i % SLICE;
                (0..k)
                    .filter(move |&slot| self.neighbor(i, slot).is_some())
                    .map(move |slot| ((words[(i / SLICE) * k + slot] >> lane) & 1) as u8)
            })
            .collect()
    }
}

/// One stencil slot's bond as the kernels read it ([`Stencil::slot_bonds`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlotBond<T> {
    /// Bond vector, m.
    pub xi: [T; 3],
    /// Its length (m) and inverse length (1/m).
    pub x: T,
    pub rx: T,
    /// The neighbour's node index less the node's.
    pub offset: i64,
}

/// The value whose bits are the two's complement integer `offset` (32 bits in f32, 64 in
/// f64): what `slot_offset` in `kernels/bonds.cuh` reads back as an integer.
fn offset_bits<T: Real>(offset: i64) -> T {
    match std::mem::size_of::<T>() {
        4 => {
            let bits = offset as i32 as u32;
            // SAFETY: `T` is f32 here (4 bytes; `Real` is f32 or f64): any bits are an f32.
            unsafe { std::mem::transmute_copy::<u32, T>(&bits) }
        }
        _ => {
            let bits = offset as u64;
            // SAFETY: `T` is f64 here (8 bytes): any bits are an f64.
            unsafe { std::mem::transmute_copy::<u64, T>(&bits) }
        }
    }
}
