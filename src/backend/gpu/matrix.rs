//! The GPU matrix backend: the matrix formulation of `cpu_matrix.rs` (`theory.md` section 4,
//! `docs/matrix-formulation.md`) on the device, its sparse products by cuSPARSE
//! (`crate::gpu::cusparse`) and its elementwise bond kernels by NVRTC
//! (`kernels/matrix_bond.cu`). The operators are assembled once on the host
//! (`Operators::assemble`, half storage by default) and uploaded once; cuSPARSE descriptors and
//! workspaces are made once. One force evaluation is
//!
//! 1. `eta = (A x I_d) u`: the incidence with each row repeated per component, so one SpMV
//!    gives the `d` interleaved components of every bond difference (a two-term row sums to
//!    `u_j - u_i` exactly, as on the CPU);
//! 2. the bond kernel: (bond breaking,) the extension or stretch, the force scalar `z = w t`
//!    (LPS: `z = mu e`, `theta = Theta z`, then `z = w t` in place), rounded as the CPU
//!    rounds it;
//! 3. `f = F z` with `F = -diag(1/V) B^T` (linear laws) or `-diag(1/V) (A^T x I_d)`
//!    (nonlinear PMB, `d` values per row): the epilogue `-1/V_i` of `cpu-matrix` is folded
//!    into the operator's values at upload, so the product gives the force density, N/m^3.
//!
//! Damage is `phi = Phi (1 - mu)` (a kernel writes `1 - mu`, one SpMV), as on the CPU. The
//! explicit time loop runs on the device (`gpu_step.rs`, shared with `gpu-loop`).
//!
//! Everything uploaded is first assembled on the host as a [`MatrixImage`]; a backend's
//! buffers are allocated with room for its image and filled from it by copies on its stream
//! ([`GpuMatrix::load_image`]). The streamed matrix scheme (`partition/matrix_stream.rs`) makes a
//! backend once with room for the largest of several images ([`GpuMatrix::slot`]) and loads
//! them into it in turn: no allocation, handle or workspace per load.
//!
//! Units as in [`super`]: m, N/m^3, J.

use super::adr::{adr_iteration, sync_adr_state};
use super::time_loop::{advance, download, DeviceForces, DeviceLoop};
use super::{device_fault, rename};
use crate::backend::gpu::conditions::addr;
use crate::backend::{Backend, Footprint};
use crate::dynamics::{Adr, ExplicitCall, Forces, Loads, State};
use crate::gpu::cusparse::{CsrMatrix, Handle, Spmv};
use crate::gpu::device::driver_error;
use crate::gpu::params::MatrixParams;
use crate::gpu::pinned::{copy_in, copy_out, Registered};
use crate::gpu::Gpu;
use crate::material::Law;
use crate::operators::{footprint, BondRows, BondVectors, Mat, Operators, Storage};
use crate::setup::Problem;
use crate::{Error, Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, ValidAsZeroBits};
use rayon::prelude::*;
use std::sync::Arc;

const NAME: &str = "gpu-matrix";

/// Threads per block of every launch (`Gpu::launch`); `matrix_energy` sums per block.
const BLOCK: usize = 256;

/// `law` codes of `MatrixParams`.
const PMB_LINEAR: i32 = 0;
const PMB_NONLINEAR: i32 = 1;
const LPS: i32 = 2;

/// The bond kernels of `kernels/matrix_bond.cu`.
struct Kernels {
    pmb: CudaFunction,
    lps_extension: CudaFunction,
    lps_force: CudaFunction,
    break_rows: CudaFunction,
    broken_rows: CudaFunction,
    energy: CudaFunction,
}

impl Kernels {
    fn load(gpu: &Gpu, precision: crate::Precision) -> Result<Self> {
        let f = |name: &str| gpu.function(precision, name);
        Ok(Kernels {
            pmb: f("matrix_pmb")?,
            lps_extension: f("matrix_lps_extension")?,
            lps_force: f("matrix_lps_force")?,
            break_rows: f("matrix_break")?,
            broken_rows: f("matrix_broken")?,
            energy: f("matrix_energy")?,
        })
    }
}

/// Matrix-formulation backend on the GPU, in precision `T`.
pub struct GpuMatrix<T: Real> {
    problem: Arc<Problem>,
    gpu: Arc<Gpu>,
    k: Kernels,
    storage: Storage,
    dim: usize,
    law: i32,
    /// Bond rows on the host (the map back to directed bonds for `bond_status`).
    rows: Arc<BondRows>,
    handle: Handle,
    /// `eta = (A x I_d) u`.
    diff: Spmv<T>,
    /// `f = -diag(1/V) B^T z`, or `-diag(1/V) (A^T x I_d) z` for nonlinear PMB.
    force: Spmv<T>,
    /// `theta = Theta z` (LPS).
    theta_op: Option<Spmv<T>>,
    /// `phi = Phi (1 - mu)`.
    damage_op: Spmv<T>,
    // Bond vectors (per row).
    xi: CudaSlice<T>,
    length: CudaSlice<T>,
    a: CudaSlice<T>,
    g: CudaSlice<T>,
    g_second: CudaSlice<T>,
    a_first: CudaSlice<T>,
    w: CudaSlice<T>,
    first: CudaSlice<u32>,
    second: CudaSlice<u32>,
    mu: CudaSlice<u8>,
    // Per node.
    no_fail: CudaSlice<u8>,
    volumes: CudaSlice<f64>,
    // Scratch: eta (d per row), z (per row; d per row for nonlinear PMB), theta, phi,
    // energy per block, and the displacement and force of the trait calls.
    eta: CudaSlice<T>,
    z: CudaSlice<T>,
    theta: CudaSlice<T>,
    phi: CudaSlice<T>,
    partial: CudaSlice<f64>,
    u_in: CudaSlice<T>,
    f_out: CudaSlice<T>,
    /// Rows broken on the device since setup (a running counter).
    broken: CudaSlice<u64>,
    /// Last value read from `broken`.
    broken_seen: u64,
    /// Lengths of the displacement and (LPS) dilatation [`GpuMatrix::stage_inputs`] put on
    /// the device for the next call, which then uploads none of its own.
    staged_u: Option<usize>,
    staged_theta: Option<usize>,
    /// Rows broken by pre-cracks (of the image loaded by `from_image`; a slot's loads leave
    /// it, their callers count broken rows from the row status).
    precracked_rows: usize,
    /// The device time loop: resident state, condition lists, leapfrog kernels (made by
    /// `from_image`, or on first use; a slot, which never runs it, has none).
    stepper: Option<DeviceLoop<T>>,
    /// The bond kernels' parameters (the buffers never move), bond check off.
    base: MatrixParams,
}

