//! What a run of a model will hold on the host and on the device, for each backend kind, from
//! the model's numbers alone ([`ModelCounts`]: nodes, the bonds of a full family, dimension,
//! precision, law), before any node is placed; and the memory guard that compares it with
//! what the machine has and refuses, naming both numbers and what would fit.
//!
//! Each backend kind counts with its own byte formula, the one its `info` line and its
//! out-of-memory check use (one byte model per thing):
//!
//! - `cpu-loop` (in core or in subdomains): [`cpu_loop_bytes`] per node and per bond;
//! - `cpu-matrix`: the stored problem ([`problem_bytes`]) and the operators while assembled
//!   ([`CpuMatrix::memory_estimate_of`], on `operators::footprint_of`);
//! - `gpu-loop`: on the host the problem, lean (per node only) or stored; on the device
//!   [`GpuLoop::device_bytes_estimate`] (list or stencil), in subdomains two streaming slots
//!   of one subdomain ([`SlotCost`]) or the budget;
//! - `gpu-matrix`: on the host the stored problem and the operators assembled there; on the
//!   device [`GpuMatrix::memory_estimate_of`], in subdomains streamed two slots of one
//!   subdomain's blocks ([`GpuMatrix::slot_estimate_of`]).
//!
//! A run across ranks ([`RankShape`]) counts one rank ([`rank_estimate`]): the problem's
//! per-node arrays whole (every rank holds them; the bonds too where the rank's problem is
//! stored), the bond status gathered whole, and the backend on the rank's part only (its
//! share of the nodes and bonds, with its ghosts), times the ranks that share the host.
//!
//! Units: bytes.

use super::cpu::CpuMatrix;
use super::gpu::{GpuLoop, GpuMatrix};
use super::kind::BackendKind;
use super::partitioned::plan::SlotCost;
use crate::geometry::lattice::MAX_NODES;
use crate::gpu::device::device_shortfall;
use crate::gpu::layout::SLICE;
use crate::model::size::parse_byte_size;
use crate::operators::{footprint_of, OperatorCounts, Storage};
use crate::partition::blocks::{choose, uniform_ghosts, Product};
use crate::setup::memory::{
    self, cpu_loop_bytes, gib, guarded, problem_bytes, Estimate, ModelCounts,
};
use crate::Result;

/// How a run sets up a model: what changes its bytes besides the model's numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunShape {
    /// The backend, `auto` resolved (`auto` itself counts as `cpu-loop`).
    pub kind: BackendKind,
    /// `gpu-loop` set up lean: no bond held on the host.
    pub lean: bool,
    /// `gpu-loop` on a full box lattice's stencil (no neighbour list on the device).
    pub listless: bool,
    /// Subdomains: their count (given, or a budget's in-core share).
    pub subdomains: Option<usize>,
    /// The device budget of a subdomain run (`--gpu-memory-budget`), bytes.
    pub budget: Option<f64>,
    /// Subdomains streamed through two slots (`--streamed`, or under a budget).
    pub streamed: bool,
    /// A run across ranks (`None`: one process).
    pub ranks: Option<RankShape>,
}

/// The ranks of a distributed run, for its estimate: each process holds one rank's part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankShape {
    /// Ranks of the run (P).
    pub count: usize,
    /// Ranks that share this host (whose memory the guard compares with the estimate).
    pub on_host: usize,
}

impl RunShape {
    /// An in-core run on `kind`, stored (not lean), with a neighbour list.
    pub fn in_core(kind: BackendKind) -> RunShape {
        RunShape {
            kind,
            lean: false,
            listless: false,
            subdomains: None,
            budget: None,
            streamed: false,
            ranks: None,
        }
    }

    /// The name of this shape with `counts`' precision: `gpu-loop f32 in 4 subdomains`.
    fn describe(&self, counts: &ModelCounts) -> String {
        let kind = match self.kind {
            BackendKind::Auto => BackendKind::CpuLoop,
            k => k,
        };
        let p = if counts.scalar_bytes == 4 {
            "f32"
        } else {
            "f64"
        };
        let lean = if self.lean { " (lean setup)" } else { "" };
        if let Some(r) = self.ranks {
            let held = match r.on_host {
                1 => format!("one rank of {}", r.count),
                k => format!("{k} ranks of {} on this host", r.count),
            };
            return format!("{} {p}{lean}, {held}", kind.name());
        }
        match (self.subdomains, self.budget) {
            (_, Some(b)) => format!(
                "{} {p}{lean} in subdomains within {:.3} GiB",
                kind.name(),
                gib(b)
            ),
            (Some(k), None) => format!("{} {p}{lean} in {k} subdomains", kind.name()),
            (None, None) => format!("{} {p}{lean}", kind.name()),
        }
    }
}

