//! The memory a model will take, estimated from the model alone (before any node is
//! placed), and the guard that refuses a model the machine cannot hold: `run`, `info`,
//! `neighbors` and `bench` ask it before they build anything large, so a model of terabytes
//! is an error naming both numbers, not a process the kernel kills.
//!
//! This file owns the model's numbers every estimate starts from ([`ModelCounts`]: nodes,
//! the bonds of a full family, dimension, precision, law), the bytes of a problem's setup
//! per node and per directed bond ([`problem_bytes`]; [`cpu_loop_bytes`] adds the CPU loop
//! backend's own), what the host can give ([`available`], `--memory-limit`) and the refusal's
//! message ([`refuse`]). Each backend kind's count of host and device bytes from these
//! numbers is `backend/estimate.rs`, which reuses the backends' own byte formulas. A full
//! family is the lattice points within the family radius (an upper estimate: surface nodes
//! have fewer). A lean setup (`Problem::build_lean`, what `info` and a large `gpu-loop` run
//! build) holds no bond. Units: bytes.

use crate::geometry::lattice::{node_bound, MAX_NODES};
use crate::material::{family_radius, Law, MaterialConstants};
use crate::model::{Model, PartialVolume, RankPartition};
use crate::{Error, Precision, Result};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// What a setup of a model will hold, on the host and (GPU backends) on the device.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// The backend and precision it is of (`gpu-loop f32`, `cpu-matrix f64 in 4 subdomains`).
    pub what: String,
    /// Nodes (an upper bound for a lattice body: removed shapes are not subtracted).
    pub nodes: f64,
    /// Directed bonds held on the host (zero for a lean setup).
    pub bonds: f64,
    /// Host bytes.
    pub host: f64,
    /// Device bytes (GPU backends; in subdomains, what one needs on the device at least).
    pub device: Option<f64>,
}

/// The numbers of a model every backend kind's byte count starts from, known before any
/// node is placed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelCounts {
    /// Nodes ([`node_estimate`]).
    pub nodes: f64,
    /// Directed bonds per node of a full family ([`full_family`]).
    pub family: f64,
    pub dim: usize,
    /// Bytes per scalar of the run's precision (4 or 8).
    pub scalar_bytes: usize,
    /// The bond law (only its kind matters to a byte count).
    pub law: Law,
    pub surface_correction: bool,
    /// Whether the damage law keeps a damage per bond (`bilinear`, `trilinear`: one more
    /// scalar per bond on `cpu-loop`).
    pub bond_damage: bool,
    pub partial_volume: PartialVolume,
    /// Cell slabs (one family radius wide) along the body's longest axis: where subdomains
    /// are cut, and how many nodes a subdomain's halo holds (a slab on each side).
    pub slabs: f64,
    /// Cells (one family radius wide) along each axis of the boxes' bounding box (1 beyond
    /// the dimension; a body from a file: a cube of its nodes): what the blocks of a run
    /// across ranks are cut from.
    pub cells: [f64; 3],
    /// How a run across ranks cuts the model (`solver.rank_partition`).
    pub rank_partition: RankPartition,
    /// `discretization.dx`, m.
    pub dx: f64,
    /// Whether the horizon follows dx (`horizon_factor`: the family size stays as dx changes;
    /// `delta` in metres: it grows as dx shrinks).
    pub horizon_follows_dx: bool,
    /// Whether the model has crack-face contact (`[contact]` enabled with `crack_faces`): a
    /// `gpu-loop` rank of a run across ranks then keeps its owned nodes' neighbour indices on
    /// the host (`backend/estimate/ranks.rs`).
    pub crack_faces: bool,
    /// Whether the snapshots hold a field made over the bonds on the host
    /// (`Output::reads_bonds`): across ranks every rank then gathers the bond status whole.
    pub bond_fields: bool,
    /// Whether the run writes checkpoints (`output.checkpoint_every`): across ranks rank 0
    /// then gathers the bond status whole.
    pub checkpoints: bool,
}

