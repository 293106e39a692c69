//! Problem setup: from a validated model to everything a backend and a solver need, in `f64`:
//! the body, its families, bond data, material constants, the initial bond status (pre-cracks),
//! no-fail nodes and named region node sets. Times the neighbour search, which runs on the
//! CPU or, for a run on a GPU backend, on the device ([`NeighborSearch`]); both give the same
//! families exactly.

use crate::backend::BackendKind;
use crate::geometry::{bond_crosses_precrack, build_body, region_nodes, Body};
use crate::material::{family_radius, BondData, MaterialConstants};
use crate::model::{BoundaryKind, Model};
use crate::neighbors::{cell_list_families, Families};
use crate::{Precision, Result};
use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;

/// A named node set.
#[derive(Debug, Clone)]
pub struct NamedRegion {
    pub name: String,
    pub nodes: Vec<usize>,
}

/// Where the neighbour search runs. Both give the same [`Families`], bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NeighborSearch {
    /// The cell list on the CPU (`neighbors/cell_list.rs`).
    #[default]
    Cpu,
    /// The cell list on the CUDA device (`gpu/neighbors.rs`), with the kernel program of this
    /// precision (the one the GPU backend of the run loads, so it is compiled once).
    Device(Precision),
}

impl NeighborSearch {
    /// `cpu` or `device` (the summary's `neighbor_search`).
    pub fn name(self) -> &'static str {
        match self {
            NeighborSearch::Cpu => "cpu",
            NeighborSearch::Device(_) => "device",
        }
    }

    /// The search for a run on `backend` in `precision`: on the device for `gpu-loop` and
    /// `gpu-matrix`, on the CPU otherwise. Resolve `auto` first
    /// ([`resolve_auto`](crate::backend::resolve_auto)); `auto` itself gives the CPU search.
    pub fn for_backend(backend: BackendKind, precision: Precision) -> NeighborSearch {
        match backend {
            BackendKind::GpuLoop | BackendKind::GpuMatrix => NeighborSearch::Device(precision),
            _ => NeighborSearch::Cpu,
        }
    }
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
    /// Wall time of the neighbour search, s (on the device: upload, kernels and download).
    pub neighbor_seconds: f64,
    /// The neighbour search that built `families`.
    pub neighbor_search: NeighborSearch,
}

/// Families of radius `radius` by `search`, its wall time in seconds and the search that ran
/// (the CPU one where there is no device or the device search failed).
fn search_families(
    positions: &[[f64; 3]],
    dim: usize,
    radius: f64,
    search: NeighborSearch,
) -> (Families, f64, NeighborSearch) {
    // Without a device at all, quietly the CPU search: the GPU backend then says why.
    if let (NeighborSearch::Device(precision), Ok(gpu)) = (search, crate::gpu::Gpu::get()) {
        // The kernel program (compiled once, shared with the backend) is not search time.
        let found = gpu.module(precision).and_then(|_| {
            let t0 = Instant::now();
            crate::gpu::neighbors::device_families(&gpu, precision, positions, dim, radius)
                .map(|d| (d.families, t0.elapsed().as_secs_f64()))
        });
        match found {
            Ok((families, seconds)) => return (families, seconds, search),
            Err(e) => eprintln!("warning: {e}; the neighbour search runs on the CPU"),
        }
    }
    let t0 = Instant::now();
    let families = cell_list_families(positions, dim, radius);
    (families, t0.elapsed().as_secs_f64(), NeighborSearch::Cpu)
}

impl Problem {
    /// Discretize a validated `model`; `model_dir` resolves relative file names. The
    /// neighbour search runs on the CPU.
    pub fn build(model: Model, model_dir: &Path) -> Result<Problem> {
        Problem::build_with(model, model_dir, NeighborSearch::Cpu)
    }

    /// [`build`](Problem::build) with the neighbour search run by `search`. Without a device
    /// the CPU search runs; should the device search fail (too little memory, say), a warning
    /// says why and the CPU search runs instead. `neighbor_search` records which one ran.
    pub fn build_with(model: Model, model_dir: &Path, search: NeighborSearch) -> Result<Problem> {
        let body = build_body(&model, model_dir)?;
        let kind = model.discretization.partial_volume;
        let radius = family_radius(kind, body.delta, body.dx);
        let (families, neighbor_seconds, neighbor_search) =
            search_families(&body.positions, body.dim(), radius, search);
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
            neighbor_search,
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