/// The device budget `text` (`--gpu-memory-budget`: bytes, or `P%` of the in-core device
/// bytes of `shape`'s backend on `counts`), `None` where it does not parse (the run's own
/// parsing names the error).
pub fn budget_of(text: &str, counts: &ModelCounts, shape: &RunShape) -> Option<f64> {
    match text.trim().strip_suffix('%') {
        Some(p) => {
            let share: f64 = p.trim().parse().ok().filter(|s| *s > 0.0 && *s <= 100.0)?;
            let in_core = RunShape {
                listless: false,
                ..RunShape::in_core(shape.kind)
            };
            Some(share / 100.0 * estimate(counts, &in_core).device?)
        }
        None => parse_byte_size(text).map(|b| b as f64),
    }
}

/// What a run of shape `shape` holds for a model of `counts` (across ranks: what the ranks on
/// this host hold, [`rank_estimate`] each).
pub fn estimate(counts: &ModelCounts, shape: &RunShape) -> Estimate {
    if let Some(r) = shape.ranks {
        let one = rank_estimate(counts, shape, r.count);
        let k = r.on_host.max(1) as f64;
        return Estimate {
            what: shape.describe(counts),
            host: k * one.host,
            bonds: k * one.bonds,
            ..one
        };
    }
    let (n, bonds, d, p) = (
        counts.nodes,
        counts.bonds(),
        counts.dim,
        counts.scalar_bytes,
    );
    let corrected = counts.surface_correction;
    let (pn, pb) = problem_bytes(d, p, corrected);
    let stored = n * pn as f64 + bonds * pb as f64;
    let ops = operator_counts(counts);
    let (host, held, device) = match shape.kind {
        BackendKind::Auto | BackendKind::CpuLoop => {
            let (ln, lb) = cpu_loop_bytes(d, p, corrected);
            // (a softening law's damage per bond, `backend/cpu/softening.rs`)
            let lb = lb + usize::from(counts.bond_damage) * p;
            (n * ln as f64 + bonds * lb as f64, bonds, None)
        }
        BackendKind::CpuMatrix => {
            let operators = match p {
                4 => CpuMatrix::<f32>::memory_estimate_of(&ops, Storage::Half, true),
                _ => CpuMatrix::<f64>::memory_estimate_of(&ops, Storage::Half, true),
            };
            (stored + operators as f64, bonds, None)
        }
        BackendKind::GpuLoop => {
            let device = match (shape.budget, shape.subdomains) {
                (Some(b), _) => b,
                (None, Some(k)) => gpu_loop_slots(counts, k),
                (None, None) => {
                    let bytes = match p {
                        4 => GpuLoop::<f32>::device_bytes_estimate(counts, shape.listless),
                        _ => GpuLoop::<f64>::device_bytes_estimate(counts, shape.listless),
                    };
                    bytes as f64
                }
            };
            match shape.lean {
                true => (n * pn as f64, 0.0, Some(device)),
                false => (stored, bonds, Some(device)),
            }
        }
        BackendKind::GpuMatrix => {
            let assembled = footprint_of(&ops, Storage::Half, p).assembled() as f64;
            let device = match (shape.budget, shape.subdomains) {
                (Some(b), _) => b,
                (None, Some(k)) if shape.streamed => gpu_matrix_slots(counts, &ops, k),
                // every subdomain's blocks resident: about the in-core bytes
                _ => GpuMatrix::<f64>::memory_estimate_of(&ops, Storage::Half, p) as f64,
            };
            (stored + assembled, bonds, Some(device))
        }
    };
    Estimate {
        what: shape.describe(counts),
        nodes: n,
        bonds: held,
        host,
        device,
    }
}

/// What `peridot export-matrix` holds for a model of `counts`: the stored problem, the
/// operators assembled in full storage in f64 and `K` (N/m): its non-zeros are `d^2` per pair
/// of nodes one family apart (PMB) or two (LPS, whose dilatation couples the families of
/// both nodes: `2^d` times the pairs), each with a column index and an f64 value.
pub fn export_estimate(counts: &ModelCounts) -> Estimate {
    let counts = counts.in_precision(8);
    let (n, d) = (counts.nodes, counts.dim);
    let stored = estimate(&counts, &RunShape::in_core(BackendKind::CpuMatrix));
    let ops = operator_counts(&counts);
    let (pn, pb) = problem_bytes(d, 8, counts.surface_correction);
    let problem = n * pn as f64 + counts.bonds() * pb as f64;
    let assembled = footprint_of(&ops, Storage::Full, 8).assembled() as f64;
    let reach = if counts.lps() {
        2f64.powi(d as i32)
    } else {
        1.0
    };
    let k_nnz = n * (d * d) as f64 * (1.0 + reach * counts.family);
    Estimate {
        what: "export-matrix (f64 operators in full storage and K)".into(),
        host: problem + assembled + 12.0 * k_nnz,
        ..stored
    }
}

