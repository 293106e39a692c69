//! Contact across ranks (`docs/contact.md`, `docs/distributed.md`): what
//! `dynamics::contact::Contact` needs of a rank ([`PartOfBody`], here [`RankContact`], which
//! both rank backends hold: `cpu-loop`'s `DistributedCpu` and `gpu-loop`'s `DistributedGpu`)
//! so that each rank computes the contact force density of its owned nodes and every rank
//! moves the impactors identically, bit for bit as one process. Contact runs in the host
//! leapfrog on either backend (the bond forces of the owned nodes from the rank's loop, on
//! the host or its device).
//!
//! - Node pairs: two nodes that are not bonded are, by definition, beyond the family radius
//!   of each other in the reference configuration, so the ghost layer (one family radius
//!   deep) does not hold a node's contact partners in general (two bodies that close a gap
//!   meet nodes of other ranks at any depth). A rank keeps a **contact halo** instead
//!   ([`ContactHalo`]): at each search of the pair list (`dynamics/contact/pairs.rs`, whose
//!   rule then takes the largest travel over the ranks: the one-process decision) every rank
//!   all-gathers the box of its owned nodes' current positions (six numbers), sends each
//!   other rank its owned nodes within the search radius `d_c + skin` of that rank's box,
//!   and searches its pairs among its owned nodes and those it received; between searches
//!   the same nodes' displacements go point to point at every force evaluation. A node
//!   farther than the search radius from every owned node at a search cannot come within
//!   `d_c` of one before the next search (the skin), so each owned node finds its
//!   one-process pairs closer than `d_c` and sums them in ascending partner order with the
//!   in-core arithmetic: its contact force equals the one-process value bit for bit. The
//!   cost per evaluation is the nodes near the rank's box, not the body (the all-gather of
//!   every node's displacement it replaces). A crack face (a bonded pair whose
//!   bond broke) has its bond on the rank owning either end: the rank answers from the
//!   bond of its owned end ([`pairs_broken_on_rank`], each backend reading its own status),
//!   the same status as the other direction's (breaking is symmetric: the same stretch on
//!   both sides, `cpu.rs`).
//! - Impactors: each rank computes the impactor's force on its owned nodes (their own
//!   positions only: no gather without `[contact]`), and the terms of the impactor's
//!   reaction of its owned nodes inside it; the terms of every rank are all-gathered
//!   ([`PartOfBody::merged_terms`]: a count, then five words per term) and summed in node
//!   order, the one-process order, so the reaction and the impactor's motion are the
//!   one-process run's bit for bit on every rank.
//!
//! Units: m, N.

use super::{bytes_of, bytes_of_mut, Comm, RankPlan};
use crate::backend::partitioned::exchange::{gather, scatter};
use crate::dynamics::forces::{PartOfBody, ReactionTerm};
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::sync::{Arc, Mutex};

/// What contact needs of a rank, whichever backend computes its bond forces: its owned
/// nodes (as a list and as a mask over the body), the contact halo of the last pair search
/// and the transport. The rank's [`PartOfBody`].
pub(super) struct RankContact {
    comm: Arc<dyn Comm>,
    /// The rank's owned nodes, ascending (global indices).
    owned: Vec<usize>,
    /// Per node of the body: owned by this rank.
    owns: Vec<bool>,
    dim: usize,
    /// The contact halo of the last pair search (empty without `[contact]`).
    halo: Mutex<ContactHalo>,
}

impl RankContact {
    /// The contact of `plan`'s rank of `problem` over `comm`; `None` where the model has
    /// neither `[contact]` (enabled) nor an impactor (nothing asks).
    pub(super) fn of(
        problem: &Problem,
        plan: &RankPlan,
        comm: &Arc<dyn Comm>,
    ) -> Option<RankContact> {
        let model = &problem.model;
        let contact = model.contact.as_ref().is_some_and(|c| c.enabled);
        if !contact && model.impactor.is_empty() {
            return None;
        }
        let owned = plan.sub.owned_nodes().to_vec();
        let mut owns = vec![false; problem.body.len()];
        for &i in &owned {
            owns[i] = true;
        }
        Some(RankContact {
            comm: comm.clone(),
            owned,
            owns,
            dim: problem.dim(),
            halo: Mutex::default(),
        })
    }
}

impl<T: Real> PartOfBody<T> for RankContact {
    fn owns(&self) -> &[bool] {
        &self.owns
    }

    fn max_over_parts(&self, x: f64) -> f64 {
        self.comm.max_f64(x)
    }

    fn find_contact_nodes(&self, y: &[[f64; 3]], reach: f64) -> Result<Vec<u32>> {
        let (halo, known) = ContactHalo::find(&*self.comm, &self.owned, y, self.dim, reach)?;
        *self.halo.lock().unwrap_or_else(|e| e.into_inner()) = halo;
        Ok(known)
    }

