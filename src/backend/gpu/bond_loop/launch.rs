//! The kernel launches of `gpu-loop`: the parameter record of its bond kernels over its
//! device arrays, the force evaluation (PMB or LPS, with the fused bond check), and each
//! trait call of `Forces` (upload the displacement, launch, download the result), with the
//! scratch those calls allocate on first use.
//!
//! Units as in [`crate::backend::gpu`]: m, N/m^3, J.

use super::params::law_params;
use super::{GpuLoop, NAME};
use crate::backend::gpu::buffers::{addr, download};
use crate::gpu::device::driver_error;
use crate::gpu::params::BondParams;
use crate::gpu::Gpu;
use crate::material::Law;
use crate::{Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, ValidAsZeroBits};

/// The scratch buffer `slot` of `len` values, allocated on first use (after checking that it
/// fits: an error naming the bytes needed and free otherwise).
fn scratch<'a, U: DeviceRepr + ValidAsZeroBits>(
    gpu: &Gpu,
    slot: &'a mut Option<CudaSlice<U>>,
    len: usize,
) -> Result<&'a mut CudaSlice<U>> {
    if slot.is_none() {
        gpu.ensure_fits(NAME, len.max(1) * std::mem::size_of::<U>())?;
        *slot = Some(
            gpu.stream()
                .alloc_zeros::<U>(len.max(1))
                .map_err(driver_error)?,
        );
    }
    Ok(slot.as_mut().expect("allocated above"))
}

impl<T: Real> GpuLoop<T> {
    /// Bond-loop parameters reading displacement `u` and writing force density `force`
    /// (device addresses).
    pub(crate) fn bond_params(&self, u: u64, force: u64, check_bonds: bool) -> BondParams {
        let g = &self.gpu;
        let params = BondParams {
            slice_start: addr(g, &self.slice_start),
            lengths: addr(g, &self.lengths),
            neighbors: addr(g, &self.neighbors),
            nodes: addr(g, &self.nodes),
            volumes_only: i32::from(self.volumes_only),
            nodes_f32: addr(g, &self.nodes_f32),
            horizon_volume: addr(g, &self.horizon_volume),
            mu: addr(g, &self.mu),
            no_fail: addr(g, &self.no_fail),
            u,
            force,
            theta: addr(g, &self.theta),
            alpha: addr(g, &self.alpha),
            pcoef: addr(g, &self.pcoef),
            d_over_m: addr(g, &self.d_over_m),
            lps_pair: addr(g, &self.lps_pair),
            phi: addr(g, &self.phi),
            energy: self.energy.as_ref().map_or(0, |e| addr(g, e)),
            broken: self.broken.addr(g),
            stencil: self.stencil.as_ref().map_or(0, |s| addr(g, s)),
            slot_geometry: self.slot_geometry.as_ref().map_or(0, |(t, _)| addr(g, t)),
            lattice_weight: self.slot_geometry.as_ref().map_or(0.0, |&(_, w)| w),
            material: self.materials.as_ref().map_or(0, |(m, _)| addr(g, m)),
            pair_table: self.materials.as_ref().map_or(0, |(_, t)| addr(g, t)),
            n_materials: self
                .problem
                .materials
                .as_ref()
                .map_or(0, |m| m.names.len() as u32),
            ..law_params(
                &self.problem,
                self.problem.body.len(),
                check_bonds,
                self.full_volume,
            )
        };
        self.history.params(g, params)
    }

    /// Launch the force kernels (and, with `check_bonds`, the bond breaking: fused, or the
    /// failure pass of `failure.rs` in its order) for displacement `u` into `force` (device
    /// addresses).
    pub(super) fn launch_forces(&mut self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        let params = self.bond_params(u, force, check_bonds);
        self.forces_in_order(&params)
    }

    /// The kernels of a force evaluation with `params`: for LPS its dilatation kernel, then
    /// the force kernel (the loop `params` asks for: a softening law's, several materials',
    /// the lattice's with or without the slot table (baked where it is made), the plain
    /// list's, the general one).
    pub(crate) fn force_kernels(
        &self,
        params: &BondParams,
    ) -> (Option<&CudaFunction>, &CudaFunction) {
        match self.problem.material.law {
            Law::Pmb { .. } => {
                let plain = params.partial_volume == 0 && params.law.pmb.surface_correction == 0;
                let k = match (plain, params.stencil != 0) {
                    _ if params.bond_damage != 0 => &self.k.pmb_force_softening,
                    _ if params.material != 0 => &self.k.pmb_force_materials,
                    _ if params.slot_geometry != 0 => match &self.baked {
                        Some(baked) => baked,
                        None => &self.k.pmb_force_lattice_table,
                    },
                    (true, true) => &self.k.pmb_force_plain_lattice,
                    (true, false) => &self.k.pmb_force_plain,
                    // (the general loop tests `stencil` itself)
                    (false, _) => &self.k.pmb_force,
                };
                (None, k)
            }
            law @ Law::Lps { .. } => {
                let (dilatation, force) = self.k.lps(law);
                (Some(dilatation), force)
            }
        }
    }

    /// Launch the force kernels with `params` (which may ask for the fused explicit update);
    /// a softening law's kernel breaks nothing (its failure pass does: `failure.rs`).
    pub(super) fn launch_force_kernels(&self, params: &BondParams) -> Result<()> {
        let n = self.problem.body.len();
        let (dilatation, force) = self.force_kernels(params);
        // SAFETY: `params` holds this backend's buffers, sized for `n` nodes and their bonds;
        // `u` and `force` address `d n` values.
        unsafe {
            if let Some(dilatation) = dilatation {
                self.gpu.launch(dilatation, n, params)?;
            }
            self.gpu.launch(force, n, params)
        }
    }

