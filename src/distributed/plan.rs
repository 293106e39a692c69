//! A rank's part of a distributed run, computed from the problem alone (no transport): the
//! cut into one part per rank balanced by directed bonds (`partition::Cuts`: slabs of the
//! cell grid, or blocks cut along two or three axes, as `solver.rank_partition` says), the rank's
//! subdomain (owned nodes ascending, then its ghosts ascending: the halo one family radius
//! deep), and per neighbouring rank the owned nodes it sends and the ghosts it receives,
//! both in ascending global order, so the two sides' lists match without a handshake
//! (families are symmetric: `j` is in `i`'s family exactly when `i` is in `j`'s).
//!
//! Units: sizes in bytes.

use super::halo::{Halo, Peer};
use crate::partition::{usage, Balance, Cuts, Subdomain};
use crate::setup::{timed, Problem};
use crate::Result;
use rayon::prelude::*;
use std::collections::BTreeMap;

/// One rank's part.
#[derive(Debug, Clone)]
pub struct RankPlan {
    pub rank: usize,
    pub ranks: usize,
    /// Owned nodes, then ghosts (local index = position in `sub.nodes`).
    pub sub: Subdomain,
    pub halo: Halo,
    /// Every rank's owned nodes (global, ascending), for the gathers of the outputs.
    pub owned_of: Vec<Vec<usize>>,
}

/// Seconds of the phases of a rank's backend creation before its own loops or upload (the
/// `setup` keys `rank_cut`, `rank_subdomain`, `rank_part` of `summary.json`).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct RankSetup {
    /// The cut into parts (every node's cell and owner: slabs or blocks, balanced by bonds).
    pub cut: Option<f64>,
    /// The rank's subdomain (its owned nodes' families in local indices, the ghosts) and
    /// the halo lists.
    pub subdomain: Option<f64>,
    /// The rank's local problems built from it: `cpu-loop`'s interior and boundary ones,
    /// `gpu-loop`'s in device order (the order included), the matrix scheme's one.
    pub part: Option<f64>,
}

/// One row of `peridot info --ranks P`: a rank's share.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankRow {
    pub rank: usize,
    pub nodes: usize,
    /// Directed bonds of the owned nodes.
    pub bonds: usize,
    pub ghosts: usize,
    /// Neighbouring ranks.
    pub peers: usize,
    /// Owned nodes sent to the neighbours per exchange (a node sent to two counts twice).
    pub sent: usize,
}

impl RankRow {
    /// Bytes received per time step: the ghosts' displacement (`dim` values of `bytes` each)
    /// and, for the state-based laws, their dilatation.
    pub fn halo_bytes(&self, dim: usize, bytes: usize, lps: bool) -> usize {
        self.ghosts * bytes * (dim + usize::from(lps))
    }

    /// Bytes crossing PCIe per time step on `gpu-loop` with one GPU per rank: the packed
    /// sends copied down and the ghosts' values copied up, each the displacement (`dim`
    /// values of `bytes` each) and, for the state-based laws, the `(alpha, p theta)` pair.
    pub fn gpu_pcie_bytes(&self, dim: usize, bytes: usize, lps: bool) -> usize {
        (self.sent + self.ghosts) * bytes * (dim + 2 * usize::from(lps))
    }
}

impl RankPlan {
    /// The part of `rank` of a `ranks`-way run of `problem` (its families stored, or a lean
    /// problem's searched for this rank's owned nodes alone).
    pub fn new(problem: &Problem, ranks: usize, rank: usize) -> Result<RankPlan> {
        RankPlan::timed(problem, ranks, rank, &mut RankSetup::default())
    }

    /// [`RankPlan::new`], its phases' seconds in `times` (`cut`, `subdomain`).
    pub fn timed(
        problem: &Problem,
        ranks: usize,
        rank: usize,
        times: &mut RankSetup,
    ) -> Result<RankPlan> {
        let (cuts, seconds) = timed(|| cut(problem, ranks));
        times.cut = Some(seconds);
        let cuts = cuts?;
        let (plan, seconds) = timed(|| RankPlan::of_cuts(problem, &cuts, rank));
        times.subdomain = Some(seconds);
        Ok(plan)
    }

