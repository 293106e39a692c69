//! The probe rows of a rank whose state is resident on its device (`gpu-loop` and
//! `gpu-matrix` across ranks): the displacement and force density of the probe regions' nodes
//! this rank owns packed on the device (`halo_gather`) and copied down, gathered to every
//! rank with the other ranks' and summed in the order of a single process
//! (`collect::probe_rows`). Where the device does not hold the driver's state, the values come
//! from the host state instead.
//!
//! Units: m (displacement), N/m^3 (force density).

use super::super::collect::{probe_nodes, probe_rows, values_at};
use super::super::{Comm, RankPlan};
use super::halo::Packed;
use crate::backend::gpu::device_fault;
use crate::dynamics::State;
use crate::gpu::Gpu;
use crate::output::{ProbeRegions, ProbeValues};
use crate::{Real, Result};

/// A rank's probe nodes, per rank, and this rank's packed on its device.
pub(super) struct DeviceProbeRows<T> {
    /// Per rank, the probe regions' nodes it owns (ascending global indices).
    nodes: Vec<Vec<usize>>,
    packed: Packed<T>,
    /// The global displacement and force arrays the rows are summed from (only the probe
    /// nodes' entries are written).
    u: Vec<T>,
    f: Vec<T>,
}

impl<T: Real> DeviceProbeRows<T> {
    /// The probe nodes of `regions` over the ranks of `plan`, this rank's at the device
    /// indices `device_of` gives (global node -> device index of an owned node), `d` values
    /// each.
    pub fn new(
        gpu: &Gpu,
        regions: &ProbeRegions,
        plan: &RankPlan,
        device_of: &[u32],
        d: usize,
    ) -> Result<Self> {
        let nodes = probe_nodes(regions, &plan.owned_of);
        let local: Vec<u32> = nodes[plan.rank].iter().map(|&i| device_of[i]).collect();
        let packed = Packed::new(gpu, &local, d, true)?;
        Ok(DeviceProbeRows {
            nodes,
            packed,
            u: Vec::new(),
            f: Vec::new(),
        })
    }

    /// The probe rows of `regions` (collective): this rank's values from the device arrays
    /// at `resident` (the addresses of `u` and `f` where the device holds `state`), else from
    /// the host `state`.
    #[allow(clippy::too_many_arguments)]
    pub fn rows(
        &mut self,
        gpu: &Gpu,
        comm: &dyn Comm,
        rank: usize,
        state: &State<T>,
        regions: &ProbeRegions,
        resident: Option<(u64, u64)>,
        d: usize,
        name: &'static str,
    ) -> Result<Vec<ProbeValues>> {
        let mine = match resident {
            Some((u_at, f_at)) => {
                let kernel = gpu.function(T::PRECISION, "halo_gather")?;
                let packed = &mut self.packed;
                let mut values = |at: u64| -> Result<Vec<T>> {
                    packed.gather(gpu, &kernel, at)?;
                    gpu.synchronize()
                        .map_err(device_fault(name, "probe values"))?;
                    Ok(packed.host.to_vec())
                };
                (values(u_at)?, values(f_at)?)
            }
            None => values_at(state, &self.nodes[rank], d),
        };
        let bufs = (&mut self.u, &mut self.f);
        probe_rows(comm, &self.nodes, mine, d, bufs, state.u.len(), regions)
    }
}
