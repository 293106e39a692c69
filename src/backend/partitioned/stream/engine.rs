//! The engine behind a [`super::GpuStreamed`]: its setup (placement of the subdomains,
//! slots, streams, the measurements its report gives) and one pass over the subdomains.
//!
//! A pass takes the subdomains in the placement's order; for each, the host gathers its
//! inputs into the staging of its slot, enqueues the copies in, the kernel over its owned
//! nodes and the copies out (`slot.rs`), and finishes each subdomain (waits for it, adds its
//! timings, scatters its results) once [`IN_FLIGHT`] later ones are enqueued, or earlier when
//! its slot is needed again, always in enqueue order.
//!
//! Units: seconds; bytes; node values in global (the problem's) or local indices.

use super::placement::{Placement, Sizes};
use super::slot::{device_addr, Pass, Slot, Streams};
use crate::backend::gpu::bond_loop::{full_volume, law_params, Kernels};
use crate::backend::partitioned::emulate::history_timing;
use crate::backend::partitioned::exchange::{gather_into, scatter};
use crate::backend::partitioned::fused::{scatter_forces, Carry, Update};
use crate::backend::partitioned::parts::Part;
use crate::backend::partitioned::report::{copy_bandwidth, settled_memory, Placed, SlotMemory};
use crate::backend::GpuLoop;
use crate::gpu::device::driver_error;
use crate::gpu::params::BondParams;
use crate::gpu::pinned::{copy_out, seconds_between};
use crate::gpu::Gpu;
use crate::material::Law;
use crate::partition::{usage, ResidencyRequest, StreamReport, StreamTimes};
use crate::setup::Problem;
use crate::{Real, Result};
use cudarc::driver::CudaSlice;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// Subdomains in flight before the host waits for the oldest: two, so that while the host
/// scatters one subdomain's results the next computes and the one after copies in.
const IN_FLIGHT: usize = 2;

/// The subdomains on their slots, and what the passes exchange and measure.
pub(super) struct Engine<T: Real> {
    gpu: Arc<Gpu>,
    k: Kernels,
    pub problem: Arc<Problem>,
    dim: usize,
    pub lps: bool,
    parts: Vec<Part>,
    slots: Vec<Slot<T>>,
    pub place: Placement,
    /// Slots with work enqueued and not yet finished, in enqueue order.
    in_flight: VecDeque<usize>,
    streams: Streams,
    /// Several materials: the pair table (`MaterialMap::device_table`, f64, one for every
    /// slot), its device address and the materials' count.
    _pair_table: Option<CudaSlice<f64>>,
    materials: (u64, u32),
    /// The broken-bond counter (kept for its allocation) and its device address.
    _broken: CudaSlice<u64>,
    broken_at: u64,
    pub broken_seen: u64,
    pub precracked: usize,
    full_volume: f64,
    /// Breaking with history: each node's critical stretch from the previous breaking
    /// evaluation (global; empty before the first), and the next, which the owned nodes'
    /// results are scattered into (exchanged between the subdomains' passes).
    pub node_s0: Vec<T>,
    s0_next: Vec<T>,
    /// Global dilatation and `(alpha, p theta)` pairs exchanged between LPS passes.
    pub theta: Vec<T>,
    pair: Vec<T>,
    /// Strain energy summed by the last energy pass, J.
    pub energy: f64,
    /// The displacement the fused explicit update drifts into (swapped with the state's).
    pub carry: Carry<T>,
    pub times: StreamTimes,
    budget: Option<u64>,
    /// The slots' device memory and the pinned copy bandwidth (measured after they were
    /// made).
    pub memory: SlotMemory,
    in_core: usize,
}

