//! A rank's local problem, built straight from its subdomain: the local nodes in a given
//! order (the plan's, or the device order of `gpu/order.rs`), the families of the owned
//! nodes a caller keeps in local indices and in the global CSR order, and their bonds' data
//! (`beta`, the surface correction, the initial status): gathered from the problem's stored
//! arrays, or for a lean problem (no bond stored on the host) computed per bond by the
//! arithmetic that makes the stored ones ([`bond_factors`]), so the same values bit for bit
//! either way; a restart's damage per bond (`Problem::restored`) is gathered the same way.
//! Every per-bond array is filled in parallel and only for the rank's bonds: the
//! rank never holds a whole-problem per-bond array.
//!
//! Units: indices; `beta`, `lambda` dimensionless.

use crate::backend::partitioned::emulate::problem_of;
use crate::material::bonds::bond_factors;
use crate::neighbors::cell_list::csr_families;
use crate::partition::Subdomain;
use crate::setup::Problem;
use rayon::prelude::*;

/// Which of the owned nodes' bond data the local problem holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BondArrays {
    /// Families, `beta`, the surface correction and the initial status (`CpuLoop`).
    All,
    /// Families and the initial status only (`GpuLoop`, whose kernels recompute `beta` and
    /// the correction from positions): `beta` empty, no correction.
    StatusOnly,
}