    fn fill_contact_nodes(&self, u: &mut [T]) -> Result<()> {
        let halo = self.halo.lock().unwrap_or_else(|e| e.into_inner());
        halo.fill(&*self.comm, u, self.dim)
    }

    fn merged_terms(&self, mine: &[ReactionTerm]) -> Result<Vec<ReactionTerm>> {
        merge_terms(&*self.comm, mine)
    }
}

/// The contact halo of a rank: per other rank, the owned nodes it sends there and the nodes
/// it receives from there (global indices, ascending), as found at the last pair search.
#[derive(Debug, Default)]
struct ContactHalo {
    send: Vec<(usize, Vec<usize>)>,
    recv: Vec<(usize, Vec<usize>)>,
}

impl ContactHalo {
    /// The halo of the rank owning `owned` (ascending) at current positions `y` (read at
    /// the owned nodes; `d` axes): every other rank's owned nodes within `reach` (m) of the
    /// box of this rank's owned nodes; with every node this rank then knows (owned and
    /// received, ascending). Collective.
    fn find(
        comm: &dyn Comm,
        owned: &[usize],
        y: &[[f64; 3]],
        d: usize,
        reach: f64,
    ) -> Result<(ContactHalo, Vec<u32>)> {
        let (me, ranks) = (comm.rank(), comm.size());
        let mut bounds = [f64::INFINITY, f64::INFINITY, f64::INFINITY, 0.0, 0.0, 0.0];
        bounds[3..].fill(f64::NEG_INFINITY);
        for &i in owned {
            for k in 0..d {
                bounds[k] = bounds[k].min(y[i][k]);
                bounds[3 + k] = bounds[3 + k].max(y[i][k]);
            }
        }
        let bytes = comm.all_gather(bytes_of(&bounds), &vec![48; ranks])?;
        let mut boxes = vec![[0.0f64; 6]; ranks];
        bytes_of_mut(&mut boxes).copy_from_slice(&bytes);
        // (a margin of round-off: a node kept too many is harmless, one missed is not)
        let reach = reach * (1.0 + 1e-9);
        let send: Vec<(usize, Vec<usize>)> = (0..ranks)
            .filter(|&r| r != me)
            .map(|r| {
                let near: Vec<usize> = (owned.par_iter().copied())
                    .filter(|&i| box_distance(&y[i], &boxes[r], d) <= reach)
                    .collect();
                (r, near)
            })
            .collect();
        let mut counts = vec![0u64; ranks];
        for (r, nodes) in &send {
            counts[*r] = nodes.len() as u64;
        }
        let bytes = comm.all_gather(bytes_of(&counts), &vec![8 * ranks; ranks])?;
        let mut table = vec![0u64; ranks * ranks];
        bytes_of_mut(&mut table).copy_from_slice(&bytes);
        let send: Vec<(usize, Vec<usize>)> =
            send.into_iter().filter(|(_, n)| !n.is_empty()).collect();
        let mut recv: Vec<(usize, Vec<usize>)> = (0..ranks)
            .filter(|&q| q != me && table[q * ranks + me] > 0)
            .map(|q| (q, vec![0usize; table[q * ranks + me] as usize]))
            .collect();
        let outgoing: Vec<Vec<u64>> = (send.iter())
            .map(|(_, n)| n.iter().map(|&i| i as u64).collect())
            .collect();
        let mut incoming: Vec<Vec<u64>> = recv.iter().map(|(_, n)| vec![0u64; n.len()]).collect();
        {
            let sends: Vec<(usize, &[u8])> = (send.iter().zip(&outgoing))
                .map(|((r, _), v)| (*r, bytes_of(v)))
                .collect();
            let mut recvs: Vec<(usize, &mut [u8])> = (recv.iter().zip(incoming.iter_mut()))
                .map(|((q, _), v)| (*q, bytes_of_mut(v)))
                .collect();
            comm.exchange(&sends, &mut recvs, &mut || Ok(()))?;
        }
        for ((_, nodes), got) in recv.iter_mut().zip(&incoming) {
            for (n, &g) in nodes.iter_mut().zip(got) {
                *n = g as usize;
            }
        }
        let mut known: Vec<u32> = owned.iter().map(|&i| i as u32).collect();
        known.extend(recv.iter().flat_map(|(_, n)| n.iter().map(|&i| i as u32)));
        known.sort_unstable();
        Ok((ContactHalo { send, recv }, known))
    }

