//! A rank's part in the order its device holds it: the interior owned nodes (no ghost in
//! their family), then the boundary owned nodes (a ghost in their family), each in ascending
//! global index, then the ghosts as the plan has them (ascending). One bond kernel launch
//! covers a contiguous range of nodes (`BondParams::first .. n`), so the interior's forces
//! are one launch made before the ghosts arrive and the boundary's another made after.
//!
//! The rank's problem in that order keeps each owned node's family in the global CSR order
//! (neighbours renumbered), its bonds' data and status, and the ghosts without families:
//! each owned node's sums run over the same bonds in the same order with the same values as
//! in core.
//!
//! A part that keeps the plan's order on its device (`gpu-matrix` across ranks) takes
//! [`DeviceOrder::of_plan`], the identity.
//!
//! Units: indices; values as the arrays they come from.

use crate::distributed::part::{local_problem, BondArrays};
use crate::dynamics::{Loads, State};
use crate::neighbors::Families;
use crate::partition::Subdomain;
use crate::setup::Problem;
use crate::Real;
use std::sync::Arc;

/// The device order of a rank's nodes and the maps to the plan's order and the global one.
#[derive(Debug, Clone)]
pub(super) struct DeviceOrder {
    /// Device index -> plan index (the plan's local index: owned ascending, then ghosts).
    pub to_plan: Vec<usize>,
    /// Plan index -> device index.
    pub of_plan: Vec<usize>,
    /// Interior nodes (device indices `0..interior`).
    pub interior: usize,
    /// Owned nodes (device indices `0..owned`; the boundary is `interior..owned`).
    pub owned: usize,
    /// Global node -> its device index where this rank owns it, else `u32::MAX` (what the
    /// boundary conditions are restricted with, `Loads::on_part`).
    pub owned_local: Vec<u32>,
    /// The last conditions restricted to the part, with the identity of the run's conditions
    /// they came from ([`DeviceOrder::part_loads`]).
    part_loads: Option<(u64, Arc<Loads>)>,
}

impl DeviceOrder {
    /// The order of `sub`'s nodes (a part of a body of `n_global` nodes; `on_edge`: per
    /// owned node, a ghost in its family, `RankPlan::on_edge`).
    pub fn new(sub: &Subdomain, n_global: usize, on_edge: &[bool]) -> DeviceOrder {
        let owned = sub.owned;
        let (boundary, mut to_plan): (Vec<usize>, Vec<usize>) =
            (0..owned).partition(|&k| on_edge[k]);
        let interior = to_plan.len();
        to_plan.extend(boundary);
        to_plan.extend(owned..sub.nodes.len());
        let mut of_plan = vec![0; to_plan.len()];
        for (k, &p) in to_plan.iter().enumerate() {
            of_plan[p] = k;
        }
        let mut owned_local = vec![u32::MAX; n_global];
        for (k, &p) in to_plan[..owned].iter().enumerate() {
            owned_local[sub.nodes[p]] = k as u32;
        }
        DeviceOrder {
            to_plan,
            of_plan,
            interior,
            owned,
            owned_local,
            part_loads: None,
        }
    }

    /// `loads` restricted to the owned nodes in this order (`Loads::on_part`), made once per
    /// set of conditions (`Loads::id`) rather than at every call of the time loop: the
    /// restriction is O(constrained dofs), and a new restriction would also make the device
    /// loop build its condition lists again.
    pub fn part_loads(&mut self, loads: &Loads) -> Arc<Loads> {
        match &self.part_loads {
            Some((id, part)) if *id == loads.id() => part.clone(),
            _ => {
                let part = Arc::new(loads.on_part(&self.owned_local, self.len()));
                self.part_loads = Some((loads.id(), part.clone()));
                part
            }
        }
    }

    /// The plan's own order (owned, then ghosts; every owned node counted interior): a part
    /// whose device arrays keep the plan's order (`gpu-matrix` across ranks, `matrix.rs`).
    pub fn of_plan(sub: &Subdomain, n_global: usize) -> DeviceOrder {
        DeviceOrder::new(sub, n_global, &vec![false; sub.owned])
    }

    /// Nodes of the part (owned and ghosts).
    pub fn len(&self) -> usize {
        self.to_plan.len()
    }

