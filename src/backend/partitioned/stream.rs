//! Subdomain execution on the GPU (`docs/subdomains.md`): the `gpu-loop` kernels run one
//! subdomain at a time on device *slots*, with the copies of one subdomain overlapping the
//! computation of another.
//!
//! - **Slots.** A slot is one set of device buffers sized for the largest subdomain: its
//!   static block, bond status, displacement, and outputs. *Resident*: one slot per
//!   subdomain, so the static data and bond status are uploaded once and only node state
//!   moves. *Streamed* (the model does not fit): two slots, alternating, so everything a
//!   subdomain needs moves each pass (double buffering).
//! - **Streams.** Three streams and events order each subdomain's work: copies in (static
//!   block and status when the slot does not hold the subdomain, then the displacement of the
//!   owned and halo nodes, and for the LPS force pass their dilatations), the kernel of the
//!   pass over the owned nodes, copies out (the owned results, and the bond status when the
//!   slot will be reused). While subdomain `s` computes, `s + 1` copies in and `s - 1` copies
//!   out; the host gathers and scatters from page-locked staging buffers meanwhile.
//! - **Passes.** A force evaluation is one pass (PMB, damage check fused) or two (LPS: the
//!   dilatation of owned nodes, their exchange on the host, then forces), as in the CPU
//!   emulation (`emulate.rs`). Halo values are those the caller passed: the same step's,
//!   read-only; owned results are written back.
//! - **Exactness.** Each owned node runs the in-core kernel's arithmetic over its family in
//!   the global order, so forces, bond status, damage and dilatation equal `gpu-loop`'s
//!   bitwise (tests/gpu/stream.rs); the strain energy is summed per subdomain.
//!
//! The time loop runs on the host (`Explicit::step`, with rayon); the state lives in host
//! memory, which is what lets the model exceed the device.

use super::fused::{self, scatter_update, Carry, FusedForces, Update};
use super::parts::Part;
use crate::backend::coefficients::lps_coefficients;
use crate::backend::gpu::bond_loop::{full_volume, law_params, Kernels};
use crate::backend::gpu::device_fault;
use crate::backend::{Backend, Footprint, GpuLoop};
use crate::dynamics::{ExplicitCall, Forces};
use crate::gpu::device::driver_error;
use crate::gpu::layout::status_words;
use crate::gpu::params::BondParams;
use crate::gpu::pinned::{
    copy_in, copy_out, pinned_bandwidth, seconds_between, timing_event, Pinned,
};
use crate::gpu::Gpu;
use crate::material::Law;
use crate::partition::{usage, Cuts};
use crate::partition::{Residency, ResidencyRequest, StreamReport, StreamTimes};
use crate::setup::Problem;
use crate::{Real, Result};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, DevicePtr};
use rayon::prelude::*;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What one pass over the subdomains computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Force density of the owned nodes (PMB: breaking first with `check`; LPS: from the
    /// exchanged dilatations).
    Forces { check: bool },
    /// LPS dilatation and `(alpha, p theta)` of the owned nodes, breaking first with `check`.
    Dilatation { check: bool },
    /// Bond breaking only.
    Break,
    /// Local damage.
    Damage,
    /// Strain energy per node (LPS from the exchanged dilatations).
    Energy,
}

/// Device buffers of one slot, with their addresses.
struct Slot<T> {
    block: CudaSlice<u8>,
    /// Bond status bits (`layout::pack_status`).
    mu: CudaSlice<u32>,
    u: CudaSlice<T>,
    f: CudaSlice<T>,
    theta: CudaSlice<T>,
    pair: CudaSlice<T>,
    phi: CudaSlice<T>,
    energy: CudaSlice<f64>,
    /// The subdomain whose static block and bond status the slot holds.
    held: Option<usize>,
    /// Pinned staging: inputs (displacement, dilatation, pairs) and outputs.
    u_in: Pinned<T>,
    theta_in: Pinned<T>,
    pair_in: Pinned<T>,
    out: Pinned<T>,
    pair_out: Pinned<T>,
    energy_out: Pinned<f64>,
    /// Copies in, kernel, copies out: start and end of each.
    events: [CudaEvent; 6],
    /// The device addresses of the buffers above (taken once: they never move).
    at: SlotAddrs,
    /// The subdomain and pass whose results are in flight in this slot.
    pending: Option<(usize, Pass)>,
}