/// The placement of `parts` within `limit` device bytes (`budget`: the one it comes from,
/// if any), or an error naming the budget when even two slots do not fit.
fn place(
    parts: &[Part],
    bytes_of: &dyn Fn(&Sizes) -> usize,
    limit: usize,
    budget: Option<u64>,
    request: ResidencyRequest,
) -> Result<Placement> {
    Placement::new(parts, bytes_of, limit, request).map_err(|needed| {
        let of = if budget.is_some() {
            "the budget"
        } else {
            "free device memory"
        };
        usage(
            "--gpu-memory-budget",
            format!(
                "two subdomain slots need {needed} bytes but {limit} are available ({of}); \
                 use more subdomains (--subdomains) or a larger budget"
            ),
        )
    })
}

impl<T: Real> Engine<T> {
    /// Place the packed `parts` of `problem` on the GPU within `budget` (bytes; the free
    /// device memory without one) as `request` allows, make their slots and streams, and
    /// measure the device memory they took and the pinned copy bandwidth.
    pub fn new(
        problem: Arc<Problem>,
        parts: Vec<Part>,
        budget: Option<u64>,
        request: ResidencyRequest,
    ) -> Result<Self> {
        let gpu = Gpu::get()?;
        let k = Kernels::load(&gpu, T::PRECISION)?;
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let dim = problem.dim();
        let sizes = Sizes::of(&parts);
        let history = history_timing(&problem).is_some();
        let t = std::mem::size_of::<T>();
        // (breaking with history: each slot's local and owned critical stretches)
        let s0_bytes = |z: &Sizes| if history { (z.local + z.owned) * t } else { 0 };
        let bytes_of = |z: &Sizes| z.slot_bytes(dim, t, lps) + s0_bytes(z);
        let (free, total) = settled_memory(&gpu)?;
        let limit = budget.map_or(free, |b| (b as usize).min(free));
        let place = place(&parts, &bytes_of, limit, budget, request)?;
        let streams = Streams {
            h2d: gpu.new_stream()?,
            comp: gpu.new_stream()?,
            d2h: gpu.new_stream()?,
        };
        let comp = &streams.comp;
        let slots = place
            .slot_sizes
            .iter()
            .map(|&z| Slot::new(&gpu, comp, z, dim, (lps, history)))
            .collect::<Result<Vec<_>>>()?;
        let broken = comp.alloc_zeros::<u64>(1).map_err(driver_error)?;
        let broken_at = device_addr(&broken, comp);
        let pair_table = (problem.materials.as_ref())
            .map(|m| comp.clone_htod(&m.device_table()).map_err(driver_error))
            .transpose()?;
        let materials = match (&pair_table, &problem.materials) {
            (Some(t), Some(m)) => (device_addr(t, comp), m.names.len() as u32),
            _ => (0, 0),
        };
        comp.synchronize().map_err(driver_error)?;
        let table = (problem.materials.as_ref()).map_or(0, |m| 8 * m.device_table().len());
        let allocated = slots.iter().map(Slot::bytes).sum::<usize>() + 8 + table;
        let (free_after, _) = gpu.memory_info()?;
        // the copy bandwidth the overlap is measured against: of a copy as large as the
        // largest subdomain's static block
        let bandwidth = copy_bandwidth(&gpu, sizes.block, limit)?;
        let n = problem.body.len();
        Ok(Engine {
            k,
            dim,
            lps,
            parts,
            slots,
            place,
            in_flight: VecDeque::new(),
            streams,
            broken_at,
            _broken: broken,
            _pair_table: pair_table,
            materials,
            broken_seen: 0,
            precracked: problem.precracked_bonds(),
            full_volume: full_volume(&problem),
            node_s0: problem.restored.convert::<T>().node_s0,
            s0_next: vec![T::zero(); if history { n } else { 0 }],
            theta: vec![T::zero(); if lps { n } else { 0 }],
            pair: vec![T::zero(); if lps { 2 * n } else { 0 }],
            energy: 0.0,
            carry: Carry::default(),
            times: StreamTimes::default(),
            budget,
            memory: SlotMemory {
                allocated,
                used_before: total - free,
                used_after: total - free_after,
                bandwidth,
            },
            in_core: GpuLoop::<T>::device_bytes_with_list(&problem),
            problem,
            gpu,
        })
    }