/// The law code of `problem`.
fn law_code(problem: &Problem) -> i32 {
    match problem.material.law {
        Law::Pmb {
            linearized: true, ..
        } => PMB_LINEAR,
        Law::Pmb { .. } => PMB_NONLINEAR,
        Law::Lps { .. } => LPS,
    }
}

/// Everything a [`GpuMatrix`] uploads, assembled on the host once: the device operators,
/// the bond vectors, the row status and the no-fail flags. The streamed matrix scheme keeps
/// one image per subdomain and uploads it whenever the subdomain runs
/// (`partition/matrix.rs`); `mu` is where a subdomain's row status waits between uploads.
pub struct MatrixImage<T: Real> {
    /// Page-locks of the large arrays below ([`MatrixImage::pin`]); first, so they are
    /// released before the arrays are freed.
    pins: Vec<Registered>,
    problem: Arc<Problem>,
    storage: Storage,
    rows: Arc<BondRows>,
    diff: HostCsr<T>,
    force: HostCsr<T>,
    theta: Option<HostCsr<T>>,
    damage: HostCsr<T>,
    xi: Vec<T>,
    length: Vec<T>,
    a: Vec<T>,
    g: Vec<T>,
    g_second: Vec<T>,
    a_first: Vec<T>,
    w: Vec<T>,
    /// Status of each bond row (1 intact), as the device last left it (never reallocated:
    /// it may be page-locked).
    mu: Vec<u8>,
    no_fail: Vec<u8>,
}

impl<T: Real> MatrixImage<T> {
    /// Assemble the operators of `problem` in `storage` and build what the device gets.
    pub fn assemble(problem: Arc<Problem>, storage: Storage) -> Result<Self> {
        let p = &*problem;
        let ops = Operators::<T>::assemble(p, storage)?;
        let nr = ops.rows();
        let [diff, force] = device_operators(p, &ops);
        let node_op = |name: &'static str, m: &Mat<T>| -> HostCsr<T> {
            let sym = m.symbolic();
            HostCsr {
                name,
                ncols: nr,
                row_ptr: sym.row_ptr().to_vec(),
                col_idx: sym.col_idx().to_vec(),
                values: m.val().to_vec(),
            }
        };
        let theta = ops.theta.as_ref().map(|m| node_op("Theta", m));
        let damage = node_op("Phi", &ops.damage);
        let mu = ops.row_status(&p.initial_mu);
        let Operators { rows, vectors, .. } = ops;
        let BondVectors {
            xi,
            length,
            a,
            g,
            g_second,
            a_first,
            w,
        } = vectors;
        Ok(MatrixImage {
            pins: Vec::new(),
            no_fail: p.no_fail.iter().map(|&b| u8::from(b)).collect(),
            problem,
            storage,
            rows: Arc::new(rows),
            diff,
            force,
            theta,
            damage,
            xi,
            length,
            a,
            g,
            g_second,
            a_first,
            w,
            mu,
        })
    }

    /// Number of bond rows.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Status of each bond row (1 intact).
    pub fn row_status(&self) -> &[u8] {
        &self.mu
    }

    /// Status of each bond row, to write into (a download after a pass).
    pub fn row_status_mut(&mut self) -> &mut [u8] {
        &mut self.mu
    }

    /// Nodes of the local problem.
    pub fn nodes(&self) -> usize {
        self.problem.body.len()
    }

    /// Dimension of the local problem.
    pub fn dim(&self) -> usize {
        self.problem.dim()
    }

    /// Page-lock every array in place, so each upload is a copy-engine transfer that does
    /// not occupy the host (for images uploaded again and again: the streamed matrix
    /// scheme). Small arrays too: an asynchronous copy from pageable memory waits for the
    /// stream's earlier work, which would stall the host behind the copies it enqueued. An
    /// array the driver declines (a page shared with another registration) stays pageable:
    /// slower, not wrong.
    pub fn pin(&mut self, gpu: &Gpu) {
        fn bytes<V>(v: &[V]) -> (*const u8, usize) {
            (v.as_ptr() as *const u8, std::mem::size_of_val(v))
        }
        let mut arrays = vec![
            bytes(&self.xi),
            bytes(&self.length),
            bytes(&self.a),
            bytes(&self.g),
            bytes(&self.g_second),
            bytes(&self.a_first),
            bytes(&self.w),
            bytes(&self.rows.first),
            bytes(&self.rows.second),
            bytes(&self.problem.body.volumes),
            bytes(&self.mu),
            bytes(&self.no_fail),
        ];
        for m in [
            Some(&self.diff),
            Some(&self.force),
            self.theta.as_ref(),
            Some(&self.damage),
        ]
        .into_iter()
        .flatten()
        {
            arrays.extend([bytes(&m.row_ptr), bytes(&m.col_idx), bytes(&m.values)]);
        }
        for (ptr, len) in arrays.into_iter().filter(|&(_, len)| len > 0) {
            // SAFETY: every array is owned by this image (or its `Arc`s) and never resized
            // or replaced (`mu` is written in place only); the guards are dropped before the
            // arrays (field order).
            let slice = unsafe { std::slice::from_raw_parts(ptr, len) };
            if let Ok(Some(pin)) = unsafe { Registered::new(gpu, slice) } {
                self.pins.push(pin);
            }
        }
    }

    /// Status per directed bond of the local problem (CSR order), from the rows' status.
    pub fn bond_status(&self) -> Vec<u8> {
        self.rows.bond_status(&self.mu)
    }

    /// Bytes an upload moves: operators, bond vectors, status, no-fail flags, volumes.
    pub fn bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let csr = |m: &HostCsr<T>| 4 * (m.row_ptr.len() + m.col_idx.len()) + t * m.values.len();
        let vectors = [
            &self.xi,
            &self.length,
            &self.a,
            &self.g,
            &self.g_second,
            &self.a_first,
            &self.w,
        ];
        csr(&self.diff)
            + csr(&self.force)
            + self.theta.as_ref().map_or(0, csr)
            + csr(&self.damage)
            + t * vectors.iter().map(|v| v.len()).sum::<usize>()
            + 8 * self.rows.len()
            + self.mu.len()
            + self.no_fail.len()
            + 8 * self.problem.body.len()
    }
}

/// A CSR operator as the device gets it, built on the host.
pub struct HostCsr<T> {
    pub name: &'static str,
    pub ncols: usize,
    pub row_ptr: Vec<u32>,
    pub col_idx: Vec<u32>,
    pub values: Vec<T>,
}

impl<T: Real> HostCsr<T> {
    /// Describe `m` with this matrix's shape (no copies).
    fn shape(&self, handle: &Handle, m: &mut CsrMatrix<T>) -> Result<()> {
        let rows = self.row_ptr.len().saturating_sub(1);
        m.set_shape(handle, self.name, rows, self.ncols, self.col_idx.len())
    }

