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
use crate::neighbors::Families;
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
    // (the problem's held status: a stored problem's, or a restart's on a lean one)
    let initial_mu = match !problem.initial_mu.is_empty() {
        true => families.per_bond(|k, b, _| problem.initial_mu[global(k, b)]),
        false => {
            let zone = problem.precrack_zone();
            families.per_bond(|k, _, l| {
                let (i, j) = (nodes[k], nodes[l]);
                u8::from(!zone.near(&problem.body.positions[i]) || problem.initially_intact(i, j))
            })
        }
    };
    let (beta, correction) = match arrays {
        BondArrays::StatusOnly => (Vec::new(), None),
        BondArrays::All => bond_data(problem, &families, &nodes, |k, b, _| global(k, b)),
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

/// The partial-volume factor `beta` and the surface correction of every bond of the local
/// `families` (local nodes `nodes`, global indices): gathered from the problem's stored
/// arrays at the global bond `global(k, b, l)` of local bond `b` of node `k` to `l`, or for
/// a lean problem computed per bond ([`bond_factors`]): the same values bit for bit.
fn bond_data(
    problem: &Problem,
    families: &Families,
    nodes: &[usize],
    global: impl Fn(usize, usize, usize) -> usize + Sync,
) -> (Vec<f64>, Option<Vec<f64>>) {
    if problem.bonds_stored {
        let b = &problem.bonds;
        let beta = families.per_bond(|k, bond, l| b.beta[global(k, bond, l)]);
        let correction =
            (b.correction.as_ref()).map(|c| families.per_bond(|k, bond, l| c[global(k, bond, l)]));
        return (beta, correction);
    }
    let body = &problem.body;
    let kind = problem.model.discretization.partial_volume;
    let reference = problem.bonds.correction_reference(&problem.material);
    let factors = |k: usize, l: usize| bond_factors(body, kind, reference, nodes[k], nodes[l]);
    let beta = families.per_bond(|k, _, l| factors(k, l).0);
    let correction = reference.map(|_| families.per_bond(|k, _, l| factors(k, l).1));
    (beta, correction)
}

/// The matrix scheme's local problem of a rank's subdomain `sub` and, per owned bond of it,
/// its place among the rank's owned bonds in the global CSR order (the order
/// `collect::gather_bonds` takes). The same problem `partitioned::matrix::local_problem`
/// makes from a stored problem's families (the owned nodes with their whole families, the
/// ghosts with their bonds into owned nodes, every family sorted by local index), made here
/// from the subdomain's own families, so from a lean problem too: a ghost's bonds into owned
/// nodes are the owned nodes' bonds to it turned round (families are symmetric). The bond
/// data as [`local_problem`] makes it: `beta` and the surface correction gathered where the
/// problem stores them, else computed per bond ([`bond_factors`]); the initial status per
/// directed bond from the pre-cracks' test, or from the problem's held status (a stored
/// problem's, a restart's checkpoint on a lean one) by the owned end's global bond. A
/// ghost's bond `j -> k` takes there the least of `k -> j`'s held status and its own
/// pre-crack test: a run breaks a pair's two directions together, so that is the status
/// half storage makes of the pair (`min` of the two), and the same as in core.
pub(super) fn matrix_problem(problem: &Problem, sub: &Subdomain) -> (Problem, Vec<usize>) {
    let (n, owned) = (sub.nodes.len(), sub.owned);
    let of_owned = &sub.families;
    // the ghosts' bonds, turned round: (ghost, owned node, its place in the owned family),
    // in owned order, then grouped by ghost (stable: each ghost's owned nodes ascending)
    let mut cut: Vec<(u32, u32, u32)> = (0..owned)
        .into_par_iter()
        .flat_map_iter(|k| {
            let family = of_owned.family(k).iter().enumerate();
            family
                .filter(|&(_, &l)| l as usize >= owned)
                .map(move |(p, &l)| (l, k as u32, p as u32))
        })
        .collect();
    cut.par_sort_by_key(|&(l, _, _)| l);
    let mut ghost_start = vec![0usize; n - owned + 1];
    for &(l, _, _) in &cut {
        ghost_start[l as usize - owned + 1] += 1;
    }
    for g in 0..n - owned {
        ghost_start[g + 1] += ghost_start[g];
    }
    // per local bond: its neighbour and the place of the owned end's bond in its family
    let row = |k: usize| -> Vec<(u32, u32)> {
        match k < owned {
            true => {
                let mut row: Vec<(u32, u32)> = (of_owned.family(k).iter().enumerate())
                    .map(|(p, &l)| (l, p as u32))
                    .collect();
                row.sort_unstable_by_key(|&(l, _)| l);
                row
            }
            false => {
                let g = k - owned;
                let from = &cut[ghost_start[g]..ghost_start[g + 1]];
                from.iter().map(|&(_, o, p)| (o, p)).collect()
            }
        }
    };
    let size = |k: usize| match k < owned {
        true => of_owned.range(k).len(),
        false => ghost_start[k - owned + 1] - ghost_start[k - owned],
    };
    let families = csr_families(n, size, |k, slot| {
        for (s, (l, _)) in slot.iter_mut().zip(row(k)) {
            *s = l;
        }
    });
    let place: Vec<u32> = {
        let places = csr_families(n, size, |k, slot| {
            for (s, (_, p)) in slot.iter_mut().zip(row(k)) {
                *s = p;
            }
        });
        places.neighbors
    };
    // the global bond of the owned end of local bond `b` of local node `k` to `l`
    let owned_end = |k: usize, b: usize, l: usize| match k < owned {
        true => sub.bond_start[k] + place[b] as usize,
        false => sub.bond_start[l] + place[b] as usize,
    };
    let nodes = &sub.nodes;
    let zone = problem.precrack_zone();
    let test = |k: usize, l: usize| {
        let (i, j) = (nodes[k], nodes[l]);
        u8::from(!zone.near(&problem.body.positions[i]) || problem.initially_intact(i, j))
    };
    let held = &problem.initial_mu;
    let initial_mu = families.per_bond(|k, b, l| match (held.is_empty(), k < owned) {
        (true, _) => test(k, l),
        (false, true) => held[owned_end(k, b, l)],
        (false, false) => held[owned_end(k, b, l)].min(test(k, l)),
    });
    // (the global bond `i -> j` itself, where stored: a ghost's is found in its family)
    let global = |k: usize, b: usize, l: usize| match k < owned {
        true => owned_end(k, b, l),
        false => {
            let (i, j) = (nodes[k], nodes[l] as u32);
            let at = problem.families.family(i).binary_search(&j);
            problem.families.offsets[i] + at.expect("families are symmetric")
        }
    };
    let (beta, correction) = bond_data(problem, &families, nodes, global);
    // (an owned node's bonds among the rank's, in the global order: its family's start there
    // and the bond's place in it)
    let place = &place;
    let csr_place = (0..owned)
        .into_par_iter()
        .flat_map_iter(|k| {
            let start = of_owned.offsets[k];
            families.range(k).map(move |b| start + place[b] as usize)
        })
        .collect();
    let mut local = problem_of(problem, nodes, families, &[]);
    local.precracked = initial_mu.par_iter().filter(|&&m| m == 0).count();
    local.initial_mu = initial_mu;
    local.bonds.beta = beta;
    local.bonds.correction = correction;
    (local, csr_place)
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

    /// The matrix scheme's local problem of a rank made from the subdomain (`matrix_problem`)
    /// equals the one the subdomains' matrix scheme makes from the stored families
    /// (`partitioned::matrix::local_problem`), array for array and bit for bit, from a stored
    /// problem and from a lean one, for the plate (partial volumes, the surface correction, a
    /// pre-crack) on each of three ranks; and again where the problem holds a status beyond
    /// the pre-crack's (a restart's: pairs broken, set on the lean problem as a restart
    /// sets it). The owned bonds' places in the global order are those of their global
    /// bonds. A mismatch would make a rank's rows differ from the in-core ones.
    #[test]
    fn matrix_problems_from_the_subdomain_equal_the_stored_ones() {
        use crate::backend::partitioned::matrix::local_problem as stored_local;
        let model = plate_model();
        let dir = std::path::Path::new(".");
        let mut stored = Problem::build(model.clone(), dir).expect("builds");
        let mut lean = Problem::build_lean(model, dir).expect("builds");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        for restarted in [false, true] {
            if restarted {
                // (pairs broken in both directions, as a run breaks them)
                let f = stored.families.clone();
                let mu = f.per_bond(|i, _, j| u8::from((i + j) % 7 != 0));
                for (m, s) in stored.initial_mu.iter_mut().zip(&mu) {
                    *m = (*m).min(*s);
                }
                lean.initial_mu = stored.initial_mu.clone();
            }
            for rank in 0..3 {
                let plan = crate::distributed::RankPlan::new(&stored, 3, rank).unwrap();
                let sub = &plan.sub;
                let (want, bond_index) = stored_local(&stored, sub);
                let owned = sub.owned_nodes();
                let mut places = Vec::new();
                for (k, &g) in owned.iter().enumerate() {
                    for &b in &bond_index[want.families.range(k)] {
                        places.push(sub.families.offsets[k] + b - stored.families.offsets[g]);
                    }
                }
                let lean_plan = crate::distributed::RankPlan::new(&lean, 3, rank).unwrap();
                for (what, p, sub) in [("stored", &stored, sub), ("lean", &lean, &lean_plan.sub)] {
                    let (got, csr_place) = matrix_problem(p, sub);
                    let at = format!("{what}, rank {rank}, restarted {restarted}");
                    assert_eq!(got.families, want.families, "{at}");
                    assert!(got.families.bonds() > sub.bonds(), "{at}: ghosts' bonds");
                    assert_eq!(got.initial_mu, want.initial_mu, "{at}");
                    assert_eq!(got.precracked, want.precracked, "{at}");
                    assert_eq!(bits(&got.bonds.beta), bits(&want.bonds.beta), "{at}");
                    let (cg, cw) = (&got.bonds.correction, &want.bonds.correction);
                    assert_eq!(
                        bits(cg.as_ref().unwrap()),
                        bits(cw.as_ref().unwrap()),
                        "{at}"
                    );
                    let (hg, hw) = (&got.bonds.horizon_volume, &want.bonds.horizon_volume);
                    assert_eq!(bits(hg), bits(hw), "{at}");
                    assert_eq!(got.body.positions, want.body.positions, "{at}");
                    assert_eq!(csr_place, places, "{at}");
                }
                // (the pre-crack lies on rank 0; the restart's pairs are on every rank)
                let broken = want.initial_mu.iter().filter(|&&m| m == 0).count();
                if restarted || rank == 0 {
                    assert!(broken > 0, "rank {rank}: bonds cut on the rank");
                }
            }
        }
    }
}
