//! The matrix scheme's subdomains streamed through the GPU (`gpu-matrix` under
//! `--gpu-memory-budget`, or `--streamed`): each subdomain's operator blocks, bond vectors and
//! row status stay on the host as a page-locked [`MatrixImage`]; two persistent *slots*, each
//! a [`GpuMatrix`] made once with room for the largest image it takes (device buffers,
//! cuSPARSE handle, descriptors and workspaces, on a stream of its own), take the subdomains
//! in turn (`s` runs in slot `s % 2`). Loading a subdomain enqueues asynchronous copies of
//! its image into its slot and re-describes the slot's operators with the image's shapes;
//! after it runs, its row status is copied back into its image. `PartitionedMatrix` loads
//! subdomain `s + 1` (on the other slot's stream) before running `s`, so the copies of one
//! overlap the products of the other; no device memory is allocated per pass.
//!
//! This module owns the slots ([`StreamedPart`]'s `prepare` makes them, recording what
//! they copied and computed in a `SlotSetup`), and the status bookkeeping between a slot and
//! the images it takes in turn. A slot keeps its subdomain after the pass: with one or two
//! subdomains nothing is copied again.
//!
//! What moves per pass: every subdomain's image in (operators, bond vectors, status) and its
//! row status out, plus the node state the resident scheme moves too.

use super::matrix_part::{Inputs, MatrixPart, SlotSetup, SlotTimes, Slots};
use super::report::{copy_bandwidth, settled_memory, SlotMemory};
use crate::backend::gpu::device_fault;
use crate::backend::gpu::matrix::MatrixImage;
use crate::backend::{Backend, Footprint, GpuMatrix};
use crate::dynamics::Forces;
use crate::gpu::cusparse::Handle;
use crate::gpu::device::driver_error;
use crate::gpu::pinned::{seconds_between, timing_event, Pinned};
use crate::gpu::Gpu;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::{Error, Real, Result};
use cudarc::driver::CudaEvent;
use rayon::prelude::*;
use std::sync::{Arc, Mutex, MutexGuard};

/// One of the two slots: a `GpuMatrix` with room for the largest image it takes, and which
/// subdomain it holds.
struct Slot<T: Real> {
    matrix: GpuMatrix<T>,
    /// The slot's device view (its stream).
    gpu: Arc<Gpu>,
    /// The subdomain whose image is in the slot.
    held: Option<usize>,
    /// Whether the device may have changed the held subdomain's row status since it was last
    /// copied back into its image.
    dirty: bool,
    /// Page-locked staging of the node state a subdomain's call reads (displacement, LPS
    /// dilatation), copied in with its image.
    stage_u: Pinned<T>,
    stage_theta: Pinned<T>,
    /// Timing events: copies in start and end, compute start and end, status out start and
    /// end.
    events: [CudaEvent; 6],
    /// Which of the current round's spans were recorded (copies in, compute).
    copied: bool,
    computing: bool,
    bytes_in: u64,
    times: Arc<Mutex<SlotTimes>>,
}

const IN0: usize = 0;
const IN1: usize = 1;
const C0: usize = 2;
const C1: usize = 3;
const OUT0: usize = 4;
const OUT1: usize = 5;

impl<T: Real> Slot<T> {
    fn record(&self, k: usize) -> Result<()> {
        self.events[k]
            .record(self.gpu.stream())
            .map_err(driver_error)
    }

    /// Take the held subdomain's status back into `image` (waiting for it) and add this
    /// round's times to the totals.
    fn finish(&mut self, image: &mut MatrixImage<T>) -> Result<()> {
        let status = image.row_status_mut();
        self.record(OUT0)?;
        self.matrix.read_row_status(status)?;
        let out = status.len() as u64;
        self.record(OUT1)?;
        self.events[OUT1].synchronize().map_err(driver_error)?;
        self.dirty = false;
        let mut t = lock(&self.times);
        if self.copied {
            t.copy_in += seconds_between(&self.events[IN0], &self.events[IN1])?;
            t.bytes_in += self.bytes_in;
        }
        if self.computing {
            t.compute += seconds_between(&self.events[C0], &self.events[C1])?;
            t.copy_out += seconds_between(&self.events[OUT0], &self.events[OUT1])?;
        }
        t.bytes_out += out;
        (self.copied, self.computing, self.bytes_in) = (false, false, 0);
        Ok(())
    }
}

