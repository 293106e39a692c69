//! What the bond kernels of `gpu-loop` (`kernels/*.cu`) are given: the kernels themselves and
//! the constants of their parameter record (`BondParams`: law, horizon, partial volumes,
//! critical stretch), shared with the subdomain engine (`backend/partitioned/stream/`).
//!
//! Units as in [`crate::backend::gpu`]: m, m^3, N/m^6 (micromodulus).

use crate::gpu::params::BondParams;
use crate::gpu::Gpu;
use crate::material::laws::LawParams;
use crate::material::Law;
use crate::model::PartialVolume;
use crate::setup::Problem;
use crate::{Precision, Result};
use cudarc::driver::CudaFunction;

/// The kernels this backend launches.
pub(crate) struct Kernels {
    pub pmb_force: CudaFunction,
    /// PMB without partial volumes and surface correction (the weight is `c V_j`).
    pub pmb_force_plain: CudaFunction,
    /// Several materials: the general PMB loop reading the pair table.
    pub pmb_force_materials: CudaFunction,
    /// The same on a full box lattice, neighbours from the stencil (`lattice.rs`).
    pub pmb_force_plain_lattice: CudaFunction,
    /// The same with every slot's bond geometry from a table (`Stencil::slot_geometry`).
    pub pmb_force_lattice_table: CudaFunction,
    /// A softening damage law: each bond's force scaled by `1 - d` (`failure.cu` updates d).
    pub pmb_force_softening: CudaFunction,
    pub lps_dilatation: CudaFunction,
    pub lps_force: CudaFunction,
    /// The same for `lps-nonlinear` (extension `|y| - x`, forces along `y`).
    pub lps_dilatation_nonlinear: CudaFunction,
    pub lps_force_nonlinear: CudaFunction,
    pub break_bonds: CudaFunction,
    pub damage: CudaFunction,
    /// The nodes at or above a damage threshold, compacted (`crack_nodes.rs`).
    pub damage_over: CudaFunction,
    pub strain_energy: CudaFunction,
    /// The failure passes with a history (`failure.cu`): a softening law's damage update;
    /// each node's critical stretch at the first evaluation; breaking with
    /// `critical_stretch_alpha` or after the force.
    pub soften_bonds: CudaFunction,
    pub node_critical_stretch: CudaFunction,
    pub history_breaks: CudaFunction,
}

impl Kernels {
    pub(crate) fn load(gpu: &Gpu, precision: Precision) -> Result<Self> {
        let f = |name: &str| gpu.function(precision, name);
        Ok(Kernels {
            pmb_force: f("pmb_force")?,
            pmb_force_plain: f("pmb_force_plain")?,
            pmb_force_materials: f("pmb_force_materials")?,
            pmb_force_plain_lattice: f("pmb_force_plain_lattice")?,
            pmb_force_lattice_table: f("pmb_force_lattice_table")?,
            pmb_force_softening: f("pmb_force_softening")?,
            lps_dilatation: f("lps_dilatation")?,
            lps_force: f("lps_force")?,
            lps_dilatation_nonlinear: f("lps_dilatation_nonlinear")?,
            lps_force_nonlinear: f("lps_force_nonlinear")?,
            break_bonds: f("break_bonds")?,
            damage: f("damage")?,
            damage_over: f("damage_over")?,
            strain_energy: f("strain_energy")?,
            soften_bonds: f("soften_bonds")?,
            node_critical_stretch: f("node_critical_stretch")?,
            history_breaks: f("history_breaks")?,
        })
    }
}

impl Kernels {
    /// The LPS kernels `(dilatation, force)` of `law`'s kinematics (linearized or not).
    pub(crate) fn lps(&self, law: Law) -> (&CudaFunction, &CudaFunction) {
        match law {
            Law::Lps {
                linearized: false, ..
            } => (&self.lps_dilatation_nonlinear, &self.lps_force_nonlinear),
            _ => (&self.lps_dilatation, &self.lps_force),
        }
    }
}

/// The largest horizon volume of `problem`'s nodes, m^3.
pub(crate) fn full_volume(problem: &Problem) -> f64 {
    problem
        .bonds
        .horizon_volume
        .iter()
        .copied()
        .fold(0.0, f64::max)
}

/// The bond loops' constants for `problem` (law, horizon, partial volumes, critical stretch)
/// over `n` nodes, with every device address 0; `check_bonds`: break over-stretched bonds
/// (where the material has a critical stretch). `full_volume` is the largest horizon volume
/// of the whole body, m^3 (the surface correction's reference: [`full_volume`]).
pub(crate) fn law_params(
    problem: &Problem,
    n: usize,
    check_bonds: bool,
    full_volume: f64,
) -> BondParams {
    let p = problem;
    let m = &p.material;
    let (linearized, lps) = (m.linearized(), matches!(m.law, Law::Lps { .. }));
    let (delta, dx) = (p.body.delta, p.body.dx);
    // (the expressions of the host's `partial_volume`)
    let (pv_full, pv_edge) = (delta - 0.5 * dx, delta + 0.5 * dx);
    let s0 = m.critical_stretch.unwrap_or(f64::INFINITY);
    BondParams {
        critical_stretch: s0,
        full_volume,
        law: LawParams::of(m),
        delta,
        dx,
        n: n as u32,
        dim: p.dim() as i32,
        linearized: i32::from(linearized),
        check_bonds: i32::from(check_bonds && p.breaks()),
        partial_volume: i32::from(p.model.discretization.partial_volume != PartialVolume::None),
        lps: i32::from(lps),
        pv_full,
        pv_edge,
        critical_stretch_f: s0 as f32,
        delta_f: delta as f32,
        dx_f: dx as f32,
        pv_full_f: pv_full as f32,
        pv_edge_f: pv_edge as f32,
        s0_alpha: m.critical_stretch_alpha,
        s0_alpha_f: m.critical_stretch_alpha as f32,
        ..Default::default()
    }
}
