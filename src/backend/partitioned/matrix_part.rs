//! What the matrix scheme in subdomains (`matrix.rs`) asks of the backend each subdomain
//! runs on ([`MatrixPart`]: `cpu-matrix`, resident `gpu-matrix`, or the streamed part of
//! `matrix_stream.rs`), and what passes between them: the inputs of one part ([`Inputs`]),
//! the device streams streamed parts alternate on ([`Slots`]), and what the streaming slots
//! hold and did ([`SlotSetup`], [`SlotTimes`]).
//!
//! Units: seconds, bytes; node values in a part's local indices.

use super::report::SlotMemory;
use crate::backend::gpu::device_fault;
use crate::backend::{Backend, CpuMatrix, GpuMatrix};
use crate::gpu::Gpu;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::{Arc, Mutex};

/// The backend's name in device errors.
pub(super) const NAME: &str = "gpu-matrix (subdomains)";

/// A matrix backend one subdomain runs on: `cpu-matrix` (the emulation CI runs),
/// `gpu-matrix` with every subdomain's blocks resident on the device, or
/// the streamed part of `matrix_stream.rs` (its blocks uploaded whenever it runs).
pub trait MatrixPart<T: Real>: Backend<T> + Sized + Send {
    /// Assemble the operators of a local problem in `storage` for subdomain `s`, whose first
    /// `owned_rows` directed bonds (CSR order) are its owned nodes' bonds. The subdomains of
    /// one process take full storage (the owned nodes' rows a prefix, streamed parts only
    /// this); a rank's part takes half storage (`distributed/matrix.rs`).
    fn assemble(
        local: Arc<Problem>,
        s: usize,
        owned_rows: usize,
        slots: &Slots,
        storage: Storage,
    ) -> Result<Self>;
    /// Called once every part is assembled: streamed parts make their slots on `slots` and
    /// say what they hold; others nothing.
    fn prepare(_parts: &mut [&mut Self], _slots: &Slots) -> Result<Option<SlotSetup>> {
        Ok(None)
    }
    /// LPS forces with the dilatation of every local node given.
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()>;
    /// Strain energy of the first `rows` rows that belongs to the first `nodes` nodes (each
    /// direction of a bond to the node it leaves; half storage: a row to a node past them
    /// counts its first node's share), and (LPS) the dilatation term of those nodes, J.
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64>;
    /// Directed bonds broken among the first `rows` rows that leave one of the first `nodes`
    /// nodes (pre-cracks included).
    fn broken_of(&self, rows: usize, nodes: usize) -> Result<usize>;
    /// Number of bond rows the part holds.
    fn row_count(&self) -> usize;
    /// The part as a host backend that runs a force evaluation in row ranges (`cpu-matrix`:
    /// a rank runs the rows that read no ghost while the ghosts travel); `None` where the
    /// part runs whole passes only (a device's rank part overlaps in its own loop).
    fn host_rows(&mut self) -> Option<&mut CpuMatrix<T>> {
        None
    }
    /// Whether the part is on the device only while it runs.
    fn streamed(&self) -> bool {
        false
    }
    /// Make the part ready to run with `inputs` (a streamed part enqueues the copies of its
    /// blocks and of `inputs` on its slot's stream).
    fn load(&self, _inputs: &Inputs<T>) -> Result<()> {
        Ok(())
    }
    /// Done with the part for this pass (a streamed part takes its row status back to the
    /// host; its slot may then take another part).
    fn unload(&self) -> Result<()> {
        Ok(())
    }
}

/// What a pass gives one part: the displacement of its local nodes and, in the LPS force
/// pass, their dilatation (empty where the pass reads neither).
pub struct Inputs<T> {
    pub u: Vec<T>,
    pub theta: Option<Vec<T>>,
}

impl<T> Default for Inputs<T> {
    fn default() -> Self {
        Inputs {
            u: Vec::new(),
            theta: None,
        }
    }
}

/// The two streams (device views) streamed parts alternate on; empty for resident parts.
#[derive(Default)]
pub struct Slots {
    views: Vec<Arc<Gpu>>,
}

impl Slots {
    /// Two new streams on the device, the kernels of precision `T` compiled first (the
    /// views share them).
    pub fn two<T: Real>(gpu: &Gpu) -> Result<Slots> {
        gpu.module(T::PRECISION)?;
        let views = (0..2)
            .map(|_| Ok(gpu.on_stream(gpu.new_stream()?)))
            .collect::<Result<_>>()?;
        Ok(Slots { views })
    }

    /// The view subdomain `s` runs on (alternating).
    pub fn view(&self, s: usize) -> &Arc<Gpu> {
        &self.views[s % self.views.len()]
    }

    /// Number of views (two, or none for resident parts).
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// Whether there are no views (resident parts).
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }
}

impl<T: Real> MatrixPart<T> for CpuMatrix<T> {
    fn assemble(local: Arc<Problem>, _: usize, _: usize, _: &Slots, at: Storage) -> Result<Self> {
        CpuMatrix::new(local, at)
    }
    fn host_rows(&mut self) -> Option<&mut CpuMatrix<T>> {
        Some(self)
    }
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()> {
        self.internal_force_with_theta(u, theta, force);
        Ok(())
    }
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        Ok(self.strain_energy_of(u, rows, nodes))
    }
    fn broken_of(&self, rows: usize, nodes: usize) -> Result<usize> {
        Ok(self.broken_bonds_of(rows, nodes))
    }
    fn row_count(&self) -> usize {
        CpuMatrix::row_count(self)
    }
}

impl<T: Real> MatrixPart<T> for GpuMatrix<T> {
    fn assemble(local: Arc<Problem>, _: usize, _: usize, _: &Slots, at: Storage) -> Result<Self> {
        GpuMatrix::new(local, at)
    }
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()> {
        self.internal_force_with_theta(u, theta, force)
    }
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        self.strain_energy_of(u, rows, nodes)
    }
    fn broken_of(&self, rows: usize, nodes: usize) -> Result<usize> {
        self.broken_bonds_of(rows, nodes)
            .map_err(device_fault(NAME, "bond status download"))
    }
    fn row_count(&self) -> usize {
        GpuMatrix::row_count(self)
    }
}

/// What the slots copied and computed so far, summed over both (seconds from CUDA events on
/// the slots' streams; bytes as enqueued).
#[derive(Debug, Clone, Copy, Default)]
pub struct SlotTimes {
    /// Copies of images into the slots.
    pub copy_in: f64,
    /// From a subdomain's first call to the end of its last (products, kernels, and the
    /// node state it uploads and downloads).
    pub compute: f64,
    /// Copies of row status back into the images.
    pub copy_out: f64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// The slots of a streamed run, once made: what they hold and what they did.
pub struct SlotSetup {
    /// Running totals, updated as each subdomain finishes.
    pub times: Arc<Mutex<SlotTimes>>,
    /// Device bytes of the slots (buffers and cuSPARSE workspaces), the memory in use
    /// before and after they were made, and the pinned copy bandwidth measured before.
    pub memory: SlotMemory,
}