/// Device addresses of a slot's buffers.
#[derive(Debug, Clone, Copy)]
struct SlotAddrs {
    block: u64,
    mu: u64,
    u: u64,
    f: u64,
    theta: u64,
    pair: u64,
    phi: u64,
    energy: u64,
}

/// Largest per-subdomain counts the slots are sized for.
#[derive(Debug, Clone, Copy, Default)]
struct Sizes {
    block: usize,
    bonds: usize,
    local: usize,
    owned: usize,
}

impl Sizes {
    fn of(parts: &[Part]) -> Sizes {
        let mut z = Sizes::default();
        for p in parts {
            z.block = z.block.max(p.offsets.total);
            z.bonds = z.bonds.max(p.layout.padded_len());
            z.local = z.local.max(p.local());
            z.owned = z.owned.max(p.owned());
        }
        z
    }

    /// The largest of each count over `sizes`.
    fn of_sizes(sizes: &[Sizes]) -> Sizes {
        sizes.iter().fold(Sizes::default(), |z, s| Sizes {
            block: z.block.max(s.block),
            bonds: z.bonds.max(s.bonds),
            local: z.local.max(s.local),
            owned: z.owned.max(s.owned),
        })
    }

    /// Device bytes of one slot for dimension `d` and precision bytes `t`.
    fn slot_bytes(&self, d: usize, t: usize, lps: bool) -> usize {
        let lps_bytes = if lps { 3 * self.local * t } else { 0 };
        self.block
            + 4 * status_words(self.bonds)
            + d * self.local * t
            + d * self.owned * t
            + self.owned * (t + 8)
            + lps_bytes
    }
}

/// Subdomains in flight before the host waits for the oldest: two, so that while the host
/// scatters one subdomain's results the next computes and the one after copies in.
const IN_FLIGHT: usize = 2;

/// Where the subdomains run on the device: the first `resident` active subdomains keep a
/// slot of their own (static data uploaded once), the others share two streaming slots.
#[derive(Debug, Clone)]
struct Placement {
    residency: Residency,
    resident: usize,
    /// The slot of each subdomain that has its own (`None`: streamed, or owning no node).
    slot_of: Vec<Option<usize>>,
    /// The streaming slots (indices after the resident ones).
    streaming: Vec<usize>,
    /// Sizes of every slot.
    slot_sizes: Vec<Sizes>,
    /// Active subdomains in pass order: streamed and resident ones alternating (a resident
    /// subdomain computes while the next streamed block copies in).
    order: Vec<usize>,
    /// Whether streamed subdomains outnumber the streaming slots (bond status then goes
    /// back to the host after each use).
    evict: bool,
}

impl Placement {
    /// The placement of `parts` within `limit` device bytes (`bytes`: of a slot of given
    /// sizes): every subdomain resident where all fit and `request` allows, else as many
    /// resident as fit beside two streaming slots (none with `ResidencyRequest::Streamed`).
    /// `Err(bytes)`: the two streaming slots alone need more than `limit`.
    fn new(
        parts: &[Part],
        bytes: &dyn Fn(&Sizes) -> usize,
        limit: usize,
        request: ResidencyRequest,
    ) -> std::result::Result<Placement, usize> {
        let sizes: Vec<Option<Sizes>> = parts
            .iter()
            .map(|p| (p.owned() > 0).then(|| Sizes::of(std::slice::from_ref(p))))
            .collect();
        Placement::of_sizes(&sizes, bytes, limit, request)
    }

