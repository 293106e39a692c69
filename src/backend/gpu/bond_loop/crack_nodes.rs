//! The nodes of a crack-tip sample on the device: the damage kernel, then `damage_over`
//! (`kernels/damage.cu`) compacts the nodes at or above the threshold, and only they come
//! back (a few thousand indices instead of the whole field: 32 MB at 4 M nodes in f64).

use super::GpuLoop;
use crate::backend::gpu::buffers::{addr, download};
use crate::gpu::device::driver_error;
use crate::gpu::Gpu;
use crate::{Real, Result};
use cudarc::driver::{CudaSlice, DeviceRepr};
use rayon::prelude::*;

/// Parameters of `damage_over` (`kernels/damage.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct OverParams {
    phi: u64,
    out: u64,
    count: u64,
    n: u64,
    threshold: f64,
}

// SAFETY: a plain `#[repr(C)]` struct of integers and a float, laid out as the kernel reads it.
unsafe impl DeviceRepr for OverParams {}

/// The device buffers of the compaction: one index per node and the count.
pub(super) struct OverBuffers {
    out: CudaSlice<u32>,
    count: CudaSlice<u64>,
}

impl OverBuffers {
    /// Buffers for `n` nodes, or `None` where the device has no room for them (the caller
    /// then reads the whole field).
    fn new(gpu: &Gpu, n: usize) -> Option<OverBuffers> {
        gpu.ensure_fits("gpu-loop", n.max(1) * 4 + 8).ok()?;
        let s = gpu.stream();
        Some(OverBuffers {
            out: s.alloc_zeros::<u32>(n.max(1)).ok()?,
            count: s.alloc_zeros::<u64>(1).ok()?,
        })
    }
}

impl<T: Real> GpuLoop<T> {
    /// The nodes whose damage is at or above `threshold`, ascending; `None` where the device
    /// has no room for the compaction's buffers.
    pub(super) fn try_nodes_over(&mut self, threshold: f64) -> Result<Option<Vec<usize>>> {
        let n = self.problem.body.len();
        if self.over.is_none() {
            self.over = OverBuffers::new(&self.gpu, n);
        }
        let params = self.bond_params(0, 0, false);
        let Some(over) = &mut self.over else {
            return Ok(None);
        };
        let g = &*self.gpu;
        g.stream()
            .memset_zeros(&mut over.count)
            .map_err(driver_error)?;
        let p = OverParams {
            phi: addr(g, &self.phi),
            out: addr(g, &over.out),
            count: addr(g, &over.count),
            n: n as u64,
            threshold,
        };
        // SAFETY: `damage` reads the geometry and `mu` and writes `phi` (n values);
        // `damage_over` reads `phi` and writes at most n indices into `out` and the count.
        unsafe {
            g.launch(&self.k.damage, n, &params)?;
            g.launch(&self.k.damage_over, n, &p)?;
        }
        let mut count = [0u64];
        download(g, &over.count, &mut count)?;
        let mut nodes = vec![0u32; count[0] as usize];
        if !nodes.is_empty() {
            download(g, &over.out, &mut nodes)?;
        }
        nodes.par_sort_unstable();
        Ok(Some(nodes.into_iter().map(|i| i as usize).collect()))
    }
}
