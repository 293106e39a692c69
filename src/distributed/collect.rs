//! What a distributed run reports, brought together: each rank's owned values gathered into
//! the global arrays, on every rank or on rank 0 alone ([`Gather`]: the state for a
//! checkpoint, to rank 0, which writes it; to every rank at the end of a run; the damage for
//! crack tips, the picture and the summary; probes and the summary then read them as in a
//! single process, bit for bit), each rank's bond-count damage from its own part (a
//! snapshot's piece needs no gather), the bond status (and a softening law's
//! damage per bond) in the global CSR order (for a checkpoint to rank 0 alone, with the
//! failure history and ADR's last free force), the probe rows, every rank's report of its
//! exchanges ([`HaloTimes`]), and the stop flag the ranks agree on ([`StopFlags`]).
//! Collective: every rank calls these in the same order.
//!
//! Units: as the values gathered.

use super::{bytes_of, bytes_of_mut, Comm, Halo, RankPlan};
use crate::backend::partitioned::exchange::{gather_into, scatter};
use crate::backend::Gather;
use crate::dynamics::exact_sum::EXACT_SUM_BYTES;
use crate::dynamics::forces::bond_count_damage;
use crate::dynamics::{Adr, AdrCall, AdrPart, ExactSum, ExplicitCall, Forces, State};
use crate::output::{ProbeRegions, ProbeValues};
use crate::partition::RankReport;
use crate::{Real, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The stop flags of a distributed run: `raw` set by this process's signal handler, `agreed`
/// (the one the driver reads) set on every rank once any rank's raw flag is set.
#[derive(Debug, Clone)]
pub struct StopFlags {
    pub raw: Arc<AtomicBool>,
    pub agreed: Arc<AtomicBool>,
}

/// Seconds and bytes of a rank's exchanges.
#[derive(Debug, Default, Clone, Copy)]
pub struct HaloTimes {
    /// Ghost exchanges (pack, messages, unpack), less the bond work done meanwhile: the
    /// communication the overlap did not hide.
    pub exchange_seconds: f64,
    /// Force evaluations, exchanges included (a GPU rank's explicit calls: the device loop
    /// alone, its steps' force passes with their exchanges).
    pub forces_seconds: f64,
    /// A GPU rank's state moved around its force evaluations: in an explicit call the
    /// owned state uploaded where the device does not hold it (with the call's loads and
    /// tables) and downloaded and gathered to every rank at a full sync; in a trait call
    /// (ADR) the displacement up and the forces down. 0 on a CPU rank.
    pub state_seconds: f64,
    /// The parts of `exchange_seconds` (`partition::RankReport`): the host waiting for the
    /// device before the messages (GPU ranks), and the messages.
    pub wait_seconds: f64,
    pub message_seconds: f64,
    /// The rank's CUDA device ordinal, -1 on a CPU rank.
    pub device: i64,
    /// The halo messages go from device memory to device memory (`Comm::device_buffers`).
    pub device_buffers: bool,
    pub exchanges: usize,
    pub bytes_received: usize,
    /// Bond work run on the host while the messages travelled (CPU ranks).
    pub overlapped_seconds: f64,
}

impl HaloTimes {
    /// A GPU rank's call begun at `start` whose device work took `device_seconds`: those as
    /// `forces_seconds`, the rest of the call as `state_seconds`.
    pub(super) fn add_device_call(&mut self, start: std::time::Instant, device_seconds: f64) {
        self.forces_seconds += device_seconds;
        self.state_seconds += (start.elapsed().as_secs_f64() - device_seconds).max(0.0);
    }

    /// A CPU rank's exchange over `halo` of `per` values of `T` a node that took `wall`
    /// seconds, `overlapped` of them running bond work while the messages travelled: the
    /// rest is the exchange's cost that the overlap did not hide.
    pub(super) fn count_host_exchange<T>(
        &mut self,
        halo: &Halo,
        per: usize,
        wall: f64,
        overlapped: f64,
    ) {
        let seconds = wall - overlapped;
        self.exchange_seconds += seconds;
        self.message_seconds += seconds;
        self.overlapped_seconds += overlapped;
        self.exchanges += 1;
        self.bytes_received += halo.recv_bytes(per, std::mem::size_of::<T>());
    }
}

/// Every rank's owned values (`per` per node, rank `r`'s for the nodes `owned_of[r]`, this
/// rank's in `mine`) written into `global` at their nodes, on every rank.
pub(super) fn gather_owned<T: Copy + Default + Send + Sync>(
    comm: &dyn Comm,
    owned_of: &[Vec<usize>],
    mine: &[T],
    per: usize,
    global: &mut [T],
) -> Result<()> {
    gather_owned_to(comm, owned_of, mine, per, global, Gather::Every)
}

/// [`gather_owned`] onto the ranks `to` names (the others send their values and leave
/// `global` as it is).
pub(super) fn gather_owned_to<T: Copy + Default + Send + Sync>(
    comm: &dyn Comm,
    owned_of: &[Vec<usize>],
    mine: &[T],
    per: usize,
    global: &mut [T],
    to: Gather,
) -> Result<()> {
    let size = std::mem::size_of::<T>();
    let counts: Vec<usize> = owned_of.iter().map(|o| o.len() * per * size).collect();
    gather_pieces_to(
        comm,
        bytes_of(mine),
        &counts,
        to,
        &mut |r, piece: Vec<T>| scatter(&piece, &owned_of[r], per, global),
    )
}

/// A gather to rank 0 larger than this (bytes in all) goes one rank's piece at a time
/// (64 MiB; a test lowers it to take that path on small models: the result is the same).
static PIECEWISE_ABOVE: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(64 << 20);

/// Every rank's bytes (`counts[r]` from rank `r`) handed to `place` as values of `V`, one
/// rank's piece at a time in rank order, on the ranks `to` names (collective; the others
/// only send). A large gather to rank 0 (over [`PIECEWISE_ABOVE`] bytes: a checkpoint's
/// state, status and history) runs as one gather per rank, each carrying that rank's piece
/// alone, so rank 0 never holds the received bytes of every rank beside the array they go
/// into (1 byte a bond less at a checkpoint). The decision is the same on every rank: it
/// reads the counts only.
fn gather_pieces_to<V: Copy + Default>(
    comm: &dyn Comm,
    mine: &[u8],
    counts: &[usize],
    to: Gather,
    place: &mut dyn FnMut(usize, Vec<V>),
) -> Result<()> {
    let total: usize = counts.iter().sum();
    if to == Gather::Root && total > PIECEWISE_ABOVE.load(Ordering::Relaxed) {
        for r in 0..counts.len() {
            let only: Vec<usize> = (0..counts.len())
                .map(|q| if q == r { counts[q] } else { 0 })
                .collect();
            let sent = if comm.rank() == r { mine } else { &[] };
            if let Some(bytes) = comm.gather_to(0, sent, &only)? {
                place(
                    r,
                    pieces_of::<V>(&bytes, &counts[r..=r])
                        .next()
                        .expect("one piece"),
                );
            }
        }
        return Ok(());
    }
    let Some(bytes) = gather_bytes_to(comm, mine, counts, to)? else {
        return Ok(());
    };
    // (one rank's piece at a time: no second whole-size copy of the gathered bytes)
    for (r, piece) in pieces_of::<V>(&bytes, counts).enumerate() {
        place(r, piece);
    }
    Ok(())
}

/// Each rank's piece of the gathered `bytes` (rank `r`'s `counts[r]` bytes, in rank order)
/// as values of `T`, one rank at a time.
fn pieces_of<'a, T: Copy + Default + 'a>(
    bytes: &'a [u8],
    counts: &'a [usize],
) -> impl Iterator<Item = Vec<T>> + 'a {
    let size = std::mem::size_of::<T>();
    counts.iter().scan(0, move |at, &count| {
        let mut piece = vec![T::default(); count / size];
        bytes_of_mut(&mut piece).copy_from_slice(&bytes[*at..*at + count]);
        *at += count;
        Some(piece)
    })
}

