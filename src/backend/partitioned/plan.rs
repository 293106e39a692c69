//! Subdomain plans: the subdomain count a GPU memory budget asks for ([`plan_for_budget`], sized by
//! what a streaming slot of `stream/` holds, [`SlotCost`]), the in-core device bytes per
//! node of each GPU backend (what `peridot info` prints next to a plan), and the parsing of a
//! byte count.

use crate::backend::{GpuLoop, GpuMatrix};
use crate::gpu::layout::SlicedLayout;
use crate::material::Law;
use crate::model::size::parse_byte_size;
use crate::neighbors::Families;
use crate::operators::Storage;
use crate::partition::slabs::SlabCounts;
use crate::partition::{usage, Cuts, Subdomain};
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;

/// Device bytes per node of each GPU backend and precision for `problem`:
/// `(label, bytes)` for gpu-loop (the form with the neighbour list, which subdomains stream)
/// and gpu-matrix (half storage), f32 and f64.
pub fn gpu_bytes_per_node(problem: &Problem) -> Vec<(&'static str, f64)> {
    let n = problem.body.len().max(1) as f64;
    let matrix = |p| GpuMatrix::<f64>::memory_estimate(problem, Storage::Half, p) as f64 / n;
    vec![
        (
            "gpu-loop f32",
            GpuLoop::<f32>::device_bytes_with_list(problem) as f64 / n,
        ),
        (
            "gpu-loop f64",
            GpuLoop::<f64>::device_bytes_with_list(problem) as f64 / n,
        ),
        ("gpu-matrix f32 half", matrix(4)),
        ("gpu-matrix f64 half", matrix(8)),
    ]
}

/// Parse a byte count for `option`: a number with an optional unit, `1.5e9`, `2GiB`,
/// `512MiB`, `64KiB`, `2GB`, `500MB`, `1024B` ([`crate::model::size`]). At least one byte.
pub fn parse_bytes(option: &str, text: &str) -> Result<u64> {
    parse_byte_size(text).ok_or_else(|| {
        usage(
            option,
            format!("`{text}` is not a memory size (bytes, at least 1: 1.5e9, 512MiB, 2GiB, 2GB)"),
        )
    })
}

/// Device bytes of a slot by what it holds, for dimension `d`, precision bytes `t`.
#[derive(Debug, Clone, Copy)]
pub struct SlotCost {
    /// Per bond slot of the sliced order: neighbour index (4 bytes) and status (one bit).
    pub per_bond: f64,
    /// Per owned or halo node: record (f32 also its f32 copy), horizon volume, no-fail flag,
    /// displacement; LPS coefficients, dilatation and pair.
    pub per_local: f64,
    /// Per owned node: family size, slice start share, force, damage, energy.
    pub per_owned: f64,
    /// Field alignment slack per slot.
    pub fixed: f64,
}

impl SlotCost {
    pub fn new(d: usize, t: usize, lps: bool) -> SlotCost {
        let (d, t) = (d as f64, t as f64);
        SlotCost {
            per_bond: 4.0 + 1.0 / 8.0,
            per_local: 41.0
                + d * t
                + if lps { 6.0 * t } else { 0.0 }
                + if t == 4.0 { 16.0 } else { 0.0 },
            per_owned: 4.0 + 8.0 / 32.0 + d * t + t + 8.0,
            fixed: 16.0 * 256.0,
        }
    }

    /// Bytes of a slot for `owned` nodes with `bond_slots` (padding included) and `halo`.
    pub fn bytes(&self, owned: usize, bond_slots: f64, halo: usize) -> f64 {
        self.per_bond * bond_slots
            + self.per_local * (owned + halo) as f64
            + self.per_owned * owned as f64
            + self.fixed
    }
}

