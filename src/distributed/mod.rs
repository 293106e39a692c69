//! Runs across processes (`docs/distributed.md`): the nodes split into one part per rank,
//! balanced by bonds, each rank holding its part and a ghost layer one family radius deep,
//! the ghost values exchanged every step by non-blocking point-to-point messages.
//!
//! This module owns the boundary every distributed backend goes through:
//!
//! - [`Comm`]: what a run needs of the transport (rank, size, one non-blocking exchange with
//!   the neighbouring ranks, reductions, an all-gather, a gather to one rank, abort). [`SelfComm`] is the single
//!   process; `MpiComm` (feature `mpi`, `mpi_comm.rs`) is MPI through rsmpi; [`ThreadComm`]
//!   (`thread_comm.rs`) is P ranks as P threads of one process (a distributed run without
//!   `mpirun`, for tests). The command line creates the communicator; nothing below it knows
//!   MPI.
//! - [`RankPlan`] (`plan.rs`): a rank's subdomain (`partition::Subdomain`: owned nodes, then
//!   ghosts), its neighbours and the nodes it sends to and receives from each, every rank's
//!   owned nodes; pure, so `peridot info --ranks P` shows it without MPI.
//! - [`Halo`] (`halo.rs`): the ghost exchange as its own steps, pack, exchange, unpack, so a
//!   device backend can pack and unpack on the device and hand the transport host buffers.
//! - `collect.rs`: the reductions of what a run reports (owned values gathered into the
//!   global arrays every rank holds for outputs, bond status, sums).
//! - [`DistributedCpu`] (`cpu.rs`): `cpu-loop` on a rank's part, bitwise the in-core run,
//!   its interior's bond work overlapping the exchange (`split.rs`: interior and boundary
//!   nodes in two loops).
//! - `contact.rs`: contact and impactors across ranks for `DistributedCpu` and
//!   `DistributedGpu` (`RankContact`: the contact halo of the other ranks' nodes within
//!   reach for the node pairs, a crack face's bond status from the owned end, the
//!   impactors' reaction terms of every rank merged in node order).
//! - [`DistributedMatrix`] (`matrix.rs`): `cpu-matrix` on a rank's part, the operators' rows
//!   of its owned nodes with ghost columns, the in-core run to round-off.
//! - [`DistributedGpu`] (`gpu/`): `gpu-loop` on a rank's part on its device, bitwise the
//!   one-GPU run's neighbour-list form (ADR: the host iteration over the devices' forces).
//!
//! The driver (`solver::run`) runs on every rank with the same decisions (the same steps,
//! outputs, checks), so the collective calls line up; what only one rank does (write
//! `summary.json`, `probes.csv`, the `.pvtu` and `.pvd`) is gated on rank 0.
//!
//! Units: values as the arrays they come from (m, N/m^3); sizes in bytes.

mod collect;
mod contact;
pub mod cpu;
pub mod gpu;
pub mod halo;
pub mod matrix;
#[cfg(feature = "mpi")]
pub mod mpi_comm;
mod part;
pub mod plan;
mod split;
pub mod thread_comm;

pub use collect::{HaloTimes, StopFlags};
pub use cpu::DistributedCpu;
pub use gpu::{DistributedGpu, DistributedGpuMatrix};
pub use halo::Halo;
pub use matrix::DistributedMatrix;
#[cfg(feature = "mpi")]
pub use mpi_comm::MpiComm;
pub use plan::{RankPlan, RankRow, RankSetup};
pub use thread_comm::{run_ranks, run_ranks_with_device_buffers, ThreadComm};

use crate::Result;

/// A message buffer in device memory: the peer's rank, the device address, the bytes.
pub type DeviceBuffer = (usize, u64, usize);