    /// Enqueue the copies of this matrix into `m` (see [`CsrMatrix::copy_in`]); bytes.
    ///
    /// # Safety
    /// As [`CsrMatrix::copy_in`]: `self` stays alive and unwritten until the copies end.
    unsafe fn copy_into(&self, handle: &Handle, m: &mut CsrMatrix<T>) -> Result<usize> {
        // SAFETY: as this function's.
        unsafe {
            m.copy_in(
                handle,
                self.name,
                self.ncols,
                &self.row_ptr,
                &self.col_idx,
                &self.values,
            )?
        };
        Ok(self.bytes())
    }

    /// Bytes of the three arrays.
    fn bytes(&self) -> usize {
        4 * (self.row_ptr.len() + self.col_idx.len()) + std::mem::size_of::<T>() * self.values.len()
    }

    /// As a faer matrix (for host-side checks).
    pub fn to_mat(&self) -> Mat<T> {
        Mat::new(
            faer::sparse::SymbolicSparseRowMat::new_checked(
                self.row_ptr.len() - 1,
                self.ncols,
                self.row_ptr.clone(),
                None,
                self.col_idx.clone(),
            ),
            self.values.clone(),
        )
    }
}

/// The two operators built for the device from the assembled ones: `A x I_d` (bond
/// differences, `d` interleaved components per row) and the force operator
/// `-diag(1/V) B^T` (linear laws) or `-diag(1/V) (A^T x I_d)` (nonlinear PMB), whose rows
/// are the dofs `d i + k`. `Theta` and `Phi` are uploaded as assembled.
pub fn device_operators<T: Real>(problem: &Problem, ops: &Operators<T>) -> [HostCsr<T>; 2] {
    let (n, d, nr) = (problem.body.len(), problem.dim(), ops.rows());
    let (rp, ci, va) = kron_identity(&ops.incidence, d, |_| T::one());
    let diff = HostCsr {
        name: "A x I_d",
        ncols: d * n,
        row_ptr: rp,
        col_idx: ci,
        values: va,
    };
    let neg_inv: Vec<T> = problem
        .body
        .volumes
        .iter()
        .map(|&v| T::of(-1.0 / v))
        .collect();
    let force = match &ops.incidence_t {
        Some(at) => {
            let (rp, ci, va) = kron_identity(at, d, |q| neg_inv[q / d]);
            HostCsr {
                name: "A^T x I_d",
                ncols: d * nr,
                row_ptr: rp,
                col_idx: ci,
                values: va,
            }
        }
        None => {
            let (rp, ci, va) = kron_identity(&ops.bt, 1, |q| neg_inv[q / d]);
            HostCsr {
                name: "B^T",
                ncols: nr,
                row_ptr: rp,
                col_idx: ci,
                values: va,
            }
        }
    };
    [diff, force]
}

/// The CSR arrays of `m` with every row repeated for `d` components (`m x I_d`, `d = 1`:
/// `m` itself): row `(r, k)` is row `d r + k`, its entries those of row `r` at columns
/// `d c + k`, values times `scale(d r + k)`.
fn kron_identity<T: Real>(
    m: &Mat<T>,
    d: usize,
    scale: impl Fn(usize) -> T + Sync,
) -> (Vec<u32>, Vec<u32>, Vec<T>) {
    let sym = m.symbolic();
    let (ptr, cols, val) = (sym.row_ptr(), sym.col_idx(), m.val());
    let nr = sym.nrows();
    let du = d as u32;
    let out_ptr = (0..=nr * d)
        .into_par_iter()
        .map(|q| {
            if q == nr * d {
                return du * ptr[nr];
            }
            let (r, k) = (q / d, (q % d) as u32);
            du * ptr[r] + k * (ptr[r + 1] - ptr[r])
        })
        .collect();
    let row = |r: usize| ptr[r] as usize..ptr[r + 1] as usize;
    let out_cols = (0..nr)
        .into_par_iter()
        .flat_map_iter(|r| (0..du).flat_map(move |k| cols[row(r)].iter().map(move |&c| du * c + k)))
        .collect();
    let scale = &scale;
    let out_val = (0..nr)
        .into_par_iter()
        .flat_map_iter(|r| {
            (0..d).flat_map(move |k| {
                let s = scale(d * r + k);
                val[row(r)].iter().map(move |&v| v * s)
            })
        })
        .collect();
    (out_ptr, out_cols, out_val)
}

/// What the buffers of a [`GpuMatrix`] must hold for an image (or the largest of several):
/// values per buffer, `(rows, non-zeros)` per operator.
#[derive(Debug, Clone, Default)]
struct Room {
    nodes: usize,
    rows: usize,
    /// `d n`: the displacement and force of the trait calls.
    dofs: usize,
    eta: usize,
    z: usize,
    theta: usize,
    /// `xi`, length, `a`, `g`, `g_second`, `a_first`, `w`.
    vectors: [usize; 7],
    /// `A x I_d`, the force operator, `Phi`, `Theta`.
    csr: [(usize, usize); 4],
}

impl Room {
    fn of<T: Real>(image: &MatrixImage<T>) -> Room {
        let p = &*image.problem;
        let (n, d, nr) = (p.body.len(), p.dim(), image.rows.len());
        let law = law_code(p);
        let per = if law == PMB_NONLINEAR { d } else { 1 };
        let shape = |m: &HostCsr<T>| (m.row_ptr.len().saturating_sub(1), m.col_idx.len());
        Room {
            nodes: n,
            rows: nr,
            dofs: d * n,
            eta: d * nr,
            z: per * nr,
            theta: if law == LPS { n } else { 0 },
            vectors: [
                image.xi.len(),
                image.length.len(),
                image.a.len(),
                image.g.len(),
                image.g_second.len(),
                image.a_first.len(),
                image.w.len(),
            ],
            csr: [
                shape(&image.diff),
                shape(&image.force),
                shape(&image.damage),
                image.theta.as_ref().map_or((0, 0), shape),
            ],
        }
    }

    /// Room for both.
    fn max(&self, other: &Room) -> Room {
        let m = |a: usize, b: usize| a.max(b);
        Room {
            nodes: m(self.nodes, other.nodes),
            rows: m(self.rows, other.rows),
            dofs: m(self.dofs, other.dofs),
            eta: m(self.eta, other.eta),
            z: m(self.z, other.z),
            theta: m(self.theta, other.theta),
            vectors: std::array::from_fn(|k| m(self.vectors[k], other.vectors[k])),
            csr: std::array::from_fn(|k| {
                let ((r1, n1), (r2, n2)) = (self.csr[k], other.csr[k]);
                (m(r1, r2), m(n1, n2))
            }),
        }
    }
}