    /// Whether subdomain `s` leaves its slot to another one within a pass (so its bond
    /// status must go back to the host after each use).
    fn evicting(&self, s: usize) -> bool {
        self.place.evict && self.place.slot_of[s].is_none()
    }

    /// Run `pass` over every subdomain owning nodes: inputs from `u` (and the exchanged
    /// dilatations), results into `out` (forces: `d n`; damage: `n`; otherwise unused).
    pub fn pass(&mut self, pass: Pass, u: &[T], out: &mut [T]) -> Result<()> {
        self.pass_with(pass, u, out, None)
    }

    /// [`Engine::pass`], with the explicit update fused into the scatter of the forces.
    pub fn pass_with(
        &mut self,
        pass: Pass,
        u: &[T],
        out: &mut [T],
        mut update: Option<&mut Update<'_, T>>,
    ) -> Result<()> {
        self.energy = 0.0;
        let mut turn = 0;
        for idx in 0..self.place.order.len() {
            let s = self.place.order[idx];
            let k = match self.place.slot_of[s] {
                Some(k) => k,
                None => {
                    turn += 1;
                    let streaming = &self.place.streaming;
                    streaming[(turn - 1) % streaming.len()]
                }
            };
            self.finish_through(k, out, update.as_deref_mut())?;
            self.stage_inputs(k, s, pass, u);
            self.enqueue(k, s, pass)?;
            self.in_flight.push_back(k);
            while self.in_flight.len() > IN_FLIGHT {
                let first = self.in_flight[0];
                self.finish_through(first, out, update.as_deref_mut())?;
            }
        }
        while let Some(&first) = self.in_flight.front() {
            self.finish_through(first, out, update.as_deref_mut())?;
        }
        Ok(())
    }

    /// Finish the work in flight up to and including slot `k`'s (nothing if `k` has none).
    fn finish_through(
        &mut self,
        k: usize,
        out: &mut [T],
        mut update: Option<&mut Update<'_, T>>,
    ) -> Result<()> {
        if !self.in_flight.contains(&k) {
            return Ok(());
        }
        while let Some(first) = self.in_flight.pop_front() {
            if let Some((s, pass)) = self.slots[first].pending.take() {
                self.finish(first, s, pass, out, update.as_deref_mut())?;
            }
            if first == k {
                break;
            }
        }
        Ok(())
    }

    /// Gather subdomain `s`'s inputs for `pass` into slot `k`'s staging.
    fn stage_inputs(&mut self, k: usize, s: usize, pass: Pass, u: &[T]) {
        let t0 = Instant::now();
        let nodes = &self.parts[s].sub.nodes;
        let slot = &mut self.slots[k];
        if pass.reads_u() {
            gather_into(u, nodes, self.dim, &mut slot.u_in);
        }
        if pass.reads_s0() {
            gather_into(&self.node_s0, nodes, 1, &mut slot.s0_in);
        }
        if pass.reads_theta(self.lps) {
            gather_into(&self.theta, nodes, 1, &mut slot.theta_in);
            gather_into(&self.pair, nodes, 2, &mut slot.pair_in);
        }
        self.times.host += t0.elapsed().as_secs_f64();
    }

