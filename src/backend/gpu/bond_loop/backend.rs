//! The traits `gpu-loop` implements: `Forces` (each call's device work in `launch.rs`, its
//! faults named), `DeviceForces` (the device time loop's force evaluation) and `Backend` (the
//! fused explicit loop, ADR on the device, the footprint: bytes held and moved per step).
//!
//! Units: as in [`crate::backend::gpu`]; footprints in bytes.

use super::fused::advance_fused;
use super::{GpuLoop, NAME};
use crate::backend::gpu::buffers::download;
use crate::backend::gpu::time_loop::{self, DeviceForces, DeviceLoop};
use crate::backend::gpu::{adr, device_fault, rename};
use crate::backend::{Backend, Footprint};
use crate::dynamics::forces::{bond_count_damage, count_damage, pairs_broken};
use crate::dynamics::{Adr, AdrCall, ExplicitCall, Forces, State};
use crate::gpu::layout::{status_words, unpack_status};
use crate::material::{FailureHistory, Law};
use crate::output::{ProbeRegions, ProbeValues};
use crate::{Real, Result};
use rayon::prelude::*;

impl<T: Real> Forces<T> for GpuLoop<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.try_internal_force(u, force)
            .map_err(device_fault(NAME, "force evaluation"))
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.try_break_bonds(u)
            .map_err(device_fault(NAME, "bond breaking"))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        let fault = device_fault(NAME, "bond breaking and force evaluation");
        match self.try_break_and_force(u, force).map_err(fault)? {
            Some(broken) => Ok(broken),
            None => {
                let broken = self.break_bonds(u)?;
                self.internal_force(u, force)?;
                Ok(broken)
            }
        }
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        self.try_damage(phi).map_err(device_fault(NAME, "damage"))
    }

    fn nodes_at_or_above(&mut self, threshold: f64) -> Result<Option<Vec<usize>>> {
        self.try_nodes_over(threshold)
            .map_err(device_fault(NAME, "crack nodes"))
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
        self.precracked + self.broken.seen() as usize
    }

    fn bond_count_damage(&self, offsets: &[usize]) -> Result<Vec<f64>> {
        // (a softening law: each bond counts by what it keeps, from its damage)
        if self.history.bond_damage.is_some() {
            let status = self.bond_status()?;
            let damage = self.bond_damage()?;
            return Ok(bond_count_damage(offsets, &status, damage.as_deref()));
        }
        let mut words = vec![0u32; status_words(self.layout.padded_len())];
        download(&self.gpu, &self.mu, &mut words)
            .map_err(device_fault(NAME, "bond status download"))?;
        let intact = self.layout.intact_per_node(&words);
        Ok(intact
            .par_iter()
            .enumerate()
            .map(|(i, &kept)| count_damage(kept, offsets[i + 1] - offsets[i]))
            .collect())
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        let slots = self.layout.padded_len();
        let mut words = vec![0u32; status_words(slots)];
        download(&self.gpu, &self.mu, &mut words)
            .map_err(device_fault(NAME, "bond status download"))?;
        Ok(match &self.lattice {
            Some(st) => st.to_csr(&words, &self.problem.families),
            None => self.layout.to_csr(&unpack_status(&words, slots)),
        })
    }

    fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        self.bond_damage_csr()
            .map_err(device_fault(NAME, "bond damage download"))
    }

    fn failure_history(&self) -> Result<FailureHistory<T>> {
        self.history()
            .map_err(device_fault(NAME, "failure history download"))
    }

    /// Downloads the whole status (the pairs are few, but the status bits of one bond are
    /// not addressable by its CSR index on the host): crack-face contact on the host loop.
    fn bonds_broken(&self, pairs: &[[u32; 2]]) -> Result<Vec<bool>> {
        let status = self.bond_status()?;
        let families = &self.problem.families;
        Ok(pairs_broken(families, pairs, |k| status[k] == 0))
    }
}

impl<T: Real> GpuLoop<T> {
    pub fn memory_bytes(&self) -> usize {
        [
            self.slice_start.num_bytes(),
            self.lengths.num_bytes(),
            self.neighbors.num_bytes(),
            self.stencil.as_ref().map_or(0, |s| s.num_bytes()),
            self.slot_geometry
                .as_ref()
                .map_or(0, |(t, _)| t.num_bytes()),
            self.nodes.num_bytes(),
            self.nodes_f32.num_bytes(),
            self.horizon_volume.num_bytes(),
            self.no_fail.num_bytes(),
            self.mu.num_bytes(),
            self.theta.num_bytes(),
            self.alpha.num_bytes(),
            self.pcoef.num_bytes(),
            self.d_over_m.num_bytes(),
            self.lps_pair.num_bytes(),
            self.u_in.as_ref().map_or(0, |b| b.num_bytes()),
            self.f_out.as_ref().map_or(0, |b| b.num_bytes()),
            self.phi.num_bytes(),
            self.energy.as_ref().map_or(0, |b| b.num_bytes()),
            self.broken.bytes(),
            self.history.num_bytes(),
            self.stepper.bytes(),
        ]
        .iter()
        .sum()
    }

    pub fn bytes_per_step(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, nb, d) = (
            self.problem.body.len(),
            self.problem.families.bonds(),
            self.dim,
        );
        // One step of the device loop (`fused.rs`): per bond the neighbour
        // index and the status bit (no weight); per node the record (position and volume,
        // 32 bytes in f64, the f32 record's 16 in f32), family size, slice start share
        // ignored, no-fail flag, and per dof u read,
        // b read, v read and written, u_next written (f and a are stored only on a call's last
        // step); LPS adds alpha, p, d/m read, theta written and read once more, and the
        // (alpha, p theta) pair written once and gathered once.
        // Padding of the sliced order not counted.
        let lps = matches!(self.problem.material.law, Law::Lps { .. });
        let record = if t == 4 { 16 } else { 32 };
        let node = record + 4 + 1 + 5 * d * t + if lps { 5 * t + 2 * t } else { 0 };
        // (on a full box lattice no index, a status bit per stencil slot)
        let bonds = match &self.lattice {
            Some(st) => (n * st.slots()).div_ceil(8),
            None => nb * 4 + nb.div_ceil(8),
        };
        bonds + n * node
    }
}

impl<T: Real> DeviceForces<T> for GpuLoop<T> {
    fn loop_if_made(&mut self) -> Option<&mut DeviceLoop<T>> {
        Some(&mut self.stepper)
    }

    fn launch_forces(&mut self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        GpuLoop::launch_forces(self, u, force, check_bonds)
    }

    fn read_broken(&mut self) -> Result<usize> {
        GpuLoop::read_broken(self)
    }
}

impl<T: Real> Backend<T> for GpuLoop<T> {
    fn name(&self) -> &'static str {
        NAME
    }

    fn footprint(&self) -> Footprint {
        Footprint::new(self.memory_bytes(), self.bytes_per_step())
    }

    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        // Contact and impactors (`docs/contact.md`) run in the host loop: the bond forces
        // on the device each step, the contact forces on the host.
        if call.state.contact.is_some() {
            return call.on_host(self);
        }
        advance_fused(self, call).map_err(|e| rename(e, NAME))
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
