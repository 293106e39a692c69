//! Which backend runs which material: the bond laws and failure options each scheme
//! implements, checked before a backend is built, so that a model a backend cannot run is an
//! error naming the backends that run it, never a silently different physics: the matrix
//! form refuses `lps-nonlinear`; the failure options that need each node's history
//! (`critical_stretch_alpha`, `break_timing = "after-force"`) and the softening damage laws
//! (`damage_law = "bilinear"`, `"trilinear"`) run on `cpu-loop` and `gpu-loop` in core only
//! (the matrix form and the subdomain loops refuse them); `gpu-matrix` in subdomains refuses
//! several materials (`[[material]]`; in core it runs them). Contact and impactors
//! (`[contact]`, `[[impactor]]`) run on `cpu-loop` and `gpu-loop` in core ([`check_contact`]);
//! several materials of different densities on every backend in core, not in subdomains
//! ([`check_density`]).

use crate::material::Law;
use crate::setup::Problem;
use crate::{Error, Result};

/// The scheme of a backend, as far as materials go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `cpu-loop` in core: every law and every failure option.
    CpuLoop,
    /// `gpu-loop` in core: every law and every failure option (`bond_loop/failure.rs`).
    GpuLoop,
    /// The loops over each node's bonds in subdomains (CPU and GPU).
    Loop,
    /// The matrix form in core (`cpu-matrix`, `gpu-matrix`), or `cpu-matrix`'s own check.
    Matrix,
    /// The matrix form in subdomains.
    MatrixParts,
}

/// Whether `backend` (its CLI name), of `scheme`, runs `problem`'s material; an error naming
/// the backends that do otherwise.
pub fn check_material(problem: &Problem, backend: &str, scheme: Scheme) -> Result<()> {
    let m = &problem.material;
    let refuse = |message: &str| {
        Err(Error::Backend {
            backend: backend.into(),
            message: message.into(),
        })
    };
    let nonlinear_lps = matches!(
        m.law,
        Law::Lps {
            linearized: false,
            ..
        }
    );
    let matrix = matches!(scheme, Scheme::Matrix | Scheme::MatrixParts);
    if problem.materials.is_some() && backend == "gpu-matrix" && scheme == Scheme::MatrixParts {
        return refuse(
            "several materials ([[material]]) run on cpu-loop, cpu-matrix (in core or in \
             subdomains), gpu-loop and gpu-matrix (in core): the gpu-matrix subdomain slots \
             load their nodes without the material indices; use --backend gpu-matrix without \
             subdomains, or cpu-matrix",
        );
    }
    if matrix && nonlinear_lps {
        return refuse(
            "material.model = \"lps-nonlinear\" runs on cpu-loop and gpu-loop (in core or in \
             subdomains): the matrix form assembles the linearized law only (model = \"lps\")",
        );
    }
    let history = matches!(scheme, Scheme::CpuLoop | Scheme::GpuLoop);
    if !history && m.softening.is_some() {
        let law = problem.model.material.damage_law.unwrap_or_default();
        return refuse(&format!(
            "material.damage_law = \"{}\" runs on cpu-loop and gpu-loop in core only (they \
             keep a damage value per bond, which the matrix form and the subdomain loops do \
             not); use --backend cpu-loop or gpu-loop without subdomains, or damage_law = \
             \"brittle\" for this backend",
            law.name()
        ));
    }
    if !history && m.history_breaking() {
        return refuse(&format!(
            "material.critical_stretch_alpha = {} with material.break_timing = \"{}\" runs on \
             cpu-loop and gpu-loop in core only (each node's critical stretch follows its \
             bonds' stretch step by step); use --backend cpu-loop or gpu-loop without \
             subdomains, or give critical_stretch_alpha = 0 and break_timing = \
             \"before-force\" for this backend",
            m.critical_stretch_alpha,
            match m.break_timing {
                crate::model::BreakTiming::BeforeForce => "before-force",
                crate::model::BreakTiming::AfterForce => "after-force",
            }
        ));
    }
    Ok(())
}

/// Whether `backend` (its CLI name; `in_core`: not in subdomains) runs `problem`'s several
/// materials of different mass densities: the leapfrogs that take each node's density are
/// the host's (`dynamics::Explicit`) and the device loop's (`backend/gpu/time_loop.rs`), so
/// every backend in core; the subdomain loops (one density in their fused update) refuse,
/// naming the backends that run it. An ADR run (its fictitious density is its own) runs
/// anywhere.
pub fn check_density(problem: &Problem, backend: &str, in_core: bool) -> Result<()> {
    let explicit = problem.model.solver.kind == crate::model::SolverKind::Explicit;
    let Some(m) = problem.materials.as_ref().filter(|_| explicit && !in_core) else {
        return Ok(());
    };
    if !m.densities_differ() {
        return Ok(());
    }
    let list: Vec<String> = m
        .names
        .iter()
        .zip(&m.constants)
        .map(|(n, c)| format!("{n} {} kg/m^3", c.density))
        .collect();
    Err(Error::Backend {
        backend: backend.into(),
        message: format!(
            "materials of different densities ({}) run on every backend in core and in one \
             process, whose leapfrog takes each node's density, not on {backend} (subdomains \
             and MPI ranks update with one density); run in core in one process, or give \
             every material one density",
            list.join(", ")
        ),
    })
}

/// Whether `backend` (its CLI name; `in_core`: not in subdomains) runs `problem`'s contact
/// and impactors: `cpu-loop` and `gpu-loop` in core do (`docs/contact.md`); an error naming
/// them otherwise.
pub fn check_contact(problem: &Problem, backend: &str, in_core: bool) -> Result<()> {
    let model = &problem.model;
    let contact = model.contact.as_ref().is_some_and(|c| c.enabled);
    if !contact && model.impactor.is_empty() {
        return Ok(());
    }
    if in_core && matches!(backend, "cpu-loop" | "gpu-loop") {
        return Ok(());
    }
    let what = match (contact, model.impactor.len()) {
        (true, 0) => "[contact]".to_string(),
        (false, n) => format!("{n} [[impactor]] table(s)"),
        (true, n) => format!("[contact] and {n} [[impactor]] table(s)"),
    };
    let place = if in_core { "" } else { " in subdomains" };
    Err(Error::Backend {
        backend: backend.into(),
        message: format!(
            "the model's {what} run on cpu-loop and gpu-loop in core only, not on \
             {backend}{place}; use --backend cpu-loop or --backend gpu-loop without \
             subdomains, or remove the contact tables"
        ),
    })
}
