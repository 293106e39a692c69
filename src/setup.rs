//! Problem setup: from a validated model to everything a backend and a solver need, in `f64`:
//! the body, its families, bond data, material constants, the initial bond status (pre-cracks),
//! no-fail nodes and named region node sets. Times the neighbour search, which runs on the
//! CPU or, for a run on a GPU backend, on the device ([`NeighborSearch`]); both give the same
//! families exactly.

mod check;
pub mod memory;
mod shared;
mod times;

pub use check::{check_body, check_material, checked_body, checked_body_for};
pub use shared::{share, NodeShares};
pub use times::{since, timed, SetupTimes};

use crate::geometry::{bond_crosses_precrack, region_nodes, Body};
use crate::material::bonds::{BondSource, SearchedBonds, StoredBonds};
use crate::material::stiffness_bound::{row_bounds, stable_time_step};
use crate::material::{family_radius, BondData, FailureHistory, MaterialConstants, MaterialMap};
use crate::model::{BoundaryKind, Model};
use crate::neighbors::{Families, FamilyFinder};
use crate::{Precision, Result};
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
}

/// A discretized problem, ready for a backend.
#[derive(Debug, Clone)]
pub struct Problem {
    pub name: String,
    pub model: Model,
    pub body: Body,
    pub families: Families,
    /// The material, or the first of several (the options they share).
    pub material: MaterialConstants,
    /// Several materials: each node's and each pair's constants (`None`: one material).
    pub materials: Option<MaterialMap>,
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
    /// Whether the per-bond arrays are held: `false` for a lean problem
    /// ([`Problem::build_lean`]), whose `families` hold the family sizes (offsets) only and
    /// whose `bonds.beta`, `bonds.correction` and `initial_mu` are empty; its bonds are
    /// searched again where needed ([`Problem::visit_bonds`]).
    pub bonds_stored: bool,
    /// Bonds cut by pre-cracks at setup.
    pub precracked: usize,
    /// The stable time step (with contact's stiffness), s, where the setup computed it: a
    /// distributed run's process, from its share of the nodes and the others'
    /// (`setup/shared.rs`); `None`: computed when asked, over every node.
    pub stable_step: Option<f64>,
    /// A part's local problem (a rank's, `distributed/matrix.rs`): its nodes from this index
    /// on are ghosts, the owned ones first. Half-storage operators put the pairs that reach a
    /// ghost last, so the rows that read none are a prefix (`operators/pattern.rs`). `None`
    /// for a whole problem.
    pub ghosts_from: Option<usize>,
    /// The failure history a backend starts from besides `initial_mu` (a restart's, in
    /// f64, exact for either precision); empty for a fresh run.
    pub restored: FailureHistory<f64>,
    /// Seconds of the setup phases that built this problem (`body` where it was built from
    /// the model, `neighbors`, `bonds`, `regions`, `kernel_compilation` where the device
    /// search compiled the kernels); a caller adds what it timed before (`parse`).
    pub setup: SetupTimes,
}

/// The bonds of a problem, stored or searched ([`Problem::visit_bonds`]).
pub enum ProblemBonds<'a> {
    Stored(StoredBonds<'a>),
    Searched(SearchedBonds<'a>),
}

impl BondSource for ProblemBonds<'_> {
    #[inline]
    fn for_each_bond(&self, i: usize, f: impl FnMut(usize, f64, f64)) {
        match self {
            ProblemBonds::Stored(s) => s.for_each_bond(i, f),
            ProblemBonds::Searched(s) => s.for_each_bond(i, f),
        }
    }
}

