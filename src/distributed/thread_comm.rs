//! [`Comm`] between threads of one process: P ranks as P threads exchanging through
//! channels, so a distributed run (its partition, exchanges, reductions and gathers) runs in
//! one test process without `mpirun` ([`run_ranks`]). Several ranks of a GPU backend share
//! the process's one device this way.
//!
//! Each ordered pair of ranks has one channel; every call (exchange or collective) sends its
//! messages on those channels in the order the ranks make the calls, which is the same on
//! every rank (as MPI requires), so the k-th message from `q` to `r` is the one `r` waits
//! for in its k-th call that receives from `q`. A collective sends this rank's value to
//! every other rank and combines what arrives in rank order, so every rank gets the same
//! bits. A rank that ends early (an error or a panic) drops its senders; a rank waiting for
//! it then panics with a message naming it, instead of waiting forever.
//!
//! Units: bytes.

use super::{Comm, DeviceBuffer};
use crate::gpu::pinned::{copy_bytes_in, copy_bytes_out};
use crate::Result;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

/// The receiving end of the channel from one rank.
type From = Option<Mutex<Receiver<Vec<u8>>>>;

/// One rank of a group of threads.
pub struct ThreadComm {
    rank: usize,
    size: usize,
    /// `to[q]`: the channel to rank `q` (none to itself).
    to: Vec<Option<Sender<Vec<u8>>>>,
    /// `from[q]`: the channel from rank `q`.
    from: Vec<From>,
    /// [`Comm::exchange_device`] runs: device buffers copied through the host here, as a
    /// CUDA-aware MPI would take them (so a GPU rank's direct path runs in a test process).
    device_buffers: bool,
}

impl std::fmt::Debug for ThreadComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ThreadComm(rank {} of {})", self.rank, self.size)
    }
}

impl ThreadComm {
    /// The `size` ranks of one group, rank `r` at index `r` (hand each to its own thread).
    pub fn group(size: usize) -> Vec<ThreadComm> {
        let mut to: Vec<Vec<Option<Sender<Vec<u8>>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        let mut from: Vec<Vec<From>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        for (q, row) in to.iter_mut().enumerate() {
            for (r, slot) in row.iter_mut().enumerate() {
                if q != r {
                    let (tx, rx) = channel();
                    *slot = Some(tx);
                    from[r][q] = Some(Mutex::new(rx));
                }
            }
        }
        (to.into_iter().zip(from).enumerate())
            .map(|(rank, (to, from))| ThreadComm {
                rank,
                size,
                to,
                from,
                device_buffers: false,
            })
            .collect()
    }

    fn send(&self, peer: usize, bytes: Vec<u8>) {
        let tx = self.to[peer].as_ref().expect("no channel to itself");
        // (a peer that ended drops its receivers; it is then waited for nowhere)
        let _ = tx.send(bytes);
    }

    fn receive(&self, peer: usize) -> Vec<u8> {
        let rx = self.from[peer].as_ref().expect("no channel from itself");
        let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
        rx.recv().unwrap_or_else(|_| {
            panic!(
                "rank {} waited for rank {peer}, which ended without sending",
                self.rank
            )
        })
    }

    /// Every rank's bytes in rank order (this rank's `mine` at its place).
    fn all(&self, mine: &[u8]) -> Vec<Vec<u8>> {
        for q in (0..self.size).filter(|&q| q != self.rank) {
            self.send(q, mine.to_vec());
        }
        (0..self.size)
            .map(|q| match q == self.rank {
                true => mine.to_vec(),
                false => self.receive(q),
            })
            .collect()
    }
}

