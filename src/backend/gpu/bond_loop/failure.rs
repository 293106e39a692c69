//! Bond failure that remembers its history on `gpu-loop` (`docs/materials.md`): a softening
//! damage law's damage per bond, and breaking with `critical_stretch_alpha` or after the force
//! (`break_timing = "after-force"`). Each runs as a pass of its own (`kernels/failure.cu`)
//! launched before or after the force kernels as `break_timing` says, in the order of
//! `cpu-loop`'s `in_order` (`backend/cpu/bond_loop.rs`), so the two agree to round-off.
//!
//! Device arrays: the damage of every slot of the sliced order (`gpu/layout.rs`), the slot of
//! the bond's status bit; each node's critical stretch twice (the previous evaluation's,
//! read, and the one being written; swapped after each pass). A restart checkpoint's
//! [`FailureHistory`] is uploaded at setup and read back by [`GpuLoop::history`].
//!
//! Units: damage and stretches dimensionless.

use super::GpuLoop;
use crate::backend::gpu::buffers::{addr, download, upload};
use crate::gpu::device::driver_error;
use crate::gpu::layout::SlicedLayout;
use crate::gpu::params::BondParams;
use crate::gpu::Gpu;
use crate::material::FailureHistory;
use crate::model::{BreakTiming, DamageLaw, Material, Model};
use crate::setup::Problem;
use crate::{Real, Result};
use cudarc::driver::{CudaFunction, CudaSlice};
use std::sync::Arc;

/// The failure pass a model's damaging steps run apart from the force kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailurePass {
    /// A softening damage law: each bond's damage updated (`soften_bonds`).
    Soften,
    /// `critical_stretch_alpha` or `break_timing = "after-force"` (`history_breaks`).
    History,
}

impl FailurePass {
    /// The pass `problem` runs, in `cpu-loop`'s precedence (softening first), or `None`
    /// where bonds break in the force kernels' fused check.
    pub(crate) fn of(problem: &Problem) -> Option<FailurePass> {
        let m = &problem.material;
        if m.softening.is_some() {
            Some(FailurePass::Soften)
        } else if m.history_breaking() {
            Some(FailurePass::History)
        } else {
            None
        }
    }
}

/// One step of a failure pass ([`GpuLoop::failure_pass_with`]).
pub(crate) enum FailureStep<'a> {
    /// A kernel to launch with these parameters over the nodes `first .. n` a caller sets.
    Kernel(&'a CudaFunction, &'a BondParams),
    /// Each node's critical stretch written at this device address, read by what follows.
    Written(u64),
}

/// Whether `model`'s bonds fail with a history (a softening damage law, a non-zero
/// `critical_stretch_alpha`, `break_timing = "after-force"`): such a model runs with the
/// neighbour list (its per-bond damage follows the list's slots), never the lattice stencil.
pub(crate) fn keeps_history(model: &Model) -> bool {
    let history = |m: &Material| {
        m.damage_law.is_some_and(|l| l != DamageLaw::Brittle)
            || m.critical_stretch_alpha.is_some_and(|a| a != 0.0)
            || m.break_timing == Some(BreakTiming::AfterForce)
    };
    history(&model.material) || model.materials.iter().any(|m| history(&m.material))
}

/// The failure history's device arrays of a [`GpuLoop`].
pub(super) struct DeviceHistory<T> {
    /// A softening law: the damage of every slot of the sliced order (0 in padding).
    pub bond_damage: Option<CudaSlice<T>>,
    /// History breaking: each node's critical stretch from the previous evaluation (read)
    /// and the one the next pass writes.
    pub node_s0: Option<(CudaSlice<T>, CudaSlice<T>)>,
    /// Whether the first of `node_s0` holds values (a restored run, or after a pass).
    pub s0_ready: bool,
}

impl<T: Real> DeviceHistory<T> {
    /// Device bytes of the history of `problem` with `slots` slots of the sliced order.
    pub fn bytes(problem: &Problem, slots: usize) -> usize {
        let t = std::mem::size_of::<T>();
        match FailurePass::of(problem) {
            Some(FailurePass::Soften) => t * slots.max(1),
            Some(FailurePass::History) => 2 * t * problem.body.len().max(1),
            None => 0,
        }
    }

    /// The arrays of `problem` in `layout`, from its restored history where it has one
    /// (a restart), else a fresh one (no damage; the critical stretches made by the first
    /// pass).
    pub fn upload(gpu: &Gpu, problem: &Problem, layout: &SlicedLayout) -> Result<Self> {
        let restored = problem.restored.convert::<T>();
        let zeros = |len: usize| {
            gpu.stream()
                .alloc_zeros::<T>(len.max(1))
                .map_err(driver_error)
        };
        let mut history = DeviceHistory {
            bond_damage: None,
            node_s0: None,
            s0_ready: false,
        };
        match FailurePass::of(problem) {
            Some(FailurePass::Soften) => {
                history.bond_damage = Some(match restored.bond_damage.is_empty() {
                    true => zeros(layout.padded_len())?,
                    false => upload(gpu, &layout.to_device(&restored.bond_damage, T::zero()))?,
                });
            }
            Some(FailurePass::History) => {
                let n = problem.body.len();
                history.s0_ready = !restored.node_s0.is_empty();
                let first = match history.s0_ready {
                    true => upload(gpu, &restored.node_s0)?,
                    false => zeros(n)?,
                };
                history.node_s0 = Some((first, zeros(n)?));
            }
            None => {}
        }
        Ok(history)
    }

