//! The products of one force evaluation in the incidence form: the bond kernels form each
//! row's difference `u_j - u_i` and force vector `Z` from the displacement at a device
//! address, (LPS) `theta = Theta ze` by cuSPARSE, and `f = -diag(1/V) A^T Z` by
//! `matrix_force`; and their timings for `examples/gpu_spmv.rs`.
//!
//! Units: displacement m, bond differences m, force density N/m^3; times s, traffic bytes.

use super::{GpuMatrix, LPS};
use crate::backend::gpu::buffers::addr;
use crate::gpu::cusparse::Spmv;
use crate::gpu::Gpu;
use crate::{Real, Result};
use std::sync::Arc;

/// Threads per node of `matrix_force` (`MX_FORCE_LANES` of `kernels/matrix_bond.cu`).
const FORCE_LANES: usize = 8;

/// Where a split force evaluation ([`GpuMatrix::forces_split`]) hands control back: the
/// ghosts' values it needs next.
pub(crate) enum Ghosts {
    /// Into the displacement, before the rows that read a ghost.
    Displacement,
    /// The dilatation at this device address (`n` values) is enqueued: its owned values
    /// can be packed and sent.
    DilatationFormed(u64),
    /// Into the dilatation at this address, before the rows that read a ghost's.
    Dilatation(u64),
}

impl<T: Real> GpuMatrix<T> {
    /// The cuSPARSE products of a force evaluation and the damage: what
    /// `examples/gpu_spmv.rs` times beside the force sum.
    pub(super) fn products(&self) -> Vec<&Spmv<T>> {
        let mut v = vec![&self.damage_op];
        v.extend(self.theta_op.iter());
        v
    }

    /// LPS: `ze = mu e` at `u` (with bond breaking), then `theta = Theta ze`.
    pub(super) fn dilatation_pass(&self, u: u64, check_bonds: bool) -> Result<()> {
        self.launch(&self.k.lps_extension, self.nrows(), check_bonds, u)?;
        self.theta_product()
    }

    /// LPS: `theta = Theta ze` from every row's masked extension.
    fn theta_product(&self) -> Result<()> {
        let op = self.theta_op.as_ref().expect("LPS has Theta");
        let g = &*self.gpu;
        // SAFETY: `ze` holds `rows` values, `theta` `n`.
        unsafe { op.apply(&self.handle, addr(g, &self.ze), addr(g, &self.theta)) }
    }

    /// Enqueue the force density at `u` into `force` (device addresses of `d n` values).
    pub(super) fn forces(&self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        self.forces_split(u, force, check_bonds, &mut |_| Ok(()))
    }

    /// [`GpuMatrix::forces`] in two row ranges, for a rank's part whose ghosts' values
    /// arrive while the device works (`distributed/gpu/matrix.rs`): the rows that read no
    /// ghost (`BondRows::early`, a prefix) are enqueued, then `between` is called with
    /// [`Ghosts::Displacement`] (the ghosts' displacements into `u` before the rest of the
    /// rows); LPS, once the dilatation is enqueued, with [`Ghosts::DilatationFormed`] (the
    /// owned values are there to send), the early rows' force scalars enqueued, then
    /// [`Ghosts::Dilatation`] (the ghosts' dilatations in before the rest). A whole problem's
    /// rows are all early: one launch each, as before. Each row computes what the whole
    /// launch computes.
    pub(crate) fn forces_split(
        &self,
        u: u64,
        force: u64,
        check_bonds: bool,
        between: &mut dyn FnMut(Ghosts) -> Result<()>,
    ) -> Result<()> {
        let (early, rows) = (self.rows.early, self.nrows());
        let bond = match self.law == LPS {
            true => &self.k.lps_extension,
            false => &self.k.pmb,
        };
        self.launch_rows(bond, 0..early, check_bonds, u)?;
        between(Ghosts::Displacement)?;
        self.launch_rows(bond, early..rows, check_bonds, u)?;
        if self.law == LPS {
            self.theta_product()?;
            let theta = addr(&self.gpu, &self.theta);
            between(Ghosts::DilatationFormed(theta))?;
            self.launch_rows(&self.k.lps_force, 0..early, false, u)?;
            between(Ghosts::Dilatation(theta))?;
            self.launch_rows(&self.k.lps_force, early..rows, false, u)?;
        }
        self.force_product(force)
    }

