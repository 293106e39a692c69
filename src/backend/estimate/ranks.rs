//! The memory estimate of one rank of a run across ranks ([`rank_estimate`]), from the
//! model's numbers alone, as the in-core estimates of `estimate.rs` are: the problem's
//! per-node arrays whole (every rank holds them; the bonds too where the rank's problem is
//! stored), the bond status gathered whole, the backend on the rank's part only (its share
//! of the nodes and bonds, with its ghosts: [`rank_share`], cut as the run cuts it), and on a
//! `gpu-loop` rank with crack-face contact its owned nodes' neighbour indices kept on the
//! host. `estimate.rs` multiplies it by the ranks that share the host ([`RankShape`]).
//!
//! Units: bytes.

use super::{operator_counts, RunShape};
use crate::backend::cpu::CpuMatrix;
use crate::backend::gpu::{GpuLoop, GpuMatrix};
use crate::backend::kind::BackendKind;
use crate::geometry::lattice::MAX_NODES;
use crate::operators::{footprint_of, OperatorCounts, Storage};
use crate::partition::blocks::{choose, uniform_ghosts, Product};
use crate::setup::memory::{cpu_loop_bytes, problem_bytes, Estimate, ModelCounts};

/// The ranks of a distributed run, for its estimate: each process holds one rank's part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankShape {
    /// Ranks of the run (P).
    pub count: usize,
    /// Ranks that share this host (whose memory the guard compares with the estimate).
    pub on_host: usize,
    /// The run resumes from a checkpoint (`--restart`), which every rank reads whole.
    pub restart: bool,
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
/// - The rank's problem: every node's arrays (positions, volumes: [`problem_bytes`] per
///   node) on every rank, the driver's state `u v a f` for the owned nodes alone (the other
///   entries are never written) and `b` whole; the bonds whole only where the problem is
///   stored (`shape.lean` false: a library caller's), else none beyond the part's.
/// - A restart ([`RankShape::restart`]): every rank reads the checkpoint whole, its bytes
///   and what they decode to (the state `u v a f b` of every node, the bond status and a
///   softening law's damage per bond), twice the file; the status is held until the part
///   is built, the state for the run.
/// - The bond status gathered whole, only where the run gathers it: to every rank where the
///   snapshots hold a field made over the bonds on the host (`counts.bond_fields`): the
///   gathered array and the gather's buffer; to rank 0 alone for a checkpoint
///   (`counts.checkpoints`): the gathered array and the checkpoint's copy; 1 byte a bond
///   each, and a softening law's damage per bond likewise, with the global CSR offsets the
///   gather puts together from the ranks' family sizes (12 bytes a node:
///   `distributed/collect.rs`). The estimate is rank 0's, the largest; [`rank_zero_extra`]
///   is what rank 0 holds beyond the others.
/// - The backend on the rank's part ([`rank_share`]): `cpu-loop` two loops over the local
///   nodes (interior and boundary, `distributed/split.rs`: [`cpu_loop_bytes`] per local node
///   each), the local displacement, forces and dilatations (`3 d + 2` scalars a local node),
///   the owned bonds in one of the loops with the
///   subdomain's family index (4 bytes a bond) beside them while the loops are made;
///   `cpu-matrix` the operators of the owned bonds and of the ghosts' bonds into owned nodes
///   (at most a full family per ghost), [`CpuMatrix::memory_estimate_of`], and the local
///   problem's data of the owned bonds ([`problem_bytes`] a bond); `gpu-matrix` the same
///   operators on the device ([`GpuMatrix::memory_estimate_of`]), on the host their
///   assembly before the upload and the local problem's data; `gpu-loop` on the
///   host the part's families and status (at most [`problem_bytes`] a bond and the family
///   index), on the device [`GpuLoop::device_bytes_estimate`] of the local nodes.
/// - Crack-face contact (`counts.crack_faces`) on `gpu-loop`: the owned nodes' neighbour
///   indices the rank keeps on the host after the upload, where a pair's bond is found
///   (`distributed/gpu/`), 4 bytes a bond of the part. A `cpu-loop` rank's loops hold them
///   for the run anyway (in [`cpu_loop_bytes`]); the matrix backends refuse contact.
pub fn rank_estimate(counts: &ModelCounts, shape: &RunShape, p: usize) -> Estimate {
    let (n, bonds) = (counts.nodes, counts.bonds());
    let (d, s, corrected) = (counts.dim, counts.scalar_bytes, counts.surface_correction);
    let share = rank_share(counts, p);
    let local = share.owned + share.ghosts;
    let (pn, pb) = problem_bytes(d, s, corrected);
    let damage = usize::from(counts.bond_damage) * s;
    let whole_bonds = if shape.lean { 0.0 } else { bonds };
    let restart = match shape.ranks.is_some_and(|r| r.restart) {
        true => 2.0 * (bonds * (1 + damage) as f64 + n * (5 * d * s) as f64),
        false => 0.0,
    };
    // (the driver's `u v a f` of other ranks' nodes are never written, so not resident:
    // counted for the owned nodes; `b` whole, which a body force writes on every dof)
    let state = (4 * d * s) as f64;
    let problem = n * (pn as f64 - state) + share.owned * state + whole_bonds * pb as f64;
    let every = match counts.bond_fields {
        true => bonds * (1 + damage) as f64 * 2.0 + GATHER_OFFSETS * n,
        false => 0.0,
    };
    let gathered = every + rank_zero_extra(counts);
    let local_arrays = local * ((3 * d + 2) * s) as f64;
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
    // (crack-face contact: a gpu-loop rank keeps its owned nodes' neighbour indices on the
    // host for the run; the last term of the sum, added alone)
    let kept = match (shape.kind, counts.crack_faces) {
        (BackendKind::GpuLoop, true) => 4.0 * share.bonds,
        _ => 0.0,
    };
    Estimate {
        what: shape.describe(counts),
        nodes: n,
        bonds: whole_bonds + share.bonds,
        host: problem + gathered + local_arrays + part + kept + restart,
        device,
    }
}

