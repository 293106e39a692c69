//! The host memory a model will take, estimated from the model alone (before any node is
//! placed), and the guard that refuses a model the machine cannot hold: `run` and `info`
//! ask it before they build anything large, so a model of terabytes is an error naming both
//! numbers, not a process the kernel kills.
//!
//! The estimate counts what setup and the CPU loop backend hold per node (positions, volume,
//! offsets, horizon volumes, the state, LPS coefficients, padded records) and per directed
//! bond (neighbour, partial-volume factor, status, length and weight, surface correction),
//! with the bonds of a full family per node (the family radius's disc or ball in lattice
//! spacings: an upper estimate, surface nodes have fewer). A lean setup (`Problem::build_lean`,
//! what `info` and a large `gpu-loop` run build) holds no bond. Units: bytes.

use crate::geometry::lattice::{node_bound, MAX_NODES};
use crate::material::family_radius;
use crate::model::{Model, PartialVolume};
use crate::{Error, Result};
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// What a setup of a model will hold on the host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostEstimate {
    /// Nodes (an upper bound for a lattice body: removed shapes are not subtracted).
    pub nodes: f64,
    /// Directed bonds held (zero for a lean setup).
    pub bonds: f64,
    /// Bytes.
    pub bytes: f64,
}

/// Bytes a stored setup with the CPU loop backend holds per node and per directed bond, in
/// dimension `dim` and precision bytes `p` (4 or 8), with or without the surface correction's
/// per-bond factor (also what `peridot info` prints for `cpu-loop`).
pub fn cpu_loop_bytes(dim: usize, p: usize, corrected: bool) -> (usize, usize) {
    // positions 24, volume 8, offsets 8, horizon and weighted volume 16, no-fail 1, state
    // u v a f b (5 d p), LPS coefficients and theta (4 p), padded record (32 + 4 p)
    let node = 24 + 8 + 8 + 16 + 1 + 5 * dim * p + 4 * p + 32 + 4 * p;
    // neighbour 4, beta 8, initial and current status 2, length and weight 2 p
    let bond = 4 + 8 + 2 + 2 * p + if corrected { 8 } else { 0 };
    (node, bond)
}

/// The lattice points of a full family in dimension `dim`: the family radius's disc or ball
/// (horizon `delta`, spacing `dx`, partial volumes `kind`) in spacings, `pi m^2` or
/// `4/3 pi m^3`; surface nodes have fewer, so an upper estimate of bonds per node.
pub fn full_family(dim: usize, kind: PartialVolume, delta: f64, dx: f64) -> f64 {
    let m = family_radius(kind, delta, dx) / dx;
    match dim {
        2 => std::f64::consts::PI * m * m,
        _ => 4.0 / 3.0 * std::f64::consts::PI * m * m * m,
    }
}

/// The nodes of `model`'s body: the lattice bound of its boxes, or the rows of its point
/// cloud (`model_dir` resolves the file; unreadable: none, the body's own error follows).
pub fn node_estimate(model: &Model, model_dir: &Path) -> f64 {
    let disc = &model.discretization;
    match &model.geometry.points_csv {
        Some(file) => line_count(&model_dir.join(file)).unwrap_or(0.0),
        None => {
            let d = disc.dimension.d();
            let delta = disc.delta.unwrap_or(disc.horizon_factor.unwrap_or(0.0) * disc.dx);
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

/// What a setup of `model` with `nodes` nodes holds in precision bytes `p`: lean (no bond
/// stored) or with its bonds.
pub fn host_estimate(model: &Model, nodes: f64, p: usize, lean: bool) -> HostEstimate {
    let disc = &model.discretization;
    let dim = disc.dimension.d();
    // (a validated model gives delta or horizon_factor)
    let delta = disc
        .delta
        .or(disc.horizon_factor.map(|m| m * disc.dx))
        .unwrap_or(disc.dx);
    let family = full_family(dim, disc.partial_volume, delta, disc.dx);
    let (node, bond) = cpu_loop_bytes(dim, p, model.material.surface_correction);
    let bonds = if lean { 0.0 } else { nodes * family };
    HostEstimate {
        nodes,
        bonds,
        bytes: nodes * node as f64 + bonds * bond as f64,
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

/// Refuse an estimate above `limit` bytes (`--memory-limit`), or above what is
/// [`available`] where no limit is given; `what` says what the estimate is of. The error
/// names both numbers and what would fit.
pub fn check(estimate: &HostEstimate, limit: Option<u64>, what: &str) -> Result<()> {
    if !(estimate.nodes <= MAX_NODES as f64) {
        // beyond the node index limit: the body's own check refuses it naming dx
        return Ok(());
    }
    let (cap, source) = match limit {
        Some(l) => (l as f64, "the limit --memory-limit sets"),
        None => match available() {
            Some(a) => (a, "available (MemAvailable, the cgroup's limit, ulimit -v)"),
            None => return Ok(()),
        },
    };
    if estimate.bytes <= cap {
        return Ok(());
    }
    let gib = |b: f64| b / (1u64 << 30) as f64;
    let bonds = match estimate.bonds {
        b if b > 0.0 => format!("{b:.3e} bonds"),
        _ => "no bond stored".to_string(),
    };
    let fits = match estimate.bonds > 0.0 {
        true => {
            "a coarser discretization.dx, --precision f32, or gpu-loop (whose setup \
                 holds no bond on the host)"
        }
        false => "a coarser discretization.dx",
    };
    Err(Error::Usage {
        option: "host memory".into(),
        message: format!(
            "{what} needs about {:.3} GiB ({:.3e} nodes, {bonds}) and {:.3} GiB is {source}: \
             try {fits}; --memory-limit SIZE overrides where the machine reports less than it \
             can give",
            gib(estimate.bytes),
            estimate.nodes,
            gib(cap)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2D lattice of 100 x 50 nodes with horizon 3.015 dx: each node's full family is the
    /// disc of radius 3.015 spacings (about 28.6 lattice points), so the stored setup counts
    /// that many bonds per node and a lean one none; the bytes grow with the precision.
    #[test]
    fn the_estimate_counts_nodes_and_full_families() {
        let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 72e9\ndensity = 2440\n\
            [discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\ndx = 1e-3\n\
            horizon_factor = 3.015\n[geometry]\n\
            box = [{ min = [0, 0], max = [0.099, 0.049] }]\n[solver]\nkind = \"explicit\"\n\
            steps = 1\n";
        let model = crate::model::parse(text, "t", &[]).unwrap();
        let nodes = node_estimate(&model, Path::new("."));
        assert_eq!(nodes, 100.0 * 50.0);
        let stored = host_estimate(&model, nodes, 8, false);
        let family = std::f64::consts::PI * 3.015f64.powi(2);
        assert!((stored.bonds / nodes - family).abs() < 1e-9);
        let lean = host_estimate(&model, nodes, 8, true);
        assert_eq!(lean.bonds, 0.0);
        assert!(lean.bytes < stored.bytes);
        assert!(host_estimate(&model, nodes, 4, false).bytes < stored.bytes);
        // a limit below the estimate is refused naming both numbers; above it passes
        let err = check(&stored, Some(1 << 10), "this model")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("GiB") && err.contains("--memory-limit"),
            "{err}"
        );
        assert!(check(&stored, Some(1 << 40), "this model").is_ok());
    }
}