/// Families of radius `radius` by `search`, its wall time in seconds and the search that ran
/// (the CPU one where there is no device or the device search failed); the kernel
/// program's compilation for the device search goes to `times.kernel_compilation`.
fn search_families(
    body: &Body,
    radius: f64,
    search: NeighborSearch,
    times: &mut SetupTimes,
) -> (Families, f64, NeighborSearch) {
    let (positions, dim) = (&body.positions, body.dim());
    // Without a device at all, quietly the CPU search: the GPU backend then says why.
    if let (NeighborSearch::Device(precision), Ok(gpu)) = (search, crate::gpu::Gpu::get()) {
        // The kernel program (compiled once, shared with the backend) is not search time.
        let (module, compile) = timed(|| gpu.module(precision));
        times.add_compilation(compile);
        let found = module.and_then(|_| {
            let t0 = Instant::now();
            crate::gpu::neighbors::device_families(&gpu, precision, positions, dim, radius)
                .map(|d| (d.families, since(t0)))
        });
        match found {
            Ok((families, seconds)) => return (families, seconds, search),
            Err(e) => eprintln!("warning: {e}; the neighbour search runs on the CPU"),
        }
    }
    let (families, seconds) = timed(|| FamilyFinder::for_body(body, radius).families(body.len()));
    (families, seconds, NeighborSearch::Cpu)
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
        let (body, seconds) = timed(|| checked_body(&model, model_dir));
        let mut problem = Problem::from_body(model, body?, search)?;
        problem.setup.body = Some(seconds);
        Ok(problem)
    }

    /// [`build_with`](Problem::build_with) from the model's already discretized and checked
    /// `body` ([`checked_body`]).
    pub fn from_body(model: Model, body: Body, search: NeighborSearch) -> Result<Problem> {
        let kind = model.discretization.partial_volume;
        let radius = family_radius(kind, body.delta, body.dx);
        let mut times = SetupTimes::default();
        let (families, neighbor_seconds, neighbor_search) =
            search_families(&body, radius, search, &mut times);
        times.neighbors = Some(neighbor_seconds);
        let t0 = Instant::now();
        let material = MaterialConstants::new(&model, body.delta, body.thickness);
        let bonds = BondData::new(&body, &families, &material, kind);
        let mut bond_seconds = since(t0);
        let search = (neighbor_seconds, neighbor_search);
        let mut problem = Problem::assemble(model, body, families, material, bonds, search)?;
        let t0 = Instant::now();
        problem.initial_mu = vec![1; problem.families.bonds()];
        problem.bonds_stored = true;
        problem.apply_precracks();
        bond_seconds += since(t0);
        problem.setup = SetupTimes {
            bonds: Some(bond_seconds),
            regions: problem.setup.regions,
            ..times
        };
        Ok(problem)
    }

    /// A lean problem for a model too large to hold its bonds in host memory, for the
    /// `gpu-loop` kernels, which recompute every per-bond factor from positions: families
    /// are counted (by the body's lattice stencil where it is one, else a CPU cell list) but
    /// not stored (`families.offsets` only), and the
    /// per-node data (horizon and weighted volumes), the stable time step and the pre-cracked
    /// bonds come from bonds searched again, with the same arithmetic in the same order as a
    /// stored problem (so the same numbers, bit for bit). Subdomains search their own
    /// families (`partition`). Host memory: per node only, about 100 bytes in 3D.
    pub fn build_lean(model: Model, model_dir: &Path) -> Result<Problem> {
        let (body, seconds) = timed(|| checked_body(&model, model_dir));
        let mut problem = Problem::lean_from_body(model, body?)?;
        problem.setup.body = Some(seconds);
        Ok(problem)
    }

    /// [`build_lean`](Problem::build_lean) from the model's already discretized and checked
    /// `body` ([`checked_body`]).
    pub fn lean_from_body(model: Model, body: Body) -> Result<Problem> {
        Problem::lean_with(model, body, None)
    }

    /// A problem of these parts with regions and no-fail nodes, no bond status yet.
    fn assemble(
        model: Model,
        body: Body,
        families: Families,
        material: MaterialConstants,
        bonds: BondData,
        (neighbor_seconds, neighbor_search): (f64, NeighborSearch),
    ) -> Result<Problem> {
        if families.bonds() == 0 {
            let disc = &model.discretization;
            let field = match disc.delta {
                Some(_) => "discretization.delta",
                None => "discretization.horizon_factor",
            };
            let radius = family_radius(disc.partial_volume, body.delta, body.dx);
            return Err(crate::Error::model(
                field,
                format!(
                    "no node has a neighbour within the family radius {radius:e} m (horizon \
                     {:e} m): the body has no bond, so no stiffness and no stable time step; \
                     enlarge the horizon or place the nodes closer",
                    body.delta
                ),
            ));
        }
        let t0 = Instant::now();
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
        let of_region = |name: &str| {
            let found = regions.iter().find(|r| r.name == name);
            found.map_or(&[][..], |r| r.nodes.as_slice())
        };
        let materials = MaterialMap::new(&model, &body, of_region, body.delta, body.thickness)?;
        let mut problem = Problem {
            name: model.name.clone().unwrap_or_else(|| "model".into()),
            initial_mu: Vec::new(),
            no_fail: vec![false; body.len()],
            model,
            body,
            families,
            material,
            materials,
            bonds,
            regions,
            neighbor_seconds,
            neighbor_search,
            bonds_stored: false,
            precracked: 0,
            stable_step: None,
            ghosts_from: None,
            restored: FailureHistory::default(),
            setup: SetupTimes::default(),
        };
        problem.mark_no_fail();
        problem.setup.regions = Some(since(t0));
        Ok(problem)
    }

    /// Call `f` with the bonds of this problem: the stored ones, or for a lean problem those
    /// its lattice stencil or a cell list finds (built for the call: a cell list holds about
    /// 30 bytes per node).
    pub fn visit_bonds<R>(&self, f: impl FnOnce(&ProblemBonds) -> R) -> R {
        if self.bonds_stored {
            return f(&ProblemBonds::Stored(StoredBonds {
                families: &self.families,
                bonds: &self.bonds,
            }));
        }
        let kind = self.model.discretization.partial_volume;
        let radius = family_radius(kind, self.body.delta, self.body.dx);
        let finder = FamilyFinder::for_body(&self.body, radius);
        f(&ProblemBonds::Searched(SearchedBonds {
            finder: &finder,
            body: &self.body,
            kind,
            correction: self.bonds.correction_reference(&self.material),
        }))
    }

    /// Each node's mass density, kg/m^3, where several materials differ in density (`None`:
    /// every node has `material.density`).
    pub fn node_densities(&self) -> Option<Vec<f64>> {
        self.materials
            .as_ref()
            .and_then(MaterialMap::node_densities)
    }

    /// Stable explicit time step, s, before the safety factor, with contact's stiffness
    /// where the model has contact or impactors
    /// ([`stable_time_step`](crate::material::stiffness_bound::stable_time_step)).
    pub fn stable_time_step(&self) -> f64 {
        match self.stable_step {
            Some(dt) => dt,
            None => self.stable_time_step_of(0..self.body.len()),
        }
    }

    /// [`Problem::stable_time_step`] over the nodes `nodes` alone (the least bound among
    /// them), computed now.
    pub fn stable_time_step_of(&self, nodes: std::ops::Range<usize>) -> f64 {
        self.stable_time_step_with(self.contact_row_stiffness(), nodes)
    }

    /// The stable time step of the bonds alone (what [`Problem::stable_time_step`] is
    /// without contact), s.
    pub fn bond_stable_time_step(&self) -> f64 {
        self.stable_time_step_with(0.0, 0..self.body.len())
    }

    fn stable_time_step_with(&self, contact: f64, nodes: std::ops::Range<usize>) -> f64 {
        let wv = &self.bonds.weighted_volume;
        let m = (&self.material, self.materials.as_ref());
        self.visit_bonds(|b| stable_time_step(&self.body, b, wv, m.0, m.1, contact, nodes))
    }

    /// The short-range constant of contact `c_sr` (N/m^6): `[contact] stiffness_factor`
    /// (default 15) times the PMB bond constant of the material's `E` at the run's horizon
    /// (`docs/contact.md`); `None` where the model has neither node contact nor an impactor.
    pub fn contact_constant(&self) -> Option<f64> {
        let model = &self.model;
        let table = model.contact.as_ref();
        if !table.is_some_and(|c| c.enabled) && model.impactor.is_empty() {
            return None;
        }
        let m = &self.material;
        let (delta, h) = (self.body.delta, self.body.thickness);
        let c =
            crate::material::constants::pmb_micromodulus(m.dimension, m.youngs_modulus, delta, h);
        let factor = table.and_then(|t| t.stiffness_factor);
        Some(c * factor.unwrap_or(crate::material::constants::CONTACT_STIFFNESS_FACTOR))
    }

    /// Contact's share of a node's stiffness row per unit of its volume, N/m^7 (0 without
    /// contact): `c_sr / delta` (a contact spring is a bond of micromodulus `c_sr` and length
    /// `delta`) times the partners a node can press at once, `2^(d-1)` other nodes (a node in
    /// the hollow between the nodes of a lattice face: 2 in 2D, 4 in 3D, each of about its
    /// volume) with node contact, plus one for the impactors (the node's mirror image).
    pub fn contact_row_stiffness(&self) -> f64 {
        let Some(c_sr) = self.contact_constant() else {
            return 0.0;
        };
        let pairs_on = self.model.contact.as_ref().is_some_and(|c| c.enabled);
        let partners = if pairs_on {
            (1usize << (self.dim() - 1)) as f64
        } else {
            0.0
        } + if self.model.impactor.is_empty() {
            0.0
        } else {
            1.0
        };
        c_sr / self.body.delta * partners
    }

    /// Gerschgorin row bound of every node
    /// ([`row_bounds`](crate::material::stiffness_bound::row_bounds)).
    pub fn row_bounds(&self) -> Vec<f64> {
        let wv = &self.bonds.weighted_volume;
        self.visit_bonds(|b| row_bounds(&self.body, b, wv, &self.material, self.materials.as_ref()))
    }

    /// Whether bond `i -> j` is intact at setup (crosses no pre-crack). Test only bonds of
    /// nodes in [`Problem::precrack_zone`]: the others are intact.
    pub fn initially_intact(&self, i: usize, j: usize) -> bool {
        initially_intact(&self.model, &self.body, i, j)
    }

    /// Where this problem's bonds can cross a pre-crack (empty without pre-cracks).
    pub(crate) fn precrack_zone(&self) -> PrecrackZone {
        let kind = self.model.discretization.partial_volume;
        let radius = family_radius(kind, self.body.delta, self.body.dx);
        PrecrackZone::new(&self.model, &self.body, radius)
    }

    /// Nodes of the region called `name` (validation guarantees it exists).
    pub fn region(&self, name: &str) -> &[usize] {
        self.regions
            .iter()
            .find(|r| r.name == name)
            .map(|r| r.nodes.as_slice())
            .unwrap_or(&[])
    }

    /// Whether any bond can break: a critical stretch of the material, or of some pair of
    /// several.
    pub fn breaks(&self) -> bool {
        match &self.materials {
            Some(map) => map.breaks(),
            None => self.material.critical_stretch.is_some(),
        }
    }

    /// The bond law of node `i`'s material (its own `K_d` and `G` among several).
    #[inline]
    pub fn law_of(&self, i: usize) -> crate::material::Law {
        self.materials
            .as_ref()
            .map_or(self.material.law, |m| m.of_node(i).law)
    }

    /// Spatial dimension.
    pub fn dim(&self) -> usize {
        self.body.dim()
    }

    fn apply_precracks(&mut self) {
        if self.model.precrack.is_empty() {
            return;
        }
        let (model, body) = (&self.model, &self.body);
        self.initial_mu = self
            .families
            .per_bond(|i, _, j| u8::from(initially_intact(model, body, i, j)));
        self.precracked = self.initial_mu.iter().filter(|&&m| m == 0).count();
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
        self.precracked
    }
}