/// One subdomain of the streamed matrix scheme: its image on the host and the slot it runs
/// in (shared with every other subdomain of the same parity).
pub struct StreamedPart<T: Real> {
    /// Index of the subdomain.
    s: usize,
    image: Mutex<MatrixImage<T>>,
    /// Rows of the owned nodes' bonds (a prefix of the image's rows).
    owned_rows: usize,
    /// Broken rows among the first `owned_rows` of the image's status, counted when the
    /// status came back (`None`: not counted yet).
    broken_owned: Mutex<Option<usize>>,
    /// The slot, once `prepare` has made it.
    slot: Option<Arc<Mutex<Slot<T>>>>,
    /// Device bytes of a slot for this subdomain alone (before `prepare`).
    bytes: usize,
}

fn lock<V>(m: &Mutex<V>) -> MutexGuard<'_, V> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The backend's name in device errors.
const NAME: &str = "gpu-matrix (streamed)";

fn error(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: "gpu-matrix".into(),
        message: message.into(),
    }
}

impl<T: Real> StreamedPart<T> {
    fn slot(&self) -> Result<&Mutex<Slot<T>>> {
        self.slot
            .as_deref()
            .ok_or_else(|| error("a streamed subdomain runs only once its slots are made"))
    }

    /// Run `f` on the slot with this subdomain loaded (loading it first where it is not);
    /// a device fault names `what`.
    fn with<R>(
        &self,
        what: &'static str,
        f: impl FnOnce(&mut GpuMatrix<T>) -> Result<R>,
    ) -> Result<R> {
        let fault = device_fault(NAME, what);
        self.load_part().map_err(&fault)?;
        let mut slot = lock(self.slot()?);
        if !slot.computing {
            slot.record(C0).map_err(&fault)?;
            slot.computing = true;
        }
        slot.dirty = true;
        let r = f(&mut slot.matrix).map_err(&fault);
        slot.matrix.clear_staged();
        slot.record(C1).map_err(&fault)?;
        r
    }

    /// Enqueue the copies of this subdomain's image into its slot, unless the slot holds it.
    fn load_part(&self) -> Result<()> {
        self.load_into(&mut lock(self.slot()?))
    }

    fn load_into(&self, slot: &mut Slot<T>) -> Result<()> {
        if slot.held == Some(self.s) {
            return Ok(());
        }
        if let (Some(other), true) = (slot.held, slot.dirty) {
            return Err(error(format!(
                "subdomain {other}'s row status was not taken back before subdomain {} was \
                 loaded into its slot",
                self.s
            )));
        }
        let image = lock(&self.image);
        slot.held = None;
        slot.record(IN0)?;
        // SAFETY: the image's arrays live as long as this part, which waits for its slot
        // before it is dropped (`Drop`); its status is written only by `Slot::finish`, after
        // the slot's stream has passed these copies (same stream, waited for); the slot's
        // buffers are used on its stream only.
        let bytes = unsafe { slot.matrix.load_image(&image)? };
        slot.record(IN1)?;
        (slot.copied, slot.bytes_in) = (true, bytes as u64);
        slot.held = Some(self.s);
        Ok(())
    }

    /// Broken rows among the owned rows of the image's status (counted once per status).
    fn count_owned(&self, image: &MatrixImage<T>) -> usize {
        let mut counted = lock(&self.broken_owned);
        *counted.get_or_insert_with(|| {
            image.row_status()[..self.owned_rows]
                .par_chunks(1 << 16)
                .map(|c| c.iter().filter(|&&m| m == 0).count())
                .sum()
        })
    }

    /// The slot, if it holds this subdomain with a status newer than the image's.
    fn dirty_slot(&self) -> Option<MutexGuard<'_, Slot<T>>> {
        let slot = lock(self.slot.as_deref()?);
        (slot.held == Some(self.s) && slot.dirty).then_some(slot)
    }
}