    /// The device bytes held.
    pub fn num_bytes(&self) -> usize {
        let damage = self.bond_damage.as_ref().map_or(0, |d| d.num_bytes());
        let s0 = self
            .node_s0
            .as_ref()
            .map_or(0, |(a, b)| a.num_bytes() + b.num_bytes());
        damage + s0
    }

    /// `params` with the history's addresses (0 where it has none).
    pub fn params(&self, gpu: &Gpu, params: BondParams) -> BondParams {
        let (node_s0, node_s0_next) = self
            .node_s0
            .as_ref()
            .map_or((0, 0), |(a, b)| (addr(gpu, a), addr(gpu, b)));
        BondParams {
            bond_damage: self.bond_damage.as_ref().map_or(0, |d| addr(gpu, d)),
            node_s0,
            node_s0_next,
            ..params
        }
    }
}

impl<T: Real> GpuLoop<T> {
    /// The force evaluation of `params` with its failure pass: where `params` checks bonds
    /// and the model's failure keeps a history ([`FailurePass`]), the pass runs before or
    /// after the force kernels (`break_timing`), and the force kernels then break nothing.
    pub(super) fn forces_in_order(&mut self, params: &BondParams) -> Result<()> {
        let pass = match params.check_bonds {
            0 => None,
            _ => FailurePass::of(&self.problem),
        };
        let Some(pass) = pass else {
            return self.launch_force_kernels(params);
        };
        let forces_only = BondParams {
            check_bonds: 0,
            ..*params
        };
        match self.problem.material.break_timing {
            BreakTiming::BeforeForce => {
                self.failure_pass(pass, params)?;
                self.launch_force_kernels(&forces_only)
            }
            BreakTiming::AfterForce => {
                self.launch_force_kernels(&forces_only)?;
                self.failure_pass(pass, params)
            }
        }
    }

    /// Launch the failure `pass` at `params.u` (bonds broken added to the device counter).
    pub(super) fn failure_pass(&mut self, pass: FailurePass, params: &BondParams) -> Result<()> {
        let n = self.problem.body.len();
        self.failure_pass_with(pass, params, |gpu, step| match step {
            // SAFETY: the pass's parameters hold this backend's buffers, sized for its `n`
            // nodes and their bonds (the history's per slot and per node); the kernels write
            // only `mu`, the counter and the history.
            FailureStep::Kernel(k, p) => unsafe { gpu.launch(k, n, p) },
            FailureStep::Written(_) => Ok(()),
        })
    }

    /// The failure `pass` of `params` as its steps, in order, each handed to `step`: the
    /// kernels to launch over the nodes (the caller launches them, over every node or in
    /// parts) and, wherever the pass has written each node's critical stretch that the next
    /// breaking reads, that array's device address: after a first evaluation's, before the
    /// breaking that reads it, and after the breaking's. A rank's part
    /// (`distributed/gpu/`) exchanges its ghosts' values there (its ghosts have no family:
    /// the pass writes them +inf); in core nothing is done there.
    pub(crate) fn failure_pass_with(
        &mut self,
        pass: FailurePass,
        params: &BondParams,
        mut step: impl FnMut(&Arc<Gpu>, FailureStep<'_>) -> Result<()>,
    ) -> Result<()> {
        let params = self.history.params(&self.gpu, *params);
        let (gpu, k) = (&self.gpu, &self.k);
        match pass {
            FailurePass::Soften => step(gpu, FailureStep::Kernel(&k.soften_bonds, &params)),
            FailurePass::History => {
                if !self.history.s0_ready {
                    // (the first evaluation: each node's s0 from the stretches at `u`)
                    let first = BondParams {
                        node_s0_next: params.node_s0,
                        ..params
                    };
                    step(gpu, FailureStep::Kernel(&k.node_critical_stretch, &first))?;
                    step(gpu, FailureStep::Written(params.node_s0))?;
                    self.history.s0_ready = true;
                }
                step(gpu, FailureStep::Kernel(&k.history_breaks, &params))?;
                if let Some((read, written)) = self.history.node_s0.as_mut() {
                    std::mem::swap(read, written);
                }
                step(gpu, FailureStep::Written(params.node_s0_next))
            }
        }
    }

    /// The failure pass this backend's damaging evaluations run apart from the force
    /// kernels, `None` where bonds break in the force kernels' fused check.
    pub(crate) fn history_pass(&self) -> Option<FailurePass> {
        FailurePass::of(&self.problem)
    }

    /// A softening law's damage per bond in CSR order (`None` for the brittle law).
    pub(super) fn bond_damage_csr(&self) -> Result<Option<Vec<T>>> {
        let Some(d) = &self.history.bond_damage else {
            return Ok(None);
        };
        let mut device = vec![T::zero(); self.layout.padded_len()];
        download(&self.gpu, d, &mut device)?;
        Ok(Some(self.layout.to_csr(&device)))
    }

    /// The failure history for a checkpoint: the damage per bond (CSR order) and each
    /// node's critical stretch for the next evaluation (empty before the first).
    pub(super) fn history(&self) -> Result<FailureHistory<T>> {
        let node_s0 = match (&self.history.node_s0, self.history.s0_ready) {
            (Some((read, _)), true) => {
                let mut s0 = vec![T::zero(); self.problem.body.len()];
                download(&self.gpu, read, &mut s0)?;
                s0
            }
            _ => Vec::new(),
        };
        Ok(FailureHistory {
            bond_damage: self.bond_damage_csr()?.unwrap_or_default(),
            node_s0,
        })
    }
}
