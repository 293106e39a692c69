//! Making a [`GpuMatrix`]: in core from one problem (assemble, upload, make the device time
//! loop), or as a slot with room for several images that [`GpuMatrix::load_image`] loads in
//! turn (the streamed matrix scheme): buffers and cuSPARSE operators sized by a [`Room`],
//! then filled by enqueued copies.
//!
//! Units: values, non-zeros and bytes.

use super::host_csr::HostCsr;
use super::image::MatrixImage;
use super::kernels::Kernels;
use super::room::{put, slot_error, DeviceBondVectors, Room};
use super::{law_code, GpuMatrix, BLOCK, NAME};
use crate::backend::gpu::buffers::{addr, upload, BrokenCounter};
use crate::backend::gpu::rename;
use crate::backend::gpu::time_loop::DeviceLoop;
use crate::backend::{check_material, Scheme};
use crate::gpu::cusparse::{CsrMatrix, Handle, Spmv};
use crate::gpu::device::driver_error;
use crate::gpu::params::MatrixParams;
use crate::gpu::pinned::copy_out;
use crate::gpu::Gpu;
use crate::operators::Storage;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;

/// The cuSPARSE operators of a backend, allocated with a room's capacity and described with
/// an image's shapes (nothing copied).
struct DeviceOperators<T: Real> {
    damage: CsrMatrix<T>,
    theta: Option<CsrMatrix<T>>,
}

impl<T: Real> DeviceOperators<T> {
    fn with_room(room: &Room, image: &MatrixImage<T>, handle: &Handle) -> Result<Self> {
        let csr = |m: &HostCsr<T>, (rows, nnz): (usize, usize)| -> Result<CsrMatrix<T>> {
            let mut c = CsrMatrix::<T>::with_capacity(handle, rows, nnz)?;
            m.shape(handle, &mut c)?;
            Ok(c)
        };
        Ok(DeviceOperators {
            damage: csr(&image.damage, room.csr[0])?,
            theta: match &image.theta {
                Some(m) => Some(csr(m, room.csr[1])?),
                None => None,
            },
        })
    }
}

impl<T: Real> GpuMatrix<T> {
    /// Open the GPU and cuSPARSE, compile the kernels (once per process), assemble the
    /// operators of `problem` in `storage` and upload them.
    pub fn new(problem: Arc<Problem>, storage: Storage) -> Result<Self> {
        check_material(&problem, NAME, Scheme::Matrix)?;
        crate::backend::check_contact(&problem, NAME, crate::backend::Placement::InCore)?;
        let gpu = Gpu::get().map_err(|e| rename(e, NAME))?;
        Self::setup(problem, gpu, storage).map_err(|e| rename(e, NAME))
    }

    fn setup(problem: Arc<Problem>, gpu: Arc<Gpu>, storage: Storage) -> Result<Self> {
        // the cheap checks first: cuSPARSE, the kernels, then the assembly
        let handle = Handle::new(&gpu)?;
        Kernels::load(&gpu, T::PRECISION)?;
        gpu.ensure_fits(
            NAME,
            Self::memory_estimate(&problem, storage, std::mem::size_of::<T>()),
        )?;
        let image = MatrixImage::assemble(problem, storage)?;
        let backend = Self::from_image(&image, gpu, handle)?;
        backend.gpu.synchronize()?;
        Ok(backend)
    }

    /// Upload `image` on `gpu`'s stream (cuSPARSE work through `handle`, opened on the same
    /// stream): buffers with room for it, filled from it, and the device time loop. Returns
    /// once the copies have completed.
    pub fn from_image(image: &MatrixImage<T>, gpu: Arc<Gpu>, handle: Handle) -> Result<Self> {
        let mut backend = Self::with_room(&Room::of(image), image, gpu, handle)?;
        // SAFETY: `image` outlives the copies: waited for below.
        unsafe { backend.load_image(image)? };
        backend.precracked_rows = image.mu.iter().filter(|&&m| m == 0).count();
        let nd = backend.problem.body.len() * backend.dim;
        backend.stepper = Some(DeviceLoop::new(&backend.gpu, nd, false)?);
        backend.gpu.synchronize()?;
        Ok(backend)
    }