/// The bond-count damage of `plan`'s owned nodes from their bonds' `status` (and a softening
/// law's `damage` per bond), both in the order of the owned nodes, each family in the global
/// CSR order: what a rank counts over its part, every bond of an owned node being there
/// (the subdomain's family sizes are those of the global families).
pub(super) fn owned_bond_count_damage<V: Real>(
    plan: &RankPlan,
    status: &[u8],
    damage: Option<&[V]>,
) -> Vec<f64> {
    bond_count_damage(&plan.sub.families.offsets, status, damage)
}

/// The bond-count damage of every node on every rank, from this rank's values of its owned
/// nodes (`mine`, in the order of its owned nodes): per node, not per bond, so a gather of
/// `8 N` bytes instead of every bond's status.
pub(super) fn gather_node_damage(
    comm: &dyn Comm,
    owned_of: &[Vec<usize>],
    mine: &[f64],
) -> Result<Vec<f64>> {
    let nodes = owned_of.iter().map(Vec::len).sum();
    let mut all = vec![0.0; nodes];
    gather_owned(comm, owned_of, mine, 1, &mut all)?;
    Ok(all)
}

/// A global per-bond array (the global CSR order: the bond status, a softening law's damage
/// per bond) from every rank's values of its owned nodes' bonds (`mine`: in the order of its
/// owned nodes, each family in CSR order), on every rank.
pub(super) fn gather_bonds<V: Copy + Default>(
    comm: &dyn Comm,
    plan: &RankPlan,
    mine: &[V],
) -> Result<Vec<V>> {
    gather_bonds_to(comm, plan, mine, Gather::Every)
}

