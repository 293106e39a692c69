//! The bond-row kernels of `kernels/matrix_bond.cu` (bond check, force vectors, LPS
//! extensions, the force sum `A^T Z`, damage's `1 - mu`, energy) and their launches: one parameter record over the
//! backend's buffers, made once at setup (the buffers never move) and given the bond check
//! per launch; the running count of broken rows they add to.
//!
//! Units as in [`crate::operators`]: m, N/m^7, N/m^6, m^6; energies J.

use super::GpuMatrix;
use crate::backend::gpu::buffers::addr;
use crate::gpu::params::MatrixParams;
use crate::gpu::Gpu;
use crate::material::Law;
use crate::operators::Storage;
use crate::{Precision, Real, Result};
use cudarc::driver::CudaFunction;
use std::ops::Range;

/// The bond kernels of `kernels/matrix_bond.cu`.
pub(super) struct Kernels {
    pub(super) pmb: CudaFunction,
    pub(super) lps_extension: CudaFunction,
    pub(super) lps_force: CudaFunction,
    pub(super) force: CudaFunction,
    pub(super) break_rows: CudaFunction,
    pub(super) broken_rows: CudaFunction,
    pub(super) energy: CudaFunction,
}

impl Kernels {
    pub(super) fn load(gpu: &Gpu, precision: Precision) -> Result<Self> {
        let f = |name: &str| gpu.function(precision, name);
        Ok(Kernels {
            pmb: f("matrix_pmb")?,
            lps_extension: f("matrix_lps_extension")?,
            lps_force: f("matrix_lps_force")?,
            force: f("matrix_force")?,
            break_rows: f("matrix_break")?,
            broken_rows: f("matrix_broken")?,
            energy: f("matrix_energy")?,
        })
    }
}

impl<T: Real> GpuMatrix<T> {
    /// Directed bonds per row: 1 in full storage, 2 in half.
    pub(super) fn bonds_per_row(&self) -> usize {
        match self.storage {
            Storage::Full => 1,
            Storage::Half => 2,
        }
    }

    pub(super) fn nrows(&self) -> usize {
        self.rows.len()
    }

    /// Number of bond rows held.
    pub fn row_count(&self) -> usize {
        self.nrows()
    }

    pub(super) fn check(&self, requested: bool) -> bool {
        // (several materials: where any pair breaks)
        requested && self.problem.breaks()
    }

    /// Parameters of the bond kernels, the rows differencing the displacement at device
    /// address `u` (0 for a kernel that reads none).
    pub(super) fn params(&self, check_bonds: bool, u: u64) -> MatrixParams {
        MatrixParams {
            check_bonds: i32::from(self.check(check_bonds)),
            u,
            ..self.base
        }
    }

    /// The bond kernels' parameters with the bond check off (made once, at setup).
    pub(super) fn addresses(&self) -> MatrixParams {
        let gpu = &*self.gpu;
        let m = &self.problem.material;
        let [xi, length, a, g, g_second, a_first, w] = self.vectors.addresses(gpu);
        MatrixParams {
            u: 0,
            xi,
            length,
            a,
            g,
            g_second,
            a_first,
            w,
            mu: addr(gpu, &self.mu),
            first: addr(gpu, &self.first),
            second: addr(gpu, &self.second),
            no_fail: addr(gpu, &self.no_fail),
            z: addr(gpu, &self.z),
            ze: addr(gpu, &self.ze),
            theta: addr(gpu, &self.theta),
            out: addr(gpu, &self.z),
            partial: addr(gpu, &self.partial),
            broken: self.broken.addr(gpu),
            volumes: addr(gpu, &self.volumes),
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
            material: self.materials.as_ref().map_or(0, |(m, _)| addr(gpu, m)),
            pair_table: self.materials.as_ref().map_or(0, |(_, t)| addr(gpu, t)),
            n_materials: self
                .problem
                .materials
                .as_ref()
                .map_or(0, |m| m.constants.len() as u32),
            pad_m: 0,
            at_ptr: addr(gpu, &self.at_ptr),
            at_col: addr(gpu, &self.at_col),
            force: 0,
            row_start: 0,
        }
    }

    /// Launch bond kernel `f` over `threads` threads, the rows differencing the
    /// displacement at device address `u` (`d n` values).
    pub(super) fn launch(
        &self,
        f: &CudaFunction,
        threads: usize,
        check_bonds: bool,
        u: u64,
    ) -> Result<()> {
        let p = self.params(check_bonds, u);
        // SAFETY: `p` holds this backend's buffers, sized for its rows and nodes, and `u`
        // (the caller's, `d n` values); each kernel stops at `rows` (and `n`); `ze`, `z`,
        // `theta` are up to date where it reads them.
        unsafe { self.gpu.launch(f, threads, &p) }
    }

    /// Launch row kernel `f` (`matrix_pmb`, `matrix_lps_extension`, `matrix_lps_force`)
    /// over the rows `rows` only; nothing for none.
    pub(super) fn launch_rows(
        &self,
        f: &CudaFunction,
        rows: Range<usize>,
        check_bonds: bool,
        u: u64,
    ) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let p = MatrixParams {
            row_start: rows.start as u64,
            rows: rows.end as u64,
            ..self.params(check_bonds, u)
        };
        // SAFETY: as `launch`; the kernel's rows are `rows`, within the backend's.
        unsafe { self.gpu.launch(f, rows.len(), &p) }
    }

    /// Directed bonds broken on the device since the last read.
    pub(super) fn take_broken(&mut self) -> Result<usize> {
        Ok(self.broken.take(&self.gpu)? as usize * self.bonds_per_row())
    }
}
