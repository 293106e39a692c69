//! Per-bond and per-node quantities shared by every backend and by the matrix assembly:
//! partial-volume factors `beta`, surface-correction factors `lambda`, horizon volumes
//! `V_H,i = sum_j beta V_j` and LPS weighted volumes `m_i = sum_j omega x^2 beta V_j`.

use super::constants::{partial_volume, MaterialConstants};
use crate::geometry::Body;
use crate::model::PartialVolume;
use crate::neighbors::Families;
use rayon::prelude::*;

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

impl BondData {
    /// Compute the bond data of `body` with `families`.
    pub fn new(
        body: &Body,
        families: &Families,
        material: &MaterialConstants,
        kind: PartialVolume,
    ) -> Self {
        let p = &body.positions;
        let beta: Vec<f64> = (0..body.len())
            .into_par_iter()
            .flat_map_iter(|i| {
                families.family(i).iter().map(move |&j| {
                    partial_volume(kind, bond_length(p, i, j as usize), body.delta, body.dx)
                })
            })
            .collect();
        let per_node = |f: &(dyn Fn(usize, usize, f64) -> f64 + Sync)| -> Vec<f64> {
            (0..body.len())
                .into_par_iter()
                .map(|i| {
                    families
                        .range(i)
                        .map(|b| f(i, families.neighbors[b] as usize, beta[b]))
                        .sum()
                })
                .collect()
        };
        let horizon_volume = per_node(&|_, j, beta| beta * body.volumes[j]);
        let weighted_volume = per_node(&|i, j, beta| {
            let x = bond_length(p, i, j);
            material.omega(x) * x * x * beta * body.volumes[j]
        });
        let correction = material.surface_correction.then(|| {
            let full = horizon_volume.iter().cloned().fold(0.0, f64::max);
            (0..body.len())
                .into_par_iter()
                .flat_map_iter(|i| {
                    let vh = &horizon_volume;
                    families
                        .family(i)
                        .iter()
                        .map(move |&j| 2.0 * full / (vh[i] + vh[j as usize]))
                })
                .collect()
        });
        BondData {
            beta,
            correction,
            horizon_volume,
            weighted_volume,
        }
    }

    /// Surface-correction factor of bond `b` (1 without correction).
    #[inline]
    pub fn correction(&self, b: usize) -> f64 {
        self.correction.as_ref().map_or(1.0, |c| c[b])
    }
}
