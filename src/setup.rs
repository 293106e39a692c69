//! Problem setup: from a validated model to everything a backend and a solver need, in `f64`:
//! the body, its families, bond data, material constants, the initial bond status (pre-cracks),
//! no-fail nodes and named region node sets. Times the neighbour search.

use crate::geometry::{bond_crosses_precrack, build_body, region_nodes, Body};
use crate::material::{family_radius, BondData, MaterialConstants};
use crate::model::{BoundaryKind, Model};
use crate::neighbors::{cell_list_families, Families};
use crate::Result;
use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;

/// A named node set.
#[derive(Debug, Clone)]
pub struct NamedRegion {
    pub name: String,
    pub nodes: Vec<usize>,
}

/// A discretized problem, ready for a backend.
#[derive(Debug, Clone)]
pub struct Problem {
    pub name: String,
    pub model: Model,
    pub body: Body,
    pub families: Families,
    pub material: MaterialConstants,
    pub bonds: BondData,
    /// Initial bond status per directed bond: 1 intact, 0 broken by a pre-crack.
    pub initial_mu: Vec<u8>,
    /// Nodes whose bonds never break.
    pub no_fail: Vec<bool>,
    pub regions: Vec<NamedRegion>,
    /// Wall time of the neighbour search, s.
    pub neighbor_seconds: f64,
}

impl Problem {
    /// Discretize a validated `model`; `model_dir` resolves relative file names.
    pub fn build(model: Model, model_dir: &Path) -> Result<Problem> {
        let body = build_body(&model, model_dir)?;
        let kind = model.discretization.partial_volume;
        let t0 = Instant::now();
        let radius = family_radius(kind, body.delta, body.dx);
        let families = cell_list_families(&body.positions, body.dim(), radius);
        let neighbor_seconds = t0.elapsed().as_secs_f64();
        let material = MaterialConstants::new(&model, body.delta, body.thickness);
        let bonds = BondData::new(&body, &families, &material, kind);
        let regions = model
            .region
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let nodes = region_nodes(&body, &r.shape, &format!("region.{k}"))?;
                Ok(NamedRegion {
                    name: r.name.clone(),
                    nodes,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut problem = Problem {
            name: model.name.clone().unwrap_or_else(|| "model".into()),
            initial_mu: vec![1; families.bonds()],
            no_fail: vec![false; body.len()],
            model,
            body,
            families,
            material,
            bonds,
            regions,
            neighbor_seconds,
        };
        problem.apply_precracks();
        problem.mark_no_fail();
        Ok(problem)
    }

    /// Nodes of the region called `name` (validation guarantees it exists).
    pub fn region(&self, name: &str) -> &[usize] {
        self.regions
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.nodes.as_slice())
            .unwrap_or(&[])
    }

    /// Spatial dimension.
    pub fn dim(&self) -> usize {
        self.body.dim()
    }

    fn apply_precracks(&mut self) {
        if self.model.precrack.is_empty() {
            return;
        }
        let (p, fam, d) = (&self.body.positions, &self.families, self.body.dim());
        let cracks = &self.model.precrack;
        self.initial_mu = (0..self.body.len())
            .into_par_iter()
            .flat_map_iter(|i| {
                fam.family(i).iter().map(move |&j| {
                    let cut = cracks
                        .iter()
                        .any(|c| bond_crosses_precrack(c, d, &p[i], &p[j as usize]));
                    u8::from(!cut)
                })
            })
            .collect();
    }

    fn mark_no_fail(&mut self) {
        let names: Vec<String> = self
            .model
            .boundary
            .iter()
            .filter(|b| b.kind == BoundaryKind::NoFail)
            .map(|b| b.region.clone())
            .collect();
        for name in names {
            let nodes = self.region(&name).to_vec();
            for i in nodes {
                self.no_fail[i] = true;
            }
        }
    }

    /// Number of initially broken bonds (pre-cracks).
    pub fn precracked_bonds(&self) -> usize {
        self.initial_mu.iter().filter(|&&m| m == 0).count()
    }
}