impl ModelCounts {
    /// The counts of validated `model` (`model_dir` resolves a point cloud) in `precision`.
    pub fn of(model: &Model, model_dir: &Path, precision: Precision) -> ModelCounts {
        let disc = &model.discretization;
        let dim = disc.dimension.d();
        // (a validated model gives delta or horizon_factor)
        let delta = disc
            .delta
            .or(disc.horizon_factor.map(|m| m * disc.dx))
            .unwrap_or(disc.dx);
        let nodes = node_estimate(model, model_dir);
        let radius = family_radius(disc.partial_volume, delta, disc.dx);
        let longest = model
            .geometry
            .boxes
            .iter()
            .flat_map(|b| (0..dim.min(b.min.len()).min(b.max.len())).map(|a| b.max[a] - b.min[a]))
            .fold(0.0f64, f64::max);
        // a point cloud: as long as a cube of its nodes
        let from_file = model.geometry.points_csv.is_some() || model.geometry.mesh.is_some();
        let extent = match from_file {
            true => nodes.powf(1.0 / dim as f64) * disc.dx,
            false => longest,
        };
        let mut cells = [1.0; 3];
        for (a, c) in cells.iter_mut().enumerate().take(dim) {
            let boxes = model
                .geometry
                .boxes
                .iter()
                .filter(|b| b.min.len().min(b.max.len()) > a);
            let lo = boxes
                .clone()
                .map(|b| b.min[a])
                .fold(f64::INFINITY, f64::min);
            let hi = boxes.map(|b| b.max[a]).fold(f64::NEG_INFINITY, f64::max);
            let span = if from_file || hi < lo {
                extent
            } else {
                hi - lo
            };
            *c = ((span / radius).floor() + 1.0).max(1.0);
        }
        let thickness = disc.thickness.unwrap_or(1.0);
        let material = MaterialConstants::new(model, delta, thickness);
        ModelCounts {
            nodes,
            family: full_family(dim, disc.partial_volume, delta, disc.dx),
            dim,
            scalar_bytes: scalar_bytes(precision),
            law: material.law,
            surface_correction: model.material.surface_correction,
            bond_damage: material.softening.is_some(),
            partial_volume: disc.partial_volume,
            slabs: ((extent / radius).floor() + 1.0).max(1.0),
            cells,
            rank_partition: model.solver.rank_partition.unwrap_or_default(),
            dx: disc.dx,
            horizon_follows_dx: disc.delta.is_none(),
            crack_faces: model.contact.as_ref().is_some_and(|c| c.crack_faces_on()),
            bond_fields: model.output.reads_bonds(),
            checkpoints: model.output.checkpoint_every.is_some(),
        }
    }

    /// Directed bonds of the whole model: nodes times a full family.
    pub fn bonds(&self) -> f64 {
        self.nodes * self.family
    }

    /// The same model in precision bytes `p`.
    pub fn in_precision(self, p: usize) -> ModelCounts {
        ModelCounts {
            scalar_bytes: p,
            ..self
        }
    }

    /// Whether the law is state-based (LPS: per-node dilatation arrays).
    pub fn lps(&self) -> bool {
        matches!(self.law, Law::Lps { .. })
    }

    /// The spacing that would scale `bytes` down to `cap`: bytes go as the nodes (dx^-d)
    /// where the horizon follows dx, as nodes times family (dx^-2d) where it is in metres.
    pub fn dx_for(&self, bytes: f64, cap: f64) -> f64 {
        let d = self.dim as f64;
        let power = if self.horizon_follows_dx { d } else { 2.0 * d };
        self.dx * (bytes / cap).powf(1.0 / power)
    }

    /// The advice of a coarser spacing: the dx (1 % above [`dx_for`](Self::dx_for)) at which
    /// `bytes` would come down to `cap`.
    pub fn coarser_dx(&self, bytes: f64, cap: f64) -> String {
        format!(
            "discretization.dx >= {:.3e} m (now {:.3e} m)",
            self.dx_for(bytes, cap) * 1.01,
            self.dx
        )
    }
}