    /// The problem of `sub`'s nodes in this order: owned nodes with their families (global
    /// CSR order, device indices) and bond status, ghosts without; no `beta` nor surface
    /// correction (the kernels recompute both from positions), built straight from the
    /// subdomain (`part.rs`).
    pub fn problem(&self, problem: &Problem, sub: &Subdomain) -> Problem {
        self.problem_with(problem, sub, BondArrays::StatusOnly)
    }

    /// [`DeviceOrder::problem`] with the bond arrays `arrays` says.
    fn problem_with(&self, problem: &Problem, sub: &Subdomain, arrays: BondArrays) -> Problem {
        let order = Some((&self.to_plan[..], &self.of_plan[..]));
        let mut local = local_problem(problem, sub, order, |_| true, arrays);
        // (the damage per bond comes with the part; each node's critical stretch here)
        local.restored.node_s0 = self.restored_s0(problem, sub);
        local
    }

    /// A restart's critical stretch of each local node (`Problem::restored`, global) in this
    /// order, ghosts' too (the first breaking reads them before any exchange); empty where
    /// the restart has none.
    fn restored_s0(&self, problem: &Problem, sub: &Subdomain) -> Vec<f64> {
        let s0 = &problem.restored.node_s0;
        match s0.is_empty() {
            true => Vec::new(),
            false => (self.to_plan.iter()).map(|&p| s0[sub.nodes[p]]).collect(),
        }
    }

    /// Plan indices (as the halo lists hold them) as device indices.
    pub fn device_indices(&self, plan: &[u32]) -> Vec<u32> {
        plan.iter()
            .map(|&p| self.of_plan[p as usize] as u32)
            .collect()
    }

    /// The owned nodes' values of a global array (`per` per node) in device order.
    pub fn owned_of_global<T: Copy>(
        &self,
        global: &[T],
        sub: &Subdomain,
        per: usize,
        out: &mut [T],
    ) {
        for (k, &p) in self.to_plan[..self.owned].iter().enumerate() {
            let i = sub.nodes[p];
            out[per * k..per * (k + 1)].copy_from_slice(&global[per * i..per * (i + 1)]);
        }
    }

    /// The owned entries of the driver's global `state` (`d` per node) into `local` (device
    /// order), for the upload a call makes where the device does not hold the state; the
    /// ghosts' entries are left (exchanged before they are read).
    pub fn owned_state_of<T: Real>(
        &self,
        state: &State<T>,
        sub: &Subdomain,
        d: usize,
        local: &mut State<T>,
    ) {
        let l = local;
        for (global, local) in [
            (&state.u, &mut l.u),
            (&state.v, &mut l.v),
            (&state.a, &mut l.a),
            (&state.f, &mut l.f),
            (&state.b, &mut l.b),
        ] {
            self.owned_of_global(global, sub, d, local);
        }
    }

    /// The owned entries of `local` (device order, `d` per node; just downloaded) into the
    /// driver's `state` at their nodes: this rank's values, no gather (the rank's part of the
    /// state; `RankOutputs::gather_state` brings the whole where an output needs it).
    pub fn owned_into_state<T: Real>(
        &self,
        local: &State<T>,
        sub: &Subdomain,
        d: usize,
        state: &mut State<T>,
    ) {
        let l = local;
        for (local, global) in [
            (&l.u, &mut state.u),
            (&l.v, &mut state.v),
            (&l.a, &mut state.a),
            (&l.f, &mut state.f),
            (&l.b, &mut state.b),
        ] {
            for (k, &p) in self.to_plan[..self.owned].iter().enumerate() {
                let i = sub.nodes[p];
                global[d * i..d * (i + 1)].copy_from_slice(&local[d * k..d * (k + 1)]);
            }
        }
    }

    /// The owned nodes' values of a device-order array (`per` per node) in the plan's order
    /// (ascending global index: what the gathers across ranks take).
    pub fn owned_in_plan_order<T: Copy>(&self, device: &[T], per: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(per * self.owned);
        for &k in &self.of_plan[..self.owned] {
            out.extend_from_slice(&device[per * k..per * (k + 1)]);
        }
        out
    }

