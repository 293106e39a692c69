//! Boundary conditions for a device-resident time loop: the conditions of
//! [`Loads`](crate::dynamics::loads::Loads) flattened into lists of named dofs, each dof with
//! its entries in the model's order (so one thread per dof applies them exactly as
//! `loads.rs` does on the host), and the per-step table of ramp factors.

use super::buffers::{addr, upload};
use crate::dynamics::loads::Loads;
use crate::gpu::device::Gpu;
use crate::gpu::params::ConditionParams;
use crate::model::BoundaryKind;
use crate::Result;
use cudarc::driver::CudaSlice;

/// Entry kinds, as `apply_conditions` in `kernels/leapfrog.cu` reads them.
const KINEMATIC: u8 = 0;
const VELOCITY: u8 = 1;
const BODY_FORCE: u8 = 2;

/// Kernel modes of `apply_conditions`.
pub const MODE_STEP_VELOCITY: i32 = 0;
pub const MODE_IMPOSE: i32 = 1;
pub const MODE_BODY_FORCE: i32 = 2;
/// Between two fused force kernels: step velocity, drift into `u_next`, impose.
pub const MODE_BETWEEN_STEPS: i32 = 3;

/// Named dofs with their entries in order (CSR by dof).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DofList {
    pub dofs: Vec<u32>,
    pub starts: Vec<u32>,
    pub condition: Vec<u32>,
    pub value: Vec<f64>,
    pub kind: Vec<u8>,
}

impl DofList {
    /// Entries `(dof, condition, value, kind)` grouped by dof, keeping their order.
    fn from_entries(mut entries: Vec<(u32, u32, f64, u8)>) -> Self {
        entries.sort_by_key(|e| e.0); // stable: the model's order within a dof
        let mut list = DofList::default();
        for (dof, c, val, kind) in entries {
            if list.dofs.last() != Some(&dof) {
                list.dofs.push(dof);
                list.starts.push(list.condition.len() as u32);
            }
            list.condition.push(c);
            list.value.push(val);
            list.kind.push(kind);
        }
        list.starts.push(list.condition.len() as u32);
        list
    }
}

/// The dofs set by displacement, fixed and velocity conditions (`step_velocity`, `impose`)
/// and those loaded by body forces.
pub fn dof_lists(loads: &Loads) -> (DofList, DofList) {
    let dim = loads.dim();
    let (mut kinematic, mut body) = (Vec::new(), Vec::new());
    for (c, cond) in loads.conditions().enumerate() {
        let (kind, list) = match cond.kind {
            BoundaryKind::Displacement | BoundaryKind::Fixed => (KINEMATIC, &mut kinematic),
            BoundaryKind::Velocity => (VELOCITY, &mut kinematic),
            BoundaryKind::BodyForce => (BODY_FORCE, &mut body),
            _ => continue,
        };
        for &i in cond.nodes {
            for k in 0..dim {
                if let Some(val) = cond.values[k] {
                    list.push(((dim * i + k) as u32, c as u32, val, kind));
                }
            }
        }
    }
    (
        DofList::from_entries(kinematic),
        DofList::from_entries(body),
    )
}

/// Doubles per step in the factor table: `h`, then `factor(t1)` and `factor(mid)` per
/// condition.
pub fn table_stride(loads: &Loads) -> usize {
    1 + 2 * loads.conditions().count()
}

/// Append the table row of the step `t0 -> t1`.
pub fn push_table_row(loads: &Loads, t0: f64, t1: f64, table: &mut Vec<f64>) {
    table.push(t1 - t0);
    table.extend(loads.factors(t1));
    table.extend(loads.factors(0.5 * (t0 + t1)));
}

/// A [`DofList`] on the device.
pub struct DeviceDofList {
    dofs: CudaSlice<u32>,
    starts: CudaSlice<u32>,
    condition: CudaSlice<u32>,
    value: CudaSlice<f64>,
    kind: CudaSlice<u8>,
    /// Named dofs.
    pub count: usize,
}

impl DeviceDofList {
    pub fn new(gpu: &Gpu, list: &DofList) -> Result<Self> {
        Ok(DeviceDofList {
            dofs: upload(gpu, &list.dofs)?,
            starts: upload(gpu, &list.starts)?,
            condition: upload(gpu, &list.condition)?,
            value: upload(gpu, &list.value)?,
            kind: upload(gpu, &list.kind)?,
            count: list.dofs.len(),
        })
    }

    /// Bytes held on the device.
    pub fn bytes(&self) -> usize {
        self.dofs.num_bytes()
            + self.starts.num_bytes()
            + self.condition.num_bytes()
            + self.value.num_bytes()
            + self.kind.num_bytes()
    }

    /// Parameters of `apply_conditions` over this list (state addresses filled by the
    /// caller).
    pub fn params(&self, gpu: &Gpu, conditions: usize, mode: i32) -> ConditionParams {
        ConditionParams {
            dofs: addr(gpu, &self.dofs),
            starts: addr(gpu, &self.starts),
            condition: addr(gpu, &self.condition),
            value: addr(gpu, &self.value),
            kind: addr(gpu, &self.kind),
            count: self.count as u32,
            conditions: conditions as u32,
            mode,
            ..Default::default()
        }
    }
}