/// Bytes per scalar of `precision`.
pub fn scalar_bytes(precision: Precision) -> usize {
    match precision {
        Precision::F32 => 4,
        Precision::F64 => 8,
    }
}

/// Bytes of a body per node: its position (3 f64) and volume (f64).
pub const BODY_BYTES_PER_NODE: usize = 24 + 8;

/// Bytes a problem's setup and the run driver hold on the host per node and per directed
/// bond in dimension `dim` and precision bytes `p` (4 or 8), whatever the backend: per node
/// the positions 24, volume 8, family offset 8, horizon and weighted volumes 16, no-fail
/// flag 1 and the state `u v a f b` (5 d p); per stored bond its neighbour 4, partial-volume
/// factor 8, initial status 1, and 8 for the surface correction's factor (`corrected`). A
/// lean setup holds the per-node bytes only.
pub fn problem_bytes(dim: usize, p: usize, corrected: bool) -> (usize, usize) {
    let node = BODY_BYTES_PER_NODE + 8 + 16 + 1 + 5 * dim * p;
    let bond = 4 + 8 + 1 + if corrected { 8 } else { 0 };
    (node, bond)
}

/// Bytes a stored setup with the CPU loop backend holds per node and per directed bond, in
/// dimension `dim` and precision bytes `p` (4 or 8), with or without the surface correction's
/// per-bond factor (also what `peridot info` prints for `cpu-loop`): [`problem_bytes`] and
/// the loop's own LPS coefficients and theta (4 p) and padded record (32 + 4 p) per node,
/// current status 1 and length and weight (2 p) per bond.
pub fn cpu_loop_bytes(dim: usize, p: usize, corrected: bool) -> (usize, usize) {
    let (node, bond) = problem_bytes(dim, p, corrected);
    (node + 4 * p + 32 + 4 * p, bond + 1 + 2 * p)
}

/// The lattice points of a full family in dimension `dim`: those within the family radius
/// (horizon `delta`, spacing `dx`, partial volumes `kind`) of a node, itself not counted,
/// counted exactly up to 16 spacings and as the disc or ball `pi m^2`, `4/3 pi m^3` beyond
/// (within a percent there); surface nodes have fewer, so an upper estimate of bonds per
/// node of a lattice body.
pub fn full_family(dim: usize, kind: PartialVolume, delta: f64, dx: f64) -> f64 {
    let m = family_radius(kind, delta, dx) / dx;
    if !(m.is_finite() && m > 0.0) {
        return 0.0;
    }
    if m > 16.0 {
        return match dim {
            2 => std::f64::consts::PI * m * m,
            _ => 4.0 / 3.0 * std::f64::consts::PI * m * m * m,
        };
    }
    // (the search's widening of the radius by 1e-9, `within_radius`)
    let r2 = m * m * (1.0 + 1e-9);
    let k = m.floor() as i64;
    let mut count = 0u64;
    let zs = if dim == 2 { 0..=0 } else { -k..=k };
    for z in zs {
        for y in -k..=k {
            for x in -k..=k {
                if ((x * x + y * y + z * z) as f64) <= r2 {
                    count += 1;
                }
            }
        }
    }
    (count - 1) as f64
}

/// The nodes of `model`'s body: the lattice bound of its boxes, the rows of its point
/// cloud, the cells or vertices of its mesh (`model_dir` resolves the file; unreadable: none, the body's own error follows).
pub fn node_estimate(model: &Model, model_dir: &Path) -> f64 {
    let disc = &model.discretization;
    if let Some(file) = &model.geometry.mesh {
        return crate::geometry::mesh_node_count(model, &model_dir.join(file)).unwrap_or(0.0);
    }
    match &model.geometry.points_csv {
        Some(file) => line_count(&model_dir.join(file)).unwrap_or(0.0),
        None => {
            let d = disc.dimension.d();
            let delta = disc
                .delta
                .unwrap_or(disc.horizon_factor.unwrap_or(0.0) * disc.dx);
            let layers = crate::geometry::layers::slabs(model, disc.dx, delta)
                .map(|s| s.into_iter().map(|s| s.shape).collect::<Vec<_>>())
                .unwrap_or_default();
            node_bound(&model.geometry.boxes, d, disc.dx) + node_bound(&layers, d, disc.dx)
        }
    }
}