    /// The owned nodes' per-bond values (the bond status, a softening law's damage) in the
    /// plan's order (each family in CSR order), from those of the part's problem (`families`:
    /// its families, in device order).
    pub fn per_bond_in_plan_order<V: Copy>(&self, status: &[V], families: &Families) -> Vec<V> {
        let mut out = Vec::with_capacity(status.len());
        for &k in &self.of_plan[..self.owned] {
            out.extend_from_slice(&status[families.range(k)]);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::CpuLoop;
    use crate::distributed::RankPlan;
    use crate::dynamics::{Forces, Loads};
    use std::sync::Arc;

    /// The plate of `part.rs`'s tests, stored.
    fn plate() -> Problem {
        let model = crate::distributed::part::tests::plate_model();
        Problem::build(model, std::path::Path::new(".")).expect("builds")
    }

    /// The rank's problem in device order, given every local node's displacement, gives
    /// each owned node the force the whole problem gives it, bit for bit (the same bonds in
    /// the same order with the same values), with the bonds broken by a displacement that
    /// breaks some; the interior nodes read no ghost; the conditions restricted to the part
    /// name the owned nodes' dofs of the whole problem's. The same from the lean twin of the
    /// problem (each rank's families searched, their bond data computed per bond).
    #[test]
    fn the_part_in_device_order_gives_the_owned_forces_bitwise() {
        let problem = plate();
        let (n, d) = (problem.body.len(), problem.dim());
        let u: Vec<f64> = (0..n * d)
            .map(|k| 1.6e-5 * ((k * 7919 % 1013) as f64 / 1013.0 - 0.5))
            .collect();
        let mut whole = CpuLoop::<f64>::new(Arc::new(problem.clone()));
        let mut f = vec![0.0; n * d];
        let broken = whole.break_bonds_and_force(&u, &mut f).unwrap();
        assert!(broken > 0, "the displacement breaks bonds");
        let loads = Loads::new(&problem, 1e-8);
        let mut broken_parts = 0;
        // (the part from the stored problem and from its lean twin, whose rank searches its
        // own families and computes their bond data)
        let lean = Problem::build_lean(problem.model.clone(), std::path::Path::new("."));
        let lean = lean.expect("builds");
        for (rank, source) in [(0, &problem), (1, &problem), (0, &lean), (1, &lean)] {
            let plan = RankPlan::new(source, 2, rank).unwrap();
            let order = DeviceOrder::new(&plan.sub, n, &plan.on_edge());
            assert!(
                0 < order.interior && order.interior < order.owned,
                "both kinds"
            );
            // (with `beta` and the correction: the host loop below reads them)
            let local = order.problem_with(source, &plan.sub, BondArrays::All);
            for k in 0..order.interior {
                let family = local.families.family(k);
                assert!(
                    family.iter().all(|&l| (l as usize) < order.owned),
                    "interior"
                );
            }
            let nodes: Vec<usize> = order.to_plan.iter().map(|&p| plan.sub.nodes[p]).collect();
            let mut u_local = vec![0.0; d * nodes.len()];
            for (k, &i) in nodes.iter().enumerate() {
                u_local[d * k..d * (k + 1)].copy_from_slice(&u[d * i..d * (i + 1)]);
            }
            let mut part = CpuLoop::<f64>::new(Arc::new(local));
            let mut f_local = vec![0.0; u_local.len()];
            broken_parts += part.break_bonds_and_force(&u_local, &mut f_local).unwrap();
            for (k, &i) in nodes[..order.owned].iter().enumerate() {
                for c in 0..d {
                    let (a, b) = (f_local[d * k + c], f[d * i + c]);
                    assert_eq!(
                        a.to_bits(),
                        b.to_bits(),
                        "rank {rank}, node {i}: {a} vs {b}"
                    );
                }
            }
            let part_loads = loads.on_part(&order.owned_local, order.len());
            let expected: Vec<usize> = (loads.constrained_dofs().iter())
                .filter_map(|&k| {
                    let at = order.owned_local[k / d];
                    (at != u32::MAX).then_some(d * at as usize + k % d)
                })
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(part_loads.constrained_dofs(), &expected[..], "rank {rank}");
        }
        // (twice: the stored and the lean source)
        assert_eq!(
            broken_parts,
            2 * broken,
            "each bond broken once, by its owner"
        );
    }
}
