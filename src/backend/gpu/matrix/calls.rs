//! Each trait call's device work on `gpu-matrix`: upload the displacement (or use inputs
//! staged with a slot's other copies), run the products and bond kernels, download the
//! result; and the calls the subdomain engine adds (forces with given dilatations, energy
//! and broken rows of the owned rows).
//!
//! Units: displacement m, force density N/m^3, dilatation 1, damage 1, energy J.

use super::room::put;
use super::{GpuMatrix, BLOCK, LPS, NAME};
use crate::backend::gpu::buffers::{addr, download};
use crate::backend::gpu::device_fault;
use crate::gpu::device::driver_error;
use crate::gpu::params::MatrixParams;
use crate::{Real, Result};

impl<T: Real> GpuMatrix<T> {
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

    pub(super) fn try_force(
        &mut self,
        u: &[T],
        force: &mut [T],
        check_bonds: bool,
    ) -> Result<usize> {
        let u = self.upload_u(u)?;
        self.forces(u, addr(&self.gpu, &self.f_out), check_bonds)?;
        download(&self.gpu, &self.f_out, force)?;
        if self.check(check_bonds) {
            self.take_broken()
        } else {
            Ok(0)
        }
    }

    pub(super) fn try_break_bonds(&mut self, u: &[T]) -> Result<usize> {
        if !self.check(true) {
            return Ok(0);
        }
        let u = self.upload_u(u)?;
        self.launch(&self.k.break_rows, self.nrows(), true, u)?;
        self.take_broken()
    }

    pub(super) fn try_damage(&self, phi: &mut [T]) -> Result<()> {
        // `z` is scratch: it takes 1 - mu here
        self.launch(&self.k.broken_rows, self.nrows(), false, 0)?;
        let g = &*self.gpu;
        // SAFETY: `z` holds at least `rows` values, `phi` `n`.
        unsafe {
            self.damage_op
                .apply(&self.handle, addr(g, &self.z), addr(g, &self.phi))?
        };
        download(g, &self.phi, phi)
    }

    /// The dilatation at `u` into `theta`; `false` (nothing done) for a bond-based law.
    pub(super) fn try_dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if self.law != LPS {
            return Ok(false);
        }
        let u = self.upload_u(u)?;
        self.dilatation_pass(u, false)?;
        download(&self.gpu, &self.theta, theta)?;
        Ok(true)
    }

    pub(super) fn try_strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let (rows, nodes) = (self.nrows(), self.problem.body.len());
        self.strain_energy_of(u, rows, nodes)
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
        self.dilatation_pass(u, false)?;
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
        self.launch(&self.k.lps_force, self.nrows(), false, u)?;
        self.force_product(addr(&self.gpu, &self.f_out))?;
        download(&self.gpu, &self.f_out, force)
    }

    /// Strain energy of the first `rows` bond rows and (LPS) the dilatation term of the first
    /// `nodes` nodes, J (the kernel stops at those counts), counting of each row the
    /// directions that leave one of those nodes (half storage: a row whose second node is
    /// past them counts its first node's share, as `CpuMatrix::strain_energy_of`).
    pub fn strain_energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> Result<f64> {
        let u = self.upload_u(u)?;
        if self.law == LPS {
            self.dilatation_pass(u, false)?;
        }
        let threads = rows.max(nodes);
        let p = MatrixParams {
            rows: rows as u64,
            n: nodes as u32,
            ..self.params(false, u)
        };
        // SAFETY: as `launch`, over fewer rows and nodes than the buffers hold.
        unsafe { self.gpu.launch(&self.k.energy, threads, &p)? };
        let mut partial = vec![0.0f64; threads.div_ceil(BLOCK)];
        download(&self.gpu, &self.partial, &mut partial)?;
        Ok(partial.iter().sum())
    }

    /// Directed bonds broken among the first `rows` bond rows that leave one of the first
    /// `nodes` nodes, pre-cracks included (`BondRows::broken_leaving`).
    pub fn broken_bonds_of(&self, rows: usize, nodes: usize) -> Result<usize> {
        let mut mu = vec![0u8; rows];
        download(&self.gpu, &self.mu, &mut mu)
            .map_err(device_fault(NAME, "bond status download"))?;
        Ok(self.rows.broken_leaving(&mu, nodes))
    }
}