    /// [`Placement::new`] from the sizes of each subdomain (`None`: owns no node).
    fn of_sizes(
        sizes: &[Option<Sizes>],
        bytes: &dyn Fn(&Sizes) -> usize,
        limit: usize,
        request: ResidencyRequest,
    ) -> std::result::Result<Placement, usize> {
        let active: Vec<usize> = (0..sizes.len()).filter(|&s| sizes[s].is_some()).collect();
        let own: Vec<Sizes> = sizes.iter().flatten().copied().collect();
        let need = |r: usize| -> (usize, Sizes) {
            let rest = Sizes::of_sizes(&own[r..]);
            let streamed = (active.len() - r).min(2) * bytes(&rest);
            (own[..r].iter().map(bytes).sum::<usize>() + streamed, rest)
        };
        let max_resident = match request {
            ResidencyRequest::Auto => active.len(),
            ResidencyRequest::Streamed => 0,
        };
        let resident = (0..=max_resident)
            .rev()
            .find(|&r| need(r).0 <= limit)
            .ok_or(need(0).0)?;
        let (_, rest) = need(resident);
        let streamed = &active[resident..];
        let mut slot_of = vec![None; sizes.len()];
        for (k, &s) in active[..resident].iter().enumerate() {
            slot_of[s] = Some(k);
        }
        let nstream = streamed.len().min(2);
        let mut slot_sizes = own[..resident].to_vec();
        slot_sizes.extend(std::iter::repeat_n(rest, nstream));
        let mut order = Vec::with_capacity(active.len());
        for i in 0..streamed.len().max(resident) {
            order.extend(streamed.get(i));
            order.extend(active[..resident].get(i));
        }
        let residency = match (resident, streamed.len()) {
            (_, 0) => Residency::Resident,
            (0, _) => Residency::Streamed,
            _ => Residency::Mixed,
        };
        Ok(Placement {
            residency,
            resident,
            slot_of,
            streaming: (resident..resident + nstream).collect(),
            slot_sizes,
            order,
            evict: streamed.len() > nstream,
        })
    }
}

fn device_addr<T>(s: &CudaSlice<T>, stream: &Arc<CudaStream>) -> u64 {
    let (p, _sync) = s.device_ptr(stream);
    p
}

/// The engine behind [`GpuStreamed`]'s lock.
struct Engine<T: Real> {
    gpu: Arc<Gpu>,
    k: Kernels,
    problem: Arc<Problem>,
    dim: usize,
    lps: bool,
    parts: Vec<Part>,
    slots: Vec<Slot<T>>,
    place: Placement,
    /// Slots with work enqueued and not yet finished, in enqueue order.
    in_flight: VecDeque<usize>,
    /// Copies in, kernels, copies out.
    h2d: Arc<CudaStream>,
    comp: Arc<CudaStream>,
    d2h: Arc<CudaStream>,
    /// The broken-bond counter (kept for its allocation) and its device address.
    _broken: CudaSlice<u64>,
    broken_at: u64,
    broken_seen: u64,
    precracked: usize,
    full_volume: f64,
    /// Global dilatation and `(alpha, p theta)` pairs exchanged between LPS passes.
    theta: Vec<T>,
    pair: Vec<T>,
    /// Strain energy summed by the last energy pass, J.
    energy: f64,
    /// The displacement the fused explicit update drifts into (swapped with the state's).
    carry: Carry<T>,
    times: StreamTimes,
    budget: Option<u64>,
    allocated: usize,
    used_before: usize,
    used_after: usize,
    in_core: usize,
    /// Pinned copy bandwidth (in, out), B/s.
    bandwidth: (f64, f64),
}

/// `gpu-loop` executed subdomain by subdomain ([`partition`]), overlapping copies with
/// computation; a [`Backend`] whose time loop runs on the host.
pub struct GpuStreamed<T: Real> {
    engine: Mutex<Engine<T>>,
}

impl<T: Real> GpuStreamed<T> {
    /// Partition `problem` into `count` subdomains and set them up on the GPU, resident when
    /// they fit `budget` (bytes; the free device memory without one) and `request` allows,
    /// else streamed through two slots; an error naming the budget when even two slots do
    /// not fit. The subdomains are packed in parallel where the problem stores its families,
    /// and one after the other (each searched, packed, its families dropped) for a lean
    /// problem, whose host memory then holds the pinned blocks and one subdomain's families.
    pub fn new(
        problem: Arc<Problem>,
        count: usize,
        budget: Option<u64>,
        request: ResidencyRequest,
    ) -> Result<Self> {
        let cuts = Cuts::new(&problem, count)?;
        let gpu = Gpu::get()?;
        let lps = matches!(problem.material.law, Law::Lps { .. });
        let coefficients = lps.then(|| lps_coefficients(&problem));
        let pack = |s: usize| {
            let sub = cuts.subdomain(&problem, s);
            Part::new::<T>(&gpu, &problem, sub, coefficients.as_ref())
        };
        let parts = match problem.bonds_stored {
            true => (0..count)
                .into_par_iter()
                .map(pack)
                .collect::<Result<_>>()?,
            false => (0..count).map(pack).collect::<Result<_>>()?,
        };
        Self::with_parts(problem, parts, budget, request)
    }

