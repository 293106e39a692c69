//! One device *slot* of a [`super::GpuStreamed`] run: the device buffers a subdomain runs in
//! (its static block, bond status bits, a softening law's damage per bond, displacement,
//! outputs), sized for the largest
//! subdomain the slot takes, with their pinned staging on the host and the events that time
//! its copies and kernel; and what one subdomain's turn on a slot enqueues around the kernel:
//! the copies in (static block and status when the slot does not hold the subdomain, node
//! state) and the copies out (the pass's results, the status when the slot is given up).
//!
//! Units: buffer lengths in values; traffic in bytes; device addresses as `u64`.

use super::placement::Sizes;
use crate::backend::partitioned::parts::Part;
use crate::gpu::device::driver_error;
use crate::gpu::layout::status_words;
use crate::gpu::params::BondParams;
use crate::gpu::pinned::{copy_in, copy_out, timing_event, Pinned};
use crate::gpu::Gpu;
use crate::{Real, Result};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr};
use std::sync::Arc;

/// What one pass over the subdomains computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    /// Force density of the owned nodes (PMB: breaking first with `check`; LPS: from the
    /// exchanged dilatations).
    Forces { check: bool },
    /// LPS dilatation and `(alpha, p theta)` of the owned nodes, breaking first with `check`.
    Dilatation { check: bool },
    /// Bond breaking only.
    Break,
    /// A softening law's damage update of the owned bonds (`soften_bonds`), breaking those
    /// reaching `d = 1`.
    Soften,
    /// The owned nodes' next critical stretch at the first breaking evaluation with history
    /// (`node_critical_stretch`), breaking nothing.
    NodeS0,
    /// Breaking with each node's history (`history_breaks`: the local nodes' critical
    /// stretches in, the owned nodes' next out).
    History,
    /// Local damage.
    Damage,
    /// Strain energy per node (LPS from the exchanged dilatations).
    Energy,
}

impl Pass {
    /// Whether the pass breaks over-stretched bonds.
    pub fn checks(self) -> bool {
        matches!(
            self,
            Pass::Forces { check: true }
                | Pass::Dilatation { check: true }
                | Pass::Break
                | Pass::Soften
                | Pass::History
        )
    }

    /// Whether the pass reads the displacement.
    pub fn reads_u(self) -> bool {
        self != Pass::Damage
    }

    /// Whether the pass reads the local nodes' critical stretches.
    pub fn reads_s0(self) -> bool {
        self == Pass::History
    }

    /// Whether the pass reads the exchanged dilatations and pairs (LPS forces and energy).
    pub fn reads_theta(self, lps: bool) -> bool {
        lps && matches!(self, Pass::Forces { .. } | Pass::Energy)
    }
}

/// The three streams of a run: copies in, kernels, copies out.
pub(super) struct Streams {
    pub h2d: Arc<CudaStream>,
    pub comp: Arc<CudaStream>,
    pub d2h: Arc<CudaStream>,
}

/// Device buffers of one slot, with their addresses.
pub(super) struct Slot<T> {
    block: CudaSlice<u8>,
    /// Bond status bits (`layout::pack_status`).
    mu: CudaSlice<u32>,
    /// A softening law's damage per slot of the sliced order (bytes of `T` values).
    damage: CudaSlice<u8>,
    /// Breaking with history: the local nodes' critical stretches (read) and the owned
    /// nodes' next (written).
    s0: CudaSlice<T>,
    s0_next: CudaSlice<T>,
    u: CudaSlice<T>,
    f: CudaSlice<T>,
    theta: CudaSlice<T>,
    pair: CudaSlice<T>,
    phi: CudaSlice<T>,
    energy: CudaSlice<f64>,
    /// The subdomain whose static block and bond status the slot holds.
    pub held: Option<usize>,
    /// Pinned staging: inputs (displacement, dilatation, pairs) and outputs.
    pub u_in: Pinned<T>,
    pub s0_in: Pinned<T>,
    pub theta_in: Pinned<T>,
    pub pair_in: Pinned<T>,
    pub out: Pinned<T>,
    pub pair_out: Pinned<T>,
    pub energy_out: Pinned<f64>,
    /// Copies in, kernel, copies out: start and end of each.
    pub events: [CudaEvent; 6],
    /// The device addresses of the buffers above (taken once: they never move).
    pub at: SlotAddrs,
    /// The subdomain and pass whose results are in flight in this slot.
    pub pending: Option<(usize, Pass)>,
}

