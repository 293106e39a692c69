//! The ghost exchange of a rank, in three steps a device backend can take one at a time:
//! [`Halo::pack`] (the owned values each neighbour needs into one send buffer per
//! neighbour), the non-blocking exchange through [`Comm::exchange`] (work may run while the
//! messages travel), and [`Halo::unpack`] (the received values into the ghost slots). The
//! lists are local node indices (`RankPlan`); values are `per` entries per node.
//!
//! Units: as the values exchanged (m for displacements, 1 for dilatations); bytes.

use super::{bytes_of, bytes_of_mut, Comm};
use crate::Result;

/// The nodes exchanged with one neighbouring rank (local indices, ascending global order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peer {
    pub rank: usize,
    pub nodes: Vec<u32>,
}

/// A rank's ghost exchange: what it sends to and receives from each neighbour.
#[derive(Debug, Clone)]
pub struct Halo {
    pub sends: Vec<Peer>,
    pub recvs: Vec<Peer>,
}

/// The buffers of one exchange, per neighbour, reused from step to step.
#[derive(Debug, Default)]
pub struct HaloBuffers<T> {
    send: Vec<Vec<T>>,
    recv: Vec<Vec<T>>,
}

impl Halo {
    pub fn new(sends: Vec<Peer>, recvs: Vec<Peer>) -> Halo {
        Halo { sends, recvs }
    }

    /// Bytes received per exchange of `per` values of `bytes` each per node.
    pub fn recv_bytes(&self, per: usize, bytes: usize) -> usize {
        self.recvs.iter().map(|p| p.nodes.len()).sum::<usize>() * per * bytes
    }

    /// Bytes sent per exchange of `per` values of `bytes` each per node.
    pub fn send_bytes(&self, per: usize, bytes: usize) -> usize {
        self.sends.iter().map(|p| p.nodes.len()).sum::<usize>() * per * bytes
    }

    /// The values of the nodes each neighbour needs, from `local` (`per` per node), into
    /// `buf`'s send buffers (sized here).
    pub fn pack<T: Copy + Default>(&self, local: &[T], per: usize, buf: &mut HaloBuffers<T>) {
        buf.send.resize_with(self.sends.len(), Vec::new);
        for (peer, out) in self.sends.iter().zip(&mut buf.send) {
            out.clear();
            for &k in &peer.nodes {
                let k = k as usize;
                out.extend_from_slice(&local[per * k..per * (k + 1)]);
            }
        }
        buf.recv.resize_with(self.recvs.len(), Vec::new);
        for (peer, into) in self.recvs.iter().zip(&mut buf.recv) {
            into.resize(per * peer.nodes.len(), T::default());
        }
    }

    /// Send the packed buffers and receive the ghosts' values, running `work` meanwhile.
    pub fn exchange<T: Copy>(
        &self,
        comm: &dyn Comm,
        buf: &mut HaloBuffers<T>,
        work: &mut dyn FnMut() -> Result<()>,
    ) -> Result<()> {
        let send: Vec<(usize, &[u8])> = (self.sends.iter().zip(&buf.send))
            .map(|(p, b)| (p.rank, bytes_of(b)))
            .collect();
        let mut recv: Vec<(usize, &mut [u8])> = (self.recvs.iter().zip(&mut buf.recv))
            .map(|(p, b)| (p.rank, bytes_of_mut(b)))
            .collect();
        comm.exchange(&send, &mut recv, work)
    }

    /// The received values into the ghost slots of `local` (`per` per node).
    pub fn unpack<T: Copy>(&self, buf: &HaloBuffers<T>, per: usize, local: &mut [T]) {
        for (peer, values) in self.recvs.iter().zip(&buf.recv) {
            for (&k, v) in peer.nodes.iter().zip(values.chunks_exact(per)) {
                let k = k as usize;
                local[per * k..per * (k + 1)].copy_from_slice(v);
            }
        }
    }

    /// Pack, exchange and unpack: the ghosts of `local` brought up to date from their owners.
    pub fn refresh<T: Copy + Default>(
        &self,
        comm: &dyn Comm,
        local: &mut [T],
        per: usize,
        buf: &mut HaloBuffers<T>,
    ) -> Result<()> {
        self.pack(local, per, buf);
        self.exchange(comm, buf, &mut || Ok(()))?;
        self.unpack(buf, per, local);
        Ok(())
    }
}