/// The operators' counts of a model of `counts`, held within what the byte formulas' integer
/// arithmetic takes (nodes up to the node index limit, bonds up to 2^40: a model beyond
/// either is refused anyway, by the body's check or by the bytes of its stored bonds,
/// which are counted in f64).
fn operator_counts(counts: &ModelCounts) -> OperatorCounts {
    OperatorCounts {
        nodes: counts.nodes.min(MAX_NODES as f64) as usize,
        bonds: counts.bonds().min(2f64.powi(40)) as usize,
        dim: counts.dim,
        law: counts.law,
    }
}

/// A subdomain of `counts` cut in `k`: its owned nodes and its halo (a cell slab on each
/// side, at most the rest of the model).
fn subdomain_nodes(counts: &ModelCounts, k: usize) -> (f64, f64) {
    let owned = (counts.nodes / k.max(1) as f64).ceil();
    let halo = (2.0 * counts.nodes / counts.slabs).min(counts.nodes - owned);
    (owned, halo.max(0.0))
}

/// One rank's share of a model of `counts` cut into `p` parts as a distributed run cuts it
/// (`distributed/plan.rs`: cells one family radius wide, in slabs along the longest axis or
/// in blocks cut along two or three axes, balanced by bonds), each bounded by the whole
/// model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankShare {
    /// Owned nodes: at most a `1/p` share and two mean cells more along each cut axis (a cut
    /// falls between node layers, so a part exceeds its share by a layer at most, under a
    /// cell; two mean cells cover a cell of twice the mean cross-section). Slabs: a `1/p`
    /// share and two mean slabs.
    pub owned: f64,
    /// Ghosts: the cells one deep around the mean part (slabs: a slab on each side).
    pub ghosts: f64,
    /// Directed bonds of the owned nodes: as the owned nodes (the balance is by bonds; the
    /// same rounding).
    pub bonds: f64,
}

/// [`RankShare`] of `counts` in `p` parts, cut as `counts.rank_partition` says: the product
/// of parts `partition::blocks` chooses by the ghosts' cell bound, here on the boxes' grid of
/// cells filled uniformly.
pub fn rank_share(counts: &ModelCounts, p: usize) -> RankShare {
    let (n, bonds, c) = (
        counts.nodes,
        counts.bonds(),
        counts.cells.map(|c| c.max(1.0)),
    );
    let dim = counts.dim.clamp(1, 3);
    let longest = (0..dim)
        .rev()
        .max_by(|&a, &b| c[a].total_cmp(&c[b]))
        .unwrap_or(0);
    let p = p.max(1);
    let len = c.map(|x| x.min(u32::MAX as f64) as usize);
    let ghosts = |q: Product| uniform_ghosts(q, c);
    let product = choose(p, dim, len, longest, counts.rank_partition, ghosts)
        .unwrap_or_else(|| std::array::from_fn(|a| if a == longest { p } else { 1 }));
    let cut = |a: usize| if product[a] > 1 { 2.0 } else { 0.0 };
    let mean: f64 = (0..3).map(|a| c[a] / product[a] as f64).product();
    let grown: f64 = (0..3).map(|a| c[a] / product[a] as f64 + cut(a)).product();
    let share = grown / c.iter().product::<f64>();
    let owned = (n * share).min(n);
    RankShare {
        owned,
        ghosts: (n * (grown - mean) / c.iter().product::<f64>())
            .min(n - owned)
            .max(0.0),
        bonds: (bonds * share).min(bonds),
    }
}