/// The transport of a distributed run: what every rank calls, in the same order on every
/// rank (each call is collective unless said otherwise).
pub trait Comm: Send + Sync + std::fmt::Debug {
    /// This process's rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Post a receive of every `recv[k].1` from rank `recv[k].0` and a send of every
    /// `send[k].1` to rank `send[k].0`, all non-blocking; run `work` while they travel; wait
    /// for all. Point-to-point: only the ranks named take part (each send matched by the
    /// peer's receive of the same length).
    fn exchange(
        &self,
        send: &[(usize, &[u8])],
        recv: &mut [(usize, &mut [u8])],
        work: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()>;
    /// Whether [`Comm::exchange_device`] takes device buffers: a CUDA-aware MPI library that
    /// reports it (`MpiComm`), or thread ranks made to stage device buffers themselves
    /// ([`thread_comm::run_ranks_with_device_buffers`], for tests). Not collective.
    fn device_buffers(&self) -> bool {
        false
    }
    /// [`Comm::exchange`] of buffers in device memory, each `(rank, device address, bytes)`,
    /// nothing run meanwhile (the device computes); only where
    /// [`Comm::device_buffers`] says so. Point-to-point.
    fn exchange_device(&self, send: &[DeviceBuffer], recv: &[DeviceBuffer]) -> Result<()> {
        let _ = (send, recv);
        Err(crate::Error::Backend {
            backend: "mpi".into(),
            message: "this transport takes no device buffers".into(),
        })
    }
    /// The sum over the ranks (exact: integers).
    fn sum_u64(&self, x: u64) -> u64;
    /// The sum over the ranks, added in rank order.
    fn sum_f64(&self, x: f64) -> f64;
    /// The largest over the ranks.
    fn max_f64(&self, x: f64) -> f64;
    /// Whether `flag` is set on any rank.
    fn any(&self, flag: bool) -> bool {
        self.sum_u64(u64::from(flag)) > 0
    }
    /// Every rank's bytes, concatenated in rank order; `counts[r]` is rank `r`'s length.
    fn all_gather(&self, mine: &[u8], counts: &[usize]) -> Result<Vec<u8>>;
    /// Every rank's bytes, concatenated in rank order, on rank `root` alone (`Some` there,
    /// `None` on the others, which receive nothing); `counts[r]` is rank `r`'s length.
    fn gather_to(&self, root: usize, mine: &[u8], counts: &[usize]) -> Result<Option<Vec<u8>>>;
    /// End every rank's process (the run cannot go on together).
    fn abort(&self, code: i32) -> !;
}

/// A run's transport as the shared lean setup's ([`crate::setup::NodeShares`]: each rank
/// computes the bond passes of its share of the nodes).
pub struct CommShares<'a>(pub &'a dyn Comm);

impl crate::setup::NodeShares for CommShares<'_> {
    fn rank(&self) -> usize {
        self.0.rank()
    }
    fn size(&self) -> usize {
        self.0.size()
    }
    fn all_gather(&self, mine: &[u8], counts: &[usize]) -> Result<Vec<u8>> {
        self.0.all_gather(mine, counts)
    }
    fn sum_u64(&self, x: u64) -> u64 {
        self.0.sum_u64(x)
    }
    fn max_f64(&self, x: f64) -> f64 {
        self.0.max_f64(x)
    }
}

/// The single process: rank 0 of 1.
#[derive(Debug, Default, Clone, Copy)]
pub struct SelfComm;

impl Comm for SelfComm {
    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn exchange(
        &self,
        send: &[(usize, &[u8])],
        recv: &mut [(usize, &mut [u8])],
        work: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        assert!(
            send.is_empty() && recv.is_empty(),
            "one rank has no neighbour"
        );
        work()
    }
    fn sum_u64(&self, x: u64) -> u64 {
        x
    }
    fn sum_f64(&self, x: f64) -> f64 {
        x
    }
    fn max_f64(&self, x: f64) -> f64 {
        x
    }
    fn all_gather(&self, mine: &[u8], _counts: &[usize]) -> Result<Vec<u8>> {
        Ok(mine.to_vec())
    }
    fn gather_to(&self, _root: usize, mine: &[u8], _counts: &[usize]) -> Result<Option<Vec<u8>>> {
        Ok(Some(mine.to_vec()))
    }
    fn abort(&self, code: i32) -> ! {
        std::process::exit(code)
    }
}

/// An all-gather (`counts[r]` bytes from rank `r`, this rank's `mine`) through `round`, a
/// transport's gather whose whole buffer must stay within `limit` bytes: in one round where
/// the whole fits, else in rounds of at most `limit / P` bytes from each rank, the pieces put
/// back in place. Every rank computes the same rounds from `counts`.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn gather_in_rounds(
    mine: &[u8],
    counts: &[usize],
    limit: usize,
    round: &mut dyn FnMut(&[u8], &[usize], &mut [u8]) -> Result<()>,
) -> Result<Vec<u8>> {
    let mut all_round = |mine: &[u8], part: &[usize], buf: Option<&mut [u8]>| {
        round(mine, part, buf.expect("every rank receives an all-gather"))
    };
    let all = gather_in_rounds_to(true, mine, counts, limit, &mut all_round)?;
    Ok(all.expect("every rank receives an all-gather"))
}

