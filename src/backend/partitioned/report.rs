//! What the device slots of a streamed backend took and what was measured when they were
//! made (the `gpu-loop` slots of `stream/`, the `gpu-matrix` slots of `matrix_stream.rs`),
//! and the `subdomains` report ([`StreamReport`]) both give from it.
//!
//! Units: memory in bytes, bandwidth in B/s.

use crate::gpu::device::driver_error;
use crate::gpu::pinned::pinned_bandwidth;
use crate::gpu::Gpu;
use crate::partition::{Residency, StreamReport, StreamTimes};
use crate::Result;

/// Device memory of the slots of a streamed run, measured when they were made.
#[derive(Debug, Clone, Copy, Default)]
pub struct SlotMemory {
    /// Device bytes the slots hold (buffers, workspaces, counters).
    pub allocated: usize,
    /// Device memory in use before and after the slots were made (`cuMemGetInfo`).
    pub used_before: usize,
    pub used_after: usize,
    /// Pinned copy bandwidth host to device and back, B/s.
    pub bandwidth: (f64, f64),
}

/// How a streamed run placed its subdomains and what it compares itself with: the figures
/// of a [`StreamReport`] that are not measured.
#[derive(Debug, Clone, Copy)]
pub struct Placed {
    pub count: usize,
    pub residency: Residency,
    /// Subdomains with a slot of their own.
    pub resident: usize,
    /// Device bytes of the in-core backend for the whole model.
    pub in_core: usize,
    /// The budget the plan was made for, bytes.
    pub budget: Option<u64>,
}

impl SlotMemory {
    /// The `subdomains` report of a run placed as `placed`, with these slots, after the
    /// force evaluations of `times`.
    pub fn report(&self, placed: Placed, times: &StreamTimes) -> StreamReport {
        let (bw_in, bw_out) = self.bandwidth;
        StreamReport {
            count: placed.count,
            residency: placed.residency,
            resident_subdomains: placed.resident,
            in_core_bytes: placed.in_core as u64,
            pinned_h2d_bytes_per_second: bw_in,
            pinned_d2h_bytes_per_second: bw_out,
            budget_bytes: placed.budget,
            allocated_bytes: self.allocated as u64,
            device_used_before: self.used_before as u64,
            device_used_after: self.used_after as u64,
            ..Default::default()
        }
        .with_times(times)
    }
}

/// Device memory `(free, total)` once the context's pending work is done (e.g. the frees of
/// the neighbour search), so that what is in use is what stays.
pub fn settled_memory(gpu: &Gpu) -> Result<(usize, usize)> {
    gpu.stream().context().synchronize().map_err(driver_error)?;
    gpu.memory_info()
}

/// The pinned copy bandwidth (in, out) the overlap is measured against, B/s: of a copy as
/// large as `largest` bytes (the largest block a slot takes), at least 64 MiB, at most
/// 256 MiB and a quarter of `room`, and at least 1 MiB.
pub fn copy_bandwidth(gpu: &Gpu, largest: usize, room: usize) -> Result<(f64, f64)> {
    let probe = largest
        .clamp(64 << 20, 256 << 20)
        .min(room / 4)
        .max(1 << 20);
    pinned_bandwidth(gpu, probe)
}