/// What one rank of a run of `shape` across `p` ranks holds for a model of `counts`: an
/// upper bound, each term counted at its largest.
///
/// - The rank's problem: every node's arrays (positions, volumes, state: [`problem_bytes`]
///   per node) on every rank; the bonds whole only where the problem is stored
///   (`shape.lean` false: `cpu-matrix`, a restart), else none beyond the part's.
/// - The bond status gathered whole (to every rank for the fields and the end, to rank 0
///   for a checkpoint): the gathered array, the gather's buffer and a checkpoint's copy
///   (rank 0's), 1 byte a bond each,
///   and a softening law's damage per bond likewise (`distributed/collect.rs`).
/// - The backend on the rank's part ([`rank_share`]): `cpu-loop` two loops over the local
///   nodes (interior and boundary, `distributed/split.rs`: [`cpu_loop_bytes`] per local node
///   each), the local displacement, forces and dilatations (`3 d + 2` scalars a local node),
///   the global CSR offsets (8 bytes a node), the owned bonds in one of the loops with the
///   subdomain's family index (4 bytes a bond) beside them while the loops are made;
///   `cpu-matrix` the operators of the owned bonds and of the ghosts' bonds into owned nodes
///   (at most a full family per ghost), [`CpuMatrix::memory_estimate_of`], and the local
///   problem's data of the owned bonds ([`problem_bytes`] a bond); `gpu-matrix` the same
///   operators on the device ([`GpuMatrix::memory_estimate_of`]), on the host their
///   assembly before the upload and the local problem's data; `gpu-loop` on the
///   host the part's families and status (at most [`problem_bytes`] a bond and the family
///   index), on the device [`GpuLoop::device_bytes_estimate`] of the local nodes.
pub fn rank_estimate(counts: &ModelCounts, shape: &RunShape, p: usize) -> Estimate {
    let (n, bonds) = (counts.nodes, counts.bonds());
    let (d, s, corrected) = (counts.dim, counts.scalar_bytes, counts.surface_correction);
    let share = rank_share(counts, p);
    let local = share.owned + share.ghosts;
    let (pn, pb) = problem_bytes(d, s, corrected);
    let damage = usize::from(counts.bond_damage) * s;
    let whole_bonds = if shape.lean { 0.0 } else { bonds };
    let problem = n * pn as f64 + whole_bonds * pb as f64;
    let gathered = bonds * (3 * (1 + damage)) as f64;
    let local_arrays = local * ((3 * d + 2) * s) as f64 + 8.0 * n;
    let (part, device) = match shape.kind {
        BackendKind::CpuMatrix => {
            let ops = rank_operator_counts(counts, &share, local);
            let operators = match s {
                4 => CpuMatrix::<f32>::memory_estimate_of(&ops, Storage::Half, true),
                _ => CpuMatrix::<f64>::memory_estimate_of(&ops, Storage::Half, true),
            };
            // (and the local problem they are assembled from: the part's bonds' data)
            (operators as f64 + share.bonds * pb as f64, None)
        }
        BackendKind::GpuMatrix => {
            let ops = rank_operator_counts(counts, &share, local);
            // (the host assembles the part's operators, then uploads them)
            let assembled = footprint_of(&ops, Storage::Half, s).assembled() as f64;
            let device = GpuMatrix::<f64>::memory_estimate_of(&ops, Storage::Half, s);
            (assembled + share.bonds * pb as f64, Some(device as f64))
        }
        BackendKind::GpuLoop => {
            let part = ModelCounts {
                nodes: local,
                ..*counts
            };
            let device = match s {
                4 => GpuLoop::<f32>::device_bytes_estimate(&part, false),
                _ => GpuLoop::<f64>::device_bytes_estimate(&part, false),
            };
            (share.bonds * (pb + 4) as f64, Some(device as f64))
        }
        _ => {
            let (ln, lb) = cpu_loop_bytes(d, s, corrected);
            let loops = 2.0 * local * ln as f64 + share.bonds * (lb + damage + 4) as f64;
            (loops, None)
        }
    };
    Estimate {
        what: shape.describe(counts),
        nodes: n,
        bonds: whole_bonds + share.bonds,
        host: problem + gathered + local_arrays + part,
        device,
    }
}

/// The operators of a rank's part of the matrix scheme (`distributed/matrix.rs`): its `local`
/// nodes (owned and ghosts) and the owned nodes' bonds with the ghosts' bonds into owned
/// nodes, at most a full family per ghost (`share` from [`rank_share`]).
fn rank_operator_counts(counts: &ModelCounts, share: &RankShare, local: f64) -> OperatorCounts {
    OperatorCounts {
        nodes: local.min(MAX_NODES as f64) as usize,
        bonds: (share.bonds + share.ghosts * counts.family).min(2f64.powi(40)) as usize,
        ..operator_counts(counts)
    }
}

