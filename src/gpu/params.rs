//! Kernel parameter structs, passed by value. Each mirrors, field by field, the struct of
//! the same name in `kernels/common.cuh`, `kernels/leapfrog.cu` or `kernels/matrix_bond.cu`:
//! change both together.
//! Pointers are raw device addresses (`CUdeviceptr`), 0 for "none".

use crate::material::laws::LawParams;
use cudarc::driver::DeviceRepr;

/// Bond loops: force, dilatation, bond breaking, damage, energy (`common.cuh`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct BondParams {
    pub slice_start: u64,
    pub lengths: u64,
    pub neighbors: u64,
    /// Node records `[x, y, z, V]` (m, m^3), 4 doubles per node.
    pub nodes: u64,
    /// f32 kernels: node records `[x - cx, y - cy, z - cz, V]` in f32 (positions relative
    /// to the body's centre `c`), 4 floats per node; 0 in f64.
    pub nodes_f32: u64,
    pub horizon_volume: u64,
    pub mu: u64,
    pub no_fail: u64,
    pub u: u64,
    pub force: u64,
    pub theta: u64,
    pub alpha: u64,
    pub pcoef: u64,
    pub d_over_m: u64,
    pub phi: u64,
    pub energy: u64,
    pub broken: u64,
    pub v: u64,
    pub a: u64,
    pub b: u64,
    pub vhalf: u64,
    pub u_next: u64,
    /// LPS `(alpha_i, p_i theta_i)` per node, written by the dilatation kernel.
    pub lps_pair: u64,
    pub critical_stretch: f64,
    pub delta: f64,
    pub dx: f64,
    pub full_volume: f64,
    pub dt: f64,
    pub half: f64,
    pub inv_density: f64,
    pub damping: f64,
    /// The bond law's parameters (`kernels/law_pmb.cuh`, `kernels/law_lps.cuh`).
    pub law: LawParams,
    pub n: u32,
    pub dim: i32,
    /// 1: the bonds' stretch is linearized, `n . eta / x` (linearized PMB, LPS).
    pub linearized: i32,
    pub check_bonds: i32,
    pub partial_volume: i32,
    pub lps: i32,
    /// Force kernels: [`UPDATE_NONE`], [`UPDATE_END`] or [`UPDATE_DRIFT`].
    pub update: i32,
    /// 1: `nodes` holds only the volumes (f32 without partial volumes).
    pub volumes_only: i32,
    /// `delta - dx / 2` and `delta + dx / 2`, m (the partial-volume ramp).
    pub pv_full: f64,
    pub pv_edge: f64,
    /// The loop constants rounded to f32 (read by the f32 kernels).
    pub critical_stretch_f: f32,
    pub delta_f: f32,
    pub dx_f: f32,
    pub pv_full_f: f32,
    pub pv_edge_f: f32,
    pub pad_f: f32,
    /// A full box lattice run without a neighbour list: slot offset `k` (a multiple of 32)
    /// of a node `i` holds neighbour `i + stencil[k]` (32 K `i32`s), or 0 for the list.
    pub stencil: u64,
    /// On such a lattice with every node of one volume, the bond geometry of each slot
    /// (`SlotGeometry` of `kernels/bonds.cuh`: xi, x, 1/x in the kernel's precision, 8 reals a
    /// slot), or 0: the PMB loop then reads no neighbour position (`pmb_force_lattice_table`).
    pub slot_geometry: u64,
    /// With `slot_geometry`, the weight `c V` of every bond, N/m^3.
    pub lattice_weight: f64,
    /// Several materials (`docs/materials.md`): each node's material index (`u8`), or 0 for
    /// one material.
    pub material: u64,
    /// With `material`, the pair table in f64 ([`pair_table`](crate::material::MaterialMap)):
    /// `n^2` micromoduli, `n^2` critical stretches, `n` values of `K_d`.
    pub pair_table: u64,
    pub n_materials: u32,
    /// The first node of a launch: its threads run nodes `first .. n` (0: every node; a
    /// distributed run launches its interior and boundary nodes apart).
    pub first: u32,
    /// A softening damage law (`law.softening`): the damage of every slot of the sliced
    /// order (`T`, in [0, 1]; 0 in padding), or 0 for the brittle law.
    pub bond_damage: u64,
    /// With `critical_stretch_alpha` or `break_timing = "after-force"`: each node's critical
    /// stretch from the previous breaking evaluation (`T`, read), and the one this
    /// evaluation leaves (`T`, written); 0 otherwise.
    pub node_s0: u64,
    pub node_s0_next: u64,
    /// `critical_stretch_alpha` (`s0 = s00 - alpha s_min`), and rounded to f32.
    pub s0_alpha: f64,
    pub s0_alpha_f: f32,
    pub pad_a: f32,
    /// Several materials of different densities: each node's `1 / rho` (`T`), read by the
    /// fused update instead of `inv_density`; 0 otherwise.
    pub inv_density_node: u64,
}

/// Bytes of [`BondParams`], asserted equal in `kernels/bonds.cuh`.
pub const BOND_PARAMS_BYTES: usize = 480;
const _: () = assert!(std::mem::size_of::<BondParams>() == BOND_PARAMS_BYTES);

/// `BondParams::update`: store the force density only.
pub const UPDATE_NONE: i32 = 0;
/// Also accelerate and kick (`a`, `v`): the last step of a device loop call.
pub const UPDATE_END: i32 = 1;
/// Accelerate, kick, then the next step's kick and drift into `u_next` (`f`, `a` not stored).
pub const UPDATE_DRIFT: i32 = 2;

