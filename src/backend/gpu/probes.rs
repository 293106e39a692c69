//! Probe rows from the device: the region sums of a probe row (mean displacement, summed
//! force) reduced where the explicit state lives, so a row copies back six numbers per block
//! and region, not the state (`probe_sums` in `kernels/leapfrog.cu`).
//!
//! Each region's node indices and volumes are uploaded once. The kernel writes one partial
//! sum per block; the host adds the blocks in block order, so a row does not depend on the
//! device's scheduling. It differs from [`ProbeRegions::on_host`] only by the order of the
//! additions (relative 1e-15 in f64).
//!
//! Units: displacement m, force N (force density N/m^3 times volume m^3).

use super::buffers::{addr, download, upload};
use crate::gpu::device::driver_error;
use crate::gpu::params::ProbeParams;
use crate::gpu::Gpu;
use crate::output::{ProbeRegions, ProbeValues};
use crate::{Error, Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice};

/// Most blocks one region's reduction uses (each writes six partial sums).
const BLOCKS: usize = 128;
/// Threads per block of `Gpu::launch`.
const THREADS: usize = 256;
/// Partial sums per block: three displacement and three force components.
const SUMS: usize = 6;

/// The probe regions on the device and the buffer of their partial sums.
pub(super) struct DeviceProbes {
    kernel: CudaFunction,
    /// The node lists these buffers were made from (uploaded again if they change).
    host: Vec<Vec<usize>>,
    /// Per region: node indices and volumes.
    regions: Vec<(CudaSlice<u32>, CudaSlice<f64>)>,
    partial: CudaSlice<f64>,
}

impl DeviceProbes {
    /// Upload `regions` for the reductions of precision `T`.
    pub(super) fn new<T: Real>(gpu: &Gpu, regions: &ProbeRegions) -> Result<Self> {
        let mut device = Vec::with_capacity(regions.regions.len());
        for (nodes, volumes) in &regions.regions {
            let index: Vec<u32> = nodes
                .iter()
                .map(|&i| u32::try_from(i))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| Error::Backend {
                    backend: "gpu".into(),
                    message: "a probe region's node index is above 2^32".into(),
                })?;
            device.push((upload(gpu, &index)?, upload(gpu, volumes)?));
        }
        let len = (regions.regions.len() * BLOCKS * SUMS).max(1);
        Ok(DeviceProbes {
            kernel: gpu.function(T::PRECISION, "probe_sums")?,
            host: regions.regions.iter().map(|(n, _)| n.clone()).collect(),
            regions: device,
            partial: gpu.stream().alloc_zeros::<f64>(len).map_err(driver_error)?,
        })
    }

    /// Whether these buffers hold `regions`.
    pub(super) fn holds(&self, regions: &ProbeRegions) -> bool {
        self.host.len() == regions.regions.len()
            && self
                .host
                .iter()
                .zip(&regions.regions)
                .all(|(a, (b, _))| a == b)
    }

    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> usize {
        self.partial.num_bytes()
            + self
                .regions
                .iter()
                .map(|(n, v)| n.num_bytes() + v.num_bytes())
                .sum::<usize>()
    }
}

impl DeviceProbes {
    /// The probe values of `regions` from the device's displacement `u` and force density
    /// `f` (precision `T`), these buffers made for `regions` by the caller
    /// ([`DeviceProbes::holds`]).
    pub(super) fn reduce<T: Real>(
        &self,
        g: &Gpu,
        u: &CudaSlice<T>,
        f: &CudaSlice<T>,
        regions: &ProbeRegions,
    ) -> Result<Vec<ProbeValues>> {
        let partial = addr(g, &self.partial);
        let mut blocks = Vec::with_capacity(regions.regions.len());
        for (r, (nodes, volumes)) in self.regions.iter().enumerate() {
            let count = regions.regions[r].0.len();
            let threads = count.min(BLOCKS * THREADS);
            blocks.push(threads.div_ceil(THREADS));
            let p = ProbeParams {
                u: addr(g, u),
                f: addr(g, f),
                nodes: addr(g, nodes),
                volume: addr(g, volumes),
                partial: partial + (r * BLOCKS * SUMS * std::mem::size_of::<f64>()) as u64,
                count: count as u64,
                dim: regions.dim as u64,
            };
            // SAFETY: `nodes` and `volume` hold `count` entries, every index below the
            // node count, so `u` and `f` (dim values per node) are read in bounds;
            // `partial` has room for `BLOCKS` blocks of six sums per region, and the launch
            // uses at most `BLOCKS` blocks of `THREADS` threads.
            unsafe { g.launch(&self.kernel, threads, &p)? };
        }
        let mut sums = vec![0.0; regions.regions.len() * BLOCKS * SUMS];
        download(g, &self.partial, &mut sums)?;
        Ok(regions
            .regions
            .iter()
            .enumerate()
            .map(|(r, (nodes, _))| {
                let region = &sums[r * BLOCKS * SUMS..(r + 1) * BLOCKS * SUMS];
                values(region, blocks[r], nodes.len())
            })
            .collect())
    }
}

/// The probe values of one region from its blocks' partial sums (`SUMS` per block, the first
/// `blocks` written), the mean over `count` nodes.
fn values(partial: &[f64], blocks: usize, count: usize) -> ProbeValues {
    let mut pv = ProbeValues::default();
    for block in partial.chunks_exact(SUMS).take(blocks) {
        for k in 0..3 {
            pv.mean_displacement[k] += block[k];
            pv.force[k] += block[3 + k];
        }
    }
    if count > 0 {
        pv.mean_displacement
            .iter_mut()
            .for_each(|m| *m /= count as f64);
    }
    pv
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The blocks are added in order, unwritten blocks ignored, and the displacement
    /// divided by the region's node count.
    #[test]
    fn values_add_the_written_blocks() {
        let mut partial = vec![0.0; BLOCKS * SUMS];
        partial[..6].copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
        partial[6..12].copy_from_slice(&[3.0, 2.0, 1.0, 1.0, 1.0, 1.0]);
        partial[12..18].copy_from_slice(&[99.0; 6]);
        let pv = values(&partial, 2, 4);
        assert_eq!(pv.mean_displacement, [1.0, 1.0, 1.0]);
        assert_eq!(pv.force, [5.0, 6.0, 7.0]);
    }
}