/// Device addresses of a slot's buffers.
#[derive(Debug, Clone, Copy)]
pub(super) struct SlotAddrs {
    pub block: u64,
    pub mu: u64,
    pub damage: u64,
    pub s0: u64,
    pub s0_next: u64,
    pub u: u64,
    pub f: u64,
    pub theta: u64,
    pub pair: u64,
    pub phi: u64,
    pub energy: u64,
}

pub(super) fn device_addr<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

impl<T: Real> Slot<T> {
    /// Buffers for subdomains up to `z` on `stream` (zeroed); `(lps, history)`: the
    /// state-based laws' dilatations and pairs, breaking with each node's history.
    pub fn new(
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        z: Sizes,
        d: usize,
        (lps, history): (bool, bool),
    ) -> Result<Self> {
        let lps_local = if lps { z.local } else { 0 };
        let (s0_local, s0_owned) = match history {
            true => (z.local, z.owned),
            false => (0, 0),
        };
        let zeros_t = |len: usize| stream.alloc_zeros::<T>(len.max(1)).map_err(driver_error);
        let event = || timing_event(gpu);
        let events = [event()?, event()?, event()?, event()?, event()?, event()?];
        let block = stream
            .alloc_zeros::<u8>(z.block.max(1))
            .map_err(driver_error)?;
        let mu = stream
            .alloc_zeros::<u32>(status_words(z.bonds).max(1))
            .map_err(driver_error)?;
        let damage = stream
            .alloc_zeros::<u8>(z.damage.max(1))
            .map_err(driver_error)?;
        let (s0, s0_next) = (zeros_t(s0_local)?, zeros_t(s0_owned)?);
        let u = zeros_t(d * z.local)?;
        let f = zeros_t(d * z.owned)?;
        let theta = zeros_t(lps_local)?;
        let pair = zeros_t(2 * lps_local)?;
        let phi = zeros_t(z.owned)?;
        let energy = stream
            .alloc_zeros::<f64>(z.owned.max(1))
            .map_err(driver_error)?;
        let at = SlotAddrs {
            block: device_addr(&block, stream),
            mu: device_addr(&mu, stream),
            damage: device_addr(&damage, stream),
            s0: device_addr(&s0, stream),
            s0_next: device_addr(&s0_next, stream),
            u: device_addr(&u, stream),
            f: device_addr(&f, stream),
            theta: device_addr(&theta, stream),
            pair: device_addr(&pair, stream),
            phi: device_addr(&phi, stream),
            energy: device_addr(&energy, stream),
        };
        Ok(Slot {
            block,
            mu,
            damage,
            s0,
            s0_next,
            u,
            f,
            theta,
            pair,
            phi,
            energy,
            held: None,
            u_in: Pinned::zeroed(gpu, d * z.local)?,
            s0_in: Pinned::zeroed(gpu, s0_local)?,
            theta_in: Pinned::zeroed(gpu, lps_local)?,
            pair_in: Pinned::zeroed(gpu, 2 * lps_local)?,
            out: Pinned::zeroed(gpu, d * z.owned)?,
            pair_out: Pinned::zeroed(gpu, if lps { 2 * z.owned } else { 0 })?,
            energy_out: Pinned::zeroed(gpu, z.owned)?,
            events,
            pending: None,
            at,
        })
    }

    /// Device bytes held.
    pub fn bytes(&self) -> usize {
        self.block.num_bytes()
            + self.mu.num_bytes()
            + self.damage.num_bytes()
            + self.s0.num_bytes()
            + self.s0_next.num_bytes()
            + self.u.num_bytes()
            + self.f.num_bytes()
            + self.theta.num_bytes()
            + self.pair.num_bytes()
            + self.phi.num_bytes()
            + self.energy.num_bytes()
    }

    /// Kernel parameters of `part` in this slot: the addresses of its static block's fields
    /// and of the slot's buffers, the broken-bond counter at `broken`, and the law's
    /// parameters (with several materials the pair table's address and size) from `law`.
    pub fn params(&self, part: &Part, broken: u64, law: BondParams) -> BondParams {
        let base = self.at.block;
        let o = part.offsets;
        BondParams {
            slice_start: base + o.slice_start as u64,
            lengths: base + o.lengths as u64,
            neighbors: base + o.neighbors as u64,
            nodes: base + o.records as u64,
            nodes_f32: base + o.records_f32 as u64,
            horizon_volume: base + o.horizon_volume as u64,
            no_fail: base + o.no_fail as u64,
            alpha: base + o.alpha as u64,
            pcoef: base + o.pcoef as u64,
            d_over_m: base + o.d_over_m as u64,
            material: o.material.map_or(0, |at| base + at as u64),
            bond_damage: part.damage.as_ref().map_or(0, |_| self.at.damage),
            node_s0: self.at.s0,
            node_s0_next: self.at.s0_next,
            mu: self.at.mu,
            u: self.at.u,
            force: self.at.f,
            theta: self.at.theta,
            lps_pair: self.at.pair,
            phi: self.at.phi,
            energy: self.at.energy,
            broken,
            ..law
        }
    }

