//! The ghost exchange of a rank on its device: the values other ranks need gathered by a
//! kernel (`halo_gather`, `kernels/halo.cu`) into one contiguous device buffer, copied into
//! a page-locked host buffer, sent and received through [`Comm::exchange`], the received
//! values copied up into one device buffer and put at the ghosts by a kernel
//! (`halo_scatter`). Only these bytes cross PCIe per exchange: `per` values per node sent
//! and per ghost received.
//!
//! [`DeviceHalo::post`] enqueues the gather and the copy down, and records an event;
//! the caller then enqueues work that reads no ghost (the interior's kernel) and calls
//! [`DeviceHalo::complete_counted`] (its seconds and bytes into the rank's `HaloTimes`),
//! which waits for the event only (not for that work), exchanges, and enqueues the copy up
//! and the scatter: the messages travel while the device computes.
//! Everything runs on the device's one stream, so the ghosts are in place for whatever is
//! enqueued next. Where the transport takes device buffers (a CUDA-aware MPI that reports it,
//! `Comm::device_buffers`) the packed device buffers go to it as they are: no page-locked
//! copy, no copy down or up, the messages from device memory to device memory.
//!
//! Units: values as the arrays exchanged; bytes; seconds.

use super::super::halo::Halo;
use super::super::{bytes_of, bytes_of_mut, Comm, DeviceBuffer, HaloTimes};
use super::order::DeviceOrder;
use crate::backend::gpu::buffers::{addr, upload};
use crate::gpu::device::driver_error;
use crate::gpu::params::HaloParams;
use crate::gpu::pinned::{copy_in, copy_out, timing_event, Pinned};
use crate::gpu::Gpu;
use crate::{Real, Result};
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice};
use std::time::Instant;

/// One list of nodes whose values are packed into (or unpacked from) a contiguous buffer on
/// the device and its page-locked host copy.
pub(super) struct Packed<T> {
    index: CudaSlice<u32>,
    device: CudaSlice<T>,
    /// The page-locked copy of `device` (empty where the transport takes device buffers).
    pub host: Pinned<T>,
    count: usize,
    per: usize,
}

impl<T: Real> Packed<T> {
    /// The list of `nodes` (device indices), `per` values each; `staged`: with a page-locked
    /// host copy.
    pub fn new(gpu: &Gpu, nodes: &[u32], per: usize, staged: bool) -> Result<Self> {
        let len = per * nodes.len();
        Ok(Packed {
            index: upload(gpu, nodes)?,
            device: gpu
                .stream()
                .alloc_zeros::<T>(len.max(1))
                .map_err(driver_error)?,
            host: Pinned::zeroed(gpu, if staged { len } else { 0 })?,
            count: nodes.len(),
            per,
        })
    }

    fn params(&self, gpu: &Gpu, values: u64) -> HaloParams {
        HaloParams {
            values,
            index: addr(gpu, &self.index),
            buffer: addr(gpu, &self.device),
            count: self.count as u64,
            per: self.per as u64,
        }
    }

    /// Enqueue the gather of the listed nodes' values of `values` (a device address) and,
    /// where staged, their copy into `host` (read it once the stream has passed this point).
    pub fn gather(&mut self, gpu: &Gpu, kernel: &CudaFunction, values: u64) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let p = self.params(gpu, values);
        // SAFETY: `index` holds `count` nodes of `values` (`per` values each), `device`
        // `per count` values; `host` is pinned, as long as `device` or empty, and read only
        // after the stream has passed the copy (the caller's event or synchronization).
        unsafe {
            gpu.launch(kernel, self.count * self.per, &p)?;
            copy_out(gpu.stream(), &mut self.host, p.buffer)
        }
    }

    /// Enqueue, where staged, the copy of `host` to the device, and the scatter of the
    /// device buffer's values to the listed nodes of `values` (a device address).
    pub fn scatter(&self, gpu: &Gpu, kernel: &CudaFunction, values: u64) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let p = self.params(gpu, values);
        // SAFETY: as in `gather`; `host` is not written again before the copy has run (the
        // next exchange first waits for an event recorded after it on the same stream).
        unsafe {
            copy_in(gpu.stream(), p.buffer, &self.host)?;
            gpu.launch(kernel, self.count * self.per, &p)
        }
    }

    /// Per peer of `peers` (rank, nodes), its rank, device address and bytes in `device`.
    fn device_buffers(&self, gpu: &Gpu, peers: &[(usize, usize)]) -> Vec<DeviceBuffer> {
        let size = self.per * std::mem::size_of::<T>();
        let mut at = addr(gpu, &self.device);
        (peers.iter())
            .map(|&(rank, nodes)| {
                let buffer = (rank, at, size * nodes);
                at += (size * nodes) as u64;
                buffer
            })
            .collect()
    }

    pub fn bytes(&self) -> usize {
        self.index.num_bytes() + self.device.num_bytes() + self.host.num_bytes()
    }
}

/// Host seconds of one [`DeviceHalo::complete`]: in all, waiting for the device's event, and
/// in the messages.
#[derive(Debug, Clone, Copy)]
struct Spent {
    pub total: f64,
    pub wait: f64,
    pub message: f64,
}