    /// The part of `rank` of the cut `cuts`.
    pub fn of_cuts(problem: &Problem, cuts: &Cuts, rank: usize) -> RankPlan {
        let sub = cuts.subdomain(problem, rank);
        let owner = cuts.owners();
        let mut recvs: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for k in sub.owned..sub.nodes.len() {
            let q = owner[sub.nodes[k]] as usize;
            recvs.entry(q).or_default().push(k as u32);
        }
        // the ranks each boundary node (a ghost in its family) is sent to
        let peers_of: Vec<(u32, Vec<usize>)> = (0..sub.owned)
            .into_par_iter()
            .filter_map(|k| {
                let mut peers: Vec<usize> = (sub.families.family(k).iter())
                    .filter(|&&l| l as usize >= sub.owned)
                    .map(|&l| owner[sub.nodes[l as usize]] as usize)
                    .collect();
                peers.sort_unstable();
                peers.dedup();
                (!peers.is_empty()).then_some((k as u32, peers))
            })
            .collect();
        let mut sends: BTreeMap<usize, Vec<u32>> = BTreeMap::new();
        for (k, peers) in peers_of {
            for q in peers {
                sends.entry(q).or_default().push(k);
            }
        }
        let peers = |m: BTreeMap<usize, Vec<u32>>| {
            m.into_iter()
                .map(|(rank, nodes)| Peer { rank, nodes })
                .collect()
        };
        RankPlan {
            rank,
            ranks: cuts.count(),
            halo: Halo::new(peers(sends), peers(recvs)),
            owned_of: (0..cuts.count()).map(|s| cuts.owned(s).to_vec()).collect(),
            sub,
        }
    }

    /// Per owned node (local index), whether a ghost is in its family (a boundary node: its
    /// forces wait for the exchange).
    pub fn on_edge(&self) -> Vec<bool> {
        let sub = &self.sub;
        (0..sub.owned)
            .into_par_iter()
            .map(|k| {
                sub.families
                    .family(k)
                    .iter()
                    .any(|&l| l as usize >= sub.owned)
            })
            .collect()
    }

    /// Release the owned nodes' families (local indices; their sizes kept) once the rank's
    /// backend holds its own copy: what the plan keeps for the run is per node.
    pub fn release_families(&mut self) {
        self.sub.families.neighbors = Vec::new();
    }

    /// This rank's row of the partition report.
    pub fn row(&self) -> RankRow {
        RankRow {
            rank: self.rank,
            nodes: self.sub.owned,
            bonds: self.sub.bonds(),
            ghosts: self.sub.halo(),
            peers: self.halo.sends.len().max(self.halo.recvs.len()),
            sent: self.halo.sends.iter().map(|p| p.nodes.len()).sum(),
        }
    }
}

/// The rows of every rank of a `ranks`-way run of `problem` (`peridot info --ranks`; its
/// bonds stored or not: a lean problem's subdomains search their families).
pub fn rows(problem: &Problem, ranks: usize) -> Result<Vec<RankRow>> {
    Ok(table(problem, ranks)?.1)
}

/// [`rows`], and the cut named (`slabs: 4 along x`, `blocks: 2 x 2 x 2 (x, y, z)`).
pub fn table(problem: &Problem, ranks: usize) -> Result<(String, Vec<RankRow>)> {
    let cuts = cut(problem, ranks)?;
    let rows = (0..ranks)
        .into_par_iter()
        .map(|r| RankPlan::of_cuts(problem, &cuts, r).row())
        .collect();
    Ok((cuts.describe(), rows))
}

/// The `ranks`-way cut balanced by bonds, slabs or blocks as the model's
/// `solver.rank_partition` says, with the errors named for ranks.
fn cut(problem: &Problem, ranks: usize) -> Result<Cuts> {
    let mode = problem.model.solver.rank_partition.unwrap_or_default();
    Cuts::with_mode(problem, ranks, Balance::Bonds, mode).map_err(|e| match e {
        crate::Error::Usage { message, .. } => usage(
            "ranks",
            format!(
                "{ranks} ranks: {} (each rank owns at least one cell one family radius wide \
                 along each axis it is cut on)",
                message.replace("subdomains", "parts")
            ),
        ),
        other => other,
    })
}
