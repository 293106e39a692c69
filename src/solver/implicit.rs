//! `solve-static`: the linear static equilibrium `K u = f_ext` of a model, solved directly.
//!
//! - `K` is the global stiffness of the initial bond status (pre-cracks), assembled from the
//!   operators (`operators::stiffness`); for nonlinear PMB it is the tangent at the reference
//!   configuration. Bonds do not break: bonds the solution stretches beyond the critical
//!   stretch are counted and reported as a warning.
//! - Prescribed dofs (Dirichlet): fixed and displacement conditions at their full value,
//!   velocity conditions at the displacement they reach at the end of the run the model
//!   describes (`solver.steps` times the run's time step). Loads: body forces and tractions
//!   at their full value, `f_ext = b V` in newtons.
//! - Rigid-body modes no condition holds (a free body, a piece cut off by pre-cracks) are
//!   removed by [`RigidModes`]: supports that carry no load when the loads are in equilibrium,
//!   and a solution with zero volume-weighted mean translation and rotation. Loads out of
//!   equilibrium on such a body have no static solution and are refused.
//! - The reported residual (`static_residual` in `summary.json`) is `|K u - f|` over the free
//!   dofs (neither prescribed nor supports), relative to the larger of `|f|` and `|K u_p|`
//!   there (`u_p`: the prescribed values alone). The load the supports carry, relative to the
//!   same scale, is `static_solve.support_load`: with balanced loads it is round-off, the
//!   free residual summed onto a few dofs (about `sqrt(dofs)` times the free residual).
//!
//! Outputs are those of `run`: a VTK snapshot (step 1), `summary.json`, `damage.png`,
//! `probes.csv` (one row; forces in newtons).