    /// Enqueue subdomain `s` on slot `k`: copies in, kernel, copies out.
    fn enqueue(&mut self, k: usize, s: usize, pass: Pass) -> Result<()> {
        let (d, lps, evict) = (self.dim, self.lps, self.evicting(s));
        let part = &mut self.parts[s];
        let owned = part.owned();
        let law = BondParams {
            pair_table: self.materials.0,
            n_materials: self.materials.1,
            ..law_params(&self.problem, owned, pass.checks(), self.full_volume)
        };
        let slot = &mut self.slots[k];
        let params = slot.params(part, self.broken_at, law);
        let (lps_dilatation, lps_force) = self.k.lps(self.problem.material.law);
        let kernel = match pass {
            Pass::Forces { .. } if lps => lps_force,
            // (a softening law: each bond scaled by `1 - d`, breaking nothing, as in core)
            Pass::Forces { .. } if params.bond_damage != 0 => &self.k.pmb_force_softening,
            // (several materials: the general loop reading the pair table, as in core)
            Pass::Forces { .. } if params.material != 0 => &self.k.pmb_force_materials,
            // (the kernel without partial volumes and surface correction, as in core)
            Pass::Forces { .. }
                if params.partial_volume == 0 && params.law.pmb.surface_correction == 0 =>
            {
                &self.k.pmb_force_plain
            }
            Pass::Forces { .. } => &self.k.pmb_force,
            Pass::Dilatation { .. } => lps_dilatation,
            Pass::Break => &self.k.break_bonds,
            Pass::Soften => &self.k.soften_bonds,
            Pass::NodeS0 => &self.k.node_critical_stretch,
            Pass::History => &self.k.history_breaks,
            Pass::Damage => &self.k.damage,
            Pass::Energy => &self.k.strain_energy,
        };
        let Streams { h2d, comp, d2h } = &self.streams;
        // SAFETY: every copy is between a pinned buffer of this engine and a device buffer of
        // slot `k`, both sized for the largest subdomain; the events order the copies, the
        // kernel and the next use of the slot (whose staging the host touches only after
        // waiting for the slot's last event in `finish`).
        let (bytes_in, bytes_out) = unsafe {
            let bytes_in = slot.copy_inputs(h2d, (s, &*part), pass, d, lps)?;
            let ev = &slot.events;
            comp.wait(&ev[1]).map_err(driver_error)?;
            ev[2].record(comp).map_err(driver_error)?;
            self.gpu.launch_on(comp, kernel, owned, &params)?;
            ev[3].record(comp).map_err(driver_error)?;
            d2h.wait(&ev[3]).map_err(driver_error)?;
            (bytes_in, slot.copy_results(d2h, part, pass, d, evict)?)
        };
        slot.pending = Some((s, pass));
        self.times.bytes_in += bytes_in as u64;
        self.times.bytes_out += bytes_out as u64;
        Ok(())
    }

