//! Contact across ranks (`docs/contact.md`, `docs/distributed.md`): what
//! `dynamics::contact::Contact` needs of a rank of `cpu-loop` ([`PartOfBody`]) so that each
//! rank computes the contact force density of its owned nodes and every rank moves the
//! impactors identically, bit for bit as one process.
//!
//! - Node pairs: two nodes that are not bonded are, by definition, beyond the family radius
//!   of each other in the reference configuration, so the ghost layer (one family radius
//!   deep) does not hold a node's contact partners in general (two bodies that close a gap
//!   meet nodes of other ranks at any depth). With `[contact]` enabled, every node's
//!   displacement is gathered to every rank at each force evaluation
//!   ([`PartOfBody::whole_displacement`], an all-gather of `dim` values per node) and each
//!   rank searches the one-process pair list over the whole body; each owned node then sums its pairs in
//!   ascending partner order with the in-core arithmetic, so its contact force equals the
//!   one-process value bit for bit for any contact distance (no bound from the ghost
//!   depth). The cost: `N dim` values received per rank and step, and the pair search over
//!   the whole body on every rank (amortised by the skin). A crack face (a bonded pair whose
//!   bond broke) has its bond on the rank owning either end: the rank answers from the
//!   bond of its owned end (`Split::bond_broken`), the same status as the other direction's
//!   (breaking is symmetric: the same stretch on both sides, `cpu.rs`).
//! - Impactors: each rank computes the impactor's force on its owned nodes (their own
//!   positions only: no gather without `[contact]`), and the terms of the impactor's
//!   reaction of its owned nodes inside it; the terms of every rank are all-gathered
//!   ([`PartOfBody::merged_terms`]: a count, then five words per term) and summed in node
//!   order, the one-process order, so the reaction and the impactor's motion are the
//!   one-process run's bit for bit on every rank.
//!
//! Units: m, N.

use super::collect::gather_owned;
use super::{bytes_of, bytes_of_mut, Comm, RankPlan};
use crate::backend::partitioned::exchange::gather;
#[cfg(doc)]
use crate::dynamics::forces::PartOfBody;
use crate::dynamics::forces::ReactionTerm;
use crate::setup::Problem;
use crate::{Real, Result};

/// Per node of `problem`: whether `plan`'s rank owns it, where the model has contact or an
/// impactor (empty otherwise: nothing asks).
pub(super) fn owned_mask(problem: &Problem, plan: &RankPlan) -> Vec<bool> {
    let model = &problem.model;
    let contact = model.contact.as_ref().is_some_and(|c| c.enabled);
    if !contact && model.impactor.is_empty() {
        return Vec::new();
    }
    let mut owns = vec![false; problem.body.len()];
    for &i in plan.sub.owned_nodes() {
        owns[i] = true;
    }
    owns
}

/// Every node's displacement on every rank: the owned ones of each rank (`u` current at
/// `plan`'s owned nodes, `d` values per node) all-gathered
/// ([`PartOfBody::whole_displacement`]).
pub(super) fn whole_displacement<T: Real>(
    comm: &dyn Comm,
    plan: &RankPlan,
    u: &[T],
    d: usize,
) -> Result<Vec<T>> {
    let mine = gather(u, plan.sub.owned_nodes(), d);
    let mut all = vec![T::zero(); u.len()];
    gather_owned(comm, &plan.owned_of, &mine, d, &mut all)?;
    Ok(all)
}

/// Every rank's reaction terms (`mine` this rank's, ascending), all-gathered and sorted by
/// impactor and node (the ranks own distinct nodes, so no two terms tie).
pub(super) fn merge_terms(comm: &dyn Comm, mine: &[ReactionTerm]) -> Result<Vec<ReactionTerm>> {
    let ranks = comm.size();
    let counts = comm.all_gather(bytes_of(&[mine.len() as u64]), &vec![8; ranks])?;
    let mut lens = vec![0u64; ranks];
    bytes_of_mut(&mut lens).copy_from_slice(&counts);
    let words: Vec<[u64; 5]> = (mine.iter())
        .map(|&(k, i, t)| {
            [
                k.into(),
                i.into(),
                t[0].to_bits(),
                t[1].to_bits(),
                t[2].to_bits(),
            ]
        })
        .collect();
    let sizes: Vec<usize> = lens.iter().map(|&n| n as usize * 40).collect();
    let bytes = comm.all_gather(bytes_of(&words), &sizes)?;
    let mut all = vec![[0u64; 5]; bytes.len() / 40];
    bytes_of_mut(&mut all).copy_from_slice(&bytes);
    let mut terms: Vec<ReactionTerm> = (all.iter())
        .map(|w| {
            let t = [w[2], w[3], w[4]].map(f64::from_bits);
            (w[0] as u32, w[1] as u32, t)
        })
        .collect();
    terms.sort_unstable_by_key(|&(k, i, _)| (k, i));
    Ok(terms)
}

/// For each pair `[i, j]` (global, bonded in the reference configuration, one end owned by
/// `plan`'s rank), whether its bond is broken: the bond `i -> j` where `i` is owned, else
/// `j -> i` (both ends are then in the subdomain: a bonded partner of an owned node is
/// owned or a ghost).
pub(super) fn pairs_broken_on_rank<T: Real>(
    plan: &RankPlan,
    split: &super::split::Split<T>,
    pairs: &[[u32; 2]],
) -> Vec<bool> {
    let sub = &plan.sub;
    let local = |g: usize| {
        (sub.owned_nodes().binary_search(&g).ok())
            .or_else(|| (sub.halo_nodes().binary_search(&g).ok()).map(|k| sub.owned + k))
    };
    (pairs.iter())
        .map(|&[i, j]| {
            let (i, j) = (i as usize, j as usize);
            let (a, b) = match sub.owned_nodes().binary_search(&i) {
                Ok(a) => (a, local(j)),
                Err(_) => match sub.owned_nodes().binary_search(&j) {
                    Ok(b) => (b, local(i)),
                    Err(_) => return false,
                },
            };
            b.is_some_and(|b| split.bond_broken(a, b as u32))
        })
        .collect()
}