/// Device bytes of the two streaming slots of `gpu-loop` in `k` subdomains: each a
/// subdomain's owned nodes with full families, padded by slices, and its halo.
fn gpu_loop_slots(counts: &ModelCounts, k: usize) -> f64 {
    let (owned, halo) = subdomain_nodes(counts, k);
    let cost = SlotCost::new(counts.dim, counts.scalar_bytes, counts.lps());
    let slots = (owned / SLICE as f64).ceil() * SLICE as f64 * counts.family.ceil();
    2.0 * cost.bytes(owned as usize, slots, halo as usize)
}

/// Device bytes of the two streaming slots of `gpu-matrix` in `k` subdomains: each one
/// subdomain's operator blocks (its owned and halo nodes, its share of the bond rows).
fn gpu_matrix_slots(counts: &ModelCounts, ops: &OperatorCounts, k: usize) -> f64 {
    let (owned, halo) = subdomain_nodes(counts, k);
    let rows = ops.rows(Storage::Half).div_ceil(k.max(1));
    let slot = GpuMatrix::<f64>::slot_estimate_of(
        ops,
        Storage::Half,
        counts.scalar_bytes,
        (owned + halo) as usize,
        rows,
    );
    2.0 * slot as f64
}

/// The guard on the host: `shape`'s estimate for `counts` against `limit`
/// (`--memory-limit`) or what the host has; refused naming both numbers and what would fit
/// (`lean_allowed`: whether this run may set `gpu-loop` up lean). Returns the estimate.
pub fn guard_host(
    counts: &ModelCounts,
    shape: &RunShape,
    limit: Option<u64>,
    lean_allowed: bool,
) -> Result<Estimate> {
    let est = estimate(counts, shape);
    memory::check_host(&est, limit, |cap| {
        let host = |c: &ModelCounts, s: &RunShape| estimate(c, s).host;
        let mut fits = Vec::new();
        if counts.scalar_bytes == 8 {
            let f32 = host(&counts.in_precision(4), shape);
            if f32 <= cap {
                fits.push(format!("--precision f32 ({:.3} GiB)", gib(f32)));
            }
        }
        if let Some(r) = shape.ranks {
            // fewer ranks on this host, each holding its part
            let one = host(
                counts,
                &RunShape {
                    ranks: Some(RankShape { on_host: 1, ..r }),
                    ..*shape
                },
            );
            let k = (cap / one).floor() as usize;
            if (1..r.on_host).contains(&k) {
                fits.push(format!(
                    "at most {k} of the {} ranks on this host ({:.3} GiB each)",
                    r.count,
                    gib(one)
                ));
            }
            fits.push(counts.coarser_dx(est.host, cap));
            return fits;
        }
        let lean_loop = RunShape {
            lean: true,
            ..RunShape::in_core(BackendKind::GpuLoop)
        };
        let lean = host(counts, &lean_loop);
        if lean <= cap {
            match (shape.kind, lean_allowed) {
                (BackendKind::GpuLoop, false) => fits.push(format!(
                    "gpu-loop without --export-stiffness and --restart, set up lean with no \
                     bond on the host ({:.3} GiB)",
                    gib(lean)
                )),
                (BackendKind::GpuLoop, true) => {}
                _ => fits.push(format!(
                    "--backend gpu-loop, whose lean setup holds no bond on the host ({:.3} \
                     GiB; on the device in subdomains where it does not fit)",
                    gib(lean)
                )),
            }
        }
        fits.push(counts.coarser_dx(est.host, cap));
        fits
    })?;
    Ok(est)
}

