//! A run's checkpoint of its current step (`run.rs`; the format and the restart are
//! `restart.rs`): the state, the bond status and the failure history whole on the rank that
//! writes the file (across ranks gathered to rank 0 alone: `ranks::checkpoint_parts`), with
//! ADR's history and place, the probe rows, the snapshot list and the crack tips so far.

use super::ranks;
use super::restart::header_of;
use super::run::Runner;
use super::snapshot_thread::SnapshotThread;
use super::tips::TipOutput;
use crate::dynamics::{Adr, State};
use crate::output::checkpoint::{AdrPlace, Checkpoint};
use crate::setup::since;
use crate::{Real, Result};
use std::time::Instant;

impl<T: Real> Runner<T> {
    /// Write a checkpoint if one is due at the current step (see [`Runner::save_checkpoint`]).
    pub(super) fn checkpoint_if_due(
        &mut self,
        adr: Option<(&mut Adr<T>, (usize, usize))>,
    ) -> Result<()> {
        match &self.saver {
            Some(saver) if saver.due(self.state.step) => self.save_checkpoint(adr),
            _ => Ok(()),
        }
    }

    /// Write a checkpoint of the current step, whose state is on the host (nothing without
    /// an output folder, nor where this step's is written already); with `adr`, its history
    /// and place in the loop (load steps done, iterations done in the next).
    pub(super) fn save_checkpoint(
        &mut self,
        adr: Option<(&mut Adr<T>, (usize, usize))>,
    ) -> Result<()> {
        let step = self.state.step;
        let Some(saver) = self.saver.as_ref() else {
            return Ok(());
        };
        if saver.written_step == Some(step) {
            return Ok(());
        }
        let t0 = Instant::now();
        let (mut adr, place) = adr.unzip();
        // (across ranks the state, ADR's history and the bonds whole on rank 0 alone, which
        // writes the file; the other ranks send their parts and keep no copy)
        let (backend, state) = (self.backend.as_mut(), &mut self.state);
        let (bond_status, history) = ranks::checkpoint_parts(backend, state, adr.as_deref_mut())?;
        if !saver.writes() {
            // (a rank that sent its parts: no file to assemble, no header's pass over every
            // position)
            if let Some(saver) = self.saver.as_mut() {
                saver.passed(step);
            }
            self.out_times.checkpoints += since(t0);
            return Ok(());
        }
        let adr = adr.zip(place);
        let adr = adr.map(|(adr, (load_step, iteration))| AdrPlace {
            history: adr.history(),
            load_step,
            iteration,
        });
        let probes_csv = saver.probe_text(self.probes.as_ref())?;
        let snapshots = self.vtk.as_mut().map(SnapshotThread::entries).transpose()?;
        let tips = self.tips.as_ref().map(TipOutput::place).transpose()?;
        let impactors = (self.state.contact.as_ref()).map_or_else(Vec::new, |c| {
            c.impactors.iter().map(|i| i.motion()).collect()
        });
        // The state goes into the checkpoint and back, not copied.
        let ckpt = Checkpoint {
            header: header_of::<T>(&self.problem),
            state: std::mem::replace(&mut self.state, State::at_rest(0)),
            bond_status,
            history,
            adr,
            probes_csv,
            snapshots: snapshots.unwrap_or_default(),
            tips,
            impactors,
        };
        let saved = self.saver.as_mut().map_or(Ok(()), |s| s.save(&ckpt));
        self.state = ckpt.state;
        self.out_times.checkpoints += since(t0);
        saved
    }
}
