//! Models scaled to a target node count: `discretization.dx` (and `discretization.delta` where
//! the model gives the horizon in metres, so `delta / dx` stays) is multiplied by the `d`-th
//! root of (nodes now / nodes wanted), repeated a few times because lattice counts move in
//! whole layers. Only the body is built while searching; the neighbour search runs once, at
//! the chosen spacing.

use crate::geometry::build_body;
use crate::model::{self, Model};
use crate::setup::memory::ModelCounts;
use crate::setup::Problem;
use crate::{Error, Precision, Result};
use std::path::Path;

/// A problem built at the spacing that gives about the wanted node count.
pub struct ScaledProblem {
    pub problem: Problem,
    /// The `--set` overrides that reproduce it (the caller's plus the spacing).
    pub overrides: Vec<String>,
}

/// Relative distance to the target at which the search stops.
const CLOSE_ENOUGH: f64 = 0.02;
/// Most bodies built while searching.
const TRIES: usize = 6;

/// Build the model at `path` (with `overrides`) at the spacing whose node count is closest to
/// `target` among the few tried; `None` builds it as given. `guard` (the memory guard)
/// sees the model's numbers first, at the target's node count before any body is built and
/// at the chosen spacing before the problem is; its error stops the build.
pub fn scaled_problem(
    path: &Path,
    overrides: &[String],
    target: Option<usize>,
    guard: &dyn Fn(&ModelCounts) -> Result<()>,
) -> Result<ScaledProblem> {
    let dir = path.parent().map(|p| p.to_path_buf()).unwrap_or_default();
    let base = model::load(path, overrides)?;
    let mut chosen = overrides.to_vec();
    if let Some(target) = target {
        if target == 0 {
            return Err(Error::Usage {
                option: "--sizes".into(),
                message: "node counts must be at least 1".into(),
            });
        }
        if base.geometry.points_csv.is_some() || base.geometry.mesh.is_some() {
            return Err(Error::Usage {
                option: "--sizes".into(),
                message: format!(
                    "{} reads its nodes from a file, whose count does not follow dx; \
                     leave --sizes out",
                    path.display()
                ),
            });
        }
        let at_target = ModelCounts {
            nodes: target as f64,
            ..ModelCounts::of(&base, &dir, Precision::F64)
        };
        guard(&at_target)?;
        let scale = search_scale(&base, &dir, target)?;
        chosen.extend(spacing_overrides(&base, scale));
    }
    let m = model::load(path, &chosen)?;
    guard(&ModelCounts::of(&m, &dir, Precision::F64))?;
    let problem = Problem::build(m, &dir)?;
    Ok(ScaledProblem {
        problem,
        overrides: chosen,
    })
}

/// The factor on `dx` whose body is closest to `target` nodes.
fn search_scale(base: &Model, dir: &Path, target: usize) -> Result<f64> {
    let d = base.discretization.dimension.d() as f64;
    let count = |scale: f64| -> Result<usize> {
        let mut m = base.clone();
        scale_spacing(&mut m, scale);
        Ok(build_body(&m, dir)?.len())
    };
    let (mut scale, mut n) = (1.0, count(1.0)?);
    let (mut best, mut best_err) = (scale, rel_err(n, target));
    for _ in 0..TRIES {
        if best_err < CLOSE_ENOUGH || n == 0 {
            break;
        }
        scale *= (n as f64 / target as f64).powf(1.0 / d);
        n = count(scale)?;
        let err = rel_err(n, target);
        if err < best_err {
            (best, best_err) = (scale, err);
        }
    }
    Ok(best)
}

fn rel_err(n: usize, target: usize) -> f64 {
    (n as f64 - target as f64).abs() / target as f64
}

fn scale_spacing(m: &mut Model, scale: f64) {
    let disc = &mut m.discretization;
    disc.dx *= scale;
    if let Some(delta) = disc.delta.as_mut() {
        *delta *= scale;
    }
}

/// `--set` lines for the spacing of `base` times `scale`.
fn spacing_overrides(base: &Model, scale: f64) -> Vec<String> {
    let disc = &base.discretization;
    let mut out = vec![format!("discretization.dx={:e}", disc.dx * scale)];
    if let Some(delta) = disc.delta {
        out.push(format!("discretization.delta={:e}", delta * scale));
    }
    out
}