    /// Bonds broken on the device since the last read.
    pub(crate) fn read_broken(&mut self) -> Result<usize> {
        Ok(self.broken.take(&self.gpu)? as usize)
    }

    /// Device address of displacement `u`, uploaded for a trait call: into the time loop's
    /// own displacement while that holds no state (the force evaluation of
    /// `Explicit::start`, before the first `advance_explicit`, which uploads the state
    /// anyway), else into scratch allocated on first use. So a run needs no scratch the
    /// device loop does not (a model that fills the GPU still starts).
    fn upload_u(&mut self, u: &[T]) -> Result<u64> {
        let gpu = self.gpu.clone();
        let target = match self.stepper.resident_step {
            None => &mut self.stepper.state.u,
            Some(_) => scratch(&gpu, &mut self.u_in, u.len())?,
        };
        gpu.stream().memcpy_htod(u, target).map_err(driver_error)?;
        Ok(addr(&gpu, target))
    }

    /// The force buffer of a trait call (its address): the time loop's own while it holds
    /// no state, else scratch allocated on first use (as [`upload_u`](Self::upload_u)).
    fn force_out(&mut self, len: usize) -> Result<u64> {
        let gpu = self.gpu.clone();
        Ok(match self.stepper.resident_step {
            None => addr(&gpu, &self.stepper.state.f),
            Some(_) => addr(&gpu, scratch(&gpu, &mut self.f_out, len)?),
        })
    }

    pub(super) fn try_internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        let u = self.upload_u(u)?;
        let f_out = self.force_out(force.len())?;
        self.launch_forces(u, f_out, false)?;
        self.download_force(force)
    }

    /// The force a trait call wrote into [`force_out`](Self::force_out)'s buffer.
    fn download_force(&self, force: &mut [T]) -> Result<()> {
        let buffer = match self.stepper.resident_step {
            None => &self.stepper.state.f,
            Some(_) => self.f_out.as_ref().expect("allocated by force_out"),
        };
        download(&self.gpu, buffer, force)
    }

    /// Breaking (or softening) and the force at `u`, in the order `break_timing` says, where
    /// the model's failure keeps a history (`failure.rs`); else `None` (the trait's default,
    /// the breaking pass then the force).
    pub(super) fn try_break_and_force(
        &mut self,
        u: &[T],
        force: &mut [T],
    ) -> Result<Option<usize>> {
        if !self.problem.breaks() || super::failure::FailurePass::of(&self.problem).is_none() {
            return Ok(None);
        }
        let u = self.upload_u(u)?;
        let f_out = self.force_out(force.len())?;
        self.launch_forces(u, f_out, true)?;
        self.download_force(force)?;
        Ok(Some(self.read_broken()?))
    }

    pub(super) fn try_break_bonds(&mut self, u: &[T]) -> Result<usize> {
        if !self.problem.breaks() {
            return Ok(0);
        }
        let u = self.upload_u(u)?;
        let params = self.bond_params(u, 0, true);
        // (a softening law: each bond's damage at `u`, as cpu-loop's `break_bonds`)
        if params.bond_damage != 0 {
            self.failure_pass(super::failure::FailurePass::Soften, &params)?;
            return self.read_broken();
        }
        // SAFETY: as in `launch_forces`; the kernel writes only `mu` and the counter.
        unsafe {
            self.gpu
                .launch(&self.k.break_bonds, self.problem.body.len(), &params)?
        };
        self.read_broken()
    }

    /// The dilatation at `u` into `theta`; `false` (nothing done) for a bond-based law.
    pub(super) fn try_dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if !matches!(self.problem.material.law, Law::Lps { .. }) {
            return Ok(false);
        }
        let u = self.upload_u(u)?;
        let params = self.bond_params(u, 0, false);
        // SAFETY: as in `launch_forces`; the kernel writes only `theta`.
        let dilatation = self.k.lps(self.problem.material.law).0;
        unsafe {
            self.gpu
                .launch(dilatation, self.problem.body.len(), &params)?
        };
        download(&self.gpu, &self.theta, theta)?;
        Ok(true)
    }

    pub(super) fn try_strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let lps = matches!(self.problem.material.law, Law::Lps { .. });
        let n = self.problem.body.len();
        let u = self.upload_u(u)?;
        let gpu = self.gpu.clone();
        scratch(&gpu, &mut self.energy, n)?;
        let params = self.bond_params(u, 0, false);
        // SAFETY: as in `launch_forces`; the kernels write `theta` and `energy`.
        unsafe {
            if lps {
                let dilatation = self.k.lps(self.problem.material.law).0;
                self.gpu.launch(dilatation, n, &params)?;
            }
            self.gpu.launch(&self.k.strain_energy, n, &params)?;
        }
        let per_node = self
            .gpu
            .stream()
            .clone_dtoh(self.energy.as_ref().expect("allocated above"))
            .map_err(driver_error)?;
        Ok(per_node[..n].iter().sum())
    }

    pub(super) fn try_damage(&self, phi: &mut [T]) -> Result<()> {
        let params = self.bond_params(0, 0, false);
        // SAFETY: as in `launch_forces`; the kernel reads geometry and `mu`, writes `phi`.
        unsafe {
            self.gpu
                .launch(&self.k.damage, self.problem.body.len(), &params)?
        };
        download(&self.gpu, &self.phi, phi)
    }
}