/// Host bytes a stored problem ([`Problem::build`]) of `model` with `body` would hold in
/// per-bond arrays, estimated before any search: bonds as the nodes times the lattice
/// points of a full family ([`memory::full_family`]; surface nodes have fewer, so an upper
/// estimate), times a stored bond's bytes ([`memory::problem_bytes`]).
pub fn stored_bond_bytes_estimate(model: &Model, body: &Body) -> f64 {
    let kind = model.discretization.partial_volume;
    let family = memory::full_family(body.dim(), kind, body.delta, body.dx);
    let corrected = model.material.surface_correction;
    let (_, per_bond) = memory::problem_bytes(body.dim(), 8, corrected);
    body.len() as f64 * family * per_bond as f64
}

/// Where bonds can cross a pre-crack: the bounding box of each pre-crack grown by twice the
/// family radius. A bond that crosses a pre-crack meets it at a point on the bond, within the
/// bond's length (at most the family radius) of both its nodes, so a node outside every box
/// has no bond cut by a pre-crack (the factor 2 leaves room for any rounding of the test).
pub(crate) struct PrecrackZone {
    boxes: Vec<([f64; 3], [f64; 3])>,
}

impl PrecrackZone {
    /// The zone of `model`'s pre-cracks for families of radius `radius`, m.
    pub(crate) fn new(model: &Model, body: &Body, radius: f64) -> PrecrackZone {
        let margin = 2.0 * radius;
        PrecrackZone {
            boxes: crack_boxes(model, body.dim(), margin)
                .into_iter()
                .flatten()
                .collect(),
        }
    }

