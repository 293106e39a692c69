//! The traits `gpu-matrix` implements: `Forces` (each call's device work in `calls.rs`, its
//! faults named), `DeviceForces` (the device time loop's force evaluation, the loop made on
//! first use) and `Backend` (the generic device loop, ADR on the device, the footprint).
//!
//! Units: as in [`crate::backend::gpu`]; footprints in bytes.

use super::{GpuMatrix, NAME};
use crate::backend::gpu::buffers::download;
use crate::backend::gpu::time_loop::{self, DeviceForces, DeviceLoop};
use crate::backend::gpu::{adr, device_fault};
use crate::backend::{Backend, Footprint};
use crate::dynamics::{Adr, AdrCall, ExplicitCall, Forces, State};
use crate::output::{ProbeRegions, ProbeValues};
use crate::{Real, Result};

impl<T: Real> DeviceForces<T> for GpuMatrix<T> {
    fn loop_if_made(&mut self) -> Option<&mut DeviceLoop<T>> {
        self.stepper.as_mut()
    }

    fn make_loop(&mut self) -> Result<()> {
        self.time_loop()
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
        let fault = device_fault(NAME, "dilatation");
        self.try_dilatation(u, theta).map_err(fault)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.try_strain_energy(u)
            .map_err(device_fault(NAME, "strain energy"))
    }

    fn broken_bonds(&self) -> usize {
        (self.precracked_rows + self.broken.seen() as usize) * self.bonds_per_row()
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        let mut mu = vec![0u8; self.nrows()];
        download(&self.gpu, &self.mu, &mut mu)
            .map_err(device_fault(NAME, "bond status download"))?;
        Ok(self.rows.bond_status(&mu))
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
        time_loop::advance_explicit(self, NAME, call)
    }

    fn advance_adr(&mut self, call: AdrCall<'_, T>) -> Result<usize> {
        adr::advance_adr(self, NAME, call)
    }

    fn sync_state(&mut self, state: &mut State<T>) -> Result<()> {
        adr::sync_state(self, NAME, state)
    }

    fn sync_adr(&mut self, adr: &mut Adr<T>) -> Result<()> {
        adr::sync_adr(self, NAME, adr)
    }

    fn state_changed(&mut self, _state: &State<T>) -> Result<()> {
        time_loop::state_changed(self);
        Ok(())
    }

    fn max_abs_displacement(&mut self, state: &State<T>) -> Result<Option<f64>> {
        time_loop::max_abs_displacement(self, NAME, state)
    }

    fn probe_values(
        &mut self,
        state: &State<T>,
        regions: &ProbeRegions,
    ) -> Result<Vec<ProbeValues>> {
        time_loop::probe_values(self, NAME, state, regions)
    }
}