/// The lines of the file at `path` (an upper bound on its rows), counted through a buffer
/// without holding the file.
fn line_count(path: &Path) -> Option<f64> {
    let mut reader = BufReader::new(File::open(path).ok()?);
    let mut lines = 1.0;
    loop {
        let chunk = reader.fill_buf().ok()?;
        if chunk.is_empty() {
            return Some(lines);
        }
        lines += chunk.iter().filter(|&&b| b == b'\n').count() as f64;
        let n = chunk.len();
        reader.consume(n);
    }
}

/// The host memory this process may take, bytes: the least of `MemAvailable`, the cgroup's
/// limit less its usage, and the address-space limit; `None` where none can be read.
pub fn available() -> Option<f64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            Some(line.split_whitespace().nth(1)?.parse::<f64>().ok()? * 1024.0)
        });
    let read = |p: &str| -> Option<f64> { std::fs::read_to_string(p).ok()?.trim().parse().ok() };
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .map(|max| max - read("/sys/fs/cgroup/memory.current").unwrap_or(0.0));
    let address_space = address_space_limit();
    [meminfo, cgroup, address_space]
        .into_iter()
        .flatten()
        .reduce(f64::min)
}

/// The soft address-space limit (`ulimit -v`), bytes, where one is set.
fn address_space_limit() -> Option<f64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and reads nothing else.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } == 0;
    (ok && limit.rlim_cur != libc::RLIM_INFINITY).then_some(limit.rlim_cur as f64)
}

/// The host bytes a guard compares with, and what they are: `limit` (`--memory-limit`), else
/// what is [`available`]; `None` where neither is known (nothing is refused).
pub fn host_cap(limit: Option<u64>) -> Option<(f64, &'static str)> {
    match limit {
        Some(l) => Some((l as f64, "the limit --memory-limit sets")),
        None => available().map(|a| (a, "available (MemAvailable, the cgroup's limit, ulimit -v)")),
    }
}

/// The guard on the host: `estimate` against `limit` (`--memory-limit`) or what the host
/// has ([`host_cap`]); above it an error naming both numbers and `fits(cap)`, what would fit.
pub fn check_host(
    estimate: &Estimate,
    limit: Option<u64>,
    fits: impl FnOnce(f64) -> Vec<String>,
) -> Result<()> {
    let Some(cap) = host_cap(limit) else {
        return Ok(());
    };
    if !guarded(estimate) || estimate.host <= cap.0 {
        return Ok(());
    }
    Err(refuse(estimate, "host", estimate.host, cap, &fits(cap.0)))
}

/// A lean setup of a model of `counts` (what `peridot info` builds): per node only.
pub fn lean_estimate(counts: &ModelCounts, what: &str) -> Estimate {
    let (node, _) = problem_bytes(counts.dim, counts.scalar_bytes, counts.surface_correction);
    Estimate {
        what: what.into(),
        nodes: counts.nodes,
        bonds: 0.0,
        host: counts.nodes * node as f64,
        device: None,
    }
}

/// Whether the guard looks at `estimate` at all: beyond the node index limit the body's own
/// check refuses the model, naming dx.
pub fn guarded(estimate: &Estimate) -> bool {
    estimate.nodes <= MAX_NODES as f64
}

/// Gibibytes of `bytes`.
pub fn gib(bytes: f64) -> f64 {
    bytes / (1u64 << 30) as f64
}