/// Enqueue on `gpu`'s stream the copy of `src` into the start of `dst`; bytes. An error where
/// `dst` is shorter.
///
/// # Safety
/// `src` must stay alive and unwritten until the stream has passed the copy.
unsafe fn put<U: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    dst: &CudaSlice<U>,
    src: &[U],
    what: &str,
) -> Result<usize> {
    if src.len() > dst.len() {
        return Err(slot_error(format!(
            "{what}: {} values do not fit the slot's {}",
            src.len(),
            dst.len()
        )));
    }
    // SAFETY: `dst` holds at least `src.len()` values; the caller keeps `src`.
    unsafe { copy_in(gpu.stream(), addr(gpu, dst), src)? };
    Ok(std::mem::size_of_val(src))
}

fn slot_error(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: NAME.into(),
        message: message.into(),
    }
}

/// Bytes of a CSR matrix on the device as [`CsrMatrix::upload`] allocates it.
fn csr_bytes(nrows: usize, nnz: usize, t: usize) -> usize {
    4 * (nrows + 1) + (4 + t) * nnz.max(1)
}

impl<T: Real> GpuMatrix<T> {
    /// Open the GPU and cuSPARSE, compile the kernels (once per process), assemble the
    /// operators of `problem` in `storage` and upload them.
    pub fn new(problem: Arc<Problem>, storage: Storage) -> Result<Self> {
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
        // size the workspaces once for every image's shapes (descriptors only, no copies)
        let mut need = [0usize; 4];
        for image in images {
            slot.check_kind(image)?;
            let shapes = slot.describe(image)?;
            for (n, s) in need.iter_mut().zip(shapes) {
                *n = (*n).max(s);
            }
        }
        let handle = &slot.handle;
        slot.diff.reserve(handle, need[0])?;
        slot.force.reserve(handle, need[1])?;
        slot.damage_op.reserve(handle, need[2])?;
        if let Some(op) = slot.theta_op.as_mut() {
            op.reserve(handle, need[3])?;
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
        let g = &gpu;
        // each operator described with `image`'s shape
        let csr = |m: &HostCsr<T>, (rows, nnz): (usize, usize)| -> Result<CsrMatrix<T>> {
            let mut c = CsrMatrix::<T>::with_capacity(&handle, rows, nnz)?;
            m.shape(&handle, &mut c)?;
            Ok(c)
        };
        let diff = csr(&image.diff, room.csr[0])?;
        let force = csr(&image.force, room.csr[1])?;
        let damage = csr(&image.damage, room.csr[2])?;
        let theta_m = match &image.theta {
            Some(m) => Some(csr(m, room.csr[3])?),
            None => None,
        };
        let e = driver_error;
        let (u_in, f_out) = (zeros(room.dofs).map_err(e)?, zeros(room.dofs).map_err(e)?);
        let eta = zeros(room.eta).map_err(e)?;
        let z = zeros(room.z).map_err(e)?;
        let theta = zeros(room.theta).map_err(e)?;
        let phi = zeros(room.nodes).map_err(e)?;
        let diff = Spmv::new(&handle, diff, addr(g, &u_in), addr(g, &eta))?;
        let force = Spmv::new(&handle, force, addr(g, &z), addr(g, &f_out))?;
        let theta_op = match theta_m {
            Some(m) => Some(Spmv::new(&handle, m, addr(g, &z), addr(g, &theta))?),
            None => None,
        };
        let damage_op = Spmv::new(&handle, damage, addr(g, &z), addr(g, &phi))?;
        let v = &room.vectors;
        let mut backend = GpuMatrix {
            xi: zeros(v[0]).map_err(e)?,
            length: zeros(v[1]).map_err(e)?,
            a: zeros(v[2]).map_err(e)?,
            g: zeros(v[3]).map_err(e)?,
            g_second: zeros(v[4]).map_err(e)?,
            a_first: zeros(v[5]).map_err(e)?,
            w: zeros(v[6]).map_err(e)?,
            first: words(room.rows).map_err(e)?,
            second: words(room.rows).map_err(e)?,
            mu: bytes(room.rows).map_err(e)?,
            no_fail: bytes(room.nodes).map_err(e)?,
            volumes: gpu
                .stream()
                .alloc_zeros::<f64>(room.nodes.max(1))
                .map_err(e)?,
            eta,
            z,
            theta,
            phi,
            partial: gpu
                .stream()
                .alloc_zeros::<f64>(room.rows.max(room.nodes).div_ceil(BLOCK).max(1))
                .map_err(e)?,
            u_in,
            f_out,
            broken: gpu.stream().alloc_zeros::<u64>(1).map_err(e)?,
            broken_seen: 0,
            staged_u: None,
            staged_theta: None,
            precracked_rows: 0,
            rows: image.rows.clone(),
            storage: image.storage,
            dim: p.dim(),
            law,
            handle,
            diff,
            force,
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

    /// Describe the operators with `image`'s shapes (no copies) and return the workspace
    /// bytes each product then needs (`A x I_d`, force, `Phi`, `Theta`).
    fn describe(&mut self, image: &MatrixImage<T>) -> Result<[usize; 4]> {
        let mut need = [0usize; 4];
        let g = self.gpu.clone();
        let (u, eta, z) = (addr(&g, &self.u_in), addr(&g, &self.eta), addr(&g, &self.z));
        let (f, theta, phi) = (
            addr(&g, &self.f_out),
            addr(&g, &self.theta),
            addr(&g, &self.phi),
        );
        let h = &self.handle;
        image.diff.shape(h, &mut self.diff.matrix)?;
        need[0] = self.diff.reshape(h, u, eta)?;
        image.force.shape(h, &mut self.force.matrix)?;
        need[1] = self.force.reshape(h, z, f)?;
        image.damage.shape(h, &mut self.damage_op.matrix)?;
        need[2] = self.damage_op.reshape(h, z, phi)?;
        if let (Some(op), Some(m)) = (self.theta_op.as_mut(), image.theta.as_ref()) {
            m.shape(h, &mut op.matrix)?;
            need[3] = op.reshape(h, z, theta)?;
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
        for (op, n) in [&mut self.diff, &mut self.force, &mut self.damage_op]
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
            bytes += image.diff.copy_into(h, &mut self.diff.matrix)?;
            bytes += image.force.copy_into(h, &mut self.force.matrix)?;
            bytes += image.damage.copy_into(h, &mut self.damage_op.matrix)?;
            if let (Some(op), Some(m)) = (self.theta_op.as_mut(), image.theta.as_ref()) {
                bytes += m.copy_into(h, &mut op.matrix)?;
            }
            bytes += put(&g, &self.xi, &image.xi, "xi")?;
            bytes += put(&g, &self.length, &image.length, "length")?;
            bytes += put(&g, &self.a, &image.a, "a")?;
            bytes += put(&g, &self.g, &image.g, "g")?;
            bytes += put(&g, &self.g_second, &image.g_second, "g_second")?;
            bytes += put(&g, &self.a_first, &image.a_first, "a_first")?;
            bytes += put(&g, &self.w, &image.w, "w")?;
            bytes += put(&g, &self.first, &image.rows.first, "first")?;
            bytes += put(&g, &self.second, &image.rows.second, "second")?;
            bytes += put(&g, &self.mu, &image.mu, "row status")?;
            bytes += put(&g, &self.no_fail, &image.no_fail, "no-fail flags")?;
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

    /// Bytes the backend will hold on the device for `problem` in `storage` with
    /// `scalar_bytes` per value, without assembling or touching a GPU: operators, bond
    /// vectors, scratch and the time loop's state. Equals [`Backend::memory_bytes`] less the
    /// cuSPARSE workspaces ([`GpuMatrix::workspace_bytes`]) and the time loop's condition
    /// lists and factor table (made by the first `advance_explicit`).
    pub fn memory_estimate(problem: &Problem, storage: Storage, scalar_bytes: usize) -> usize {
        let (n, d, t) = (problem.body.len(), problem.dim(), scalar_bytes);
        let rows = Self::bond_rows(problem, storage);
        // u v a f b (the half-step velocity only in damped runs, on their first step)
        let state = 5 * (d * n).max(1) * t + 8;
        Self::slot_estimate(problem, storage, t, n, rows) + state
    }

    /// Bond rows of `problem` in `storage`.
    pub fn bond_rows(problem: &Problem, storage: Storage) -> usize {
        footprint(problem, storage, 8).rows
    }

    /// Bytes of a [`GpuMatrix::slot`] with room for `nodes` nodes and `rows` bond rows of
    /// problems of `problem`'s law and dimension (the largest node count and the largest
    /// row count of its images: every buffer's length follows one of the two), in `storage`
    /// with `scalar_bytes` per value: operators, bond vectors and scratch, no time loop.
    /// Equals the slot's [`Backend::memory_bytes`] less its cuSPARSE workspaces.
    pub fn slot_estimate(
        problem: &Problem,
        storage: Storage,
        scalar_bytes: usize,
        nodes: usize,
        rows: usize,
    ) -> usize {
        let (t, n, d) = (scalar_bytes, nodes, problem.dim());
        let law = law_code(problem);
        let (lps, nonlinear) = (law == LPS, law == PMB_NONLINEAR);
        let half = storage == Storage::Half;
        let per = if nonlinear { d } else { 1 };
        let node_nnz = if half { 2 * rows } else { rows };
        let ops = csr_bytes(d * rows, 2 * d * rows, t)
            + csr_bytes(d * n, 2 * d * rows, t)
            + if lps { csr_bytes(n, node_nnz, t) } else { 0 }
            + csr_bytes(n, node_nnz, t);
        let v = |len: usize, bytes: usize| len.max(1) * bytes;
        let lps_rows = if lps { rows } else { 0 };
        let half_lps_rows = if lps && half { rows } else { 0 };
        let vectors = v(d * rows, t)
            + 3 * v(rows, t)
            + v(lps_rows, t)
            + 2 * v(half_lps_rows, t)
            + 2 * v(rows, 4)
            + v(rows, 1)
            + v(n, 1)
            + v(n, 8);
        let scratch = v(d * rows, t)
            + v(per * rows, t)
            + v(if lps { n } else { 0 }, t)
            + v(n, t)
            + v(rows.max(n).div_ceil(BLOCK), 8)
            + 2 * v(d * n, t)
            + 8;
        ops + vectors + scratch
    }

    /// Make the device time loop where there is none yet (a slot's).
    fn time_loop(&mut self) -> Result<()> {
        if self.stepper.is_none() {
            let nd = self.problem.body.len() * self.dim;
            self.stepper = Some(DeviceLoop::new(&self.gpu, nd, false)?);
        }
        Ok(())
    }

    /// Bytes of the cuSPARSE workspaces.
    pub fn workspace_bytes(&self) -> usize {
        self.products().iter().map(|s| s.workspace_bytes()).sum()
    }

    /// The storage of the bond rows.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// The sparse products of one force evaluation and the damage, with their names: what
    /// `examples/gpu_spmv.rs` times.
    fn products(&self) -> Vec<&Spmv<T>> {
        let mut v = vec![&self.diff, &self.force, &self.damage_op];
        v.extend(self.theta_op.iter());
        v
    }

    /// Directed bonds per row: 1 in full storage, 2 in half.
    fn bonds_per_row(&self) -> usize {
        match self.storage {
            Storage::Full => 1,
            Storage::Half => 2,
        }
    }

    fn nrows(&self) -> usize {
        self.rows.len()
    }

    fn check(&self, requested: bool) -> bool {
        requested && self.problem.material.critical_stretch.is_some()
    }

    /// Parameters of the bond kernels.
    fn params(&self, check_bonds: bool) -> MatrixParams {
        MatrixParams {
            check_bonds: i32::from(self.check(check_bonds)),
            ..self.base
        }
    }

    /// The bond kernels' parameters with the bond check off (made once, at setup).
    fn addresses(&self) -> MatrixParams {
        let g = &*self.gpu;
        let m = &self.problem.material;
        MatrixParams {
            eta: addr(g, &self.eta),
            xi: addr(g, &self.xi),
            length: addr(g, &self.length),
            a: addr(g, &self.a),
            g: addr(g, &self.g),
            g_second: addr(g, &self.g_second),
            a_first: addr(g, &self.a_first),
            w: addr(g, &self.w),
            mu: addr(g, &self.mu),
            first: addr(g, &self.first),
            second: addr(g, &self.second),
            no_fail: addr(g, &self.no_fail),
            z: addr(g, &self.z),
            theta: addr(g, &self.theta),
            out: addr(g, &self.z),
            partial: addr(g, &self.partial),
            broken: addr(g, &self.broken),
            volumes: addr(g, &self.volumes),
            critical_stretch: m.critical_stretch.unwrap_or(f64::INFINITY),
            kd: match m.law {
                Law::Lps { kd, .. } => kd,
                Law::Pmb { .. } => 0.0,
            },
            rows: self.nrows() as u64,
            n: self.problem.body.len() as u32,
            dim: self.dim as i32,
            law: self.law,
            check_bonds: 0,
            half: i32::from(self.storage == Storage::Half),
            pad: 0,
        }
    }

    /// Launch bond kernel `f` over `threads` threads.
    fn launch(&self, f: &CudaFunction, threads: usize, check_bonds: bool) -> Result<()> {
        let p = self.params(check_bonds);
        // SAFETY: `p` holds this backend's buffers, sized for its rows and nodes; each kernel
        // stops at `rows` (and `n`); `eta`, `z`, `theta` are up to date where it reads them.
        unsafe { self.gpu.launch(f, threads, &p) }
    }

    /// `eta = (A x I_d) u` for `u` at a device address of `d n` values.
    fn form_eta(&self, u: u64) -> Result<()> {
        // SAFETY: `u` holds `d n` values (the caller's promise); `eta` holds `d rows`.
        unsafe { self.diff.apply(&self.handle, u, addr(&self.gpu, &self.eta)) }
    }

    /// LPS: `z = mu e` (with bond breaking), then `theta = Theta z`; `eta` up to date.
    fn dilatation_pass(&self, check_bonds: bool) -> Result<()> {
        self.launch(&self.k.lps_extension, self.nrows(), check_bonds)?;
        let op = self.theta_op.as_ref().expect("LPS has Theta");
        let g = &*self.gpu;
        // SAFETY: `z` holds `rows` values, `theta` `n`.
        unsafe { op.apply(&self.handle, addr(g, &self.z), addr(g, &self.theta)) }
    }

    /// Enqueue the force density at `u` into `force` (device addresses of `d n` values).
    fn forces(&self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        self.form_eta(u)?;
        if self.law == LPS {
            self.dilatation_pass(check_bonds)?;
            self.launch(&self.k.lps_force, self.nrows(), false)?;
        } else {
            self.launch(&self.k.pmb, self.nrows(), check_bonds)?;
        }
        // SAFETY: `z` holds the operator's columns, `force` `d n` values (the caller's).
        unsafe {
            self.force
                .apply(&self.handle, addr(&self.gpu, &self.z), force)
        }
    }

    /// Directed bonds broken on the device since the last read.
    fn take_broken(&mut self) -> Result<usize> {
        let total = self
            .gpu
            .stream()
            .clone_dtoh(&self.broken)
            .map_err(driver_error)?[0];
        let new = total - self.broken_seen;
        self.broken_seen = total;
        Ok(new as usize * self.bonds_per_row())
    }

    fn upload_u(&mut self, u: &[T]) -> Result<u64> {
        if self.staged_u.take() != Some(u.len()) {
            self.gpu
                .stream()
                .memcpy_htod(u, &mut self.u_in)
                .map_err(driver_error)?;
        }
        Ok(addr(&self.gpu, &self.u_in))
    }

    /// Forget inputs staged and not used by a call (the next call uploads its own).
    pub fn clear_staged(&mut self) {
        (self.staged_u, self.staged_theta) = (None, None);
    }

    /// Enqueue the copies of the next call's displacement `u` (and, LPS, the dilatation
    /// `theta` of `internal_force_with_theta`) on the stream now, so they go out with a
    /// slot's other copies; the next call given inputs of the same lengths uploads none.
    ///
    /// # Safety
    /// `u` and `theta` must stay alive and unwritten until the stream has passed the copies
    /// (asynchronous from page-locked memory).
    pub unsafe fn stage_inputs(&mut self, u: &[T], theta: Option<&[T]>) -> Result<()> {
        let g = self.gpu.clone();
        // SAFETY: the caller keeps `u` and `theta`; `put` checks the buffers' room. `theta`
        // waits in `phi` (scratch of `n` values, unused by the force pass): the force call
        // computes its own dilatation into `theta` first.
        unsafe {
            put(&g, &self.u_in, u, "staged displacement")?;
            self.staged_u = Some(u.len());
            if let Some(theta) = theta {
                put(&g, &self.phi, theta, "staged dilatation")?;
                self.staged_theta = Some(theta.len());
            }
        }
        Ok(())
    }

    fn try_force(&mut self, u: &[T], force: &mut [T], check_bonds: bool) -> Result<usize> {
        let u = self.upload_u(u)?;
        self.forces(u, addr(&self.gpu, &self.f_out), check_bonds)?;
        download(&self.gpu, &self.f_out, force)?;
        if self.check(check_bonds) {
            self.take_broken()
        } else {
            Ok(0)
        }
    }

    fn try_break_bonds(&mut self, u: &[T]) -> Result<usize> {
        if !self.check(true) {
            return Ok(0);
        }
        let u = self.upload_u(u)?;
        self.form_eta(u)?;
        self.launch(&self.k.break_rows, self.nrows(), true)?;
        self.take_broken()
    }

    fn try_damage(&self, phi: &mut [T]) -> Result<()> {
        // `z` is scratch: it takes 1 - mu here
        self.launch(&self.k.broken_rows, self.nrows(), false)?;
        let g = &*self.gpu;
        // SAFETY: `z` holds at least `rows` values, `phi` `n`.
        unsafe {
            self.damage_op
                .apply(&self.handle, addr(g, &self.z), addr(g, &self.phi))?
        };
        download(g, &self.phi, phi)
    }

    fn try_dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<()> {
        let u = self.upload_u(u)?;
        self.form_eta(u)?;
        self.dilatation_pass(false)?;
        download(&self.gpu, &self.theta, theta)
    }

    fn try_strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let u = self.upload_u(u)?;
        self.form_eta(u)?;
        if self.law == LPS {
            self.dilatation_pass(false)?;
        }
        let n = self.problem.body.len();
        self.launch(&self.k.energy, self.nrows().max(n), false)?;
        let blocks = self.nrows().max(n).div_ceil(BLOCK);
        let mut partial = vec![0.0f64; blocks];
        download(&self.gpu, &self.partial, &mut partial)?;
        Ok(partial.iter().sum())
    }

    /// LPS forces with the dilatation of every node given instead of computed from this
    /// backend's rows (a partitioned run: halo nodes' dilatations come from their owners).
    pub fn internal_force_with_theta(
        &mut self,
        u: &[T],
        theta: &[T],
        force: &mut [T],
    ) -> Result<()> {
        let u = self.upload_u(u)?;
        self.form_eta(u)?;
        self.dilatation_pass(false)?;
        let s = self.gpu.stream();
        match self.staged_theta.take() == Some(theta.len()) {
            true => {
                let staged = self.phi.slice(..theta.len());
                let mut into = self.theta.slice_mut(..theta.len());
                s.memcpy_dtod(&staged, &mut into).map_err(driver_error)?;
            }
            false => s
                .memcpy_htod(theta, &mut self.theta)
                .map_err(driver_error)?,
        }
        self.launch(&self.k.lps_force, self.nrows(), false)?;
        let g = &*self.gpu;
        // SAFETY: `z` holds the operator's columns, `f_out` `d n` values.
        unsafe {
            self.force
                .apply(&self.handle, addr(g, &self.z), addr(g, &self.f_out))?
        };
        download(g, &self.f_out, force)
    }

    /// Strain energy of the first `rows` bond rows and (LPS) the dilatation term of the first
    /// `nodes` nodes, J (the kernel stops at those counts).
    pub fn strain_energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        let u = self.upload_u(u)?;
        self.form_eta(u)?;
        if self.law == LPS {
            self.dilatation_pass(false)?;
        }
        let threads = rows.max(nodes);
        let p = MatrixParams {
            rows: rows as u64,
            n: nodes as u32,
            ..self.params(false)
        };
        // SAFETY: as `launch`, over fewer rows and nodes than the buffers hold.
        unsafe { self.gpu.launch(&self.k.energy, threads, &p)? };
        let mut partial = vec![0.0f64; threads.div_ceil(BLOCK)];
        download(&self.gpu, &self.partial, &mut partial)?;
        Ok(partial.iter().sum())
    }

    /// Broken rows among the first `rows` (pre-cracks included).
    pub fn broken_rows_before(&self, rows: usize) -> Result<usize> {
        let mut mu = vec![0u8; rows];
        download(&self.gpu, &self.mu, &mut mu)
            .map_err(device_fault(NAME, "bond status download"))?;
        Ok(mu.iter().filter(|&&m| m == 0).count())
    }

    /// Time each sparse product of one force evaluation (and the damage's) on the current
    /// buffers: `(name, rows, columns, non-zeros, minimal bytes, seconds)` per product, the
    /// fastest of `reps` runs each (after one untimed run). For `examples/gpu_spmv.rs`.
    pub fn time_products(&mut self, reps: usize) -> Result<Vec<ProductTiming>> {
        let g = self.gpu.clone();
        let (u, eta, z, f) = (
            addr(&g, &self.u_in),
            addr(&g, &self.eta),
            addr(&g, &self.z),
            addr(&g, &self.f_out),
        );
        let (theta, phi) = (addr(&g, &self.theta), addr(&g, &self.phi));
        let mut cases: Vec<(&'static str, &Spmv<T>, u64, u64)> = vec![
            ("eta = (A x I_d) u", &self.diff, u, eta),
            (
                if self.law == PMB_NONLINEAR {
                    "f = -(A^T x I_d) z / V"
                } else {
                    "f = -B^T z / V"
                },
                &self.force,
                z,
                f,
            ),
        ];
        if let Some(op) = &self.theta_op {
            cases.push(("theta = Theta z", op, z, theta));
        }
        cases.push(("phi = Phi (1 - mu)", &self.damage_op, z, phi));
        let mut out = Vec::new();
        for (name, op, x, y) in cases {
            let mut best = f64::INFINITY;
            for r in 0..=reps.max(1) {
                g.synchronize()?;
                let t0 = std::time::Instant::now();
                // SAFETY: the backend's own buffers, of the operator's sizes.
                unsafe { op.apply(&self.handle, x, y)? };
                g.synchronize()?;
                if r > 0 {
                    best = best.min(t0.elapsed().as_secs_f64());
                }
            }
            let m = &op.matrix;
            out.push(ProductTiming {
                name,
                nrows: m.nrows,
                ncols: m.ncols,
                nnz: m.nnz,
                bytes: op.traffic(),
                seconds: best,
            });
        }
        Ok(out)
    }

    /// Seconds of one force evaluation with bond checking on the device (fastest of
    /// `reps`), the state's buffers as input and output. For `examples/gpu_spmv.rs`.
    pub fn time_force(&mut self, reps: usize) -> Result<f64> {
        let g = self.gpu.clone();
        let (u, f) = (addr(&g, &self.u_in), addr(&g, &self.f_out));
        let mut best = f64::INFINITY;
        for r in 0..=reps.max(1) {
            g.synchronize()?;
            let t0 = std::time::Instant::now();
            self.forces(u, f, true)?;
            g.synchronize()?;
            if r > 0 {
                best = best.min(t0.elapsed().as_secs_f64());
            }
        }
        self.take_broken()?;
        Ok(best)
    }
}

/// One timed sparse product (see [`GpuMatrix::time_products`]).
#[derive(Debug, Clone)]
pub struct ProductTiming {
    pub name: &'static str,
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    /// Row pointers, column indices and values read once, `x` read once, `y` written once.
    pub bytes: usize,
    pub seconds: f64,
}

impl<T: Real> DeviceForces<T> for GpuMatrix<T> {
    fn device_loop(&mut self) -> &mut DeviceLoop<T> {
        self.stepper
            .as_mut()
            .expect("the time loop is made before it is used (GpuMatrix::time_loop)")
    }

    fn launch_forces(&mut self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        self.forces(u, force, check_bonds)
    }

    fn read_broken(&mut self) -> Result<usize> {
        self.take_broken()
    }
}

impl<T: Real> Forces<T> for GpuMatrix<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.try_force(u, force, false)
            .map(|_| ())
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.try_break_bonds(u)
            .map_err(device_fault(NAME, "bond breaking"))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.try_force(u, force, true)
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        self.try_damage(phi).map_err(device_fault(NAME, "damage"))
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if self.law != LPS {
            return Ok(false);
        }
        self.try_dilatation(u, theta)
            .map_err(device_fault(NAME, "dilatation"))?;
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.try_strain_energy(u)
            .map_err(device_fault(NAME, "strain energy"))
    }

    fn broken_bonds(&self) -> usize {
        (self.precracked_rows + self.broken_seen as usize) * self.bonds_per_row()
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        let mut mu = vec![0u8; self.nrows()];
        download(&self.gpu, &self.mu, &mut mu)
            .map_err(device_fault(NAME, "bond status download"))?;
        Ok(self.rows.bond_status(&mu))
    }
}

impl<T: Real> GpuMatrix<T> {
    pub fn memory_bytes(&self) -> usize {
        let ops: usize = self.products().iter().map(|s| s.bytes()).sum();
        let vectors = [
            &self.xi,
            &self.length,
            &self.a,
            &self.g,
            &self.g_second,
            &self.a_first,
            &self.w,
            &self.eta,
            &self.z,
            &self.theta,
            &self.phi,
            &self.u_in,
            &self.f_out,
        ]
        .iter()
        .map(|v| v.num_bytes())
        .sum::<usize>();
        ops + vectors
            + self.first.num_bytes()
            + self.second.num_bytes()
            + self.mu.num_bytes()
            + self.no_fail.num_bytes()
            + self.volumes.num_bytes()
            + self.partial.num_bytes()
            + self.broken.num_bytes()
            + self.stepper.as_ref().map_or(0, |s| s.bytes())
    }

