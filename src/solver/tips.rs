//! Crack tips of a running problem: when to sample, the exclusion zone and threshold of the
//! problem, the backend's damage handed to the tip finder and tracker (`output::tips`), rows
//! into `crack_tips.csv` and the summary's `crack_tips` block. Lengths in metres, times in
//! seconds, speeds in m/s.

use crate::dynamics::Forces;
use crate::model::BoundaryKind;
use crate::output::tips::{
    exclusion_mask, find_cracks, threshold_for, DamageField, TipCsv, TipTracker,
};
use crate::output::CrackTipSummary;
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::path::Path;

/// The crack-tip output of one run.
pub(crate) struct TipOutput {
    every: usize,
    threshold: f64,
    excluded: Vec<bool>,
    tracker: TipTracker,
    csv: TipCsv,
    /// The step of the latest sample.
    sampled: Option<usize>,
}

impl TipOutput {
    /// The output of `problem` in `dir`: none without a folder, for a body that cannot crack
    /// (`solver.damage = false`), or with `output.tips_every = 0`.
    pub(crate) fn open(problem: &Problem, dir: Option<&Path>) -> Result<Option<TipOutput>> {
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
        let excluded = excluded_nodes(problem);
        // No tip outruns the dilatational wave: 2 sqrt(E / rho) bounds it for any Poisson
        // ratio up to 0.4 in 3D and any in 2D.
        let max_speed = 2.0 * (m.material.youngs_modulus / m.material.density).sqrt();
        Ok(Some(TipOutput {
            every,
            threshold,
            excluded,
            tracker: TipTracker::new(body.delta, max_speed),
            csv: TipCsv::create(&dir.join("crack_tips.csv"), body.dim())?,
            sampled: None,
        }))
    }

    /// Whether a sample is due after `step` (`last`: the run's last step).
    pub(crate) fn due(&self, step: usize, last: bool) -> bool {
        (step.is_multiple_of(self.every) || last) && self.sampled != Some(step)
    }

    /// Sample the damage of `forces` at `step`, time `time`.
    pub(crate) fn sample<T: Real>(
        &mut self,
        problem: &Problem,
        step: usize,
        time: f64,
        forces: &mut dyn Forces<T>,
    ) -> Result<()> {
        let body = &problem.body;
        let mut phi = vec![T::zero(); body.len()];
        forces.damage(&mut phi)?;
        let damage: Vec<f64> = phi.into_par_iter().map(|x| x.f64()).collect();
        let field = DamageField {
            positions: &body.positions,
            dim: body.dim(),
            dx: body.dx,
            delta: body.delta,
            damage: &damage,
            excluded: &self.excluded,
            threshold: self.threshold,
        };
        let rows = self.tracker.update(time, &find_cracks(&field));
        self.sampled = Some(step);
        self.csv.write(&rows)
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
        }
    }
}

/// Per node, whether the tip finder ignores its damage (`docs/crack-tips.md`, rule 1): within
/// one horizon of the body's boundary, of a loaded region or of a layer added outside the body.
pub fn excluded_nodes(problem: &Problem) -> Vec<bool> {
    let body = &problem.body;
    exclusion_mask(&body.positions, body.dim(), body.delta, &loaded(problem))
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