    fn with_parts(
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
        let bytes_of = |z: &Sizes| z.slot_bytes(dim, std::mem::size_of::<T>(), lps);
        // (finish pending frees, e.g. of the neighbour search, so "before" is what stays)
        gpu.stream().context().synchronize().map_err(driver_error)?;
        let (free, total) = gpu.memory_info()?;
        let limit = budget.map_or(free, |b| (b as usize).min(free));
        let place = Placement::new(&parts, &bytes_of, limit, request).map_err(|needed| {
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
        })?;
        let used_before = total - free;
        let h2d = gpu.new_stream()?;
        let comp = gpu.new_stream()?;
        let d2h = gpu.new_stream()?;
        let slots = place
            .slot_sizes
            .iter()
            .map(|&z| Slot::new(&gpu, &comp, z, dim, lps))
            .collect::<Result<Vec<_>>>()?;
        let broken = comp.alloc_zeros::<u64>(1).map_err(driver_error)?;
        let broken_at = device_addr(&broken, &comp);
        comp.synchronize().map_err(driver_error)?;
        let allocated = slots.iter().map(Slot::bytes).sum::<usize>() + 8;
        let (free_after, _) = gpu.memory_info()?;
        // the copy bandwidth the overlap is measured against: a copy as large as the
        // largest subdomain's static block (at least 64 MiB, at most 256 MiB)
        let probe = sizes
            .block
            .clamp(64 << 20, 256 << 20)
            .min(limit / 4)
            .max(1 << 20);
        let bandwidth = pinned_bandwidth(&gpu, probe)?;
        let n = problem.body.len();
        let engine = Engine {
            k,
            dim,
            lps,
            parts,
            slots,
            place,
            in_flight: VecDeque::new(),
            h2d,
            comp,
            d2h,
            broken_at,
            _broken: broken,
            broken_seen: 0,
            precracked: problem.precracked_bonds(),
            full_volume: full_volume(&problem),
            theta: vec![T::zero(); if lps { n } else { 0 }],
            pair: vec![T::zero(); if lps { 2 * n } else { 0 }],
            energy: 0.0,
            carry: Carry::default(),
            times: StreamTimes::default(),
            budget,
            allocated,
            used_before,
            used_after: total - free_after,
            in_core: GpuLoop::<T>::device_bytes_with_list(&problem),
            bandwidth,
            problem,
            gpu,
        };
        Ok(GpuStreamed {
            engine: Mutex::new(engine),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Engine<T>> {
        self.engine.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How the subdomains run, what they allocated, and what moved per force evaluation.
    pub fn report(&self) -> StreamReport {
        self.lock().report()
    }

    /// Timings and traffic so far.
    pub fn times(&self) -> StreamTimes {
        self.lock().times
    }

    /// Residency chosen.
    pub fn residency(&self) -> Residency {
        self.lock().place.residency
    }
}

impl<T: Real> Slot<T> {
    /// Buffers for subdomains up to `z` on `stream` (zeroed).
    fn new(gpu: &Gpu, stream: &Arc<CudaStream>, z: Sizes, d: usize, lps: bool) -> Result<Self> {
        let lps_local = if lps { z.local } else { 0 };
        let zeros_t = |len: usize| stream.alloc_zeros::<T>(len.max(1)).map_err(driver_error);
        let events = [
            timing_event(gpu)?,
            timing_event(gpu)?,
            timing_event(gpu)?,
            timing_event(gpu)?,
            timing_event(gpu)?,
            timing_event(gpu)?,
        ];
        let block = stream
            .alloc_zeros::<u8>(z.block.max(1))
            .map_err(driver_error)?;
        let mu = stream
            .alloc_zeros::<u32>(status_words(z.bonds).max(1))
            .map_err(driver_error)?;
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
            u,
            f,
            theta,
            pair,
            phi,
            energy,
            held: None,
            u_in: Pinned::zeroed(gpu, d * z.local)?,
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
    fn bytes(&self) -> usize {
        self.block.num_bytes()
            + self.mu.num_bytes()
            + self.u.num_bytes()
            + self.f.num_bytes()
            + self.theta.num_bytes()
            + self.pair.num_bytes()
            + self.phi.num_bytes()
            + self.energy.num_bytes()
    }
}

/// Copy `per` values per node of `nodes` from `global` into `local` (in parallel for large
/// subdomains).
fn gather<T: Copy + Send + Sync>(global: &[T], nodes: &[usize], per: usize, local: &mut [T]) {
    local[..per * nodes.len()]
        .par_chunks_mut(per * 1024)
        .zip(nodes.par_chunks(1024))
        .for_each(|(out, chunk)| {
            let first = chunk[0];
            if chunk.windows(2).all(|w| w[1] == w[0] + 1) {
                // consecutive nodes (the common case: slabs of whole cells), one copy
                out.copy_from_slice(&global[per * first..per * (first + chunk.len())]);
                return;
            }
            for (k, &g) in chunk.iter().enumerate() {
                out[per * k..per * (k + 1)].copy_from_slice(&global[per * g..per * (g + 1)]);
            }
        });
}

/// Copy `per` values per node of the first `owned` nodes back from `local` to `global`.
fn scatter<T: Copy + Send + Sync>(local: &[T], nodes: &[usize], per: usize, global: &mut [T]) {
    // each owned node is written once; split by chunks of local entries
    let global_ptr = SendPtr(global.as_mut_ptr());
    let len = global.len();
    local[..per * nodes.len()]
        .par_chunks(per * 1024)
        .zip(nodes.par_chunks(1024))
        .for_each(|(vals, chunk)| {
            let g_ptr = &global_ptr;
            for (k, &g) in chunk.iter().enumerate() {
                assert!(per * (g + 1) <= len);
                // SAFETY: owned nodes are distinct, so no two writes alias; in bounds above.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        vals[per * k..].as_ptr(),
                        g_ptr.0.add(per * g),
                        per,
                    );
                }
            }
        });
}

use super::fused::SendPtr;

impl<T: Real> Engine<T> {
    /// Kernel parameters of subdomain `s` on slot `k`.
    fn params(&self, k: usize, s: usize, check: bool) -> BondParams {
        let slot = &self.slots[k];
        let part = &self.parts[s];
        let base = slot.at.block;
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
            mu: slot.at.mu,
            u: slot.at.u,
            force: slot.at.f,
            theta: slot.at.theta,
            lps_pair: slot.at.pair,
            phi: slot.at.phi,
            energy: slot.at.energy,
            broken: self.broken_at,
            ..law_params(&self.problem, part.owned(), check, self.full_volume)
        }
    }

    /// Whether subdomain `s` leaves its slot to another one within a pass (so its bond
    /// status must go back to the host after each use).
    fn evicting(&self, s: usize) -> bool {
        self.place.evict && self.place.slot_of[s].is_none()
    }

    /// Run `pass` over every subdomain owning nodes: inputs from `u` (and the exchanged
    /// dilatations), results into `out` (forces: `d n`; damage: `n`; otherwise unused).
    fn pass(&mut self, pass: Pass, u: &[T], out: &mut [T]) -> Result<()> {
        self.pass_with(pass, u, out, None)
    }

    /// [`Engine::pass`], with the explicit update fused into the scatter of the forces.
    /// Subdomains go in the placement's order; the host finishes each (waits for it,
    /// scatters its results) once [`IN_FLIGHT`] later ones are enqueued, or earlier when its
    /// slot is needed again, always in enqueue order.
    fn pass_with(
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
        let (d, lps) = (self.dim, self.lps);
        let nodes = &self.parts[s].sub.nodes;
        let slot = &mut self.slots[k];
        if pass != Pass::Damage {
            gather(u, nodes, d, &mut slot.u_in);
        }
        if lps && matches!(pass, Pass::Forces { .. } | Pass::Energy) {
            gather(&self.theta, nodes, 1, &mut slot.theta_in);
            gather(&self.pair, nodes, 2, &mut slot.pair_in);
        }
        self.times.host += t0.elapsed().as_secs_f64();
    }

    /// Enqueue subdomain `s` on slot `k`: copies in, kernel, copies out.
    fn enqueue(&mut self, k: usize, s: usize, pass: Pass) -> Result<()> {
        let (d, lps, evict) = (self.dim, self.lps, self.evicting(s));
        let check = matches!(
            pass,
            Pass::Forces { check: true } | Pass::Dilatation { check: true } | Pass::Break
        );
        let params = self.params(k, s, check);
        let kernel = match pass {
            Pass::Forces { .. } if lps => &self.k.lps_force,
            // (the kernel without partial volumes and surface correction, as in core)
            Pass::Forces { .. }
                if params.partial_volume == 0 && params.law.pmb.surface_correction == 0 =>
            {
                &self.k.pmb_force_plain
            }
            Pass::Forces { .. } => &self.k.pmb_force,
            Pass::Dilatation { .. } => &self.k.lps_dilatation,
            Pass::Break => &self.k.break_bonds,
            Pass::Damage => &self.k.damage,
            Pass::Energy => &self.k.strain_energy,
        };
        let part = &mut self.parts[s];
        let (local, owned) = (part.local(), part.owned());
        let slot = &mut self.slots[k];
        let (h2d, comp, d2h) = (&self.h2d, &self.comp, &self.d2h);
        let ev = &slot.events;
        let mut bytes_in = 0usize;
        let mut bytes_out = 0usize;
        let t = std::mem::size_of::<T>();
        // SAFETY: every copy is between a pinned buffer of this engine and a device buffer of
        // slot `k`, both sized for the largest subdomain; the events order the copies, the
        // kernel and the next use of the slot (whose staging the host touches only after
        // waiting for the slot's last event in `finish`).
        unsafe {
            ev[0].record(h2d).map_err(driver_error)?;
            if slot.held != Some(s) {
                copy_in(h2d, slot.at.block, &part.block)?;
                copy_in(h2d, slot.at.mu, &part.mu)?;
                bytes_in += part.block.len() + 4 * part.mu.len();
                slot.held = Some(s);
            }
            if pass != Pass::Damage {
                copy_in(h2d, slot.at.u, &slot.u_in[..d * local])?;
                bytes_in += d * local * t;
            }
            if lps && matches!(pass, Pass::Forces { .. } | Pass::Energy) {
                copy_in(h2d, slot.at.theta, &slot.theta_in[..local])?;
                copy_in(h2d, slot.at.pair, &slot.pair_in[..2 * local])?;
                bytes_in += 3 * local * t;
            }
            ev[1].record(h2d).map_err(driver_error)?;
            comp.wait(&ev[1]).map_err(driver_error)?;
            ev[2].record(comp).map_err(driver_error)?;
            self.gpu.launch_on(comp, kernel, owned, &params)?;
            ev[3].record(comp).map_err(driver_error)?;
            d2h.wait(&ev[3]).map_err(driver_error)?;
            ev[4].record(d2h).map_err(driver_error)?;
            match pass {
                Pass::Forces { .. } => {
                    copy_out(d2h, &mut slot.out[..d * owned], slot.at.f)?;
                    bytes_out += d * owned * t;
                }
                Pass::Dilatation { .. } => {
                    copy_out(d2h, &mut slot.out[..owned], slot.at.theta)?;
                    copy_out(d2h, &mut slot.pair_out[..2 * owned], slot.at.pair)?;
                    bytes_out += 3 * owned * t;
                }
                Pass::Damage => {
                    copy_out(d2h, &mut slot.out[..owned], slot.at.phi)?;
                    bytes_out += owned * t;
                }
                Pass::Energy => {
                    copy_out(d2h, &mut slot.energy_out[..owned], slot.at.energy)?;
                    bytes_out += 8 * owned;
                }
                Pass::Break => {}
            }
            if evict && !matches!(pass, Pass::Damage | Pass::Energy) {
                // the slot will hold another subdomain before this one comes back
                copy_out(d2h, &mut part.mu, slot.at.mu)?;
                bytes_out += 4 * part.mu.len();
            }
            ev[5].record(d2h).map_err(driver_error)?;
        }
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
        let sub = &self.parts[s].sub;
        let owned = sub.owned_nodes();
        match pass {
            Pass::Forces { .. } => match update {
                Some(up) => scatter_update(&slot.out, owned, d, out, up),
                None => scatter(&slot.out, owned, d, out),
            },
            Pass::Dilatation { .. } => {
                scatter(&slot.out, owned, 1, &mut self.theta);
                scatter(&slot.pair_out, owned, 2, &mut self.pair);
            }
            Pass::Damage => scatter(&slot.out, owned, 1, out),
            Pass::Energy => self.energy += slot.energy_out[..owned.len()].iter().sum::<f64>(),
            Pass::Break => {}
        }
        self.times.host += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// Bonds broken on the device since the last read (all streams are idle after a pass).
    fn read_broken(&mut self) -> Result<usize> {
        let mut total = [0u64; 1];
        // SAFETY: an 8-byte counter; the copy is waited for right away.
        unsafe { copy_out(&self.d2h, &mut total, self.broken_at)? };
        self.d2h.synchronize().map_err(driver_error)?;
        let new = total[0] - self.broken_seen;
        self.broken_seen = total[0];
        Ok(new as usize)
    }

    /// Forces at `u` into `force`, breaking bonds first with `check`; the bonds broken.
    fn forces(&mut self, u: &[T], force: &mut [T], check: bool) -> Result<usize> {
        self.forces_with(u, force, check, None)
    }

    /// [`Engine::forces`] with the explicit update fused into the scatter.
    fn forces_with(
        &mut self,
        u: &[T],
        force: &mut [T],
        check: bool,
        update: Option<&mut Update<'_, T>>,
    ) -> Result<usize> {
        let t0 = Instant::now();
        if self.lps {
            self.pass(Pass::Dilatation { check }, u, force)?;
        }
        self.pass_with(Pass::Forces { check }, u, force, update)?;
        let broken = self.read_broken()?;
        self.times.force_evaluations += 1;
        self.times.wall += t0.elapsed().as_secs_f64();
        Ok(broken)
    }

    /// Bond status in global CSR order.
    fn bond_status(&mut self) -> Result<Vec<u8>> {
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
                    // SAFETY: the slot's status buffer holds at least this subdomain's
                    // bonds; waited for right away (pageable destination: synchronous).
                    unsafe { copy_out(&self.d2h, &mut mu, src)? };
                    self.d2h.synchronize().map_err(driver_error)?;
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

    fn report(&self) -> StreamReport {
        let (bw_in, bw_out) = self.bandwidth;
        StreamReport {
            count: self.parts.len(),
            residency: self.place.residency,
            resident_subdomains: self.place.resident,
            in_core_bytes: self.in_core as u64,
            pinned_h2d_bytes_per_second: bw_in,
            pinned_d2h_bytes_per_second: bw_out,
            budget_bytes: self.budget,
            allocated_bytes: self.allocated as u64,
            device_used_before: self.used_before as u64,
            device_used_after: self.used_after as u64,
            ..Default::default()
        }
        .with_times(&self.times)
    }
}

impl<T: Real> FusedForces<T> for GpuStreamed<T> {
    fn forces_with(
        &mut self,
        u: &[T],
        force: &mut [T],
        check: bool,
        update: Option<&mut Update<'_, T>>,
    ) -> Result<usize> {
        self.lock().forces_with(u, force, check, update)
    }

    fn take_carry(&mut self) -> Carry<T> {
        std::mem::take(&mut self.lock().carry)
    }

    fn keep_carry(&mut self, carry: Carry<T>) {
        self.lock().carry = carry;
    }
}

/// The backend's name in device errors.
const NAME: &str = "gpu-loop (subdomains)";

impl<T: Real> Forces<T> for GpuStreamed<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.lock()
            .forces(u, force, false)
            .map(|_| ())
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        let mut e = self.lock();
        if e.problem.material.critical_stretch.is_none() {
            return Ok(0);
        }
        e.pass(Pass::Break, u, &mut [])
            .and_then(|_| e.read_broken())
            .map_err(device_fault(NAME, "bond breaking"))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.lock()
            .forces(u, force, true)
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        let mut e = self.lock();
        e.pass(Pass::Damage, &[], phi)
            .map_err(device_fault(NAME, "damage"))
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        let mut e = self.lock();
        if !e.lps {
            return Ok(false);
        }
        e.pass(Pass::Dilatation { check: false }, u, &mut [])
            .map_err(device_fault(NAME, "dilatation"))?;
        theta.copy_from_slice(&e.theta);
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let mut e = self.lock();
        let run = |e: &mut Engine<T>| -> Result<f64> {
            if e.lps {
                e.pass(Pass::Dilatation { check: false }, u, &mut [])?;
            }
            e.pass(Pass::Energy, u, &mut [])?;
            Ok(e.energy)
        };
        run(&mut e).map_err(device_fault(NAME, "strain energy"))
    }

    fn broken_bonds(&self) -> usize {
        let e = self.lock();
        e.precracked + e.broken_seen as usize
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        self.lock()
            .bond_status()
            .map_err(device_fault(NAME, "bond status download"))
    }
}

impl<T: Real> GpuStreamed<T> {
    pub fn memory_bytes(&self) -> usize {
        self.lock().allocated
    }

    pub fn bytes_per_step(&self) -> usize {
        let e = self.lock();
        let t = e.times;
        if t.force_evaluations == 0 {
            return 0;
        }
        ((t.bytes_in + t.bytes_out) / t.force_evaluations as u64) as usize
    }

    pub fn stream_report(&self) -> Option<StreamReport> {
        Some(self.report())
    }
}

impl<T: Real> Backend<T> for GpuStreamed<T> {
    fn name(&self) -> &'static str {
        "gpu-loop"
    }

    fn footprint(&self) -> Footprint {
        Footprint {
            subdomains: self.stream_report(),
            ..Footprint::new(self.memory_bytes(), self.bytes_per_step())
        }
    }

    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        // (the state is always on the host)
        fused::advance_explicit(self, call)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sized(block: usize) -> Option<Sizes> {
        Some(Sizes {
            block,
            ..Sizes::default()
        })
    }

    /// Subdomains are resident where all fit, else as many as fit beside two streaming
    /// slots sized for the largest streamed one; the pass order alternates streamed and
    /// resident subdomains and skips those owning nothing; an error gives the bytes two
    /// streaming slots need.
    #[test]
    fn placement_keeps_what_fits_resident() {
        let bytes = |z: &Sizes| z.block;
        let sizes = [sized(10), sized(10), None, sized(10), sized(12), sized(10)];
        let all = Placement::of_sizes(&sizes, &bytes, 52, ResidencyRequest::Auto).unwrap();
        assert_eq!(
            (all.residency, all.resident, all.streaming.len()),
            (Residency::Resident, 5, 0)
        );
        assert_eq!(all.order, vec![0, 1, 3, 4, 5]);
        // 2 resident (20) + two slots for the largest of the rest (2 x 12) = 44 <= 45
        let mixed = Placement::of_sizes(&sizes, &bytes, 45, ResidencyRequest::Auto).unwrap();
        assert_eq!((mixed.residency, mixed.resident), (Residency::Mixed, 2));
        assert_eq!(
            mixed.slot_of,
            vec![Some(0), Some(1), None, None, None, None]
        );
        assert_eq!(mixed.streaming, vec![2, 3]);
        assert_eq!(
            mixed.slot_sizes.iter().map(bytes).collect::<Vec<_>>(),
            [10, 10, 12, 12]
        );
        assert_eq!(mixed.order, vec![3, 0, 4, 1, 5]);
        assert!(mixed.evict, "three streamed subdomains share two slots");
        let streamed = Placement::of_sizes(&sizes, &bytes, 52, ResidencyRequest::Streamed).unwrap();
        assert_eq!(
            (streamed.residency, streamed.resident),
            (Residency::Streamed, 0)
        );
        assert_eq!(
            Placement::of_sizes(&sizes, &bytes, 23, ResidencyRequest::Auto).unwrap_err(),
            24
        );
    }
}