    /// Whether a node at `x` may have a bond cut by a pre-crack.
    #[inline]
    pub(crate) fn near(&self, x: &[f64; 3]) -> bool {
        in_any(&self.boxes, x)
    }
}

/// Whether `x` lies in one of the boxes `(lo, hi)`.
fn in_any(boxes: &[([f64; 3], [f64; 3])], x: &[f64; 3]) -> bool {
    boxes
        .iter()
        .any(|(lo, hi)| (0..3).all(|k| x[k] >= lo[k] && x[k] <= hi[k]))
}

/// Per pre-crack of `model` (in order), the bounding box of the crack grown by `margin`, m;
/// `None` for a crack missing its vectors (which validation refuses).
fn crack_boxes(model: &Model, dim: usize, margin: f64) -> Vec<Option<([f64; 3], [f64; 3])>> {
    let point = |v: &Option<Vec<f64>>| -> Option<[f64; 3]> {
        let v = v.as_ref()?;
        (v.len() >= 2).then(|| [v[0], v[1], v.get(2).copied().unwrap_or(0.0)])
    };
    model
        .precrack
        .iter()
        .map(|c| {
            let corners: Vec<[f64; 3]> = if dim == 3 {
                let (o, e1, e2) = (point(&c.origin)?, point(&c.edge1)?, point(&c.edge2)?);
                let at = |s: f64, t: f64| std::array::from_fn(|k| o[k] + s * e1[k] + t * e2[k]);
                vec![at(0.0, 0.0), at(1.0, 0.0), at(0.0, 1.0), at(1.0, 1.0)]
            } else {
                // (a 2D crack is a segment in the xy plane; z plays no part)
                let (a, b) = (point(&c.start)?, point(&c.end)?);
                vec![[a[0], a[1], f64::NEG_INFINITY], [b[0], b[1], f64::INFINITY]]
            };
            let lo = std::array::from_fn(|k| {
                corners.iter().map(|p| p[k]).fold(f64::INFINITY, f64::min) - margin
            });
            let hi = std::array::from_fn(|k| {
                corners
                    .iter()
                    .map(|p| p[k])
                    .fold(f64::NEG_INFINITY, f64::max)
                    + margin
            });
            Some((lo, hi))
        })
        .collect()
}

/// Whether bond `i -> j` of `body` crosses none of `model`'s pre-cracks.
fn initially_intact(model: &Model, body: &Body, i: usize, j: usize) -> bool {
    let (p, d) = (&body.positions, body.dim());
    !model
        .precrack
        .iter()
        .any(|c| bond_crosses_precrack(c, d, &p[i], &p[j]))
}