/// A rank's exchange of one array (`per` values per node) on its device.
pub(super) struct DeviceHalo<T> {
    sends: Packed<T>,
    recvs: Packed<T>,
    /// Per neighbouring rank, its rank and the nodes sent to it or received from it, in the
    /// order of the packed buffers.
    send_peers: Vec<(usize, usize)>,
    recv_peers: Vec<(usize, usize)>,
    per: usize,
    gather: CudaFunction,
    scatter: CudaFunction,
    /// Recorded after the copy of the packed values to the host (after their packing where
    /// `direct`).
    packed: CudaEvent,
    /// The transport takes device buffers (`Comm::device_buffers`: a CUDA-aware MPI): the
    /// packed buffers go to it from device memory, with no page-locked copy.
    direct: bool,
}

impl<T: Real> DeviceHalo<T> {
    /// The exchange of `halo` (plan indices, mapped to the device's by `order`), `per`
    /// values per node, over `comm` (device buffers where it takes them).
    pub fn new(
        gpu: &Gpu,
        comm: &dyn Comm,
        halo: &Halo,
        order: &DeviceOrder,
        per: usize,
    ) -> Result<Self> {
        let direct = comm.device_buffers();
        let nodes = |peers: &[super::super::halo::Peer]| -> Vec<u32> {
            peers
                .iter()
                .flat_map(|p| order.device_indices(&p.nodes))
                .collect()
        };
        let peers = |peers: &[super::super::halo::Peer]| -> Vec<(usize, usize)> {
            peers.iter().map(|p| (p.rank, p.nodes.len())).collect()
        };
        Ok(DeviceHalo {
            sends: Packed::new(gpu, &nodes(&halo.sends), per, !direct)?,
            recvs: Packed::new(gpu, &nodes(&halo.recvs), per, !direct)?,
            send_peers: peers(&halo.sends),
            recv_peers: peers(&halo.recvs),
            per,
            gather: gpu.function(T::PRECISION, "halo_gather")?,
            scatter: gpu.function(T::PRECISION, "halo_scatter")?,
            packed: timing_event(gpu)?,
            direct,
        })
    }

    /// Enqueue the packing of the values other ranks need from `values` (a device address)
    /// and their copy to the host; record the event [`complete`](Self::complete) waits for.
    pub fn post(&mut self, gpu: &Gpu, values: u64) -> Result<()> {
        self.sends.gather(gpu, &self.gather, values)?;
        self.packed.record(gpu.stream()).map_err(driver_error)
    }

    /// Wait for the packed values (not for the work enqueued after [`post`](Self::post)),
    /// exchange them with the neighbours, and enqueue the received values' copy up and
    /// scatter to the ghosts of `values`. Returns the seconds the host spent here: in all,
    /// waiting for the event, and in the messages.
    fn complete(&mut self, gpu: &Gpu, comm: &dyn Comm, values: u64) -> Result<Spent> {
        let t0 = Instant::now();
        self.packed.synchronize().map_err(driver_error)?;
        let wait = t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        match self.direct {
            true => {
                let send = self.sends.device_buffers(gpu, &self.send_peers);
                let recv = self.recvs.device_buffers(gpu, &self.recv_peers);
                comm.exchange_device(&send, &recv)?;
            }
            false => self.exchange_staged(comm)?,
        }
        let message = t1.elapsed().as_secs_f64();
        self.recvs.scatter(gpu, &self.scatter, values)?;
        Ok(Spent {
            total: t0.elapsed().as_secs_f64(),
            wait,
            message,
        })
    }

    /// The messages through the page-locked host buffers, one slice of them per peer.
    fn exchange_staged(&mut self, comm: &dyn Comm) -> Result<()> {
        let per = self.per;
        let mut send = Vec::with_capacity(self.send_peers.len());
        let mut rest: &[T] = &self.sends.host;
        for &(rank, nodes) in &self.send_peers {
            let (mine, more) = rest.split_at(per * nodes);
            send.push((rank, bytes_of(mine)));
            rest = more;
        }
        let mut recv = Vec::with_capacity(self.recv_peers.len());
        let mut rest: &mut [T] = &mut self.recvs.host;
        for &(rank, nodes) in &self.recv_peers {
            let (mine, more) = rest.split_at_mut(per * nodes);
            recv.push((rank, bytes_of_mut(mine)));
            rest = more;
        }
        comm.exchange(&send, &mut recv, &mut || Ok(()))
    }

    /// [`complete`](Self::complete), its seconds and the bytes received added to `times`.
    pub fn complete_counted(
        &mut self,
        gpu: &Gpu,
        comm: &dyn Comm,
        values: u64,
        times: &mut HaloTimes,
    ) -> Result<()> {
        let spent = self.complete(gpu, comm, values)?;
        times.exchange_seconds += spent.total;
        times.wait_seconds += spent.wait;
        times.message_seconds += spent.message;
        times.exchanges += 1;
        times.bytes_received += self.recv_bytes();
        Ok(())
    }

    /// Bytes received per exchange.
    pub fn recv_bytes(&self) -> usize {
        self.recvs.count * self.per * std::mem::size_of::<T>()
    }

    /// Bytes held (device and pinned host).
    pub fn bytes(&self) -> usize {
        self.sends.bytes() + self.recvs.bytes()
    }
}
