//! Per-bond and per-node quantities shared by every backend and by the matrix assembly:
//! partial-volume factors `beta`, surface-correction factors `lambda`, horizon volumes
//! `V_H,i = sum_j beta V_j` and LPS weighted volumes `m_i = sum_j omega x^2 beta V_j`.

use super::constants::{partial_volume, MaterialConstants};
use crate::geometry::Body;
use crate::model::PartialVolume;
use crate::neighbors::{Families, FamilyFinder};
use rayon::prelude::*;
use std::ops::Range;

/// The largest value (0 for none): the full horizon volume of a body.
pub fn largest(values: &[f64]) -> f64 {
    values.iter().copied().fold(0.0, f64::max)
}

/// Bond data of a discretized body (all `f64`; backends convert to their precision).
#[derive(Debug, Clone)]
pub struct BondData {
    /// Partial-volume factor per directed bond.
    pub beta: Vec<f64>,
    /// Surface-correction factor per directed bond (`None`: all 1).
    pub correction: Option<Vec<f64>>,
    /// Horizon volume per node `V_H,i`, m^3.
    pub horizon_volume: Vec<f64>,
    /// LPS weighted volume per node `m_i`, m^5 (times `omega`'s unit).
    pub weighted_volume: Vec<f64>,
}

/// Length of the bond vector between nodes `i` and `j`.
#[inline]
pub fn bond_length(p: &[[f64; 3]], i: usize, j: usize) -> f64 {
    let xi = [p[j][0] - p[i][0], p[j][1] - p[i][1], p[j][2] - p[i][2]];
    (xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]).sqrt()
}

/// The bonds of every node with their partial-volume factor `beta` and surface-correction
/// factor `lambda`, visited node by node in ascending neighbour order: from stored families
/// and [`BondData`] ([`StoredBonds`]), or searched on demand with both factors recomputed by
/// the same arithmetic ([`SearchedBonds`], for models whose per-bond arrays are not kept).
/// The sums over a family therefore run in the same order, bit for bit, whichever source.
pub trait BondSource: Sync {
    /// Call `f(j, beta, lambda)` for every bond `i -> j` of node `i`, `j` ascending.
    fn for_each_bond(&self, i: usize, f: impl FnMut(usize, f64, f64));
}

/// Bonds from stored families and bond data.
pub struct StoredBonds<'a> {
    pub families: &'a Families,
    pub bonds: &'a BondData,
}

impl BondSource for StoredBonds<'_> {
    #[inline]
    fn for_each_bond(&self, i: usize, mut f: impl FnMut(usize, f64, f64)) {
        for b in self.families.range(i) {
            let j = self.families.neighbors[b] as usize;
            f(j, self.bonds.beta[b], self.bonds.correction(b));
        }
    }
}

/// Bonds searched again (a lattice's stencil or a cell list), `beta` and `lambda`
/// recomputed per bond.
pub struct SearchedBonds<'a> {
    pub finder: &'a FamilyFinder<'a>,
    pub body: &'a Body,
    pub kind: PartialVolume,
    /// `(largest horizon volume, horizon volume per node)` for the surface correction;
    /// `None`: `lambda = 1`.
    pub correction: Option<(f64, &'a [f64])>,
}

impl BondSource for SearchedBonds<'_> {
    fn for_each_bond(&self, i: usize, mut f: impl FnMut(usize, f64, f64)) {
        let mut family = Vec::with_capacity(256);
        self.finder.family_into(i, &mut family);
        for &j in &family {
            let j = j as usize;
            let (beta, lambda) = self.factors(i, j);
            f(j, beta, lambda);
        }
    }
}

impl SearchedBonds<'_> {
    /// `(beta, lambda)` of bond `i -> j` ([`bond_factors`]).
    #[inline]
    fn factors(&self, i: usize, j: usize) -> (f64, f64) {
        bond_factors(self.body, self.kind, self.correction, i, j)
    }
}

