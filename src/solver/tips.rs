//! Crack tips of a running problem: when to sample, the exclusion zone and threshold of the
//! problem, the backend's damage handed to the tip finder and tracker (`output::tips`), rows
//! into `crack_tips.csv` and the summary's `crack_tips` block. Lengths in metres, times in
//! seconds, speeds in m/s.
//!
//! Across ranks every rank samples at the same steps, since the backend's broken-bond count
//! (summed) and the damage (each rank's owned nodes', gathered to rank 0 alone) are
//! collective; rank 0 alone holds the exclusion zone, finds the cracks in the whole field,
//! keeps the tracker, writes `crack_tips.csv` and the summary's block. The other ranks hold
//! a participant's [`TipOutput`]: no per-node array, no finder.

use super::ranks::damage_on_root;
use crate::backend::Backend;
use crate::material::MaterialConstants;
use crate::model::BoundaryKind;
use crate::neighbors::FamilyFinder;
use crate::output::checkpoint::TipsPlace;
use crate::output::tips::{
    exclusion_mask, exclusion_mask_by, find_cracks, find_cracks_among, threshold_for, Columns,
    Crack, DamageField, TipCsv, TipTracker,
};
use crate::output::{CrackTipSummary, TipSeconds};
use crate::setup::since;
use crate::setup::Problem;
use crate::{Real, Result};
use std::path::Path;
use std::time::Instant;

/// The crack-tip output of one run.
pub(crate) struct TipOutput {
    every: usize,
    threshold: f64,
    excluded: Vec<bool>,
    /// A thin plate's columns, read in place of the nodes (`output/tips/columns.rs`).
    columns: Option<Columns>,
    tracker: TipTracker,
    /// The file (`None` on a rank of a distributed run that does not write it).
    csv: Option<TipCsv>,
    /// The step of the latest sample.
    sampled: Option<usize>,
    /// The broken-bond count and the cracks of the latest sample, where the damage field is
    /// a function of the bond status ([`damage_follows_status`]): a sample at the same count
    /// has the same field, so the same cracks, and reads no damage.
    latest: Option<(usize, Vec<Crack>)>,
    /// Where the samples' time went.
    seconds: TipSeconds,
    reuse: bool,
    /// A rank of a distributed run other than rank 0: it takes part in the collective
    /// calls of a sample and finds no crack (no exclusion zone, no tracker).
    participant: bool,
}

impl TipOutput {
    /// The output of `problem` in `dir`: none without a folder, for a body that cannot crack
    /// (`solver.damage = false`), or with `output.tips_every = 0`. With `resume`, the file
    /// and the tracker go on from a checkpoint's (a checkpoint without them starts both anew).
    /// `writes`: whether this process writes the file (rank 0 of a distributed run); a rank
    /// that does not is a participant (see the module documentation).
    pub(crate) fn open(
        problem: &Problem,
        dir: Option<&Path>,
        resume: Option<&TipsPlace>,
        writes: bool,
    ) -> Result<Option<TipOutput>> {
        let m = &problem.model;
        let steps = m.solver.steps;
        let every = m.output.tips_every.unwrap_or((steps / 100).max(1));
        let Some(dir) = dir else { return Ok(None) };
        if !m.solver.damage || every == 0 {
            return Ok(None);
        }
        let body = &problem.body;
        let threshold = m
            .output
            .tips_threshold
            .unwrap_or_else(|| threshold_for(body.dim(), body.delta / body.dx));
        let participant = !writes;
        let columns = match body.dim() {
            3 if !participant => Columns::of_thin_body(&body.positions, body.dx, body.delta),
            _ => None,
        };
        let excluded = match (&columns, participant) {
            (_, true) => Vec::new(),
            (Some(c), false) => {
                exclusion_mask(&c.positions, 2, body.delta, &c.any(&loaded(problem)))
            }
            (None, false) => {
                exclusion_mask_by(&FamilyFinder::for_body(body, body.delta), &loaded(problem))
            }
        };
        // No tip outruns the dilatational wave: 2 sqrt(E / rho) bounds it for any Poisson
        // ratio up to 0.4 in 3D and any in 2D (of the fastest of several materials).
        let materials = match &problem.materials {
            Some(m) => m.constants.iter().collect(),
            None => vec![&problem.material],
        };
        let fastest = |f: &dyn Fn(&MaterialConstants) -> f64| {
            materials.iter().map(|m| f(m)).fold(0.0, f64::max)
        };
        let max_speed = fastest(&|m| 2.0 * (m.youngs_modulus / m.density).sqrt());
        let burst_speed = fastest(&|m| m.dilatational_wave_speed());
        let path = dir.join("crack_tips.csv");
        let memory = (resume.filter(|_| !participant))
            .map(|p| p.tracker.clone())
            .unwrap_or_default();
        let tracker =
            TipTracker::resumed(body.delta, max_speed, memory).with_burst_speed(burst_speed);
        let csv = match (writes, resume) {
            (false, _) => None,
            (true, Some(p)) => Some(TipCsv::resume(&path, &p.csv, body.dim())?),
            (true, None) => Some(TipCsv::create(&path, body.dim())?),
        };
        let sampled = resume.and_then(|p| p.sampled);
        Ok(Some(TipOutput {
            every,
            threshold,
            excluded,
            columns,
            tracker,
            csv,
            sampled,
            latest: None,
            seconds: TipSeconds::default(),
            reuse: damage_follows_status(problem),
            participant,
        }))
    }