    /// Minimal bytes of one explicit step with bond checking: each product's matrix read
    /// once with its input read once and output written once; the bond kernel reads `eta`,
    /// `xi`, the length, `a` and `w`, reads and writes the status, reads the row ends and the
    /// no-fail flags and writes `z`; LPS reads `z`, `g` (and `g_ji`) and `theta` again and
    /// writes `z` once more.
    pub fn bytes_per_step(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, d, rows) = (self.problem.body.len(), self.dim, self.nrows());
        let per = if self.law == PMB_NONLINEAR { d } else { 1 };
        let mut bytes = self.diff.traffic() + self.force.traffic();
        bytes += rows * (2 * d * t + 3 * t + 2 + 8 + per * t) + n;
        if let Some(op) = &self.theta_op {
            let half = usize::from(self.storage == Storage::Half);
            bytes += op.traffic() + rows * (3 * t + half * t) + n * t;
        }
        bytes
    }

    pub fn operator_nnz(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![("A x I_d", self.diff.matrix.nnz)];
        out.push((
            if self.law == PMB_NONLINEAR {
                "A^T x I_d"
            } else {
                "B^T"
            },
            self.force.matrix.nnz,
        ));
        if let Some(m) = &self.theta_op {
            out.push(("Theta", m.matrix.nnz));
        }
        out.push(("Phi", self.damage_op.matrix.nnz));
        out
    }
}