/// What rank 0 of a run across ranks holds beyond the others: with checkpoints
/// (`counts.checkpoints`), the bond status gathered whole and its copy in the checkpoint,
/// 1 byte a bond each, a softening law's damage per bond likewise, the global CSR offsets
/// the gather puts together, and the driver's state gathered whole (`u v a f` of every
/// node). Bytes.
pub fn rank_zero_extra(counts: &ModelCounts) -> f64 {
    if !counts.checkpoints {
        return 0.0;
    }
    let s = counts.scalar_bytes;
    let damage = usize::from(counts.bond_damage) * s;
    let per_node = (4 * counts.dim * s) as f64 + GATHER_OFFSETS;
    counts.bonds() * (1 + damage) as f64 * 2.0 + counts.nodes * per_node
}

/// Bytes a node a gather of per-bond values holds on the ranks that receive them while it
/// places them: every node's family size and the global CSR offsets.
const GATHER_OFFSETS: f64 = 12.0;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::estimate::{estimate, guard_host};
    use crate::Precision;
    use std::path::Path;

    /// One rank of `cpu-loop` across ranks, on the benchmark block at dx 0.4 mm
    /// (`models/pmb_block_3d.toml`: 125^3 = 1.95 M nodes, estimated 126^3), f64, outputs off as in the
    /// measurement it is checked against (`docs/distributed.md`, "what a rank holds whole":
    /// peak resident memory 4.25 GB for the larger of 2 ranks, 8.19 GB on 1 rank, 7.49 GB in
    /// core). Each estimate is an upper bound within 40 % (it counts every term at its
    /// largest: a part two cells wider than its share, two loops' node records over the
    /// part; 1.05 in core, 1.21 on 1 rank, 1.31 on 2 ranks at the time of writing). A rank
    /// of 2 holds more than half the bonds' bytes and less than the in-core run; a rank of 1
    /// more than the in-core run (its two loops over the same nodes); four ranks less each
    /// than two; two ranks on one host twice one rank's bytes.
    #[test]
    fn a_rank_of_a_distributed_run_counts_its_part_of_the_bonds() {
        let counts = block_counts_at("0.4e-3", &[]);
        // (the node estimate counts a layer more on each axis than the body holds)
        assert_eq!(counts.nodes, 126f64.powi(3));
        assert!(!counts.bond_fields && !counts.checkpoints);
        let in_core = estimate(&counts, &RunShape::in_core(BackendKind::CpuLoop)).host;
        let shape = |count, on_host| RunShape {
            lean: true,
            ranks: Some(RankShape {
                count,
                on_host,
                restart: false,
            }),
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
            (two.host, 4.25e9),
            (rank(1, 1).host, 8.19e9),
            (in_core, 7.49e9),
        ] {
            let ratio = est / measured;
            assert!((1.0..1.4).contains(&ratio), "{est} / {measured} = {ratio}");
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

    /// The bond status gathered whole is counted only where the run gathers it: snapshots
    /// with a field made over the bonds (`output.fields` with `broken_bonds`, VTK on) add 2
    /// bytes a bond of the whole model to every rank (the gathered array and the gather's
    /// buffer, f64 without damage per bond); checkpoints add 2 bytes a bond to rank 0 alone
    /// (the gathered array and the checkpoint's copy) and the state gathered whole (`u v a
    /// f`: 96 bytes a node in 3D f64), so two ranks on one host hold twice a rank's bytes
    /// plus rank 0's extra once; either gather puts the global CSR offsets together where
    /// it lands (12 bytes a node). A softening law's damage per bond (8 bytes in f64)
    /// gathers with the status: 9 bytes a bond each copy. `ModelCounts::of` reads both
    /// flags from `[output]`; the guard (`cli/run.rs`) sees `--checkpoint-every` through it.
    #[test]
    fn the_bond_status_gathered_whole_counts_where_the_run_gathers_it() {
        let vtk_off = ["output.vtk=false"];
        let off = block_counts_at("0.5e-3", &vtk_off);
        let fields = ["output.fields=[\"displacement\", \"broken_bonds\"]"];
        let bond_fields = block_counts_at("0.5e-3", &fields);
        let ckpt = block_counts_at(
            "0.5e-3",
            &["output.vtk=false", "output.checkpoint_every=10"],
        );
        assert!(bond_fields.bond_fields && !bond_fields.checkpoints);
        assert!(ckpt.checkpoints && !ckpt.bond_fields && !off.bond_fields);
        assert!(
            !block_counts_at("0.5e-3", &[]).bond_fields,
            "the default fields"
        );
        let shape = |on_host| RunShape {
            lean: true,
            ranks: Some(RankShape {
                count: 2,
                on_host,
                restart: false,
            }),
            ..RunShape::in_core(BackendKind::CpuLoop)
        };
        let host = |c: &ModelCounts, on_host| estimate(c, &shape(on_host)).host;
        let bonds = off.bonds();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
        let offsets = 12.0 * off.nodes;
        assert!(close(
            host(&bond_fields, 1),
            host(&off, 1) + 2.0 * bonds + offsets
        ));
        let state = 96.0 * off.nodes + offsets;
        assert!(close(host(&ckpt, 1), host(&off, 1) + 2.0 * bonds + state));
        assert!(close(host(&ckpt, 2), host(&off, 2) + 2.0 * bonds + state));
        assert!(close(host(&bond_fields, 2), 2.0 * host(&bond_fields, 1)));
        let soft = ModelCounts {
            bond_damage: true,
            ..ckpt
        };
        assert!(close(rank_zero_extra(&soft), 2.0 * 9.0 * bonds + state));
        assert_eq!(rank_zero_extra(&off), 0.0);
    }

    /// With crack-face contact a `gpu-loop` rank keeps its owned nodes' neighbour indices on
    /// the host after the upload (`GpuLoop::release_host_bonds(true)`: `u32`, one per bond of
    /// its part), so its estimate grows by exactly 4 bytes a bond of its part
    /// ([`rank_share`]'s `bonds`): the term is the last addend of the host sum, so the sum
    /// with it is the sum without it plus `4 x bonds` in the same f64 arithmetic, bit for
    /// bit. The device bytes do not change. A `cpu-loop` rank's estimate does not grow: its
    /// loops hold the same indices for the run with or without contact (counted in
    /// `cpu_loop_bytes`). `ModelCounts::of` reads the flag from `[contact]`.
    #[test]
    fn a_gpu_loop_rank_with_crack_faces_counts_its_kept_neighbour_indices() {
        let counts = block_counts();
        assert!(!counts.crack_faces);
        let faces = ModelCounts {
            crack_faces: true,
            ..counts
        };
        let shape = |kind, count| RunShape {
            lean: true,
            ranks: Some(RankShape {
                count,
                on_host: 1,
                restart: false,
            }),
            ..RunShape::in_core(kind)
        };
        for p in [1, 2, 4] {
            let bonds = rank_share(&counts, p).bonds;
            let gpu = shape(BackendKind::GpuLoop, p);
            let (off, on) = (
                rank_estimate(&counts, &gpu, p),
                rank_estimate(&faces, &gpu, p),
            );
            assert_eq!(on.host, off.host + 4.0 * bonds, "P = {p}");
            assert!(on.host - off.host > 0.0, "P = {p}");
            assert_eq!(on.device, off.device);
            let cpu = shape(BackendKind::CpuLoop, p);
            assert_eq!(
                rank_estimate(&faces, &cpu, p),
                rank_estimate(&counts, &cpu, p)
            );
        }
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/pmb_block_3d.toml"
        ));
        let sets = ["contact.enabled=true".to_string()];
        let model = crate::model::load(path, &sets).unwrap();
        assert!(ModelCounts::of(&model, Path::new("."), Precision::F64).crack_faces);
        let sets = [sets[0].clone(), "contact.crack_faces=false".to_string()];
        let model = crate::model::load(path, &sets).unwrap();
        assert!(!ModelCounts::of(&model, Path::new("."), Precision::F64).crack_faces);
    }

    /// The counts of `models/pmb_block_3d.toml` at `dx = 0.5 mm` (101^3 nodes), f64.
    fn block_counts() -> ModelCounts {
        block_counts_at("0.5e-3", &[])
    }

    /// The counts of `models/pmb_block_3d.toml` at `dx` (m) with `sets` (`key=value`), f64.
    fn block_counts_at(dx: &str, sets: &[&str]) -> ModelCounts {
        let path = Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/models/pmb_block_3d.toml"
        ));
        let mut all = vec![format!("discretization.dx={dx}")];
        all.extend(sets.iter().map(|s| s.to_string()));
        let model = crate::model::load(path, &all).unwrap();
        ModelCounts::of(&model, Path::new("."), Precision::F64)
    }

    /// A rank of `gpu-matrix` across ranks holds on its device the operators of its part (half
    /// storage: its owned pairs and the ghosts' bonds into owned nodes), not the whole model's:
    /// on one rank exactly the in-core estimate (no ghost), on two about half of it (measured
    /// on two H100s at 2 M nodes, f64: 12.86 GiB on one rank, 6.60 GiB per rank on two;
    /// estimated 13.5 and 8.0 GiB). The host sets up lean as on the other backends (the
    /// part's rows from its own bonds), so its share shrinks with the part too.
    #[test]
    fn a_gpu_matrix_rank_counts_its_part_of_the_operators() {
        let counts = block_counts();
        let in_core = estimate(&counts, &RunShape::in_core(BackendKind::GpuMatrix));
        let rank = |count| {
            let shape = RunShape {
                lean: true,
                ranks: Some(RankShape {
                    count,
                    on_host: 1,
                    restart: false,
                }),
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
        let host = two.host / one.host;
        println!(
            "host: one rank {:.3e} B, two {:.3e} B ({host:.3})",
            one.host, two.host
        );
        assert!(host < 0.7, "two ranks' host share: {host} of one rank's");
        assert!(two.what.ends_with("one rank of 2"), "{}", two.what);
    }
}