    /// Enqueue on `h2d` the copies in of subdomain `s` (`part`) for `pass`, between events 0
    /// and 1: its static block and bond status unless the slot holds them, then the staged
    /// node state the pass reads (dimension `d`, with `lps` the exchanged dilatations and
    /// pairs). The bytes enqueued.
    ///
    /// # Safety
    /// The staging and `part`'s pinned arrays must stay untouched until the slot's last
    /// event has passed (the engine waits for it before it stages this slot again).
    pub unsafe fn copy_inputs(
        &mut self,
        h2d: &Arc<CudaStream>,
        (s, part): (usize, &Part),
        pass: Pass,
        d: usize,
        lps: bool,
    ) -> Result<usize> {
        let local = part.local();
        let t = std::mem::size_of::<T>();
        let mut bytes = 0usize;
        self.events[0].record(h2d).map_err(driver_error)?;
        if self.held != Some(s) {
            copy_in(h2d, self.at.block, &part.block)?;
            copy_in(h2d, self.at.mu, &part.mu)?;
            bytes += part.block.len() + 4 * part.mu.len();
            if let Some(damage) = &part.damage {
                copy_in(h2d, self.at.damage, damage)?;
                bytes += damage.len();
            }
            self.held = Some(s);
        }
        if pass.reads_u() {
            copy_in(h2d, self.at.u, &self.u_in[..d * local])?;
            bytes += d * local * t;
        }
        if pass.reads_s0() {
            copy_in(h2d, self.at.s0, &self.s0_in[..local])?;
            bytes += local * t;
        }
        if pass.reads_theta(lps) {
            copy_in(h2d, self.at.theta, &self.theta_in[..local])?;
            copy_in(h2d, self.at.pair, &self.pair_in[..2 * local])?;
            bytes += 3 * local * t;
        }
        self.events[1].record(h2d).map_err(driver_error)?;
        Ok(bytes)
    }

    /// Enqueue on `d2h` the copies out of `part`'s results of `pass` into the staging,
    /// between events 4 and 5, and with `evict` its bond status back into `part` (the slot
    /// will hold another subdomain before this one comes back). The bytes enqueued.
    ///
    /// # Safety
    /// As [`Slot::copy_inputs`]: the host reads the staging and `part.mu` only after the
    /// slot's event 5.
    pub unsafe fn copy_results(
        &mut self,
        d2h: &Arc<CudaStream>,
        part: &mut Part,
        pass: Pass,
        d: usize,
        evict: bool,
    ) -> Result<usize> {
        let owned = part.owned();
        let t = std::mem::size_of::<T>();
        let mut bytes = 0usize;
        self.events[4].record(d2h).map_err(driver_error)?;
        match pass {
            Pass::Forces { .. } => {
                copy_out(d2h, &mut self.out[..d * owned], self.at.f)?;
                bytes += d * owned * t;
            }
            Pass::Dilatation { .. } => {
                copy_out(d2h, &mut self.out[..owned], self.at.theta)?;
                copy_out(d2h, &mut self.pair_out[..2 * owned], self.at.pair)?;
                bytes += 3 * owned * t;
            }
            Pass::Damage => {
                copy_out(d2h, &mut self.out[..owned], self.at.phi)?;
                bytes += owned * t;
            }
            Pass::Energy => {
                copy_out(d2h, &mut self.energy_out[..owned], self.at.energy)?;
                bytes += 8 * owned;
            }
            Pass::NodeS0 | Pass::History => {
                copy_out(d2h, &mut self.out[..owned], self.at.s0_next)?;
                bytes += owned * t;
            }
            Pass::Break | Pass::Soften => {}
        }
        if evict && !matches!(pass, Pass::Damage | Pass::Energy) {
            copy_out(d2h, &mut part.mu, self.at.mu)?;
            bytes += 4 * part.mu.len();
            if let Some(damage) = part.damage.as_mut() {
                copy_out(d2h, damage, self.at.damage)?;
                bytes += damage.len();
            }
        }
        self.events[5].record(d2h).map_err(driver_error)?;
        Ok(bytes)
    }
}