/// Leapfrog updates (`leapfrog.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct StepParams {
    pub u: u64,
    pub v: u64,
    pub a: u64,
    pub f: u64,
    pub b: u64,
    pub vhalf: u64,
    pub dt: f64,
    pub half: f64,
    pub inv_density: f64,
    pub damping: f64,
    pub ndof: u64,
    /// Several materials of different densities: each node's `1 / rho` (`T`, one per node),
    /// else 0 and `inv_density` for every dof.
    pub inv_density_node: u64,
    /// Dofs per node (with `inv_density_node`).
    pub dim: u64,
}

/// Boundary conditions on named dofs (`leapfrog.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ConditionParams {
    pub dofs: u64,
    pub starts: u64,
    pub condition: u64,
    pub value: u64,
    pub kind: u64,
    pub table: u64,
    pub u: u64,
    pub v: u64,
    pub b: u64,
    pub u_next: u64,
    pub vhalf: u64,
    pub dt: f64,
    pub count: u32,
    pub conditions: u32,
    pub mode: i32,
    pub pad: i32,
}

/// Largest |u| (`max_abs` in `leapfrog.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ReduceParams {
    pub u: u64,
    pub ndof: u64,
    pub out: u64,
}

/// The ghost exchange of a distributed run on the device (`halo.cu`): `count` nodes'
/// `per` values each between `values` (at the nodes of `index`) and the packed `buffer`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct HaloParams {
    pub values: u64,
    pub index: u64,
    pub buffer: u64,
    pub count: u64,
    pub per: u64,
}

/// Probe sums of one region (`probe_sums` in `leapfrog.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeParams {
    pub u: u64,
    pub f: u64,
    pub nodes: u64,
    pub volume: u64,
    pub partial: u64,
    pub count: u64,
    pub dim: u64,
}

/// Adaptive dynamic relaxation (`adr.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct AdrParams {
    pub u: u64,
    pub v: u64,
    pub f: u64,
    pub b: u64,
    pub lambda: u64,
    pub force: u64,
    pub force_prev: u64,
    pub constrained: u64,
    pub partials: u64,
    pub status: u64,
    pub h: f64,
    pub ndof: u64,
    pub blocks: u32,
    pub pad: i32,
}

/// Bond kernels of the matrix formulation (`matrix_bond.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct MatrixParams {
    /// The displacement the rows difference (`d` per node).
    pub u: u64,
    pub xi: u64,
    pub length: u64,
    pub a: u64,
    pub g: u64,
    pub g_second: u64,
    pub a_first: u64,
    pub w: u64,
    pub mu: u64,
    pub first: u64,
    pub second: u64,
    pub no_fail: u64,
    pub z: u64,
    pub ze: u64,
    pub theta: u64,
    pub out: u64,
    pub partial: u64,
    pub broken: u64,
    pub volumes: u64,
    pub critical_stretch: f64,
    pub kd: f64,
    pub rows: u64,
    pub n: u32,
    pub dim: i32,
    /// 0 PMB linearized, 1 PMB nonlinear, 2 LPS.
    pub law: i32,
    pub check_bonds: i32,
    pub half: i32,
    pub pad: i32,
    /// Several materials: each node's material index (`u8`) and the pair table (f64,
    /// `MaterialMap::device_table`), or 0 for one material; the rows' critical stretches and
    /// each node's `K_d` come from them.
    pub material: u64,
    pub pair_table: u64,
    pub n_materials: u32,
    pub pad_m: u32,
    /// `A^T` with implicit values (`matrix_force`): row pointers and signed row indices.
    pub at_ptr: u64,
    pub at_col: u64,
    /// `matrix_force`'s output.
    pub force: u64,
    /// The first row of the bond kernels `matrix_pmb`, `matrix_lps_extension` and
    /// `matrix_lps_force` (their rows are `row_start..rows`; 0 elsewhere).
    pub row_start: u64,
}

// SAFETY: plain `#[repr(C)]` data (integers, floats, device addresses) with the layout of the
// C structs they mirror; the kernels take them by value.
unsafe impl DeviceRepr for BondParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for StepParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for ConditionParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for ReduceParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for ProbeParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for HaloParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for AdrParams {}
unsafe impl DeviceRepr for MatrixParams {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C structs have the same sizes (natural alignment, no hidden padding).
    #[test]
    fn sizes_match_the_c_structs() {
        assert_eq!(
            std::mem::size_of::<BondParams>(),
            23 * 8 + 8 * 8 + crate::material::laws::LAW_PARAMS_BYTES + 8 * 4 + 2 * 8 + 6 * 4 + 8
                // the slot table and the lattice weight
                + 2 * 8
                // several materials: the index and pair table addresses, their count, a pad
                + 2 * 8 + 2 * 4
                // failure history: bond damage and the two node s0 addresses, alpha (f64,
                // f32) and a pad
                + 3 * 8 + 8 + 2 * 4
                // each node's inverse density
                + 8
        );
        assert_eq!(std::mem::size_of::<BondParams>(), BOND_PARAMS_BYTES);
        assert_eq!(std::mem::size_of::<StepParams>(), 13 * 8);
        assert_eq!(std::mem::size_of::<ConditionParams>(), 12 * 8 + 4 * 4);
        assert_eq!(std::mem::size_of::<AdrParams>(), 12 * 8 + 2 * 4);
        assert_eq!(std::mem::size_of::<ProbeParams>(), 7 * 8);
        // 19 addresses, two f64, the row count, six i32/u32, the materials' two addresses
        // and two u32, the implicit A^T's two addresses and the force's, the first row
        assert_eq!(
            std::mem::size_of::<MatrixParams>(),
            19 * 8 + 2 * 8 + 8 + 6 * 4 + 2 * 8 + 2 * 4 + 3 * 8 + 8
        );
    }
}