impl<T: Real> Drop for StreamedPart<T> {
    fn drop(&mut self) {
        // no copy from this image may be in flight once it is freed
        if let Some(slot) = &self.slot {
            let slot = lock(slot);
            if slot.held == Some(self.s) {
                let _ = slot.gpu.synchronize();
            }
        }
    }
}

impl<T: Real> MatrixPart<T> for StreamedPart<T> {
    /// Full storage only (the slots are sized for it): half storage is an error.
    fn assemble(
        local: Arc<Problem>,
        s: usize,
        owned_rows: usize,
        slots: &Slots,
        storage: Storage,
    ) -> Result<Self> {
        if storage != Storage::Full {
            return Err(error(
                "streamed subdomains hold their rows in full storage only",
            ));
        }
        let t = std::mem::size_of::<T>();
        let rows = GpuMatrix::<T>::bond_rows(&local, Storage::Full);
        let n = local.body.len();
        let bytes = GpuMatrix::<T>::slot_estimate(&local, Storage::Full, t, n, rows);
        let gpu = slots.view(s);
        let mut image = MatrixImage::assemble(local, Storage::Full)?;
        image.pin(gpu);
        Ok(StreamedPart {
            s,
            image: Mutex::new(image),
            owned_rows,
            broken_owned: Mutex::new(None),
            slot: None,
            bytes,
        })
    }

    /// Make the slots: one per view of `slots` used (subdomain `s` in slot `s % 2`), each
    /// with room for the largest image it takes; measure the pinned copy bandwidth first.
    fn prepare(parts: &mut [&mut Self], slots: &Slots) -> Result<Option<SlotSetup>> {
        let Some(first) = parts.first() else {
            return Ok(None);
        };
        let gpu = slots.view(first.s).clone();
        let (free, total) = settled_memory(&gpu)?;
        let largest = parts
            .iter()
            .map(|p| lock(&p.image).bytes())
            .max()
            .unwrap_or(0);
        // the bandwidth the copies are measured against: of a copy as large as the largest
        // image
        let bandwidth = copy_bandwidth(&gpu, largest, free)?;
        let times = Arc::new(Mutex::new(SlotTimes::default()));
        let used = slots.len().min(parts.len());
        let mut allocated = 0;
        for k in 0..used {
            let view = slots.view(k).clone();
            let slot = {
                let mine: Vec<MutexGuard<'_, MatrixImage<T>>> = parts
                    .iter()
                    .filter(|p| p.s % used == k)
                    .map(|p| lock(&p.image))
                    .collect();
                let images: Vec<&MatrixImage<T>> = mine.iter().map(|g| &**g).collect();
                let handle = Handle::new(&view)?;
                let matrix = GpuMatrix::slot(&images, view.clone(), handle)?;
                allocated += matrix.memory_bytes();
                let nodes = images.iter().map(|i| i.nodes()).max().unwrap_or(0);
                let dim = images.first().map_or(1, |i| i.dim());
                let event = || timing_event(&view);
                let events = [event()?, event()?, event()?, event()?, event()?, event()?];
                Slot {
                    matrix,
                    gpu: view.clone(),
                    held: None,
                    dirty: false,
                    stage_u: Pinned::zeroed(&view, dim * nodes)?,
                    stage_theta: Pinned::zeroed(&view, nodes)?,
                    events,
                    copied: false,
                    computing: false,
                    bytes_in: 0,
                    times: times.clone(),
                }
            };
            let slot = Arc::new(Mutex::new(slot));
            for p in parts.iter_mut().filter(|p| p.s % used == k) {
                p.slot = Some(slot.clone());
            }
        }
        for k in 0..used {
            slots.view(k).synchronize()?;
        }
        let (free_after, _) = gpu.memory_info()?;
        Ok(Some(SlotSetup {
            times,
            memory: SlotMemory {
                allocated,
                used_before: total - free,
                used_after: total - free_after,
                bandwidth,
            },
        }))
    }

    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()> {
        self.with("force evaluation", |m| {
            m.internal_force_with_theta(u, theta, force)
        })
    }
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        self.with("strain energy", |m| m.strain_energy_of(u, rows, nodes))
    }
    fn broken_of(&self, rows: usize, nodes: usize) -> Result<usize> {
        if let Some(slot) = self.dirty_slot() {
            return slot
                .matrix
                .broken_bonds_of(rows, nodes)
                .map_err(device_fault(NAME, "bond status download"));
        }
        let image = lock(&self.image);
        // (full storage: the owned rows, what the subdomains ask with their owned nodes, all
        // leave owned nodes, so their count is the one counted when the status came back)
        Ok(match rows == self.owned_rows {
            true => self.count_owned(&image),
            false => image.broken_bonds_of(rows, nodes),
        })
    }
    fn row_count(&self) -> usize {
        lock(&self.image).rows()
    }
    fn streamed(&self) -> bool {
        true
    }
    /// Enqueue this subdomain's image (unless its slot holds it) and `inputs` on its slot's
    /// stream.
    fn load(&self, inputs: &Inputs<T>) -> Result<()> {
        let mut guard = lock(self.slot()?);
        let slot = &mut *guard;
        // the staging buffers are free once the slot's earlier copies have run (at once
        // after `unload`, which waited for them)
        slot.gpu.synchronize()?;
        let (n, m) = (inputs.u.len(), inputs.theta.as_ref().map_or(0, |t| t.len()));
        let fits = n <= slot.stage_u.len() && m <= slot.stage_theta.len();
        if fits {
            slot.stage_u[..n].copy_from_slice(&inputs.u);
            if let Some(theta) = &inputs.theta {
                slot.stage_theta[..m].copy_from_slice(theta);
            }
        }
        self.load_into(slot)?;
        if fits && n > 0 {
            let theta = inputs.theta.as_ref().map(|_| &slot.stage_theta[..m]);
            // SAFETY: the staging buffers are the slot's, written again only by a later
            // `load` after the stream has passed these copies (waited for above).
            unsafe { slot.matrix.stage_inputs(&slot.stage_u[..n], theta)? };
            if slot.copied {
                // the node state goes out with the image: one span of copies
                slot.record(IN1)?;
            }
        }
        Ok(())
    }
    fn unload(&self) -> Result<()> {
        let Some(mut slot) = self.dirty_slot() else {
            return Ok(());
        };
        let mut image = lock(&self.image);
        slot.finish(&mut image)?;
        drop(slot);
        *lock(&self.broken_owned) = None;
        // counted now, while the other slot's copies run
        self.count_owned(&image);
        Ok(())
    }
}