/// The refusal of `estimate` (of `model`, what the caller builds) whose `side` (`host` or
/// `device`) needs `needed` bytes where `cap` are `source`: both numbers, the estimate's
/// nodes and bonds, and `fits`, what would fit (each with its bytes); the field is
/// `host memory` or `device memory`.
pub fn refuse(
    estimate: &Estimate,
    side: &str,
    needed: f64,
    (cap, source): (f64, &str),
    fits: &[String],
) -> Error {
    let bonds = match estimate.bonds {
        b if b > 0.0 => format!("{b:.3e} bonds on the host"),
        _ => "no bond on the host".to_string(),
    };
    let fits = match fits.is_empty() {
        true => "nothing smaller of this model fits; a machine with more memory".to_string(),
        false => fits.join("; or "),
    };
    let limit = match side {
        "host" => "; --memory-limit SIZE overrides where the machine reports less than it can give",
        _ => "",
    };
    Error::Usage {
        option: format!("{side} memory"),
        message: format!(
            "this model needs about {:.3} GiB of {side} memory for {} ({:.3e} nodes, {bonds}) \
             and {:.3} GiB is {source}: try {fits}{limit}",
            gib(needed),
            estimate.what,
            estimate.nodes,
            gib(cap)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2D lattice of 100 x 50 nodes with horizon 3.015 dx: a full family is the lattice
    /// points within 3.015 spacings, 28 (the 29 points with i^2 + j^2 <= 9, less the node
    /// itself; the disc pi 3.015^2 = 28.6 within 3 %); in 3D the 122 points of the ball of
    /// radius 3 (123 with i^2 + j^2 + k^2 <= 9). Bonds are nodes times the family; f32 holds
    /// fewer bytes than f64.
    #[test]
    fn the_counts_are_nodes_and_full_families() {
        let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 72e9\ndensity = 2440\n\
            [discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\ndx = 1e-3\n\
            horizon_factor = 3.015\n[geometry]\n\
            box = [{ min = [0, 0], max = [0.099, 0.049] }]\n[solver]\nkind = \"explicit\"\n\
            steps = 1\n";
        let model = crate::model::parse(text, "t", &[]).unwrap();
        let counts = ModelCounts::of(&model, Path::new("."), Precision::F64);
        assert_eq!(counts.nodes, 100.0 * 50.0);
        assert_eq!(counts.family, 28.0);
        let disc = std::f64::consts::PI * 3.015f64.powi(2);
        assert!((counts.family / disc - 1.0).abs() < 0.03);
        assert_eq!(counts.bonds(), 5000.0 * 28.0);
        assert_eq!(full_family(3, PartialVolume::None, 3.015, 1.0), 122.0);
        // slabs one radius wide along the longest axis, 99 mm: 99 / 3.015 = 32.8 -> 33;
        // 49 / 3.015 = 16.3 -> 17 cells along y
        assert_eq!(counts.slabs, 33.0);
        assert_eq!(counts.cells, [33.0, 17.0, 1.0]);
        let (n8, b8) = cpu_loop_bytes(2, 8, false);
        let (n4, b4) = cpu_loop_bytes(2, 4, false);
        assert!(n4 < n8 && b4 < b8);
        // the coarser dx that brings bytes down 8-fold in 2D with the horizon following dx
        assert!((counts.dx_for(8.0, 1.0) / (1e-3 * 8f64.sqrt()) - 1.0).abs() < 1e-12);
        // the refusal names both numbers and what would fit
        let estimate = Estimate {
            what: "cpu-loop f64".into(),
            nodes: counts.nodes,
            bonds: counts.bonds(),
            host: 3.0 * (1u64 << 30) as f64,
            device: None,
        };
        let err = refuse(
            &estimate,
            "host",
            estimate.host,
            (1.0 * (1u64 << 30) as f64, "the limit"),
            &["--precision f32 (0.9 GiB)".into()],
        )
        .to_string();
        assert!(
            err.contains("3.000 GiB") && err.contains("1.000 GiB") && err.contains("f32"),
            "{err}"
        );
    }
}