    /// A backend with room for the largest of `images` (each buffer and operator as long as
    /// the longest of them, the cuSPARSE workspaces as large as the largest asks for), into
    /// which [`GpuMatrix::load_image`] puts one image after another, on `gpu`'s stream with
    /// `handle`. It has no device time loop (`advance_explicit` would make one). Nothing is
    /// loaded yet; every image must be of the same law, dimension and storage.
    pub fn slot(images: &[&MatrixImage<T>], gpu: Arc<Gpu>, handle: Handle) -> Result<Self> {
        let first = images
            .first()
            .ok_or_else(|| slot_error("a slot needs an image"))?;
        let room = images
            .iter()
            .map(|i| Room::of(i))
            .fold(Room::default(), |a, b| a.max(&b));
        let mut slot = Self::with_room(&room, first, gpu, handle)?;
        // (several materials: an index buffer for the largest image's nodes, each image's
        // indices loaded with it; the pair table is every image's)
        if let Some((indices, _)) = slot.materials.as_mut() {
            *indices = (slot.gpu.stream())
                .alloc_zeros::<u8>(room.nodes.max(1))
                .map_err(driver_error)?;
        }
        // size the workspaces once for every image's shapes (descriptors only, no copies)
        let mut need = [0usize; 2];
        for image in images {
            slot.check_kind(image)?;
            let shapes = slot.describe(image)?;
            for (n, s) in need.iter_mut().zip(shapes) {
                *n = (*n).max(s);
            }
        }
        let handle = &slot.handle;
        slot.damage_op.reserve(handle, need[0])?;
        if let Some(op) = slot.theta_op.as_mut() {
            op.reserve(handle, need[1])?;
        }
        Ok(slot)
    }

    /// Buffers and operators with the room given, the operators described with `image`'s
    /// shapes (nothing copied); the kernels' parameters and the local problem are `image`'s.
    fn with_room(
        room: &Room,
        image: &MatrixImage<T>,
        gpu: Arc<Gpu>,
        handle: Handle,
    ) -> Result<Self> {
        let k = Kernels::load(&gpu, T::PRECISION)?;
        let problem = image.problem.clone();
        let p = &*problem;
        let law = law_code(p);
        let zeros = |len: usize| gpu.stream().alloc_zeros::<T>(len.max(1));
        let bytes = |len: usize| gpu.stream().alloc_zeros::<u8>(len.max(1));
        let words = |len: usize| gpu.stream().alloc_zeros::<u32>(len.max(1));
        let ops = DeviceOperators::with_room(room, image, &handle)?;
        let e = driver_error;
        let (u_in, f_out) = (zeros(room.dofs).map_err(e)?, zeros(room.dofs).map_err(e)?);
        let z = zeros(room.z).map_err(e)?;
        let ze = zeros(room.ze).map_err(e)?;
        let theta = zeros(room.theta).map_err(e)?;
        let phi = zeros(room.nodes).map_err(e)?;
        let g = &gpu;
        let theta_op = match ops.theta {
            Some(m) => Some(Spmv::new(&handle, m, addr(g, &ze), addr(g, &theta))?),
            None => None,
        };
        let damage_op = Spmv::new(&handle, ops.damage, addr(g, &z), addr(g, &phi))?;
        let mut backend = GpuMatrix {
            vectors: DeviceBondVectors::new(&gpu, &room.vectors)?,
            first: words(room.rows).map_err(e)?,
            second: words(room.rows).map_err(e)?,
            mu: bytes(room.rows).map_err(e)?,
            no_fail: bytes(room.nodes).map_err(e)?,
            volumes: gpu
                .stream()
                .alloc_zeros::<f64>(room.nodes.max(1))
                .map_err(e)?,
            materials: match &p.materials {
                Some(map) => Some((upload(&gpu, &map.node)?, upload(&gpu, &map.device_table())?)),
                None => None,
            },
            z,
            ze,
            theta,
            phi,
            partial: gpu
                .stream()
                .alloc_zeros::<f64>(room.rows.max(room.nodes).div_ceil(BLOCK).max(1))
                .map_err(e)?,
            u_in,
            f_out,
            broken: BrokenCounter::new(&gpu)?,
            staged_u: None,
            staged_theta: None,
            precracked_rows: 0,
            rows: image.rows.clone(),
            storage: image.storage,
            dim: p.dim(),
            law,
            handle,
            at_ptr: words(room.at.0).map_err(e)?,
            at_col: words(room.at.1).map_err(e)?,
            at_nnz: 0,
            theta_op,
            damage_op,
            stepper: None,
            base: MatrixParams::default(),
            k,
            gpu,
            problem,
        };
        backend.base = backend.addresses();
        Ok(backend)
    }

    /// An error unless `image` is of this backend's law, dimension and storage.
    fn check_kind(&self, image: &MatrixImage<T>) -> Result<()> {
        let p = &*image.problem;
        if law_code(p) != self.law || p.dim() != self.dim || image.storage != self.storage {
            return Err(slot_error(
                "an image of another law, dimension or storage than its slot's",
            ));
        }
        Ok(())
    }