/// `(beta, lambda)` of bond `i -> j` of `body` from its nodes' positions (and for the surface
/// correction, `(largest horizon volume, horizon volume per node)`), computed as
/// [`BondData::new`] computes the stored ones, bit for bit.
#[inline]
pub fn bond_factors(
    body: &Body,
    kind: PartialVolume,
    correction: Option<(f64, &[f64])>,
    i: usize,
    j: usize,
) -> (f64, f64) {
    let p = &body.positions;
    let beta = partial_volume(kind, bond_length(p, i, j), body.delta, body.dx);
    let lambda = correction.map_or(1.0, |(full, vh)| correction_factor(full, vh[i], vh[j]));
    (beta, lambda)
}

/// Surface-correction factor of a bond between nodes of horizon volumes `vi` and `vj`:
/// `2 V_full / (V_H,i + V_H,j)`.
#[inline]
fn correction_factor(full: f64, vi: f64, vj: f64) -> f64 {
    2.0 * full / (vi + vj)
}

/// Horizon volume `V_H,i = sum_j beta V_j` and LPS weighted volume
/// `m_i = sum_j omega x^2 beta V_j` of the nodes `nodes` (each from its own bonds alone, so
/// a share of the nodes gives the same values as the whole).
fn node_volumes(
    body: &Body,
    material: &MaterialConstants,
    source: &impl BondSource,
    nodes: Range<usize>,
) -> (Vec<f64>, Vec<f64>) {
    let p = &body.positions;
    nodes
        .into_par_iter()
        .map(|i| {
            let (mut vh, mut m) = (0.0, 0.0);
            source.for_each_bond(i, |j, beta, _| {
                let x = bond_length(p, i, j);
                vh += beta * body.volumes[j];
                m += material.omega(x) * x * x * beta * body.volumes[j];
            });
            (vh, m)
        })
        .unzip()
}

impl BondData {
    /// Compute the bond data of `body` with `families`.
    pub fn new(
        body: &Body,
        families: &Families,
        material: &MaterialConstants,
        kind: PartialVolume,
    ) -> Self {
        let p = &body.positions;
        let beta = families
            .per_bond(|i, _, j| partial_volume(kind, bond_length(p, i, j), body.delta, body.dx));
        let mut data = BondData {
            beta,
            correction: None,
            horizon_volume: Vec::new(),
            weighted_volume: Vec::new(),
        };
        let stored = StoredBonds {
            families,
            bonds: &data,
        };
        let (horizon_volume, weighted_volume) =
            node_volumes(body, material, &stored, 0..body.len());
        let correction = material.surface_correction.then(|| {
            let full = largest(&horizon_volume);
            let vh = &horizon_volume;
            families.per_bond(|i, _, j| correction_factor(full, vh[i], vh[j]))
        });
        data.correction = correction;
        data.horizon_volume = horizon_volume;
        data.weighted_volume = weighted_volume;
        data
    }

    /// The horizon and weighted volumes of the nodes `nodes` alone, bonds searched by
    /// `finder` (a distributed run's process computes its share: `setup/shared.rs`).
    pub fn node_volumes_of(
        body: &Body,
        finder: &FamilyFinder,
        material: &MaterialConstants,
        kind: PartialVolume,
        nodes: Range<usize>,
    ) -> (Vec<f64>, Vec<f64>) {
        let searched = SearchedBonds {
            finder,
            body,
            kind,
            correction: None,
        };
        node_volumes(body, material, &searched, nodes)
    }

    /// The surface correction's reference volume and the horizon volumes, where the
    /// material asks for the correction (for [`SearchedBonds::correction`]).
    pub fn correction_reference(&self, material: &MaterialConstants) -> Option<(f64, &[f64])> {
        material.surface_correction.then(|| {
            (
                largest(&self.horizon_volume),
                self.horizon_volume.as_slice(),
            )
        })
    }

    /// Surface-correction factor of bond `b` (1 without correction).
    #[inline]
    pub fn correction(&self, b: usize) -> f64 {
        self.correction.as_ref().map_or(1.0, |c| c[b])
    }
}