    /// Where the output stands, for a checkpoint (the file read back as it is on disk; no
    /// row on a rank that does not write it, whose checkpoint is not written either).
    pub(crate) fn place(&self) -> Result<TipsPlace> {
        let csv = match &self.csv {
            Some(csv) => std::fs::read(csv.path()).map_err(|e| crate::Error::io(csv.path(), e))?,
            None => Vec::new(),
        };
        Ok(TipsPlace {
            csv,
            sampled: self.sampled,
            tracker: self.tracker.memory().clone(),
        })
    }

    /// Whether a sample is due after `step` (`last`: the run's last step).
    pub(crate) fn due(&self, step: usize, last: bool) -> bool {
        (step.is_multiple_of(self.every) || last) && self.sampled != Some(step)
    }

    /// Sample the damage of `backend` at `step`, time `time` (collective across ranks: the
    /// broken-bond count, then the damage unless the count is unchanged).
    pub(crate) fn sample<T: Real>(
        &mut self,
        problem: &Problem,
        step: usize,
        time: f64,
        backend: &mut dyn Backend<T>,
    ) -> Result<()> {
        let broken = backend.as_forces().broken_bonds();
        let cracks = match &self.latest {
            Some((count, cracks)) if self.reuse && *count == broken => {
                self.seconds.reused += 1;
                cracks.clone()
            }
            _ => self.find(problem, backend)?,
        };
        self.sampled = Some(step);
        if self.participant {
            self.latest = Some((broken, cracks));
            return Ok(());
        }
        let t0 = Instant::now();
        let rows = self.tracker.update(time, &cracks);
        self.latest = Some((broken, cracks));
        let written = self.csv.as_mut().map_or(Ok(()), |csv| csv.write(&rows));
        self.seconds.tracker += since(t0);
        written
    }

    /// The cracks of the damage field of `backend` (none on a participant).
    fn find<T: Real>(
        &mut self,
        problem: &Problem,
        backend: &mut dyn Backend<T>,
    ) -> Result<Vec<Crack>> {
        let body = &problem.body;
        let t0 = Instant::now();
        // node by node, a backend that thresholds on its device sends back only the nodes
        // at or above the threshold; otherwise the whole damage field is read
        let over = match (&self.columns, backend.rank_outputs().is_some()) {
            (None, false) => backend.as_forces().nodes_at_or_above(self.threshold)?,
            _ => None,
        };
        let whole = match over {
            Some(_) => Vec::new(),
            None => damage_on_root(backend, body.len())?,
        };
        if self.participant {
            self.seconds.damage += since(t0);
            return Ok(Vec::new());
        }
        self.seconds.damage += since(t0);
        let t0 = Instant::now();
        let (positions, dim, damage) = match &self.columns {
            Some(c) => (&c.positions[..], 2, c.damage(&whole)),
            None => (&body.positions[..], body.dim(), whole),
        };
        let field = DamageField {
            positions,
            dim,
            dx: body.dx,
            delta: body.delta,
            damage: &damage,
            excluded: &self.excluded,
            threshold: self.threshold,
        };
        let mut cracks = match &over {
            Some(nodes) => find_cracks_among(&field, nodes),
            None => find_cracks(&field),
        };
        if let Some(c) = &self.columns {
            for tip in cracks.iter_mut().flat_map(|k| k.tips.iter_mut()) {
                *tip = c.to_body(*tip);
            }
        }
        self.seconds.finder += since(t0);
        Ok(cracks)
    }

    /// The summary's `crack_tips` block.
    pub(crate) fn summary(&self) -> CrackTipSummary {
        let s = self.tracker.stats();
        CrackTipSummary {
            threshold: self.threshold,
            samples: s.samples,
            tips: s.tips,
            tips_at_end: s.tips_now,
            longest_crack: s.longest_crack,
            fastest_tip_speed: s.fastest_tip,
            first_branching_time: s.first_branching,
            bursts: s.bursts,
            seconds: Some(self.seconds),
            thin_axis: self.columns.as_ref().map(|c| c.axis_name().to_string()),
        }
    }
}

/// Whether the damage of `problem`'s nodes is a function of the bond status alone (brittle
/// bonds: the beta-weighted fraction of broken bonds), so an unchanged broken-bond count
/// means an unchanged damage field. Not under a softening law, whose bonds gain damage
/// before they break.
fn damage_follows_status(problem: &Problem) -> bool {
    problem.material.softening.is_none()
}

/// Per node, whether the tip finder ignores its damage (`docs/crack-tips.md`, rule 1): within
/// one horizon of the body's boundary, of a loaded region or of a layer added outside the body.
pub fn excluded_nodes(problem: &Problem) -> Vec<bool> {
    let body = &problem.body;
    exclusion_mask_by(&FamilyFinder::for_body(body, body.delta), &loaded(problem))
}

/// Per node, whether it belongs to a region a boundary condition acts on during the run
/// (every kind but an initial velocity), leaving out a region that holds the whole body (a
/// body force everywhere is no loading layer), or to a layer added outside the body
/// (`shape = "layer"`), loaded or not.
fn loaded(problem: &Problem) -> Vec<bool> {
    let n = problem.body.len();
    let mut mask = crate::geometry::layers::layer_mask(&problem.body.layers, n);
    for b in &problem.model.boundary {
        if b.kind == BoundaryKind::InitialVelocity {
            continue;
        }
        let nodes = problem.region(&b.region);
        if nodes.len() == n {
            continue;
        }
        for &i in nodes {
            mask[i] = true;
        }
    }
    mask
}
