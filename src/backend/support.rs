//! Which backend runs which material: the bond laws and failure options each scheme
//! implements, checked before a backend is built, so that a model a backend cannot run is an
//! error naming the backends that run it, never a silently different physics: the matrix
//! form refuses `lps-nonlinear`, the softening damage laws (`damage_law = "bilinear"`,
//! `"trilinear"`: a damage value per bond) and the failure options that need each node's
//! history (`critical_stretch_alpha`, `break_timing = "after-force"`), which every loop runs
//! (`cpu-loop` and `gpu-loop` in core, in subdomains and on MPI ranks: on `gpu-loop` across
//! ranks each rank's device runs the failure pass, the ghosts' critical stretches exchanged
//! through its device halo). Several materials (`[[material]]`), of different mass densities
//! too, run on every backend, in core, in subdomains and across ranks: every leapfrog takes
//! each node's density (the host's, the device loop's, a rank's device loop in its order, the
//! subdomains' fused update). Contact and impactors
//! (`[contact]`, `[[impactor]]`) run on `cpu-loop` and `gpu-loop` in core and across MPI
//! ranks, not in subdomains ([`check_contact`]; `distributed/contact.rs`).

use crate::material::Law;
use crate::setup::Problem;
use crate::{Error, Result};

/// The scheme of a backend, as far as materials go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `cpu-loop` in core: every law and every failure option.
    CpuLoop,
    /// `gpu-loop` in core and on MPI ranks (`DistributedGpu`): every law and every failure
    /// option (`bond_loop/failure.rs`).
    GpuLoop,
    /// `cpu-loop` in subdomains (`PartitionedCpu`) and on MPI ranks (`DistributedCpu`): the
    /// in-core loop per subdomain, each node's critical stretch exchanged between them, so
    /// every law and every failure option.
    CpuLoopParts,
    /// `gpu-loop` in subdomains (`GpuStreamed`): every law, several materials (each slot's
    /// nodes carry their material indices), the softening laws (each slot a damage value per
    /// bond) and each node's critical stretch (exchanged between the subdomains' passes).
    GpuLoopParts,
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
    if matrix && nonlinear_lps {
        return refuse(
            "material.model = \"lps-nonlinear\" runs on cpu-loop and gpu-loop (in core or in \
             subdomains): the matrix form assembles the linearized law only (model = \"lps\")",
        );
    }
    // (every loop keeps a damage value per bond and each node's critical stretch from
    // step to step; the matrix form keeps neither)
    let loops = "cpu-loop and gpu-loop (in core, in subdomains, on MPI ranks)";
    if matrix && m.softening.is_some() {
        let law = problem.model.material.damage_law.unwrap_or_default();
        return refuse(&format!(
            "material.damage_law = \"{}\" runs on {loops}, which keep a damage value per \
             bond; the matrix form does not; use --backend cpu-loop or gpu-loop, or \
             damage_law = \"brittle\" for this backend",
            law.name()
        ));
    }
    if matrix && m.history_breaking() {
        return refuse(&format!(
            "material.critical_stretch_alpha = {} with material.break_timing = \"{}\" runs on \
             {loops}, which keep each node's critical stretch from step to step; the matrix \
             form does not; use --backend cpu-loop or gpu-loop, or give \
             critical_stretch_alpha = 0 and break_timing = \"before-force\" for this backend",
            m.critical_stretch_alpha,
            match m.break_timing {
                crate::model::BreakTiming::BeforeForce => "before-force",
                crate::model::BreakTiming::AfterForce => "after-force",
            }
        ));
    }
    Ok(())
}

/// Where a backend runs a model: in one process on the whole body, in subdomains (one
/// process, the body streamed in parts), or on one rank's part across MPI ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    InCore,
    Subdomains,
    Ranks,
}

/// Whether `backend` (its CLI name) runs `problem`'s contact and impactors where `placement`
/// says: `cpu-loop` and `gpu-loop` do in core and across MPI ranks (`docs/contact.md`,
/// `distributed/contact.rs`; their rank backends do not ask), no backend in subdomains; an
/// error naming what runs them otherwise.
pub fn check_contact(problem: &Problem, backend: &str, placement: Placement) -> Result<()> {
    let model = &problem.model;
    let contact = model.contact.as_ref().is_some_and(|c| c.enabled);
    if !contact && model.impactor.is_empty() {
        return Ok(());
    }
    let loop_backend = matches!(backend, "cpu-loop" | "gpu-loop");
    if loop_backend && placement != Placement::Subdomains {
        return Ok(());
    }
    let what = match (contact, model.impactor.len()) {
        (true, 0) => "[contact]".to_string(),
        (false, n) => format!("{n} [[impactor]] table(s)"),
        (true, n) => format!("[contact] and {n} [[impactor]] table(s)"),
    };
    let place = match placement {
        Placement::InCore => "",
        Placement::Subdomains => " in subdomains",
        Placement::Ranks => " across MPI ranks",
    };
    Err(Error::Backend {
        backend: backend.into(),
        message: format!(
            "the model's {what} run on cpu-loop and gpu-loop, in core and across MPI ranks \
             (not in subdomains), not on {backend}{place}; use --backend cpu-loop or gpu-loop \
             without subdomains (in one process or across ranks), or remove the contact tables"
        ),
    })
}