impl Comm for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn exchange(
        &self,
        send: &[(usize, &[u8])],
        recv: &mut [(usize, &mut [u8])],
        work: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        for (peer, bytes) in send {
            self.send(*peer, bytes.to_vec());
        }
        let done = work();
        for (peer, into) in recv.iter_mut() {
            let got = self.receive(*peer);
            assert_eq!(
                got.len(),
                into.len(),
                "rank {}: the message from rank {peer} has {} bytes, {} expected",
                self.rank,
                got.len(),
                into.len()
            );
            into.copy_from_slice(&got);
        }
        done
    }

    fn device_buffers(&self) -> bool {
        self.device_buffers
    }

    /// Each send buffer copied down from the device, the bytes exchanged as
    /// [`Comm::exchange`] does, each receive buffer copied up (the calling thread's current
    /// context: the rank's device, whose work the caller has waited for).
    fn exchange_device(&self, send: &[DeviceBuffer], recv: &[DeviceBuffer]) -> Result<()> {
        let mut out = Vec::with_capacity(send.len());
        for &(peer, addr, bytes) in send {
            let mut host = vec![0u8; bytes];
            // SAFETY: the caller hands device buffers of `bytes` bytes whose writes have
            // completed (`Comm::exchange_device`).
            unsafe { copy_bytes_out(&mut host, addr)? };
            out.push((peer, host));
        }
        let mut into: Vec<(usize, Vec<u8>)> = (recv.iter())
            .map(|&(peer, _, bytes)| (peer, vec![0u8; bytes]))
            .collect();
        let send: Vec<(usize, &[u8])> = out.iter().map(|(p, b)| (*p, &b[..])).collect();
        let mut received: Vec<(usize, &mut [u8])> =
            into.iter_mut().map(|(p, b)| (*p, &mut b[..])).collect();
        self.exchange(&send, &mut received, &mut || Ok(()))?;
        for (&(_, addr, _), (_, bytes)) in recv.iter().zip(&into) {
            // SAFETY: as above; nothing on the device touches a receive buffer before the
            // caller's scatter, enqueued after this returns.
            unsafe { copy_bytes_in(addr, bytes)? };
        }
        Ok(())
    }

    fn sum_u64(&self, x: u64) -> u64 {
        (self.all(&x.to_ne_bytes()).iter())
            .map(|b| u64::from_ne_bytes(b[..8].try_into().expect("8 bytes")))
            .sum()
    }

    fn sum_f64(&self, x: f64) -> f64 {
        (self.all(&x.to_ne_bytes()).iter())
            .map(|b| f64::from_ne_bytes(b[..8].try_into().expect("8 bytes")))
            .sum()
    }

    fn max_f64(&self, x: f64) -> f64 {
        (self.all(&x.to_ne_bytes()).iter())
            .map(|b| f64::from_ne_bytes(b[..8].try_into().expect("8 bytes")))
            .fold(f64::NEG_INFINITY, f64::max)
    }

    fn all_gather(&self, mine: &[u8], counts: &[usize]) -> Result<Vec<u8>> {
        let all = self.all(mine);
        for (q, (part, &count)) in all.iter().zip(counts).enumerate() {
            assert_eq!(part.len(), count, "rank {q}'s share of an all-gather");
        }
        Ok(all.concat())
    }

    fn gather_to(&self, root: usize, mine: &[u8], counts: &[usize]) -> Result<Option<Vec<u8>>> {
        if self.rank != root {
            self.send(root, mine.to_vec());
            return Ok(None);
        }
        let all: Vec<Vec<u8>> = (0..self.size)
            .map(|q| match q == self.rank {
                true => mine.to_vec(),
                false => self.receive(q),
            })
            .collect();
        for (q, (part, &count)) in all.iter().zip(counts).enumerate() {
            assert_eq!(part.len(), count, "rank {q}'s share of a gather");
        }
        Ok(Some(all.concat()))
    }

    fn abort(&self, code: i32) -> ! {
        panic!("rank {} aborted the run (exit status {code})", self.rank)
    }
}

/// Run `work(comm)` on `size` ranks, each a thread of this process with its rank of one
/// [`ThreadComm`] group; the results in rank order. A panic on any rank is raised again
/// here once every thread has ended (the others end too: they panic waiting for it).
pub fn run_ranks<R: Send>(size: usize, work: impl Fn(Arc<dyn Comm>) -> R + Sync) -> Vec<R> {
    run_ranks_on(ThreadComm::group(size), work)
}

/// [`run_ranks`] with ranks whose exchanges take device buffers (`Comm::device_buffers`):
/// a GPU rank's halo then runs the path it takes on a CUDA-aware MPI.
pub fn run_ranks_with_device_buffers<R: Send>(
    size: usize,
    work: impl Fn(Arc<dyn Comm>) -> R + Sync,
) -> Vec<R> {
    let mut group = ThreadComm::group(size);
    for comm in &mut group {
        comm.device_buffers = true;
    }
    run_ranks_on(group, work)
}

fn run_ranks_on<R: Send>(
    group: Vec<ThreadComm>,
    work: impl Fn(Arc<dyn Comm>) -> R + Sync,
) -> Vec<R> {
    let work = &work;
    std::thread::scope(|s| {
        let threads: Vec<_> = (group.into_iter())
            .map(|comm| s.spawn(move || work(Arc::new(comm))))
            .collect();
        let joined: Vec<_> = threads.into_iter().map(|t| t.join()).collect();
        joined
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}
