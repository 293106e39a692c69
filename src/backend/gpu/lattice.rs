//! `gpu-loop` without a neighbour list, for a body that is a full box lattice.
//!
//! The lattice fill numbers nodes x fastest (`geometry/lattice.rs`). Where every lattice point
//! of the body's bounding box is a node, the family of node `i` is `i + o_k` over one stencil
//! of node offsets `o_k` (ascending, which is the families' ascending order), less the slots
//! that leave the box. The device then stores no neighbour index: every node has the
//! stencil's `K` slots in the sliced order (`gpu/layout.rs`, all families `K` long), a slot
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
use crate::neighbors::{family_radius_squared, within_radius, Families};
use crate::setup::Problem;
use rayon::prelude::*;

/// The stencil of a full box lattice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stencil {
    /// Lattice points per axis (1 beyond the dimension).
    dims: [usize; 3],
    /// Lattice step of each slot, in ascending order of node offset.
    steps: Vec<[i64; 3]>,
    /// Node-index offset of each slot.
    offsets: Vec<i64>,
}

impl Stencil {
    /// The stencil of `problem` where its body is a full box lattice whose families the
    /// stencil reproduces; `None` otherwise (point clouds, removed shapes, several boxes
    /// that leave gaps).
    pub fn of(problem: &Problem) -> Option<Stencil> {
        let stencil = Stencil::of_body(&problem.model, &problem.body)?;
        stencil.reproduces(problem).then_some(stencil)
    }

    /// The stencil of `body` where it is a full box lattice in fill order, before any
    /// family is known: what [`Stencil::of`] then checks against the families. A run on
    /// `gpu-loop` asks it to set such a body up lean (no family held on the host).
    pub fn of_body(model: &Model, body: &Body) -> Option<Stencil> {
        let (n, dim, dx) = (body.len(), body.dim(), body.dx);
        let mut dims = [1usize; 3];
        for (a, d) in dims.iter_mut().enumerate().take(dim) {
            let span = (body.bbox_max[a] - body.bbox_min[a]) / dx;
            if !span.is_finite() || (span - span.round()).abs() > 1e-6 {
                return None;
            }
            *d = span.round() as usize + 1;
        }
        if dims.iter().product::<usize>() != n || n >= u32::MAX as usize {
            return None;
        }
        let coords = |i: usize| {
            [
                i % dims[0],
                (i / dims[0]) % dims[1],
                i / (dims[0] * dims[1]),
            ]
        };
        let on_lattice = body.positions.par_iter().enumerate().all(|(i, x)| {
            let c = coords(i);
            (0..dim).all(|a| (x[a] - (body.bbox_min[a] + c[a] as f64 * dx)).abs() <= 1e-6 * dx)
        });
        if !on_lattice {
            return None;
        }
        // the lattice steps within the family radius, by the families' predicate on the
        // steps' lengths, less those no node of this box can take; ascending by node offset,
        // which for any one node is ascending by neighbour (its present slots have distinct
        // neighbours)
        let radius = family_radius(model.discretization.partial_volume, body.delta, dx);
        let r2 = family_radius_squared(radius);
        let reach = |a: usize| ((radius / dx).floor() as i64 + 1).min(dims[a] as i64 - 1);
        let origin = [0.0; 3];
        let mut steps = Vec::new();
        for sz in -reach(2)..=reach(2) {
            for sy in -reach(1)..=reach(1) {
                for sx in -reach(0)..=reach(0) {
                    let x = [sx as f64 * dx, sy as f64 * dx, sz as f64 * dx];
                    if (sx, sy, sz) != (0, 0, 0) && within_radius(&origin, &x, dim, r2) {
                        steps.push([sx, sy, sz]);
                    }
                }
            }
        }
        let offset = |s: &[i64; 3]| s[0] + dims[0] as i64 * (s[1] + dims[1] as i64 * s[2]);
        steps.sort_by_key(offset);
        let offsets = steps.iter().map(offset).collect();
        Some(Stencil {
            dims,
            steps,
            offsets,
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

    /// Slots per node.
    pub fn slots(&self) -> usize {
        self.steps.len()
    }

    /// The neighbour of node `i` in slot `k`, `None` where the slot leaves the box.
    pub fn neighbor(&self, i: usize, k: usize) -> Option<usize> {
        let d = &self.dims;
        let c = [i % d[0], (i / d[0]) % d[1], i / (d[0] * d[1])];
        let s = self.steps[k];
        let inside = (0..3).all(|a| {
            let x = c[a] as i64 + s[a];
            x >= 0 && x < d[a] as i64
        });
        inside.then(|| (i as i64 + self.offsets[k]) as usize)
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
                    for (slot, word) in slice.iter_mut().enumerate() {
                        let Some(j) = self.neighbor(i, slot) else {
                            continue;
                        };
                        let intact = match problem.bonds_stored {
                            true => problem.initial_mu[m] != 0,
                            false => !test || problem.initially_intact(i, j),
                        };
                        m += 1;
                        if intact {
                            *word |= bit;
                        }
                    }
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