use super::linear::{residuals, solve};
use super::outputs::{self, initial_summary, Snapshot};
use super::rigid::RigidModes;
use super::time_step::choose_dt;
use crate::backend::CpuLoop;
use crate::dynamics::{Forces, Loads};
use crate::operators::stiffness::assemble_stiffness;
use crate::operators::Mat;
use crate::output::{peak_rss_bytes, OutputFolder, RunStatus, StaticSolveInfo, Summary};
use crate::setup::Problem;
use crate::{Error, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Largest relative load imbalance along free rigid modes taken for round-off (and relieved);
/// above it the loads are out of equilibrium and the solve is refused.
pub const MAX_IMBALANCE: f64 = 1e-8;

/// Residual a static solve must reach to count as converged.
pub const TOLERANCE: f64 = 1e-10;

/// Where a static solve writes.
#[derive(Debug, Clone, Default)]
pub struct StaticOptions {
    /// Output folder (created if missing); `None` writes nothing.
    pub out_dir: Option<PathBuf>,
}

/// The result of a static solve.
pub struct StaticOutcome {
    /// Displacement, m, flat node-major.
    pub u: Vec<f64>,
    /// The stiffness the solve used, N/m.
    pub stiffness: Mat<f64>,
    /// The load it balanced (after the relief of round-off imbalance), N.
    pub load: Vec<f64>,
    /// Prescribed `(dof, m)`.
    pub prescribed: Vec<(usize, f64)>,
    pub rigid: RigidModes,
    pub summary: Summary,
}

/// The free rigid modes of `problem` at bond status `mu` under the `prescribed` dofs, and
/// `load` relieved along them (`RigidModes::relieve`); returns the modes and the imbalance
/// before the relief, relative to `|load|`. Loads out of equilibrium are refused.
fn relieved(
    problem: &Problem,
    mu: &[u8],
    prescribed: &[(usize, f64)],
    load: &mut [f64],
    weight: &[f64],
) -> Result<(RigidModes, f64)> {
    let d = problem.dim();
    let mut held = vec![false; problem.body.len() * d];
    prescribed.iter().for_each(|&(dof, _)| held[dof] = true);
    let rigid = RigidModes::find(&problem.body.positions, d, &problem.families, mu, &held);
    let load_norm = load.iter().map(|x| x * x).sum::<f64>().sqrt();
    let imbalance = if load_norm > 0.0 {
        rigid.imbalance(load) / load_norm
    } else {
        0.0
    };
    if imbalance > MAX_IMBALANCE {
        return Err(unbalanced(&rigid, imbalance));
    }
    rigid.relieve(load, weight);
    Ok((rigid, imbalance))
}

/// The static system `K u = f` of a model as `solve-static` sets it up, for a caller's own
/// solver (`export-matrix`, the Python package). With the prescribed values and the
/// supports held at zero, `K u = f` on the other dofs has one solution, which differs from
/// `solve-static`'s by a rigid motion along `rigid_modes`.
#[derive(Debug, Clone)]
pub struct StaticSystem {
    /// The load `f`, N, in the dof order of `K` (dof = d * node + component): body forces and
    /// tractions at their full value, times the volumes, relieved of its round-off
    /// imbalance along the free rigid modes.
    pub load: Vec<f64>,
    /// The prescribed dofs and their values, m, ascending by dof.
    pub prescribed: Vec<(usize, f64)>,
    /// The free rigid-body modes (`K r = 0`, held by no condition), full-length columns,
    /// orthonormal.
    pub rigid_modes: Vec<Vec<f64>>,
    /// The dofs `solve-static` holds at zero to remove them (as many as modes), ascending.
    pub supports: Vec<usize>,
}

/// The static system of `problem` at bond status `mu` (per directed bond; the pre-cracks'
/// for `export-matrix`). Loads out of equilibrium on a body free to move are refused.
pub fn static_system(problem: &Problem, mu: &[u8]) -> Result<StaticSystem> {
    let System {
        mut prescribed,
        mut load,
        weight,
        ..
    } = system(problem);
    let (rigid, _) = relieved(problem, mu, &prescribed, &mut load, &weight)?;
    prescribed.sort_unstable_by_key(|&(dof, _)| dof);
    let ndof = load.len();
    let rigid_modes = rigid
        .pieces
        .iter()
        .flat_map(|piece| {
            piece.modes.iter().map(|mode| {
                let mut full = vec![0.0; ndof];
                for (&dof, &m) in piece.dofs.iter().zip(mode) {
                    full[dof] = m;
                }
                full
            })
        })
        .collect();
    Ok(StaticSystem {
        load,
        prescribed,
        rigid_modes,
        supports: rigid.supports(),
    })
}

/// The static system of a problem before solving: prescribed values and loads.
struct System {
    prescribed: Vec<(usize, f64)>,
    load: Vec<f64>,
    weight: Vec<f64>,
    notes: Vec<String>,
}

fn system(problem: &Problem) -> System {
    let (n, d) = (problem.body.len(), problem.dim());
    // The run's time step only converts ramp_steps and integrates velocity conditions; a
    // solver.dt above the stable one is no reason to refuse a static solve.
    let dt = choose_dt(problem)
        .map(|(dt, _, _)| dt)
        .unwrap_or_else(|_| problem.model.solver.dt.unwrap_or(1.0));
    let loads = Loads::new(problem, dt);
    let t_end = problem.model.solver.steps as f64 * dt;
    let mut notes = Vec::new();
    if loads.has_moving_velocity() {
        notes.push(format!(
            "velocity conditions are held at the displacement they reach at the end of the \
             run, t = {t_end:.4e} s ({} steps of {dt:.4e} s)",
            problem.model.solver.steps
        ));
    }
    let mut b = vec![0.0; n * d];
    loads.body_force(f64::INFINITY, &mut b);
    let weight: Vec<f64> = (0..n * d).map(|k| problem.body.volumes[k / d]).collect();
    let load = b.iter().zip(&weight).map(|(b, v)| b * v).collect();
    System {
        prescribed: loads.static_displacements(t_end),
        load,
        weight,
        notes,
    }
}

/// Solve `problem` statically and write its outputs; returns the solution and the summary.
/// A solve that fails still writes `summary.json` (`status` `failed`, the message in
/// `stopped_early`) where it has an output folder.
pub fn solve_static(problem: Problem, opts: &StaticOptions) -> Result<StaticOutcome> {
    let start = Instant::now();
    OutputFolder::around(opts.out_dir.as_deref(), || solve_in(problem, opts, start))
}

/// [`solve_static`] once the output folder exists; an early error leaves it empty, to be
/// removed where this run created it.
fn solve_in(problem: Problem, opts: &StaticOptions, start: Instant) -> Result<StaticOutcome> {
    let mut summary = initial_summary(&problem, "cpu-matrix", "f64", 0.0);
    summary.solver = "static".into();
    solve_and_write(problem, opts, &mut summary, start).inspect_err(|e| {
        summary.status = RunStatus::Failed;
        summary.stopped_early = Some(e.to_string());
        summary.wall_seconds = start.elapsed().as_secs_f64();
        summary.peak_rss_bytes = peak_rss_bytes();
        if let Some(dir) = &opts.out_dir {
            // the solve's own error is the one to report
            let _ = summary.write(&dir.join("summary.json"));
        }
    })
}

/// [`solve_static`] once the summary is started.
fn solve_and_write(
    problem: Problem,
    opts: &StaticOptions,
    summary: &mut Summary,
    start: Instant,
) -> Result<StaticOutcome> {
    let (u0, v0) = crate::dynamics::state::initial_fields(&problem);
    if u0.is_some() || v0.is_some() {
        return Err(Error::model(
            if problem.model.initial.is_empty() {
                "geometry.points_csv"
            } else {
                "initial"
            },
            "solve-static solves for equilibrium from the undeformed body at rest: initial \
             fields ([[initial]] tables, a cloud's ux..vz columns) are for `peridot run`",
        ));
    }
    let System {
        prescribed,
        mut load,
        weight,
        notes,
    } = system(&problem);
    let t0 = Instant::now();
    let k = assemble_stiffness(&problem, &problem.initial_mu)?;
    summary.phase_seconds.assembly = Some(t0.elapsed().as_secs_f64());
    let t1 = Instant::now();
    let d = problem.dim();
    let mu = &problem.initial_mu;
    let (rigid, imbalance) = relieved(&problem, mu, &prescribed, &mut load, &weight)?;
    let supports = rigid.supports();
    let solution = solve(&k, &load, &prescribed, &supports)?;
    let mut u = solution.u;
    rigid.normalize(&mut u, &weight);
    let res = residuals(&k, &u, &load, &prescribed, &supports);
    let residual = res.free;
    summary.phase_seconds.solve = Some(t1.elapsed().as_secs_f64());
    let mut info = StaticSolveInfo {
        factorization: solution.factorization.into(),
        free_dofs: solution.free_dofs,
        prescribed_dofs: prescribed.len(),
        rigid_modes_removed: rigid.count(),
        support_dofs: supports.clone(),
        pieces: rigid.piece_count,
        load_imbalance: imbalance,
        refinement_steps: solution.refinement_steps,
        support_load: res.supports,
        bonds_over_critical_stretch: 0,
        stiffness_nnz: k.val().len(),
    };
    let mut messages = notes;
    if rigid.count() > 0 {
        messages.push(rigid_note(&rigid, &supports, imbalance, res.supports, d));
    }
    for m in &messages {
        eprintln!("note: {m}");
    }
    summary.static_residual = Some(residual);
    summary.converged = Some(residual < TOLERANCE);
    summary.steps = 1;
    summary.status = RunStatus::Completed;
    let problem = Arc::new(problem);
    write_outputs(&problem, &u, opts, summary, &mut info)?;
    summary.static_solve = Some(info);
    summary.wall_seconds = start.elapsed().as_secs_f64();
    summary.peak_rss_bytes = peak_rss_bytes();
    if let Some(dir) = &opts.out_dir {
        summary.write(&dir.join("summary.json"))?;
    }
    Ok(StaticOutcome {
        u,
        stiffness: k,
        load,
        prescribed,
        rigid,
        summary: summary.clone(),
    })
}

/// Fields, snapshot, probe row and picture of the solution; the damage-related summary keys.
fn write_outputs(
    problem: &Arc<Problem>,
    u: &[f64],
    opts: &StaticOptions,
    summary: &mut Summary,
    info: &mut StaticSolveInfo,
) -> Result<()> {
    let t0 = Instant::now();
    let mut backend = CpuLoop::<f64>::new(problem.clone());
    let fields = outputs::fields(&mut backend, u, problem)?;
    let (phi, theta) = (&fields.damage, &fields.dilatation);
    let mut force = vec![0.0; u.len()];
    backend.internal_force(u, &mut force)?;
    summary.broken_bonds = backend.broken_bonds();
    summary.max_damage = phi.iter().cloned().fold(0.0, f64::max);
    // Counted on a copy of the status; the reported damage is that of the solved state.
    info.bonds_over_critical_stretch = backend.break_bonds(u)?;
    if info.bonds_over_critical_stretch > 0 {
        let w = format!(
            "{} directed bonds are stretched beyond the critical stretch; the linear static solve \
             breaks none (use an ADR run to follow the damage)",
            info.bonds_over_critical_stretch
        );
        eprintln!("warning: {w}");
        summary.warnings.push(w);
    }
    if let Some(dir) = &opts.out_dir {
        let (vtk, probes) = outputs::open_outputs(problem, Some(dir))?;
        if let Some(mut vtk) = vtk {
            let snapshot = Snapshot {
                step: 1,
                time: 0.0,
                displacement: u,
                velocity: &vec![0.0; u.len()],
                damage: phi,
                damage_bond_count: Some(&fields.damage_bond_count),
                dilatation: theta.as_deref(),
                extra: &fields.extra,
            };
            outputs::write_snapshot(&mut vtk, problem, None, &snapshot)?;
        }
        if let Some(mut probes) = probes {
            let values = outputs::probe_regions(problem).on_host(u, &force);
            probes.write_row(1, 0.0, &values)?;
        }
        outputs::write_picture(problem, dir, phi)?;
    }
    summary.phase_seconds.output = Some(t0.elapsed().as_secs_f64());
    Ok(())
}

fn unbalanced(rigid: &RigidModes, imbalance: f64) -> Error {
    Error::model(
        "boundary",
        format!(
            "the loads are not in equilibrium ({:.3}% of the load drives a rigid-body motion) \
             and no boundary condition holds {} rigid-body mode(s) of {} piece(s) of the body; \
             a static solution does not exist: add a fixed or displacement condition, or \
             balance the loads",
            100.0 * imbalance,
            rigid.count(),
            rigid.pieces.len()
        ),
    )
}

fn rigid_note(
    rigid: &RigidModes,
    supports: &[usize],
    imbalance: f64,
    support_load: f64,
    d: usize,
) -> String {
    let axes = ["x", "y", "z"];
    let shown: Vec<String> = supports
        .iter()
        .take(6)
        .map(|&s| format!("node {} {}", s / d, axes[s % d]))
        .collect();
    let more = if supports.len() > 6 {
        format!(" and {} more", supports.len() - 6)
    } else {
        String::new()
    };
    format!(
        "no boundary condition holds {} rigid-body mode(s) of {} piece(s) of the body; \
         removed them by supports at {}{more} (load imbalance {:.1e}, relieved; the supports \
         carry {:.1e} of the load, round-off); the displacement has zero volume-weighted mean \
         translation and rotation",
        rigid.count(),
        rigid.pieces.len(),
        shown.join(", "),
        imbalance,
        support_load
    )
}