impl<T: Real> Backend<T> for GpuMatrix<T> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn footprint(&self) -> Footprint {
        Footprint {
            operator_nnz: self.operator_nnz(),
            ..Footprint::new(self.memory_bytes(), self.bytes_per_step())
        }
    }

    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        self.time_loop().map_err(|e| rename(e, NAME))?;
        advance(self, call).map_err(|e| rename(e, NAME))
    }

    fn advance_adr(
        &mut self,
        adr: &mut Adr<T>,
        loads: &Loads,
        state: &mut State<T>,
        h: f64,
    ) -> Result<usize> {
        self.time_loop().map_err(|e| rename(e, NAME))?;
        adr_iteration(self, adr, loads, state, h).map_err(|e| rename(e, NAME))
    }

    fn sync_state(&mut self, state: &mut State<T>) -> Result<()> {
        self.time_loop().map_err(|e| rename(e, NAME))?;
        sync_adr_state(self.device_loop(), state).map_err(|e| rename(e, NAME))
    }

    fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        match self.stepper.as_mut() {
            Some(stepper) => stepper
                .max_abs_displacement(state)
                .map_err(device_fault(NAME, "displacement check")),
            None => Ok(state.max_abs_displacement()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operators::spmv::{spmv, spmv_interleaved, spmv_with};

    fn problem(law: &str) -> Problem {
        let text = format!(
            "[material]\nmodel = \"{law}\"\nyoungs_modulus = 200e9\ndensity = 8000\n{}\
             critical_stretch = 0.01\n[discretization]\ndimension = \"3d\"\ndx = 1e-3\n\
             horizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n\
             box = [{{ min = [0, 0, 0], max = [0.006, 0.005, 0.004] }}]\n\
             [solver]\nkind = \"explicit\"\nsteps = 1\n",
            if law == "lps" {
                "poisson_ratio = 0.25\n"
            } else {
                ""
            }
        );
        let model = crate::model::parse(&text, "t.toml", &[]).unwrap();
        Problem::build(model, std::path::Path::new(".")).unwrap()
    }

    fn field(len: usize, seed: usize) -> Vec<f64> {
        (0..len)
            .map(|i| (((i * 7919 + seed * 104_729) % 2003) as f64 - 1001.0) * 1e-6)
            .collect()
    }

    /// A matrix image (what a streamed subdomain keeps on the host between uploads) holds the
    /// problem's bond status as row status and gives it back per directed bond, in both
    /// storages; a status written into it (as a download after a pass does) reads back the
    /// same; its upload size counts every array once.
    #[test]
    fn matrix_images_keep_the_bond_status() {
        let mut p = problem("pmb");
        // some bonds broken, both directions of a pair alike (as breaking leaves them)
        let fam = p.families.clone();
        p.initial_mu = (0..p.body.len())
            .flat_map(|i| {
                fam.family(i)
                    .iter()
                    .map(move |&j| u8::from((i + j as usize) % 7 != 3))
            })
            .collect();
        assert!(p.initial_mu.contains(&0));
        for storage in [Storage::Full, Storage::Half] {
            let mut image = MatrixImage::<f64>::assemble(Arc::new(p.clone()), storage).unwrap();
            assert_eq!(image.bond_status(), p.initial_mu, "{storage:?}");
            let rows = image.rows();
            let written: Vec<u8> = (0..rows).map(|r| u8::from(r % 5 != 0)).collect();
            image.row_status_mut().copy_from_slice(&written);
            let status = image.bond_status();
            let ops = Operators::<f64>::assemble(&p, storage).unwrap();
            assert_eq!(ops.row_status(&status), written, "{storage:?}");
            let lower = rows * (p.dim() * 2 * (4 + 8) + 8 * 7 + 8 + 1);
            assert!(
                image.bytes() > lower,
                "{storage:?}: {} bytes",
                image.bytes()
            );
        }
    }

    /// The device operators give the CPU backend's products: `A x I_d` the interleaved
    /// differences bit for bit, the force operator the transposed product with its `-1/V`
    /// epilogue to round-off, in both storages and for every law.
    #[test]
    fn device_operators_give_the_cpu_products() {
        for law in ["pmb", "pmb-linear", "lps"] {
            let p = problem(law);
            let (n, d) = (p.body.len(), p.dim());
            for storage in [Storage::Half, Storage::Full] {
                let ops = Operators::<f64>::assemble(&p, storage).unwrap();
                let nr = ops.rows();
                let [diff, force] = device_operators(&p, &ops);
                assert_eq!(diff.row_ptr.len(), d * nr + 1);
                assert_eq!(force.row_ptr.len(), d * n + 1);
                let u = field(d * n, 1);
                let (mut eta, mut eta_ref) = (vec![0.0; d * nr], vec![0.0; d * nr]);
                spmv(&diff.to_mat(), &u, &mut eta);
                spmv_interleaved(&ops.incidence, d, &u, &mut eta_ref, |_, _, s| s);
                assert!(eta == eta_ref, "{law} {}: eta", storage.name());
                let inv: Vec<f64> = p.body.volumes.iter().map(|v| -1.0 / v).collect();
                let per = if ops.incidence_t.is_some() { d } else { 1 };
                assert_eq!(force.ncols, per * nr);
                let z = field(per * nr, 2);
                let (mut f, mut f_ref) = (vec![0.0; d * n], vec![0.0; d * n]);
                spmv(&force.to_mat(), &z, &mut f);
                match &ops.incidence_t {
                    Some(at) => spmv_interleaved(at, d, &z, &mut f_ref, |i, _, s| s * inv[i]),
                    None => spmv_with(&ops.bt, &z, &mut f_ref, |k, s| s * inv[k / d]),
                }
                let (num, den) = f.iter().zip(&f_ref).fold((0.0, 0.0), |(a, b), (x, y)| {
                    (a + (x - y) * (x - y), b + y * y)
                });
                let rel = (num / den).sqrt();
                assert!(rel < 1e-15, "{law} {}: force {rel:.2e}", storage.name());
            }
        }
    }
}