/// The problem of `sub`'s local nodes in the order `to_plan` (local index `k` is the plan's
/// local node `to_plan[k]`; `of_plan` its inverse; `None`: the plan's own order), holding the
/// families and bond data of the owned nodes `keep` (plan index) selects, every other node's
/// (ghosts' included) empty.
pub(super) fn local_problem(
    problem: &Problem,
    sub: &Subdomain,
    order: Option<(&[usize], &[usize])>,
    keep: impl Fn(usize) -> bool + Sync,
    arrays: BondArrays,
) -> Problem {
    let n = sub.nodes.len();
    let plan_of = |k: usize| order.map_or(k, |(to, _)| to[k]);
    let local_of = |p: u32| order.map_or(p, |(_, of)| of[p as usize] as u32);
    let kept = |k: usize| {
        let p = plan_of(k);
        (p < sub.owned && keep(p)).then_some(p)
    };
    let families = csr_families(
        n,
        |k| kept(k).map_or(0, |p| sub.families.range(p).len()),
        |k, slot| {
            if let Some(p) = kept(k) {
                for (s, &l) in slot.iter_mut().zip(sub.families.family(p)) {
                    *s = local_of(l);
                }
            }
        },
    );
    let nodes: Vec<usize> = (0..n)
        .into_par_iter()
        .map(|k| sub.nodes[plan_of(k)])
        .collect();
    // the global index of local bond `b` of local node `k` (a kept owned node)
    let global = |k: usize, b: usize| sub.bond_start[plan_of(k)] + (b - families.offsets[k]);
    let stored = problem.bonds_stored;
    let initial_mu = match stored {
        true => families.per_bond(|k, b, _| problem.initial_mu[global(k, b)]),
        false => {
            let zone = problem.precrack_zone();
            families.per_bond(|k, _, l| {
                let (i, j) = (nodes[k], nodes[l]);
                u8::from(!zone.near(&problem.body.positions[i]) || problem.initially_intact(i, j))
            })
        }
    };
    let (beta, correction) = match (arrays, stored) {
        (BondArrays::StatusOnly, _) => (Vec::new(), None),
        (BondArrays::All, true) => {
            let b = &problem.bonds;
            let beta = families.per_bond(|k, bond, _| b.beta[global(k, bond)]);
            let correction =
                (b.correction.as_ref()).map(|c| families.per_bond(|k, bond, _| c[global(k, bond)]));
            (beta, correction)
        }
        (BondArrays::All, false) => {
            let body = &problem.body;
            let kind = problem.model.discretization.partial_volume;
            let reference = problem.bonds.correction_reference(&problem.material);
            let factors =
                |k: usize, l: usize| bond_factors(body, kind, reference, nodes[k], nodes[l]);
            let beta = families.per_bond(|k, _, l| factors(k, l).0);
            let correction = reference.map(|_| families.per_bond(|k, _, l| factors(k, l).1));
            (beta, correction)
        }
    };
    // (a restart's damage per bond of a softening law, the kept nodes' bonds in their order)
    let restored = &problem.restored.bond_damage;
    let bond_damage = match restored.is_empty() {
        true => Vec::new(),
        false => families.per_bond(|k, b, _| restored[global(k, b)]),
    };
    let mut local = problem_of(problem, &nodes, families, &[]);
    local.restored.bond_damage = bond_damage;
    local.precracked = initial_mu.par_iter().filter(|&&m| m == 0).count();
    local.initial_mu = initial_mu;
    local.bonds.beta = beta;
    local.bonds.correction = correction;
    local
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A pre-cracked plate of 30 x 10 nodes with partial volumes and the surface correction,
    /// its top edge pulled: a cut across x leaves interior, boundary and ghost nodes, and
    /// bonds cut by the pre-crack on the first of three ranks.
    pub(crate) fn plate_model() -> crate::model::Model {
        let text = "[material]\nmodel = \"pmb\"\nyoungs_modulus = 200e9\ndensity = 8000\n\
             critical_stretch = 0.004\nsurface_correction = true\n[discretization]\n\
             dimension = \"plane-stress\"\nthickness = 1e-3\ndx = 1e-3\n\
             horizon_factor = 3.015\npartial_volume = \"linear\"\n[geometry]\n\
             box = [{ min = [0, 0], max = [0.029, 0.009] }]\n\
             [[precrack]]\nstart = [-0.001, 0.0045]\nend = [0.01, 0.0045]\n\
             [[region]]\nname = \"top\"\nshape = \"edge\"\nside = \"+y\"\ndepth_dx = 2\n\
             [[boundary]]\nregion = \"top\"\nkind = \"velocity\"\ny = 1.0\n\
             [solver]\nkind = \"explicit\"\nsteps = 1\n";
        crate::model::parse(text, "test.toml", &[]).expect("valid model")
    }

    /// A lean problem's local problem (bond data computed per bond) equals the stored
    /// problem's (gathered), array for array and bit for bit, for the plate (partial volumes,
    /// the surface correction, a pre-crack), in the plan's order and in a reversed order:
    /// the two ways give the same numbers by construction, and a mismatch would break the
    /// bitwise agreement of distributed runs with the one-process run.
    #[test]
    fn lean_and_stored_local_problems_agree_bitwise() {
        let model = plate_model();
        let dir = std::path::Path::new(".");
        let stored = Problem::build(model.clone(), dir).expect("builds");
        let lean = Problem::build_lean(model, dir).expect("builds");
        for rank in 0..3 {
            let plan_s = crate::distributed::RankPlan::new(&stored, 3, rank).unwrap();
            let plan_l = crate::distributed::RankPlan::new(&lean, 3, rank).unwrap();
            assert_eq!(plan_s.sub, plan_l.sub, "rank {rank}: the same subdomain");
            let sub = &plan_s.sub;
            let to: Vec<usize> = (0..sub.nodes.len()).rev().collect();
            let of: Vec<usize> = (0..sub.nodes.len()).rev().collect();
            for order in [None, Some((&to[..], &of[..]))] {
                let keep = |p: usize| p % 3 != 1;
                let a = local_problem(&stored, sub, order, keep, BondArrays::All);
                let b = local_problem(&lean, &plan_l.sub, order, keep, BondArrays::All);
                assert_eq!(a.families, b.families, "rank {rank}");
                assert!(a.families.bonds() > 0, "rank {rank}: bonds kept");
                assert_eq!(a.initial_mu, b.initial_mu, "rank {rank}");
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&a.bonds.beta), bits(&b.bonds.beta), "rank {rank}");
                let (ca, cb) = (a.bonds.correction.unwrap(), b.bonds.correction.unwrap());
                assert_eq!(bits(&ca), bits(&cb), "rank {rank}");
                assert_eq!(a.precracked, b.precracked, "rank {rank}");
            }
        }
        assert!(stored.precracked_bonds() > 0, "the pre-crack cuts bonds");
        let plan = crate::distributed::RankPlan::new(&lean, 3, 0).unwrap();
        let local = local_problem(&lean, &plan.sub, None, |_| true, BondArrays::All);
        assert!(
            local.precracked > 0,
            "rank 0's part holds pre-cracked bonds"
        );
    }
}