/// Device bytes of a slot holding exactly subdomain `sub` of `problem` in precision `T`
/// (what `GpuStreamed` allocates for it, up to field alignment).
pub fn slot_bytes_of<T: Real>(problem: &Problem, sub: &Subdomain) -> f64 {
    let lps = matches!(problem.material.law, Law::Lps { .. });
    let cost = SlotCost::new(problem.dim(), std::mem::size_of::<T>(), lps);
    let slots = SlicedLayout::new(&sub.families).padded_len() as f64;
    cost.bytes(sub.owned, slots, sub.halo())
}

/// Upper bound of the device bytes of a slot for subdomain `s` of `cuts` (precision `T`),
/// without building it: the padding of its owned families exact (from the family sizes),
/// the halo bounded by the nodes of the cell slab on each side.
pub fn slot_bound<T: Real>(problem: &Problem, cuts: &Cuts, s: usize) -> f64 {
    let lps = matches!(problem.material.law, Law::Lps { .. });
    let cost = SlotCost::new(problem.dim(), std::mem::size_of::<T>(), lps);
    let owned = cuts.owned(s);
    let mut offsets = Vec::with_capacity(owned.len() + 1);
    offsets.push(0);
    for &i in owned {
        offsets.push(offsets[offsets.len() - 1] + problem.families.range(i).len());
    }
    let sizes = Families {
        offsets,
        neighbors: Vec::new(),
    };
    let slots = SlicedLayout::new(&sizes).padded_len() as f64;
    cost.bytes(owned.len(), slots, cuts.halo_bound(s))
}

/// The number of subdomains of `problem` for a run within `budget` device bytes in
/// precision `T`. First the fewest whose two streaming slots fit: the count estimated by
/// [`count_for_budget`], checked with each subdomain's [`slot_bound`] (the sliced order of a
/// subdomain can pad more than the model's) and raised until it fits. Where the budget
/// holds more than two slots of that split but not all of them, smaller subdomains let more
/// of the model stay resident beside the two streaming slots: the count (up to four times
/// more) that streams the fewest bytes per force evaluation by the slab counts' estimate
/// ([`streamed_bytes`]) is taken instead, if its slots fit too. No subdomain is built.
pub fn plan_for_budget<T: Real>(problem: &Problem, budget: u64) -> Result<usize> {
    let counts = SlabCounts::of(problem);
    let estimate = Estimate::new::<T>(problem);
    let fewest = fewest_with::<T>(problem, &counts, &estimate, budget)?;
    let last = counts.nodes.len().min(4 * fewest + 16);
    let best = (fewest..=last)
        .map(|c| (streamed_bytes(&counts, &estimate, c, budget as f64), c))
        .min_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
        .map_or(fewest, |(_, c)| c);
    if best == fewest || largest_slot::<T>(problem, best)? * 2.0 > budget as f64 {
        return Ok(fewest);
    }
    Ok(best)
}

/// The largest [`slot_bound`] of a `count`-way split.
fn largest_slot<T: Real>(problem: &Problem, count: usize) -> Result<f64> {
    let cuts = Cuts::new(problem, count)?;
    Ok((0..count)
        .into_par_iter()
        .map(|s| slot_bound::<T>(problem, &cuts, s))
        .reduce(|| 0.0, f64::max))
}

/// What a slot estimate from slab counts needs: the slot cost, the model's padding ratio of
/// the sliced order, and the bytes of a node's displacement.
struct Estimate {
    cost: SlotCost,
    padding: f64,
    displacement: f64,
}

impl Estimate {
    fn new<T: Real>(problem: &Problem) -> Estimate {
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let t = std::mem::size_of::<T>();
        let bonds = problem.families.bonds().max(1) as f64;
        Estimate {
            cost: SlotCost::new(problem.dim(), t, lps),
            padding: SlicedLayout::new(&problem.families).padded_len() as f64 / bonds * 1.02,
            displacement: (problem.dim() * t) as f64,
        }
    }
}