    /// Describe the cuSPARSE operators with `image`'s shapes (no copies) and return the
    /// workspace bytes each product then needs (`Phi`, `Theta`).
    fn describe(&mut self, image: &MatrixImage<T>) -> Result<[usize; 2]> {
        let mut need = [0usize; 2];
        let g = self.gpu.clone();
        let (z, ze) = (addr(&g, &self.z), addr(&g, &self.ze));
        let (theta, phi) = (addr(&g, &self.theta), addr(&g, &self.phi));
        let h = &self.handle;
        image.damage.shape(h, &mut self.damage_op.matrix)?;
        need[0] = self.damage_op.reshape(h, z, phi)?;
        if let (Some(op), Some(m)) = (self.theta_op.as_mut(), image.theta.as_ref()) {
            m.shape(h, &mut op.matrix)?;
            need[1] = op.reshape(h, ze, theta)?;
        }
        Ok(need)
    }

    /// Enqueue on the stream the copies of `image` into this backend's buffers and describe
    /// its operators with the image's shapes: the backend then computes `image`'s problem.
    /// An error where the image does not fit the room the buffers were made with, or is of
    /// another law, dimension or storage. Returns the bytes enqueued. The running count of
    /// broken rows goes on (callers of a slot count broken rows from the row status).
    ///
    /// # Safety
    /// `image` must stay alive and unwritten until the stream has passed the copies (from
    /// page-locked arrays ([`MatrixImage::pin`]) they are asynchronous), and no work on this
    /// backend's buffers may be in flight on another stream.
    pub unsafe fn load_image(&mut self, image: &MatrixImage<T>) -> Result<usize> {
        self.check_kind(image)?;
        let need = self.describe(image)?;
        let h = &self.handle;
        for (op, n) in [&mut self.damage_op]
            .into_iter()
            .chain(self.theta_op.as_mut())
            .zip(need)
        {
            // (sized for every image of a slot at its setup: no allocation here then)
            op.reserve(h, n)?;
        }
        let g = self.gpu.clone();
        let mut bytes = 0;
        // SAFETY (every copy below): the caller keeps `image` alive and unwritten until
        // the stream has passed the copies; `put` checks each buffer's room.
        unsafe {
            bytes += put(&g, &self.at_ptr, &image.at.row_ptr, "A^T row pointers")?;
            bytes += put(&g, &self.at_col, &image.at.col, "A^T rows")?;
            self.at_nnz = image.at.col.len();
            bytes += image.damage.copy_into(h, &mut self.damage_op.matrix)?;
            if let (Some(op), Some(m)) = (self.theta_op.as_mut(), image.theta.as_ref()) {
                bytes += m.copy_into(h, &mut op.matrix)?;
            }
            bytes += self.vectors.put(&g, &image.vectors)?;
            bytes += put(&g, &self.first, &image.rows.first, "first")?;
            bytes += put(&g, &self.second, &image.rows.second, "second")?;
            bytes += put(&g, &self.mu, &image.mu, "row status")?;
            bytes += put(&g, &self.no_fail, &image.no_fail, "no-fail flags")?;
            if let Some((indices, _)) = &self.materials {
                bytes += put(&g, indices, &image.material, "material indices")?;
            }
            let volumes = &image.problem.body.volumes;
            bytes += put(&g, &self.volumes, volumes, "volumes")?;
        }
        self.problem = image.problem.clone();
        self.rows = image.rows.clone();
        self.base = self.addresses();
        Ok(bytes)
    }

    /// Copy the status of the first `out.len()` rows (1 intact) from the device into `out`
    /// (page-locked or not) and wait for it.
    pub fn read_row_status(&self, out: &mut [u8]) -> Result<()> {
        if out.len() > self.nrows() {
            return Err(slot_error("more rows of status asked for than loaded"));
        }
        // SAFETY: the status buffer holds at least `nrows` values; waited for right away.
        unsafe { copy_out(self.gpu.stream(), out, addr(&self.gpu, &self.mu))? };
        self.gpu.synchronize()
    }

    /// The storage of the bond rows.
    pub fn storage(&self) -> Storage {
        self.storage
    }
}

impl<T: Real> GpuMatrix<T> {
    /// Make the device time loop where there is none yet (a slot's).
    pub(super) fn time_loop(&mut self) -> Result<()> {
        if self.stepper.is_none() {
            let nd = self.problem.body.len() * self.dim;
            self.stepper = Some(DeviceLoop::new(&self.gpu, nd, false)?);
        }
        Ok(())
    }
}