/// [`gather_bonds`] onto the ranks `to` names (empty on the others). No rank keeps the
/// global CSR offsets for it: the ranks that receive put them together from every rank's
/// owned nodes' family sizes, gathered first (4 bytes a node, [`global_offsets_to`]).
pub(super) fn gather_bonds_to<V: Copy + Default>(
    comm: &dyn Comm,
    plan: &RankPlan,
    mine: &[V],
    to: Gather,
) -> Result<Vec<V>> {
    let size = std::mem::size_of::<V>();
    let offsets = global_offsets_to(comm, plan, to)?;
    let counts: Vec<usize> = (owned_bonds_of_ranks(comm, plan)?.into_iter())
        .map(|bonds| size * bonds)
        .collect();
    // (empty where this rank receives nothing: it only sends its piece)
    let mut values = vec![V::default(); offsets.as_ref().map_or(0, |o| o[o.len() - 1])];
    gather_pieces_to(
        comm,
        bytes_of(mine),
        &counts,
        to,
        &mut |r, piece: Vec<V>| {
            let offsets = offsets
                .as_ref()
                .expect("a rank that receives has the offsets");
            let mut at = 0;
            for &i in &plan.owned_of[r] {
                let bonds = offsets[i]..offsets[i + 1];
                let len = bonds.len();
                values[bonds].copy_from_slice(&piece[at..at + len]);
                at += len;
            }
        },
    )?;
    Ok(values)
}

/// Every rank's bytes on the ranks `to` names (`None` on the others; collective).
fn gather_bytes_to(
    comm: &dyn Comm,
    mine: &[u8],
    counts: &[usize],
    to: Gather,
) -> Result<Option<Vec<u8>>> {
    match to {
        Gather::Every => comm.all_gather(mine, counts).map(Some),
        Gather::Root => comm.gather_to(0, mine, counts),
    }
}