/// [`gather_in_rounds`] where only some ranks receive (`receives`: this one; a gather to one
/// rank): `round` gets the buffer of a round on those alone, and the others allocate none.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn gather_in_rounds_to(
    receives: bool,
    mine: &[u8],
    counts: &[usize],
    limit: usize,
    round: &mut dyn FnMut(&[u8], &[usize], Option<&mut [u8]>) -> Result<()>,
) -> Result<Option<Vec<u8>>> {
    let total: usize = counts.iter().sum();
    let mut all = receives.then(|| vec![0u8; total]);
    if total <= limit {
        round(mine, counts, all.as_deref_mut())?;
        return Ok(all);
    }
    let chunk = (limit / counts.len().max(1)).max(1);
    let rounds = counts.iter().map(|c| c.div_ceil(chunk)).max().unwrap_or(0);
    let starts: Vec<usize> = (counts.iter())
        .scan(0, |at, &c| {
            let start = *at;
            *at += c;
            Some(start)
        })
        .collect();
    for r in 0..rounds {
        let part: Vec<usize> = (counts.iter())
            .map(|&c| c.saturating_sub(r * chunk).min(chunk))
            .collect();
        let (from, to) = (
            (r * chunk).min(mine.len()),
            ((r + 1) * chunk).min(mine.len()),
        );
        let mut buf = receives.then(|| vec![0u8; part.iter().sum()]);
        round(&mine[from..to], &part, buf.as_deref_mut())?;
        let (Some(all), Some(buf)) = (all.as_mut(), buf) else {
            continue;
        };
        let mut at = 0;
        for (q, &len) in part.iter().enumerate() {
            let dest = starts[q] + r * chunk;
            all[dest..dest + len].copy_from_slice(&buf[at..at + len]);
            at += len;
        }
    }
    Ok(all)
}

/// The bytes of a slice of plain numbers.
pub(crate) fn bytes_of<T: Copy>(values: &[T]) -> &[u8] {
    // SAFETY: `T` is a plain number type (f32, f64, u8, ...): every byte is initialized and
    // any alignment of u8 fits.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
}

/// The bytes of a mutable slice of plain numbers (any bit pattern is a valid value).
pub(crate) fn bytes_of_mut<T: Copy>(values: &mut [T]) -> &mut [u8] {
    let len = std::mem::size_of_val(values);
    // SAFETY: as `bytes_of`; the callers' types (f32, f64, u8) accept any bit pattern.
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), len) }
}

#[cfg(test)]
mod tests {
    use super::{gather_in_rounds, gather_in_rounds_to};

    /// A gather to rank 1 of 3 thread ranks: rank 1 receives every rank's bytes in rank
    /// order, the others nothing; and a rank that does not receive gets no buffer in any
    /// round of a gather in rounds.
    #[test]
    fn a_gather_to_one_rank_gives_it_every_piece_and_the_others_none() {
        let got = super::run_ranks(3, |comm| {
            let mine = vec![comm.rank() as u8; comm.rank() + 1];
            comm.gather_to(1, &mine, &[1, 2, 3]).unwrap()
        });
        assert_eq!(got, vec![None, Some(vec![0, 1, 1, 2, 2, 2]), None]);
        let mut rounds = 0;
        let none = gather_in_rounds_to(false, &[7; 5], &[5, 9], 4, &mut |_, _, buf| {
            assert!(buf.is_none(), "a buffer on a rank that does not receive");
            rounds += 1;
            Ok(())
        });
        assert_eq!((none.unwrap(), rounds), (None, 5));
    }

    /// Rank 1 of 3 gathers through a transport that holds at most `limit` bytes a round (a
    /// simulated gather: each round's buffer is the ranks' pieces of that round, in rank
    /// order); the result must be every rank's bytes concatenated, whatever the limit.
    #[test]
    fn a_gather_in_rounds_puts_every_piece_in_place() {
        let data: Vec<Vec<u8>> = [7usize, 0, 23]
            .iter()
            .enumerate()
            .map(|(q, &n)| (0..n).map(|k| (31 * q + k) as u8).collect())
            .collect();
        let counts: Vec<usize> = data.iter().map(Vec::len).collect();
        let whole: Vec<u8> = data.concat();
        for limit in [3, 4, 5, 9, 29, 30, 1000] {
            let chunk = (limit / 3).max(1);
            let mut round_no = 0;
            let mut largest = 0;
            let got = gather_in_rounds(&data[1], &counts, limit, &mut |mine, part, all| {
                assert_eq!(mine.len(), part[1], "rank 1's piece");
                let start = if all.len() == 30 { 0 } else { round_no * chunk };
                let mut at = 0;
                for (q, &len) in part.iter().enumerate().filter(|(_, &len)| len > 0) {
                    all[at..at + len].copy_from_slice(&data[q][start..start + len]);
                    at += len;
                }
                largest = largest.max(all.len());
                round_no += 1;
                Ok(())
            })
            .unwrap();
            assert_eq!(got, whole, "limit {limit}");
            assert!(
                largest <= limit.max(3),
                "a round of {largest} bytes over {limit}"
            );
        }
    }
}