impl<T: Real> Forces<T> for StreamedPart<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.with("force evaluation", |m| m.internal_force(u, force))
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.with("bond breaking", |m| m.break_bonds(u))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.with("force evaluation", |m| m.break_bonds_and_force(u, force))
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        self.with("damage", |m| m.damage(phi))
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        self.with("dilatation", |m| m.dilatation(u, theta))
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.with("strain energy", |m| m.strain_energy(u))
    }

    fn broken_bonds(&self) -> usize {
        // between passes the row status is on the host (`unload` takes it back)
        let image = lock(&self.image);
        image.row_status().iter().filter(|&&m| m == 0).count()
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        match self.dirty_slot() {
            Some(slot) => slot.matrix.bond_status(),
            None => Ok(lock(&self.image).bond_status()),
        }
    }
}

impl<T: Real> StreamedPart<T> {
    /// Bytes of its slot once made (shared with the other subdomains of its parity), else of
    /// a slot for this subdomain alone.
    pub fn memory_bytes(&self) -> usize {
        match &self.slot {
            Some(slot) => lock(slot).matrix.footprint().memory_bytes,
            None => self.bytes,
        }
    }

    pub fn bytes_per_step(&self) -> usize {
        lock(&self.image).bytes()
    }
}

impl<T: Real> Backend<T> for StreamedPart<T> {
    fn name(&self) -> &'static str {
        "gpu-matrix"
    }

    fn footprint(&self) -> Footprint {
        Footprint::new(self.memory_bytes(), self.bytes_per_step())
    }
}