    /// The device this backend runs on.
    pub fn gpu(&self) -> &Arc<Gpu> {
        &self.gpu
    }

    /// `f = -diag(1/V) A^T Z` into `force` (a device address of `d n` values) from the rows'
    /// force vectors `Z`.
    pub(super) fn force_product(&self, force: u64) -> Result<()> {
        let p = crate::gpu::params::MatrixParams {
            force,
            ..self.params(false, 0)
        };
        let threads = FORCE_LANES * self.problem.body.len();
        // SAFETY: `p` holds this backend's buffers; `force` holds `d n` values (the
        // caller's); the kernel stops at `n` (its lanes past it only shuffle zeros).
        unsafe { self.gpu.launch(&self.k.force, threads, &p) }
    }

    /// Time each sparse product of one force evaluation (and the damage's) on the current
    /// buffers: `(name, rows, columns, non-zeros, minimal bytes, seconds)` per product, the
    /// fastest of `reps` runs each (after one untimed run). For `examples/gpu_spmv.rs`.
    pub fn time_products(&mut self, reps: usize) -> Result<Vec<ProductTiming>> {
        let g = self.gpu.clone();
        let (ze, z, f) = (addr(&g, &self.ze), addr(&g, &self.z), addr(&g, &self.f_out));
        let (theta, phi) = (addr(&g, &self.theta), addr(&g, &self.phi));
        let mut out = Vec::new();
        let n = self.problem.body.len();
        let at_nnz = self.at_nnz;
        let t = std::mem::size_of::<T>();
        let seconds = time_best(&g, reps, || self.force_product(f))?;
        out.push(ProductTiming {
            name: "f = -A^T Z / V",
            nrows: n,
            ncols: self.nrows(),
            nnz: at_nnz,
            bytes: 4 * (n + 1) + at_nnz * (4 + self.dim * t) + n * (8 + self.dim * t),
            seconds,
        });
        let mut cases: Vec<(&'static str, &Spmv<T>, u64, u64)> = Vec::new();
        if let Some(op) = &self.theta_op {
            cases.push(("theta = Theta ze", op, ze, theta));
        }
        cases.push(("phi = Phi (1 - mu)", &self.damage_op, z, phi));
        for (name, op, x, y) in cases {
            // SAFETY: the backend's own buffers, of the operator's sizes.
            let seconds = time_best(&g, reps, || unsafe { op.apply(&self.handle, x, y) })?;
            let m = &op.matrix;
            out.push(ProductTiming {
                name,
                nrows: m.nrows,
                ncols: m.ncols,
                nnz: m.nnz,
                bytes: op.traffic(),
                seconds,
            });
        }
        Ok(out)
    }

    /// Seconds of one force evaluation with bond checking on the device (fastest of
    /// `reps`), the state's buffers as input and output. For `examples/gpu_spmv.rs`.
    pub fn time_force(&mut self, reps: usize) -> Result<f64> {
        let g = self.gpu.clone();
        let (u, f) = (addr(&g, &self.u_in), addr(&g, &self.f_out));
        let best = time_best(&g, reps, || self.forces(u, f, true))?;
        self.take_broken()?;
        Ok(best)
    }
}

/// The fastest of `reps` timed runs of `work` (after one untimed run), s.
fn time_best(
    g: &crate::gpu::Gpu,
    reps: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let mut best = f64::INFINITY;
    for r in 0..=reps.max(1) {
        g.synchronize()?;
        let t0 = std::time::Instant::now();
        work()?;
        g.synchronize()?;
        if r > 0 {
            best = best.min(t0.elapsed().as_secs_f64());
        }
    }
    Ok(best)
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