    /// The received nodes' displacements (`d` values a node) written into `u`, from their
    /// owners, which send theirs from `u` (current at the owned nodes). Collective.
    fn fill<T: Real>(&self, comm: &dyn Comm, u: &mut [T], d: usize) -> Result<()> {
        let outgoing: Vec<Vec<T>> = self.send.iter().map(|(_, n)| gather(u, n, d)).collect();
        let mut incoming: Vec<Vec<T>> = (self.recv.iter())
            .map(|(_, n)| vec![T::zero(); n.len() * d])
            .collect();
        {
            let sends: Vec<(usize, &[u8])> = (self.send.iter().zip(&outgoing))
                .map(|((r, _), v)| (*r, bytes_of(v)))
                .collect();
            let mut recvs: Vec<(usize, &mut [u8])> = (self.recv.iter().zip(incoming.iter_mut()))
                .map(|((q, _), v)| (*q, bytes_of_mut(v)))
                .collect();
            comm.exchange(&sends, &mut recvs, &mut || Ok(()))?;
        }
        for ((_, nodes), got) in self.recv.iter().zip(&incoming) {
            scatter(got, nodes, d, u);
        }
        Ok(())
    }

    /// Nodes received per evaluation (the halo's size).
    #[cfg(test)]
    fn received(&self) -> usize {
        self.recv.iter().map(|(_, n)| n.len()).sum()
    }
}

/// The distance from `p` to the box `b` (`[min; 3]` then `[max; 3]`, first `d` axes), m;
/// infinite for an empty box.
fn box_distance(p: &[f64; 3], b: &[f64; 6], d: usize) -> f64 {
    let mut sum = 0.0;
    for k in 0..d {
        if b[k] > b[3 + k] {
            return f64::INFINITY;
        }
        let out = (b[k] - p[k]).max(p[k] - b[3 + k]).max(0.0);
        sum += out * out;
    }
    sum.sqrt()
}

/// Every rank's reaction terms (`mine` this rank's, ascending), all-gathered and sorted by
/// impactor and node (the ranks own distinct nodes, so no two terms tie).
fn merge_terms(comm: &dyn Comm, mine: &[ReactionTerm]) -> Result<Vec<ReactionTerm>> {
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
/// `plan`'s rank), whether its bond is broken: `broken(a, b)` of the bond `i -> j` where `i`
/// is owned, else of `j -> i` (`a` the owned end's and `b` the other end's index in the
/// plan's local order: both ends are in the subdomain, a bonded partner of an owned node
/// being owned or a ghost). A pair with no owned end is not broken here (false).
pub(super) fn pairs_broken_on_rank(
    plan: &RankPlan,
    pairs: &[[u32; 2]],
    broken: impl Fn(usize, usize) -> bool,
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
            b.is_some_and(|b| broken(a, b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distributed::run_ranks;

    /// Three ranks own three runs of a line of nodes 1 mm apart (rank 0 nodes 0-9 at
    /// 0-9 mm, rank 1 nodes 10-19 at 100-109 mm, far away, rank 2 nodes 20-29 at 10-19 mm).
    /// With a reach of 2.5 mm each rank receives exactly the other ranks' nodes within 2.5 mm
    /// of its box (rank 0: nodes 20, 21; rank 2: nodes 8, 9; rank 1: none), and the
    /// displacements filled in are the owners' values: the halo holds what contact needs and
    /// no more (the all-gather it replaced sent all 30 nodes to each).
    #[test]
    fn the_contact_halo_holds_the_nodes_within_reach_of_each_box() {
        let y: Vec<[f64; 3]> = (0..30)
            .map(|i| {
                let at = match i {
                    0..=9 => i as f64,
                    10..=19 => 90.0 + i as f64,
                    _ => i as f64 - 10.0,
                };
                [at * 1e-3, 0.0, 0.0]
            })
            .collect();
        let results = run_ranks(3, |comm| {
            let me = comm.rank();
            let owned: Vec<usize> = (10 * me..10 * me + 10).collect();
            let (halo, known) = ContactHalo::find(&*comm, &owned, &y, 2, 2.5e-3).unwrap();
            // each node's displacement is its index where owned, unknown (-1) elsewhere
            let mut u = vec![-1.0f64; 60];
            for &i in &owned {
                u[2 * i] = i as f64;
            }
            halo.fill(&*comm, &mut u, 2).unwrap();
            (known, halo.received(), u)
        });
        let expect: [&[u32]; 3] = [&[20, 21], &[], &[8, 9]];
        for (me, (known, received, u)) in results.into_iter().enumerate() {
            let others: Vec<u32> = known
                .iter()
                .copied()
                .filter(|&i| i / 10 != me as u32)
                .collect();
            assert_eq!(others, expect[me], "rank {me}");
            assert_eq!(received, expect[me].len());
            for &i in expect[me] {
                assert_eq!(u[2 * i as usize], i as f64, "rank {me}, node {i}");
            }
        }
    }
}
