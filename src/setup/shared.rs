//! The lean setup of one process of a distributed run, its passes over the bonds shared with
//! the other processes: each searches the families of its share of the nodes (a contiguous
//! range of node indices, [`share`]) and computes their sizes, horizon and weighted volumes,
//! pre-cracked bonds and stable time step; the per-node values are all-gathered, the count
//! summed and the step's least taken. Every process then holds what
//! [`Problem::lean_from_body`] computes alone, bit for bit (each node's values come from its
//! own bonds alone; a least and an integer sum do not depend on the order), in about `1/P`
//! of its bond work: without the sharing every rank searched every bond of the body three
//! times, so the setup did not shrink with the ranks. The transport is the run's
//! (`distributed::CommShares` puts a `Comm` behind [`NodeShares`]).
//!
//! Units: m^3 (horizon volumes), m^5 (weighted volumes), s (the stable step).

use super::NeighborSearch;
use super::{since, Problem};
use crate::geometry::Body;
use crate::material::{family_radius, BondData, MaterialConstants};
use crate::model::Model;
use crate::neighbors::cell_list::offsets_of;
use crate::neighbors::{Families, FamilyFinder};
use crate::Result;
use rayon::prelude::*;
use std::ops::Range;
use std::time::Instant;

/// What the shared setup asks of the processes' transport (collective calls, made in the
/// same order on every process).
pub trait NodeShares: Sync {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;
    /// The number of processes.
    fn size(&self) -> usize;
    /// Every process's bytes, concatenated in rank order (`counts[r]` from rank `r`).
    fn all_gather(&self, mine: &[u8], counts: &[usize]) -> Result<Vec<u8>>;
    /// The sum over the processes.
    fn sum_u64(&self, x: u64) -> u64;
    /// The largest over the processes.
    fn max_f64(&self, x: f64) -> f64;
}

/// The nodes of `n` whose bond passes process `rank` of `size` runs: `n r / P .. n (r + 1) / P`
/// (the shares cover `0..n` in rank order).
pub fn share(n: usize, rank: usize, size: usize) -> Range<usize> {
    let at = |r: usize| (n as u128 * r as u128 / size as u128) as usize;
    at(rank)..at(rank + 1)
}

/// Every process's per-node values of its share (as 64 bits each: a count, or an `f64`'s
/// bits), put together in node order (`n` in all); `mine` itself where nothing is shared.
fn gathered(shares: Option<&dyn NodeShares>, mine: Vec<u64>, n: usize) -> Result<Vec<u64>> {
    let Some(s) = shares else { return Ok(mine) };
    let counts: Vec<usize> = (0..s.size())
        .map(|r| 8 * share(n, r, s.size()).len())
        .collect();
    let bytes: Vec<u8> = mine.iter().flat_map(|x| x.to_ne_bytes()).collect();
    let all = s.all_gather(&bytes, &counts)?;
    Ok(all
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

/// [`gathered`] of `f64` values, bit for bit.
fn gathered_f64(shares: Option<&dyn NodeShares>, mine: Vec<f64>, n: usize) -> Result<Vec<f64>> {
    let bits = gathered(shares, mine.into_iter().map(f64::to_bits).collect(), n)?;
    Ok(bits.into_iter().map(f64::from_bits).collect())
}

impl Problem {
    /// [`Problem::lean_from_body`] on one process of a distributed run, its bond passes
    /// shared with the others (this module; collective): the same problem bit for bit, and
    /// its stable time step computed here (`stable_step`).
    pub fn lean_from_body_shared(
        model: Model,
        body: Body,
        shares: &dyn NodeShares,
    ) -> Result<Problem> {
        Problem::lean_with(model, body, Some(shares))
    }

    /// The lean problem of `body`, each pass over the bonds run over this process's share
    /// of the nodes where `shares` is given (and put together), else over every node.
    pub(super) fn lean_with(
        model: Model,
        body: Body,
        shares: Option<&dyn NodeShares>,
    ) -> Result<Problem> {
        let n = body.len();
        let nodes = shares.map_or(0..n, |s| share(n, s.rank(), s.size()));
        let kind = model.discretization.partial_volume;
        let radius = family_radius(kind, body.delta, body.dx);
        let t0 = Instant::now();
        let list = FamilyFinder::for_body(&body, radius);
        let mine: Vec<u64> = (nodes.clone().into_par_iter())
            .map(|i| list.count(i) as u64)
            .collect();
        // (u64 to usize in place: the same layout, no second array)
        let counts: Vec<usize> = (gathered(shares, mine, n)?.into_iter())
            .map(|c| c as usize)
            .collect();
        let families = Families {
            offsets: offsets_of(&counts),
            neighbors: Vec::new(),
        };
        let search = (since(t0), NeighborSearch::Cpu);
        let t0 = Instant::now();
        let material = MaterialConstants::new(&model, body.delta, body.thickness);
        let (vh, wv) = BondData::node_volumes_of(&body, &list, &material, kind, nodes.clone());
        let bonds = BondData {
            beta: Vec::new(),
            correction: None,
            horizon_volume: gathered_f64(shares, vh, n)?,
            weighted_volume: gathered_f64(shares, wv, n)?,
        };
        let precracked = precracked_bonds(&model, &body, &list, radius, nodes.clone());
        let precracked = shares.map_or(precracked, |s| s.sum_u64(precracked as u64) as usize);
        drop(list);
        let bond_seconds = since(t0);
        let mut problem = Problem::assemble(model, body, families, material, bonds, search)?;
        problem.precracked = precracked;
        if let Some(s) = shares {
            // (the least over the processes of each one's least: the whole's)
            let t0 = Instant::now();
            problem.stable_step = Some(-s.max_f64(-problem.stable_time_step_of(nodes)));
            problem.setup.time_step = Some(since(t0));
        }
        problem.setup.neighbors = Some(search.0);
        problem.setup.bonds = Some(bond_seconds);
        Ok(problem)
    }
}

/// The bonds of the nodes `nodes` that a pre-crack cuts at setup, bonds searched by `list`.
fn precracked_bonds(
    model: &Model,
    body: &Body,
    list: &FamilyFinder,
    radius: f64,
    nodes: Range<usize>,
) -> usize {
    if model.precrack.is_empty() {
        return 0;
    }
    let zone = super::PrecrackZone::new(model, body, radius);
    nodes
        .into_par_iter()
        .filter(|&i| zone.near(&body.positions[i]))
        .map(|i| {
            let mut family = Vec::new();
            list.family_into(i, &mut family);
            let intact = |&j: &u32| super::initially_intact(model, body, i, j as usize);
            family.iter().filter(|j| !intact(j)).count()
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::share;

    /// The shares cover `0..n` in rank order, each within one node of `n / P` (so no rank
    /// carries the passes of two), also where there are fewer nodes than ranks.
    #[test]
    fn shares_cover_the_nodes_in_order_and_balance() {
        for (n, size) in [
            (0, 3),
            (2, 5),
            (10, 3),
            (1_000_003, 7),
            (usize::MAX / 2, 1000),
        ] {
            let mut at = 0;
            for rank in 0..size {
                let s = share(n, rank, size);
                assert_eq!(s.start, at, "n {n}, P {size}, rank {rank}: contiguous");
                let even = n / size;
                assert!(s.len() == even || s.len() == even + 1, "n {n}, P {size}");
                at = s.end;
            }
            assert_eq!(at, n, "n {n}, P {size}: every node");
        }
    }
}
