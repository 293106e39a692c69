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
//! A run across ranks ([`RankShape`]) counts one rank ([`rank_estimate`], `estimate/ranks.rs`):
//! the problem's per-node arrays whole (every rank holds them; the bonds too where the rank's
//! problem is stored), the bond status gathered whole, and the backend on the rank's part
//! only (its share of the nodes and bonds, with its ghosts), times the ranks that share the
//! host.
//!
//! Units: bytes.

mod ranks;

pub use ranks::{rank_estimate, rank_share, rank_zero_extra, RankShape, RankShare};

use super::cpu::CpuMatrix;
use super::gpu::{GpuLoop, GpuMatrix};
use super::kind::BackendKind;
use super::partitioned::plan::SlotCost;
use crate::geometry::lattice::MAX_NODES;
use crate::gpu::device::device_shortfall;
use crate::gpu::layout::SLICE;
use crate::model::size::parse_byte_size;
use crate::operators::{footprint_of, OperatorCounts, Storage};
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
        // (rank 0's estimate; the other ranks on the host hold less by `rank_zero_extra`)
        let one = rank_estimate(counts, shape, r.count);
        let k = r.on_host.max(1) as f64;
        return Estimate {
            what: shape.describe(counts),
            host: k * one.host - (k - 1.0) * rank_zero_extra(counts),
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
}
