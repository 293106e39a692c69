//! The matrix scheme's subdomains streamed through the GPU (`gpu-matrix` under
//! `--gpu-memory-budget`): each subdomain's operator blocks, bond vectors and row status stay
//! on the host as a [`MatrixImage`] and are uploaded into a fresh `GpuMatrix` whenever the
//! subdomain runs; afterwards its row status goes back into the image and its device memory is
//! freed. Subdomains alternate between two streams (`Slots`), and `PartitionedMatrix` loads
//! the next subdomain on another host thread while the current one computes, so the upload
//! of one overlaps the products of the other; at most two subdomains are on the device at a
//! time.
//!
//! What moves per pass: every subdomain's whole image in (operators, bond vectors, status)
//! and its row status out, plus the node state the resident scheme moves too.

use super::matrix::{MatrixPart, Slots};
use crate::backend::gpu_matrix::MatrixImage;
use crate::backend::{Backend, GpuMatrix};
use crate::gpu::cusparse::Handle;
use crate::gpu::Gpu;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::{Arc, Mutex, MutexGuard};

/// One subdomain of the streamed matrix scheme: its image on the host and, while it runs, its
/// `GpuMatrix` on its slot's stream.
pub struct StreamedPart<T: Real> {
    image: Mutex<MatrixImage<T>>,
    /// The device view (stream) of this subdomain's slot.
    gpu: Arc<Gpu>,
    live: Mutex<Option<GpuMatrix<T>>>,
    /// Device bytes while loaded (the estimate the plan sizes slots by).
    bytes: usize,
}

fn lock<V>(m: &Mutex<V>) -> MutexGuard<'_, V> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A device fault after setup stops the run (as in the in-core GPU backends).
fn fatal<R>(r: Result<R>, what: &str) -> R {
    r.unwrap_or_else(|e| panic!("gpu-matrix (streamed): {what} failed on the device: {e}"))
}

impl<T: Real> StreamedPart<T> {
    /// Run `f` on the loaded backend (loading it first if it is not).
    fn with<R>(&self, what: &str, f: impl FnOnce(&mut GpuMatrix<T>) -> R) -> R {
        fatal(self.load_part(), what);
        let mut live = lock(&self.live);
        f(live.as_mut().expect("loaded above"))
    }

    fn load_part(&self) -> Result<()> {
        let mut live = lock(&self.live);
        if live.is_none() {
            let image = lock(&self.image);
            let handle = Handle::new(&self.gpu)?;
            *live = Some(GpuMatrix::from_image(&image, self.gpu.clone(), handle)?);
        }
        Ok(())
    }
}

impl<T: Real> MatrixPart<T> for StreamedPart<T> {
    fn assemble(local: Arc<Problem>, s: usize, slots: &Slots) -> Result<Self> {
        let t = std::mem::size_of::<T>();
        let bytes = GpuMatrix::<T>::memory_estimate(&local, Storage::Full, t);
        let gpu = slots.view(s).clone();
        let mut image = MatrixImage::assemble(local, Storage::Full)?;
        image.pin(&gpu);
        Ok(StreamedPart {
            image: Mutex::new(image),
            gpu,
            live: Mutex::new(None),
            bytes,
        })
    }
    fn force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) -> Result<()> {
        self.with("force", |m| m.internal_force_with_theta(u, theta, force))
    }
    fn energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        self.with("energy", |m| m.strain_energy_of(u, rows, nodes))
    }
    fn broken_before(&self, rows: usize) -> usize {
        match &*lock(&self.live) {
            Some(m) => fatal(m.broken_rows_before(rows), "bond status download"),
            None => lock(&self.image).mu[..rows]
                .iter()
                .filter(|&&m| m == 0)
                .count(),
        }
    }
    fn streamed(&self) -> bool {
        true
    }
    fn load(&self) -> Result<()> {
        self.load_part()
    }
    fn unload(&self) -> Result<()> {
        if let Some(m) = lock(&self.live).take() {
            lock(&self.image).mu = m.row_status()?;
        }
        Ok(())
    }
}

impl<T: Real> Backend<T> for StreamedPart<T> {
    fn name(&self) -> &'static str {
        "gpu-matrix"
    }
    fn internal_force(&mut self, u: &[T], force: &mut [T]) {
        self.with("force", |m| m.internal_force(u, force))
    }
    fn break_bonds(&mut self, u: &[T]) -> usize {
        self.with("bond breaking", |m| m.break_bonds(u))
    }
    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> usize {
        self.with("force", |m| m.break_bonds_and_force(u, force))
    }
    fn damage(&self, phi: &mut [T]) {
        self.with("damage", |m| m.damage(phi))
    }
    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> bool {
        self.with("dilatation", |m| m.dilatation(u, theta))
    }
    fn strain_energy(&mut self, u: &[T]) -> f64 {
        self.with("energy", |m| m.strain_energy(u))
    }
    fn broken_bonds(&self) -> usize {
        let rows = lock(&self.image).rows();
        self.broken_before(rows)
    }
    fn bond_status(&self) -> Vec<u8> {
        match &*lock(&self.live) {
            Some(m) => m.bond_status(),
            None => lock(&self.image).bond_status(),
        }
    }
    fn memory_bytes(&self) -> usize {
        self.bytes
    }
    fn bytes_per_step(&self) -> usize {
        lock(&self.image).bytes()
    }
}