/// The directed bonds of each rank's owned nodes, on every rank (one number a rank).
fn owned_bonds_of_ranks(comm: &dyn Comm, plan: &RankPlan) -> Result<Vec<usize>> {
    let mine = (plan.sub.bonds() as u64).to_ne_bytes();
    let all = comm.all_gather(&mine, &vec![8; comm.size()])?;
    Ok(all
        .chunks_exact(8)
        .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")) as usize)
        .collect())
}

/// The global CSR offsets (every node's family's start in the global bond arrays) on the
/// ranks `to` names (`None` on the others), put together from every rank's owned nodes'
/// family sizes (collective).
fn global_offsets_to(comm: &dyn Comm, plan: &RankPlan, to: Gather) -> Result<Option<Vec<usize>>> {
    let sizes: Vec<u32> = (plan.sub.families.offsets.windows(2))
        .map(|w| (w[1] - w[0]) as u32)
        .collect();
    let counts: Vec<usize> = plan.owned_of.iter().map(|o| 4 * o.len()).collect();
    let Some(bytes) = gather_bytes_to(comm, bytes_of(&sizes), &counts, to)? else {
        return Ok(None);
    };
    let n = plan.owned_of.iter().map(Vec::len).sum::<usize>();
    let mut offsets = vec![0usize; n + 1];
    for (nodes, piece) in plan.owned_of.iter().zip(pieces_of::<u32>(&bytes, &counts)) {
        for (&i, &size) in nodes.iter().zip(&piece) {
            offsets[i + 1] = size as usize;
        }
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    Ok(Some(offsets))
}

/// Every rank's report of a run whose ghosts carry `per` values of `T` per exchange step
/// (gathered: collective).
pub(super) fn rank_reports<T>(
    comm: &dyn Comm,
    plan: &RankPlan,
    per: usize,
    times: &HaloTimes,
) -> Result<Vec<RankReport>> {
    let row = plan.row();
    let mine = RankReport {
        rank: row.rank,
        nodes: row.nodes,
        bonds: row.bonds,
        ghosts: row.ghosts,
        peers: row.peers,
        halo_bytes_per_step: plan.halo.recv_bytes(per, std::mem::size_of::<T>()) as u64,
        exchanges: times.exchanges as u64,
        bytes_received: times.bytes_received as u64,
        exchange_seconds: times.exchange_seconds,
        forces_seconds: times.forces_seconds,
        state_seconds: times.state_seconds,
        wait_seconds: times.wait_seconds,
        message_seconds: times.message_seconds,
        device: times.device,
        device_buffers: times.device_buffers,
        overlapped_seconds: times.overlapped_seconds,
        peak_rss_bytes: crate::output::peak_rss_bytes(),
    };
    let size = RankReport::VALUES * std::mem::size_of::<f64>();
    let counts = vec![size; comm.size()];
    let all = comm.all_gather(bytes_of(&mine.to_values()), &counts)?;
    let values: Vec<f64> = (all.chunks_exact(8))
        .map(|b| f64::from_ne_bytes(b.try_into().expect("8 bytes")))
        .collect();
    Ok(values
        .chunks_exact(RankReport::VALUES)
        .map(RankReport::from_values)
        .collect())
}

/// Set the agreed stop flag on every rank where any rank's raw flag is set (collective).
pub(super) fn agree_on_stop(comm: &dyn Comm, stop: Option<&StopFlags>) {
    let Some(stop) = stop else { return };
    if comm.any(stop.raw.load(Ordering::SeqCst)) {
        stop.agreed.store(true, Ordering::SeqCst);
    }
}

/// Per rank, the nodes of any of `regions` it owns (ascending), of every rank's owned nodes
/// `owned_of`.
pub(super) fn probe_nodes(regions: &ProbeRegions, owned_of: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut all: Vec<usize> = (regions.regions.iter())
        .flat_map(|(nodes, _)| nodes.iter().copied())
        .collect();
    all.sort_unstable();
    all.dedup();
    (owned_of.iter())
        .map(|owned| {
            (all.iter().copied())
                .filter(|i| owned.binary_search(i).is_ok())
                .collect()
        })
        .collect()
}

/// The displacement and force density of `nodes` (`d` per node) from the host `state`.
pub(super) fn values_at<T: Real>(state: &State<T>, nodes: &[usize], d: usize) -> (Vec<T>, Vec<T>) {
    let (mut u, mut f) = (
        vec![T::zero(); d * nodes.len()],
        vec![T::zero(); d * nodes.len()],
    );
    gather_into(&state.u, nodes, d, &mut u);
    gather_into(&state.f, nodes, d, &mut f);
    (u, f)
}

/// The probe rows of `regions` from every rank's displacement and force density of its
/// probe nodes (`nodes[r]`, this rank's in `mine`, `d` per node), gathered into the global
/// arrays `u`, `f` (sized here to `len`; only the probe nodes' are written), the sums in the
/// order of a single process (collective).
pub(super) fn probe_rows<T: Real>(
    comm: &dyn Comm,
    nodes: &[Vec<usize>],
    mine: (Vec<T>, Vec<T>),
    d: usize,
    (u, f): (&mut Vec<T>, &mut Vec<T>),
    len: usize,
    regions: &ProbeRegions,
) -> Result<Vec<ProbeValues>> {
    u.resize(len, T::zero());
    f.resize(len, T::zero());
    gather_owned(comm, nodes, &mine.0, d, u)?;
    gather_owned(comm, nodes, &mine.1, d, f)?;
    Ok(regions.on_host(u, f))
}

/// The largest |u| of the owned dofs of `nodes` in the host `state` (infinite where one is
/// not finite).
pub(super) fn owned_max_abs<T: Real>(state: &State<T>, nodes: &[usize], d: usize) -> f64 {
    (nodes.iter())
        .flat_map(|&i| &state.u[d * i..d * (i + 1)])
        .map(|x| x.f64().abs())
        .fold(0.0, |m: f64, x| {
            if x.is_finite() {
                m.max(x)
            } else {
                f64::INFINITY
            }
        })
}

/// The largest of every rank's `mine` (`None` where one is not finite: collective).
pub(super) fn largest(comm: &dyn Comm, mine: f64) -> Option<f64> {
    let m = comm.max_f64(mine);
    m.is_finite().then_some(m)
}

/// Every rank's partial `sums` merged into the whole's, on every rank (collective): exact,
/// so the merged sums round to the one-process values bit for bit (`dynamics/exact_sum.rs`).
pub(super) fn merge_sums(comm: &dyn Comm, sums: &mut [ExactSum]) -> Result<()> {
    if comm.size() == 1 || sums.is_empty() {
        return Ok(());
    }
    let mine: Vec<u8> = sums.iter().flat_map(ExactSum::to_bytes).collect();
    let all = comm.all_gather(&mine, &vec![mine.len(); comm.size()])?;
    let mut merged = vec![ExactSum::default(); sums.len()];
    for (k, bytes) in all.chunks_exact(EXACT_SUM_BYTES).enumerate() {
        merged[k % sums.len()].merge(&ExactSum::from_bytes(bytes));
    }
    sums.clone_from_slice(&merged);
    Ok(())
}

/// An explicit call of a rank's part run by `run` (given the backend and the call: its
/// fused loop, or the host leapfrog over its forces), then the stop flag agreed
/// (collective). The driver's state holds the owned values current after every call, so
/// `full_sync` asks nothing more of a rank ([`OwnedValues::gather_state_to`] brings the
/// whole where an output needs it).
pub(super) fn explicit_on_ranks<T: Real, B: OwnedValues<T>>(
    backend: &mut B,
    call: ExplicitCall<'_, T>,
    stop: Option<&StopFlags>,
    run: impl FnOnce(&mut B, ExplicitCall<'_, T>) -> Result<usize>,
) -> Result<usize> {
    let broken = run(backend, call)?;
    agree_on_stop(backend.parts().0, stop);
    Ok(broken)
}

/// One ADR iteration of a rank's part, `forces` its backend: the dofs of its owned `nodes`,
/// the global sums merged over the ranks (exact, so the one-process iteration's bit for
/// bit); then the ranks agree on the stop flag (collective).
pub(super) fn adr_on_ranks<T: Real>(
    call: AdrCall<'_, T>,
    forces: &mut dyn Forces<T>,
    nodes: &[usize],
    comm: &dyn Comm,
    stop: Option<&StopFlags>,
) -> Result<usize> {
    let AdrCall {
        adr,
        loads,
        state,
        h,
    } = call;
    let mut complete = |sums: &mut [ExactSum]| merge_sums(comm, sums);
    let part = AdrPart {
        nodes: Some(nodes),
        complete: Some(&mut complete),
    };
    let broken = adr.iterate_part(state, loads, forces, h, part)?;
    agree_on_stop(comm, stop);
    Ok(broken)
}

/// What the probe rows of a distributed run on the host keep: per rank, the probe regions'
/// nodes it owns (once probes are asked for), and the global arrays they are gathered into.
#[derive(Debug, Default)]
pub(super) struct ProbeCache<T> {
    nodes: Option<Vec<Vec<usize>>>,
    u: Vec<T>,
    f: Vec<T>,
}

impl<T: Real> ProbeCache<T> {
    /// The probe rows of `regions` at the host `state`, whose owned values are current, from
    /// every rank's owned probe nodes (`plan`'s; `d` per node) gathered (collective).
    pub(super) fn rows(
        &mut self,
        comm: &dyn Comm,
        plan: &RankPlan,
        state: &State<T>,
        regions: &ProbeRegions,
        d: usize,
    ) -> Result<Vec<ProbeValues>> {
        let nodes = (self.nodes).get_or_insert_with(|| probe_nodes(regions, &plan.owned_of));
        let mine = values_at(state, &nodes[plan.rank], d);
        let len = state.u.len();
        probe_rows(
            comm,
            nodes,
            mine,
            d,
            (&mut self.u, &mut self.f),
            len,
            regions,
        )
    }
}

/// A rank's backend whose owned values the driver's global arrays hold (a CPU rank's always,
/// a GPU rank's where ADR iterates on the host): the gathers and reductions over them
/// (collective), given the transport, the rank's part and the components per node.
pub(super) trait OwnedValues<T: Real> {
    fn parts(&self) -> (&dyn Comm, &RankPlan, usize);

    /// Owned values of a local array (`per` per node) gathered into `global` on every rank.
    fn gather_local(&self, local: &[T], per: usize, global: &mut [T]) -> Result<()> {
        let (comm, plan, _) = self.parts();
        let mine = &local[..per * plan.sub.owned];
        gather_owned(comm, &plan.owned_of, mine, per, global)
    }

    /// Owned values of a local array (`per` per node) as a global array on the ranks `to`
    /// names (empty on the others).
    fn local_to(&self, local: &[T], per: usize, to: Gather) -> Result<Vec<T>> {
        let (comm, plan, _) = self.parts();
        let receives = to == Gather::Every || plan.rank == 0;
        let len = per * plan.owned_of.iter().map(Vec::len).sum::<usize>();
        let mut global = vec![T::zero(); if receives { len } else { 0 }];
        let mine = &local[..per * plan.sub.owned];
        gather_owned_to(comm, &plan.owned_of, mine, per, &mut global, to)?;
        Ok(global)
    }

    /// Owned values of a global array gathered into it on the ranks `to` names.
    fn gather_global_to(&self, global: &mut [T], per: usize, to: Gather) -> Result<()> {
        let (comm, plan, _) = self.parts();
        let owned = plan.sub.owned_nodes();
        let mut mine = vec![T::zero(); per * owned.len()];
        gather_into(global, owned, per, &mut mine);
        gather_owned_to(comm, &plan.owned_of, &mine, per, global, to)
    }

    /// The whole state (`u`, `v`, `a`, `f`; the loads' `b` every rank computes whole) on
    /// the ranks `to` names.
    fn gather_state_to(&self, state: &mut State<T>, to: Gather) -> Result<()> {
        let d = self.parts().2;
        for v in [&mut state.u, &mut state.v, &mut state.a, &mut state.f] {
            self.gather_global_to(v, d, to)?;
        }
        Ok(())
    }

    /// The owned values of a local array (`per` per node, the plan's order: owned first).
    fn owned_of_local(&self, local: &[T], per: usize) -> Vec<T> {
        let owned = self.parts().1.sub.owned;
        local[..per * owned].to_vec()
    }

    /// ADR's last free force of every dof on every rank (for a checkpoint).
    fn gather_adr(&self, adr: &mut Adr<T>) -> Result<()> {
        self.gather_adr_to(adr, Gather::Every)
    }

    /// ADR's last free force of every dof on the ranks `to` names (the others keep their
    /// own dofs' current, the rest as it was).
    fn gather_adr_to(&self, adr: &mut Adr<T>, to: Gather) -> Result<()> {
        let mut history = adr.history();
        self.gather_global_to(&mut history.f_prev, self.parts().2, to)?;
        adr.restore(history);
        Ok(())
    }

    /// The largest |u| over the ranks' owned dofs (`None` where any is not finite).
    fn largest_owned(&self, state: &State<T>) -> Option<f64> {
        let (comm, plan, d) = self.parts();
        largest(comm, owned_max_abs(state, plan.sub.owned_nodes(), d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A gather to rank 0, whole or one rank's piece at a time (the path of a large
    /// checkpoint, taken here by lowering the threshold to 0), puts every owned node's
    /// values and every bond's value at their global places on rank 0, the same either
    /// way, and leaves the other ranks' arrays alone: the plate of `part.rs` on 3 thread
    /// ranks, each bond's value its global index and each node's its index.
    #[test]
    fn gathers_to_rank_0_place_every_piece_whole_or_piecewise() {
        let model = crate::distributed::part::tests::plate_model();
        let problem = crate::setup::Problem::build(model, std::path::Path::new(".")).unwrap();
        let (n, bonds) = (problem.body.len(), problem.families.bonds());
        for piecewise in [false, true] {
            let above = if piecewise { 0 } else { 64 << 20 };
            PIECEWISE_ABOVE.store(above, Ordering::Relaxed);
            let ends = crate::distributed::run_ranks(3, |comm| {
                let plan = RankPlan::new(&problem, 3, comm.rank()).unwrap();
                let mine: Vec<u64> = (0..plan.sub.owned)
                    .flat_map(|k| plan.sub.global_bonds(k).map(|b| b as u64))
                    .collect();
                let status = gather_bonds_to(&*comm, &plan, &mine, Gather::Root).unwrap();
                let owned: Vec<f64> = plan.sub.owned_nodes().iter().map(|&i| i as f64).collect();
                let mut nodes = vec![-1.0; n];
                gather_owned_to(&*comm, &plan.owned_of, &owned, 1, &mut nodes, Gather::Root)
                    .unwrap();
                (status, nodes)
            });
            PIECEWISE_ABOVE.store(64 << 20, Ordering::Relaxed);
            let want: Vec<u64> = (0..bonds as u64).collect();
            assert!(
                ends[0].0 == want,
                "piecewise {piecewise}: every bond in place"
            );
            assert!(
                (ends[0].1.iter().enumerate()).all(|(i, &x)| x == i as f64),
                "piecewise {piecewise}: every node in place"
            );
            for (r, (status, nodes)) in ends.iter().enumerate().skip(1) {
                assert!(status.is_empty(), "rank {r} receives no bond");
                assert!(
                    nodes.iter().all(|&x| x == -1.0),
                    "rank {r}'s array untouched"
                );
            }
        }
    }
}