/// Bytes copied in per force evaluation by a `count`-way split within `budget`, estimated
/// from slab counts: the static data of the subdomains beyond those that stay resident
/// beside two streaming slots, and the displacement of every owned and halo node.
fn streamed_bytes(counts: &SlabCounts, e: &Estimate, count: usize, budget: f64) -> f64 {
    let parts: Vec<(f64, usize)> = counts
        .split(count)
        .iter()
        .map(|&(owned, b, halo)| {
            let bytes = e.cost.bytes(owned, b as f64 * e.padding, halo);
            (bytes, owned + halo)
        })
        .collect();
    let fits = |r: usize| {
        let rest = parts[r..].iter().map(|p| p.0).fold(0.0, f64::max);
        let streaming = (parts.len() - r).min(2) as f64 * rest;
        parts[..r].iter().map(|p| p.0).sum::<f64>() + streaming <= budget
    };
    let resident = (0..=parts.len()).rev().find(|&r| fits(r)).unwrap_or(0);
    let nodes: usize = parts.iter().map(|p| p.1).sum();
    parts[resident..].iter().map(|p| p.0).sum::<f64>() + e.displacement * nodes as f64
}

/// The fewest subdomains whose two streaming slots (by [`slot_bound`]) fit `budget`.
pub fn fewest_for_budget<T: Real>(problem: &Problem, budget: u64) -> Result<usize> {
    let estimate = Estimate::new::<T>(problem);
    fewest_with::<T>(problem, &SlabCounts::of(problem), &estimate, budget)
}

/// [`fewest_for_budget`] with the slab counts and the slot estimate of `problem` given.
fn fewest_with<T: Real>(
    problem: &Problem,
    counts: &SlabCounts,
    estimate: &Estimate,
    budget: u64,
) -> Result<usize> {
    let slabs = counts.nodes.len();
    let mut count = count_by_slabs(counts, estimate, budget)?;
    loop {
        let largest = largest_slot::<T>(problem, count)?;
        if 2.0 * largest <= budget as f64 {
            return Ok(count);
        }
        let next = (count + 1).max((count as f64 * 2.0 * largest / budget as f64).ceil() as usize);
        if count == slabs {
            return Err(usage(
                "--gpu-memory-budget",
                format!(
                    "{budget} bytes cannot hold two subdomain buffers of this model: even \
                     {slabs} subdomains (one cell slab each) need {:.0} bytes",
                    2.0 * largest
                ),
            ));
        }
        count = next.min(slabs);
    }
}

/// The fewest subdomains whose two streaming slots fit `budget` bytes for `problem` in
/// precision `T`, from the node and bond counts of the cell slabs (halos bounded by the
/// neighbouring slabs; the sliced order's padding at the model's own ratio): no subdomain is
/// built to find it. An error naming the budget when one slab per subdomain does not fit.
pub fn count_for_budget<T: Real>(problem: &Problem, budget: u64) -> Result<usize> {
    count_by_slabs(
        &SlabCounts::of(problem),
        &Estimate::new::<T>(problem),
        budget,
    )
}

/// [`count_for_budget`] from slab counts and a slot estimate.
fn count_by_slabs(counts: &SlabCounts, e: &Estimate, budget: u64) -> Result<usize> {
    let slabs = counts.nodes.len();
    let mut smallest = f64::INFINITY;
    for count in 1..=slabs {
        let largest = counts
            .split(count)
            .iter()
            .map(|&(owned, b, halo)| e.cost.bytes(owned, b as f64 * e.padding, halo))
            .fold(0.0, f64::max);
        if 2.0 * largest <= budget as f64 {
            return Ok(count);
        }
        smallest = smallest.min(2.0 * largest);
    }
    Err(usage(
        "--gpu-memory-budget",
        format!(
            "{budget} bytes cannot hold two subdomain buffers of this model: even {slabs} \
             subdomains (one cell slab each) need {smallest:.0} bytes"
        ),
    ))
}