/// The guard on the device: `shape`'s device bytes for `counts` against `free` of `total`
/// bytes free on device `name`; refused naming both numbers and what would fit (f32, a
/// subdomain count, a coarser dx, the CPU). Pure: the caller asks the device.
pub fn guard_device(
    counts: &ModelCounts,
    shape: &RunShape,
    (free, total): (usize, usize),
    name: &str,
) -> Result<()> {
    let est = estimate(counts, shape);
    let Some(needed) = est.device.filter(|_| guarded(&est)) else {
        return Ok(());
    };
    let cap = free as f64;
    if needed <= cap {
        return Ok(());
    }
    let device = |c: &ModelCounts, s: &RunShape| estimate(c, s).device.unwrap_or(0.0);
    let mut fits = Vec::new();
    if counts.scalar_bytes == 8 {
        let f32 = device(&counts.in_precision(4), shape);
        if f32 <= cap {
            fits.push(format!("--precision f32 ({:.3} GiB)", gib(f32)));
        }
    }
    if shape.budget.is_none() {
        // the fewest subdomains (doubling) whose two streaming slots fit
        let most = (counts.nodes / SLICE as f64).max(2.0) as usize;
        let mut k = shape.subdomains.map_or(2, |k| 2 * k);
        while k <= most {
            let cut = RunShape {
                subdomains: Some(k),
                streamed: true,
                ..*shape
            };
            let bytes = device(counts, &cut);
            if bytes <= cap {
                let streamed = match shape.kind {
                    BackendKind::GpuMatrix => " --streamed",
                    _ => "",
                };
                fits.push(format!(
                    "--subdomains {k}{streamed} ({:.3} GiB on the device)",
                    gib(bytes)
                ));
                break;
            }
            k *= 2;
        }
    }
    fits.push(counts.coarser_dx(needed, cap));
    fits.push("--backend cpu-loop".into());
    let fits = fits.join("; or ");
    match device_shortfall(&est.what, needed as usize, (free, total), name, &fits) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::footprint;
    use crate::setup::Problem;
    use crate::Precision;
    use std::path::Path;

    fn plate(law: &str) -> crate::model::Model {
        let nu = if law == "lps" {
            "poisson_ratio = 0.25\n"
        } else {
            ""
        };
        let text = format!(
            "[material]\nmodel = \"{law}\"\n{nu}youngs_modulus = 72e9\ndensity = 2440\n\
             [discretization]\ndimension = \"plane-stress\"\nthickness = 1e-3\ndx = 1e-3\n\
             horizon_factor = 3.015\n[geometry]\n\
             box = [{{ min = [0, 0], max = [0.0595, 0.0595] }}]\n[solver]\nkind = \"explicit\"\n\
             steps = 1\n"
        );
        crate::model::parse(&text, "t", &[]).unwrap()
    }

    /// The operators' bytes estimated from a 60 x 60 plate's numbers (3600 nodes, 28 bonds
    /// each) against `footprint.rs` on the assembled plate: the estimate counts every node
    /// with a full family, so it is above, by the bonds the surface nodes lack: nodes within
    /// 3 spacings of an edge (4 x 3 x 60 of 3600) lose up to half their family, at most 10 %
    /// of the bonds, about 4.5 % on average (measured 1.044). The estimate is within
    /// [1, 1.08] of the assembled bytes, for PMB and LPS, f32 and f64, full and half storage.
    #[test]
    fn the_estimate_from_counts_agrees_with_the_assembled_footprint() {
        for law in ["pmb", "lps"] {
            let model = plate(law);
            let counts = ModelCounts::of(&model, Path::new("."), Precision::F64);
            let problem = Problem::build(model, Path::new(".")).unwrap();
            assert_eq!(counts.nodes as usize, problem.body.len());
            let ops = OperatorCounts {
                nodes: counts.nodes as usize,
                bonds: counts.bonds() as usize,
                dim: counts.dim,
                law: counts.law,
            };
            for storage in [Storage::Full, Storage::Half] {
                for t in [4, 8] {
                    let assembled = footprint(&problem, storage, t).assembled() as f64;
                    let estimated = footprint_of(&ops, storage, t).assembled() as f64;
                    let ratio = estimated / assembled;
                    assert!(
                        (1.0..1.08).contains(&ratio),
                        "{law} {storage:?} {t}: {ratio}"
                    );
                }
            }
            // the same formula: the problem's own counts give its footprint exactly
            let exact = OperatorCounts::of(&problem);
            let half = footprint_of(&exact, Storage::Half, 8);
            assert_eq!(half, footprint(&problem, Storage::Half, 8));
        }
    }

    /// The GPU backends' device bytes estimated from the plate's numbers against their exact
    /// counts on the built plate (`GpuLoop::device_bytes_for`, `GpuMatrix::memory_estimate`).
    /// gpu-matrix's follow the bonds, above by those the surface nodes lack as the operators
    /// above: within [1, 1.08] (measured 1.042). gpu-loop's list pads every slice of 32 nodes
    /// to its largest family, which is a full one in all but the slices of surface nodes
    /// only, and a slot's 4 + 1/8 bytes weigh against 149 bytes a node: within [1, 1.05]
    /// (measured 1.0085). The stencil form counts slots, not bonds: equal (28 slots, the
    /// lattice points within 3.015 spacings), within [1, 1.01].
    #[test]
    fn the_device_estimates_cover_the_exact_device_bytes() {
        let model = plate("pmb");
        let counts = ModelCounts::of(&model, Path::new("."), Precision::F64);
        let problem = Problem::build(model, Path::new(".")).unwrap();
        let list = estimate(&counts, &RunShape::in_core(BackendKind::GpuLoop))
            .device
            .unwrap();
        let exact = GpuLoop::<f64>::device_bytes_for(&problem, None) as f64;
        assert!(
            (1.0..1.05).contains(&(list / exact)),
            "list {list} / {exact}"
        );
        let stencil = GpuLoop::<f64>::lattice(&problem).expect("a full box lattice");
        assert_eq!(stencil.slots() as f64, counts.family);
        let listless = RunShape {
            listless: true,
            ..RunShape::in_core(BackendKind::GpuLoop)
        };
        let est = estimate(&counts, &listless).device.unwrap();
        let exact = GpuLoop::<f64>::device_bytes_for(&problem, Some(&stencil)) as f64;
        assert!(
            (1.0..1.01).contains(&(est / exact)),
            "stencil {est} / {exact}"
        );
        let matrix = estimate(&counts, &RunShape::in_core(BackendKind::GpuMatrix));
        let exact = GpuMatrix::<f64>::memory_estimate(&problem, Storage::Half, 8) as f64;
        let ratio = matrix.device.unwrap() / exact;
        assert!((1.0..1.08).contains(&ratio), "gpu-matrix {ratio}");
    }

    /// Each backend kind's estimate of the plate: cpu-matrix holds the operators beside the
    /// stored problem (more than the cpu-loop's per-bond arrays of 4 + 8 + 2 + 2 p bytes);
    /// gpu-loop lean holds no bond on the host; its device bytes in 4 subdomains are two
    /// slots of a quarter (with halos) of the in-core; f32 needs fewer bytes than f64.
    #[test]
    fn each_backend_kind_counts_its_own_bytes() {
        let model = plate("pmb");
        let counts = ModelCounts::of(&model, Path::new("."), Precision::F64);
        let of = |kind| estimate(&counts, &RunShape::in_core(kind));
        let cpu_loop = of(BackendKind::CpuLoop);
        let cpu_matrix = of(BackendKind::CpuMatrix);
        assert!(cpu_matrix.host > cpu_loop.host);
        assert!(cpu_loop.device.is_none() && cpu_matrix.device.is_none());
        let lean = estimate(
            &counts,
            &RunShape {
                lean: true,
                ..RunShape::in_core(BackendKind::GpuLoop)
            },
        );
        assert_eq!(lean.bonds, 0.0);
        assert!(lean.host < cpu_loop.host / 5.0);
        let in_core = lean.device.unwrap();
        let split = estimate(
            &counts,
            &RunShape {
                subdomains: Some(4),
                lean: true,
                ..RunShape::in_core(BackendKind::GpuLoop)
            },
        )
        .device
        .unwrap();
        assert!(
            split < in_core && split > 0.25 * in_core,
            "{split} {in_core}"
        );
        let f32 = estimate(
            &counts.in_precision(4),
            &RunShape::in_core(BackendKind::GpuMatrix),
        );
        assert!(f32.device.unwrap() < of(BackendKind::GpuMatrix).device.unwrap());
    }

    /// The device guard refuses a model whose device bytes exceed the free memory, naming
    /// both numbers and a subdomain count whose two slots fit (half the in-core bytes free:
    /// 4 subdomains, two slots of a quarter each with their halos); it passes where enough is
    /// free.
    #[test]
    fn the_device_guard_names_what_would_fit() {
        let model = plate("pmb");
        let counts = ModelCounts::of(&model, Path::new("."), Precision::F64);
        let shape = RunShape::in_core(BackendKind::GpuLoop);
        let needed = estimate(&counts, &shape).device.unwrap() as usize;
        let total = 80usize << 30;
        assert!(guard_device(&counts, &shape, (needed, total), "H100").is_ok());
        let err = guard_device(&counts, &shape, (needed / 2, total), "H100")
            .unwrap_err()
            .to_string();
        assert!(err.contains("--subdomains"), "{err}");
        assert!(err.contains("discretization.dx >="), "{err}");
        assert!(err.contains(&format!("({needed} bytes)")), "{err}");
    }

    /// One rank of `cpu-loop` across ranks, on the benchmark block at dx 0.5 mm
    /// (`models/pmb_block_3d.toml`: 101^3 = 1.03 M nodes, 122 bonds in a full family, 34
    /// slabs), f64. Across P = 2 a rank holds half the bonds (and two slabs' more at most),
    /// while the per-node arrays stay whole and the bond status is gathered whole: its
    /// estimate (3.36 GB) lies below the in-core one (4.05 GB) and above the bytes of one
    /// rank's bond share alone (half the bonds at cpu-loop's 30 bytes a bond: 1.89 GB),
    /// which any rank holds whatever else it holds. Against the peak resident memory measured
    /// (`docs/distributed.md`, "the setup of a distributed run": 2.86 GB per rank on 2
    /// ranks, 4.82 GB on 1 rank, 3.96 GB in core) each estimate is an upper bound within
    /// 25 % (it counts every term at its largest: measured 1.17, 1.14 and 1.02). A rank of
    /// one holds more than the in-core run (its two loops over the same nodes); four ranks
    /// less each than two; two ranks on one host twice one rank's bytes.
    #[test]
    fn a_rank_of_a_distributed_run_counts_its_part_of_the_bonds() {
        let counts = block_counts();
        assert_eq!(counts.nodes, 101f64.powi(3));
        assert_eq!((counts.family, counts.slabs), (122.0, 34.0));
        let in_core = estimate(&counts, &RunShape::in_core(BackendKind::CpuLoop)).host;
        let shape = |count, on_host| RunShape {
            lean: true,
            ranks: Some(RankShape { count, on_host }),
            ..RunShape::in_core(BackendKind::CpuLoop)
        };
        let rank = |count, on_host| estimate(&counts, &shape(count, on_host));
        let two = rank(2, 1);
        let (_, lb) = cpu_loop_bytes(3, 8, false);
        let share = counts.bonds() / 2.0 * lb as f64;
        assert!(
            share < two.host && two.host < in_core,
            "{share} {} {in_core}",
            two.host
        );
        assert!(two.what.ends_with("one rank of 2"), "{}", two.what);
        for (est, measured) in [
            (two.host, 2.86e9),
            (rank(1, 1).host, 4.82e9),
            (in_core, 3.96e9),
        ] {
            let ratio = est / measured;
            assert!((1.0..1.25).contains(&ratio), "{est} / {measured} = {ratio}");
        }
        assert!(rank(1, 1).host > in_core);
        assert!(rank(4, 1).host < two.host);
        assert_eq!(rank(2, 2).host, 2.0 * two.host);
        // a host with room for one and a half ranks: one rank passes, two are refused with
        // one named as what fits
        let cap = Some((1.5 * two.host) as u64);
        assert!(guard_host(&counts, &shape(2, 1), cap, false).is_ok());
        let err = guard_host(&counts, &shape(2, 2), cap, false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("at most 1 of the 2 ranks on this host"),
            "{err}"
        );
    }

    /// The counts of `models/pmb_block_3d.toml` at `dx = 0.5 mm` (101^3 nodes), f64.
    fn block_counts() -> ModelCounts {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/pmb_block_3d.toml"
        ));
        let dx = ["discretization.dx=0.5e-3".to_string()];
        let model = crate::model::load(path, &dx).unwrap();
        ModelCounts::of(&model, Path::new("."), Precision::F64)
    }

    /// A rank of `gpu-matrix` across ranks holds on its device the operators of its part (half
    /// storage: its owned pairs and the ghosts' bonds into owned nodes), not the whole model's:
    /// on one rank exactly the in-core estimate (no ghost), on two about half of it (measured
    /// on two H100s at 2 M nodes, f64: 12.86 GiB on one rank, 6.60 GiB per rank on two;
    /// estimated 13.5 and 8.0 GiB). The host keeps the stored problem whole (the rows are
    /// assembled from it), so its share shrinks less.
    #[test]
    fn a_gpu_matrix_rank_counts_its_part_of_the_operators() {
        let counts = block_counts();
        let in_core = estimate(&counts, &RunShape::in_core(BackendKind::GpuMatrix));
        let rank = |count| {
            let shape = RunShape {
                ranks: Some(RankShape { count, on_host: 1 }),
                ..RunShape::in_core(BackendKind::GpuMatrix)
            };
            estimate(&counts, &shape)
        };
        let (one, two) = (rank(1), rank(2));
        let device = |e: &Estimate| e.device.expect("gpu-matrix holds device bytes");
        let whole = device(&in_core);
        assert!(
            (device(&one) / whole - 1.0).abs() < 1e-9,
            "one rank {} against in core {whole}",
            device(&one)
        );
        let half = device(&two) / whole;
        assert!((0.5..0.65).contains(&half), "two ranks: {half} of in core");
        assert!(two.host < one.host, "{} {}", two.host, one.host);
        assert!(two.what.ends_with("one rank of 2"), "{}", two.what);
    }
}