    /// Wait for subdomain `s`'s work on slot `k`, add its timings, and scatter its results.
    fn finish(
        &mut self,
        k: usize,
        s: usize,
        pass: Pass,
        out: &mut [T],
        update: Option<&mut Update<'_, T>>,
    ) -> Result<()> {
        let slot = &self.slots[k];
        let ev = &slot.events;
        ev[5].synchronize().map_err(driver_error)?;
        self.times.copy_in += seconds_between(&ev[0], &ev[1])?;
        self.times.compute += seconds_between(&ev[2], &ev[3])?;
        self.times.copy_out += seconds_between(&ev[4], &ev[5])?;
        let t0 = Instant::now();
        let d = self.dim;
        let owned = self.parts[s].sub.owned_nodes();
        match pass {
            Pass::Forces { .. } => scatter_forces(&slot.out, owned, d, out, update),
            Pass::Dilatation { .. } => {
                scatter(&slot.out, owned, 1, &mut self.theta);
                scatter(&slot.pair_out, owned, 2, &mut self.pair);
            }
            Pass::Damage => scatter(&slot.out, owned, 1, out),
            Pass::Energy => self.energy += slot.energy_out[..owned.len()].iter().sum::<f64>(),
            Pass::NodeS0 | Pass::History => scatter(&slot.out, owned, 1, &mut self.s0_next),
            Pass::Break | Pass::Soften => {}
        }
        self.times.host += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// Breaking with each node's history at `u`, as `gpu-loop` in core: at the first
    /// evaluation the owned nodes' critical stretches from the stretches at `u` (a pass of
    /// its own); then every subdomain breaks its owned bonds past the smaller critical
    /// stretch of their ends (a halo end's from its owner) and writes its owned nodes' next,
    /// which becomes the previous for the next evaluation.
    pub fn history_breaks(&mut self, u: &[T]) -> Result<()> {
        if self.node_s0.is_empty() {
            self.pass(Pass::NodeS0, u, &mut [])?;
            self.node_s0 = self.s0_next.clone();
        }
        self.pass(Pass::History, u, &mut [])?;
        std::mem::swap(&mut self.node_s0, &mut self.s0_next);
        Ok(())
    }

    /// Bonds broken on the device since the last read (all streams are idle after a pass).
    pub fn read_broken(&mut self) -> Result<usize> {
        let mut total = [0u64; 1];
        let d2h = &self.streams.d2h;
        // SAFETY: an 8-byte counter; the copy is waited for right away.
        unsafe { copy_out(d2h, &mut total, self.broken_at)? };
        d2h.synchronize().map_err(driver_error)?;
        let new = total[0] - self.broken_seen;
        self.broken_seen = total[0];
        Ok(new as usize)
    }

    /// Bond status in global CSR order.
    pub fn bond_status(&mut self) -> Result<Vec<u8>> {
        let mut status = vec![0u8; self.problem.families.bonds()];
        for s in 0..self.parts.len() {
            let on_device = match self.evicting(s) {
                true => None,
                false => self.slots.iter().position(|slot| slot.held == Some(s)),
            };
            match on_device {
                Some(k) => {
                    let mut mu = vec![0u32; self.parts[s].mu.len()];
                    let src = self.slots[k].at.mu;
                    let d2h = &self.streams.d2h;
                    // SAFETY: the slot's status buffer holds at least this subdomain's
                    // bonds; waited for right away (pageable destination: synchronous).
                    unsafe { copy_out(d2h, &mut mu, src)? };
                    d2h.synchronize().map_err(driver_error)?;
                    self.parts[s].scatter_status(&mu, &mut status);
                }
                None => {
                    let part = &self.parts[s];
                    part.scatter_status(&part.mu, &mut status);
                }
            }
        }
        Ok(status)
    }

    /// A softening law's damage per bond in global CSR order (`None` for the brittle law):
    /// each subdomain's from the slot holding it, else from its host copy.
    pub fn bond_damage(&mut self) -> Result<Option<Vec<T>>> {
        if self.problem.material.softening.is_none() {
            return Ok(None);
        }
        let mut damage = vec![T::zero(); self.problem.families.bonds()];
        for s in 0..self.parts.len() {
            let on_device = match self.evicting(s) {
                true => None,
                false => self.slots.iter().position(|slot| slot.held == Some(s)),
            };
            let part = &self.parts[s];
            let Some(host) = &part.damage else { continue };
            match on_device {
                Some(k) => {
                    let mut bytes = vec![0u8; host.len()];
                    let d2h = &self.streams.d2h;
                    // SAFETY: the slot's damage buffer holds at least this subdomain's
                    // slots; waited for right away (pageable destination: synchronous).
                    unsafe { copy_out(d2h, &mut bytes, self.slots[k].at.damage)? };
                    d2h.synchronize().map_err(driver_error)?;
                    part.scatter_damage(&bytes, &mut damage);
                }
                None => part.scatter_damage(host, &mut damage),
            }
        }
        Ok(Some(damage))
    }

    /// How the subdomains run, what they allocated, and what moved per force evaluation.
    pub fn report(&self) -> StreamReport {
        let placed = Placed {
            count: self.parts.len(),
            residency: self.place.residency,
            resident: self.place.resident,
            in_core: self.in_core,
            budget: self.budget,
        };
        self.memory.report(placed, &self.times)
    }
}
