//! The per-node fields a snapshot may add (`output.fields`, `docs/models.md`), computed on
//! the host from the displacement, the problem's bonds (stored or searched again:
//! [`Problem::visit_bonds`]) and the backend's bond status (and a softening law's damage),
//! so they are the same on every backend; on a GPU backend they cost a download of the bond
//! status per snapshot. The bond forces are the law functions' (`crate::material::laws`),
//! in `f64`:
//!
//! - `force_density`: the internal force density `L_i = sum_j f_ij V_j`, N/m^3 (bonds only:
//!   no body force, contact or boundary term);
//! - `strain_energy_density`: J/m^3, as the backends' strain energy sums it (PMB
//!   `w s^2 x / 4` per bond, LPS deviatoric per bond plus `K_d theta^2 / 2`; a softening
//!   bond's weight times `1 - d`);
//! - `stress`: the bond virial stress `sigma_i = 1/2 sum_j f_ij (x) xi_ij V_j`, Pa, with
//!   `f_ij` the force density bond `i -> j` exerts on `i` per unit `V_j` (PMB: the pair
//!   force; LPS: `(t_ij + t_ji) M`) and `xi_ij = x_j - x_i` the reference bond. A bond in
//!   tension pulls `i` towards `j`, so tension is positive. Row-major 3 x 3
//!   (`sigma[3 a + b] = 1/2 sum_j f_a xi_b V_j`, zero rows and columns beyond `d`); symmetric
//!   for the linearized laws (the force is along `xi`); with the nonlinear ones the force is
//!   along the deformed bond, a nominal (first Piola-Kirchhoff-like) stress. In a uniform
//!   strain away from surfaces it equals the continuum stress the constants are calibrated
//!   to; within a horizon of a surface it is lower (fewer bonds);
//! - `broken_bonds`: the broken directed bonds `i -> j` of each node;
//! - `material_id`: with several materials (`[[material]]`) the index of each node's material
//!   in the model's order; otherwise the body's material id per node (0 where it gives none).

use crate::backend::coefficients::{lps_coefficients, weight_of};
use crate::material::bonds::BondSource;
use crate::material::laws::{lps, pmb, Vec3};
use crate::material::Law;
use crate::model::OutputField;
use crate::setup::Problem;
use crate::{Error, Result};
use rayon::prelude::*;

/// The fields of `output.fields` beyond the backend's own (each `None` unless chosen).
#[derive(Debug, Default, Clone)]
pub(crate) struct ExtraFields {
    /// N/m^3, `d` components per node.
    pub force_density: Option<Vec<f64>>,
    /// J/m^3.
    pub strain_energy_density: Option<Vec<f64>>,
    /// Pa, 9 components per node, row-major.
    pub stress: Option<Vec<f64>>,
    pub material_id: Option<Vec<i64>>,
    pub broken_bonds: Option<Vec<i64>>,
}

/// The extra fields `problem.model.output` chooses, at displacement `u` (m, `d` per node)
/// with bond status `status` (1 intact, 0 broken, per directed bond in CSR order, `j`
/// ascending in each family; empty unless `Output::reads_bonds`) and a softening
/// law's damage per bond.
pub(crate) fn extra_fields(
    problem: &Problem,
    u: &[f64],
    status: &[u8],
    damage: Option<&[f64]>,
) -> Result<ExtraFields> {
    let out = &problem.model.output;
    let mut extra = ExtraFields {
        material_id: material_ids(problem, None),
        ..ExtraFields::default()
    };
    if !problem.model.output.reads_bonds() {
        return Ok(extra);
    }
    let nodes = bond_pass(problem, u, status, damage)?;
    let d = problem.dim();
    let want = |f| out.writes(f);
    if want(OutputField::ForceDensity) {
        extra.force_density = Some(nodes.iter().flat_map(|n| n.force[..d].to_vec()).collect());
    }
    if want(OutputField::StrainEnergyDensity) {
        extra.strain_energy_density = Some(nodes.iter().map(|n| n.energy).collect());
    }
    if want(OutputField::Stress) {
        extra.stress = Some(nodes.iter().flat_map(|n| n.stress).collect());
    }
    if want(OutputField::BrokenBonds) {
        extra.broken_bonds = Some(nodes.iter().map(|n| n.broken).collect());
    }
    Ok(extra)
}

/// The material id of each of `nodes` (`None`: every node) where `output.fields` chooses
/// it: with several materials (`[[material]]`) the index of the node's material in the
/// model's order, otherwise the body's material id (0 where it gives none).
pub(crate) fn material_ids(problem: &Problem, nodes: Option<&[usize]>) -> Option<Vec<i64>> {
    if !problem.model.output.writes(OutputField::MaterialId) {
        return None;
    }
    let b = &problem.body;
    let id = |i: usize| match (&problem.materials, &b.material_ids) {
        (Some(map), _) => map.node[i] as i64,
        (None, Some(ids)) => ids[i],
        (None, None) => 0,
    };
    Some(match nodes {
        Some(nodes) => nodes.iter().map(|&i| id(i)).collect(),
        None => (0..b.len()).map(id).collect(),
    })
}

/// What one node's bonds give.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct NodeBondFields {
    /// N/m^3 (3 components, zero beyond `d`).
    pub force: Vec3<f64>,
    /// J/m^3.
    pub energy: f64,
    /// Pa, row-major.
    pub stress: [f64; 9],
    pub broken: i64,
}

/// One pass over every node's bonds (two for LPS: its dilatation first).
pub(crate) fn bond_pass(
    problem: &Problem,
    u: &[f64],
    status: &[u8],
    damage: Option<&[f64]>,
) -> Result<Vec<NodeBondFields>> {
    let offsets = &problem.families.offsets;
    let bonds = offsets.last().copied().unwrap_or(0);
    let d = problem.dim();
    if status.len() != bonds
        || damage.is_some_and(|v| v.len() != bonds)
        || u.len() != d * problem.body.len()
    {
        let message = format!(
            "the snapshot's fields got {} bond statuses and {} displacements for {bonds} bonds \
             and {} nodes",
            status.len(),
            u.len(),
            problem.body.len()
        );
        let backend = "host".to_string();
        return Err(Error::Backend { backend, message });
    }
    let law = problem.material.law;
    let lps_nodes = match law {
        Law::Lps { .. } => Some(lps_coefficients(problem)),
        Law::Pmb { .. } => None,
    };
    Ok(problem.visit_bonds(|source| {
        let pass = BondPass {
            problem,
            source,
            u,
            status,
            damage,
        };
        // LPS: each node's dilatation with the same status (the force reads both ends')
        let theta: Vec<f64> = match &lps_nodes {
            Some(c) => (0..problem.body.len())
                .into_par_iter()
                .map(|i| c.d_over_m[i] * pass.dilatation_sum(i))
                .collect(),
            None => Vec::new(),
        };
        let node_state = |k: usize| {
            let c = lps_nodes.as_ref().expect("LPS coefficients");
            lps::NodeState {
                alpha: c.alpha[k],
                p: c.pcoef[k],
                theta: theta[k],
            }
        };
        (0..problem.body.len())
            .into_par_iter()
            .map(|i| pass.node(i, &node_state))
            .collect()
    }))
}

/// The inputs of a bond pass.
struct BondPass<'a, S: BondSource> {
    problem: &'a Problem,
    source: &'a S,
    u: &'a [f64],
    status: &'a [u8],
    damage: Option<&'a [f64]>,
}

/// One intact bond as the law reads it.
struct Bond {
    j: usize,
    xi: Vec3<f64>,
    eta: Vec3<f64>,
    x: f64,
    /// The law's weight times what a softening bond keeps, `1 - d`.
    w: f64,
}

impl<S: BondSource> BondPass<'_, S> {
    /// Call `f` with each bond of node `i` (index in CSR order), intact or not.
    fn each_bond(&self, i: usize, mut f: impl FnMut(&Bond, bool)) {
        let p = self.problem;
        let (pos, vol, d) = (&p.body.positions, &p.body.volumes, p.dim());
        let mut b = p.families.offsets[i];
        self.source.for_each_bond(i, |j, beta, lambda| {
            let xi = [0, 1, 2].map(|k| pos[j][k] - pos[i][k]);
            let mut eta = [0.0; 3];
            for k in 0..d {
                eta[k] = self.u[d * j + k] - self.u[d * i + k];
            }
            let x = crate::material::bonds::bond_length(pos, i, j);
            let kept = self.damage.map_or(1.0, |dmg| 1.0 - dmg[b]);
            let w = weight_of(p, (i, j), beta * vol[j], lambda, x) * kept;
            let bond = Bond { j, xi, eta, x, w };
            f(&bond, self.status[b] != 0);
            b += 1;
        });
    }

    /// LPS: `sum_j w x e` over the intact bonds of `i` (times `d / m_i`: the dilatation).
    fn dilatation_sum(&self, i: usize) -> f64 {
        let linearized = self.problem.material.linearized();
        let mut s = 0.0;
        self.each_bond(i, |bond, intact| {
            if intact {
                let k = lps::kinematics(linearized, &bond.xi, &bond.eta, bond.x);
                s += lps::dilatation_term(bond.w, bond.x, k.e);
            }
        });
        s
    }

    /// Force density, energy density, virial stress and broken bonds of node `i`.
    fn node(&self, i: usize, lps_node: &dyn Fn(usize) -> lps::NodeState<f64>) -> NodeBondFields {
        let m = &self.problem.material;
        let dim = m.d() as f64;
        let mut out = NodeBondFields::default();
        self.each_bond(i, |bond, intact| {
            if !intact {
                out.broken += 1;
                return;
            }
            let (xi, eta, x, w) = (&bond.xi, &bond.eta, bond.x, bond.w);
            let (scale, dir, energy) = match m.law {
                Law::Pmb { linearized, .. } => {
                    let (s, scale, dir) = pmb_term(linearized, xi, eta, x, w);
                    (scale, dir, pmb::energy_density(w, s, x))
                }
                Law::Lps { linearized, .. } => {
                    let k = lps::kinematics(linearized, xi, eta, x);
                    let (ni, nj) = (lps_node(i), lps_node(bond.j));
                    let scale = lps::force_scale(w, x, k.len, k.e, ni, nj);
                    let energy = lps::bond_energy_density(ni.alpha, w, k.e, ni.theta, x, dim);
                    (scale, k.dir, energy)
                }
            };
            out.energy += energy;
            for a in 0..3 {
                let f = scale * dir[a];
                out.force[a] += f;
                for b in 0..3 {
                    out.stress[3 * a + b] += 0.5 * f * xi[b];
                }
            }
        });
        if let Law::Lps { kd, .. } = m.law {
            // (each node its own K_d where there are several materials)
            let kd = match &self.problem.materials {
                Some(map) => match map.of_node(i).law {
                    Law::Lps { kd, .. } => kd,
                    Law::Pmb { .. } => kd,
                },
                None => kd,
            };
            out.energy += lps::dilatation_energy_density(kd, lps_node(i).theta);
        }
        out
    }
}

/// PMB: the stretch, the scale of the force term and its direction (`xi` linearized, the
/// deformed bond `xi + eta` else), from the law's formulas.
fn pmb_term(
    linearized: bool,
    xi: &Vec3<f64>,
    eta: &Vec3<f64>,
    x: f64,
    w: f64,
) -> (f64, f64, Vec3<f64>) {
    use crate::material::laws::dot;
    if linearized {
        let (s, scale) = pmb::linearized_term(dot(xi, eta), x, w);
        (s, scale, *xi)
    } else {
        let y = [xi[0] + eta[0], xi[1] + eta[1], xi[2] + eta[2]];
        let w2 = [0, 1, 2].map(|k| 2.0 * xi[k] + eta[k]);
        let (s, scale) = pmb::nonlinear_term(dot(eta, &w2), dot(&y, &y), x, w);
        (s, scale, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A 2D box of 9 x 7 spacings under `law`, its bonds stored or (lean) searched again.
    fn problem(law: &str, lean: bool) -> Problem {
        let text = format!(
            "[material]\nmodel = \"{law}\"\nyoungs_modulus = 70e9\ndensity = 2700\n\
             surface_correction = {}\n{}[discretization]\ndimension = \"plane-strain\"\nthickness = 1e-3\n\
             dx = 1e-3\nhorizon_factor = 3.015\n[geometry]\n\
             box = [{{ min = [0, 0], max = [0.009, 0.007] }}]\n[solver]\nkind = \"explicit\"\n\
             steps = 1\n[output]\nfields = [\"stress\", \"force_density\"]\n",
            law.starts_with("pmb"),
            if law.starts_with("lps") { "poisson_ratio = 0.3\n" } else { "" },
        );
        let model = crate::model::parse(&text, "t.toml", &[]).unwrap();
        match lean {
            false => Problem::build(model, Path::new(".")).unwrap(),
            true => Problem::build_lean(model, Path::new(".")).unwrap(),
        }
    }

    /// A lean problem (no bonds on the host: what a large `gpu-loop` run keeps) gives the
    /// fields of the stored one, bond for bond in the same CSR order (its searched families
    /// list `j` ascending like the stored ones): the same `beta` and surface correction
    /// from the same formulas, so equal to 1e-14 of the largest value (measured: bitwise).
    #[test]
    fn a_lean_problem_gives_the_stored_fields() {
        for law in ["pmb", "pmb-linear", "lps", "lps-nonlinear"] {
            let (stored, lean) = (problem(law, false), problem(law, true));
            assert!(!lean.bonds_stored && stored.bonds_stored);
            assert_eq!(stored.families.offsets, lean.families.offsets);
            let n = stored.body.len();
            let u: Vec<f64> = (0..2 * n)
                .map(|k| 1e-6 * ((k * 7919 % 97) as f64 / 97.0 - 0.5))
                .collect();
            let mut status = vec![1u8; stored.families.bonds()];
            for b in (0..status.len()).step_by(11) {
                status[b] = 0;
            }
            let a = bond_pass(&stored, &u, &status, None).unwrap();
            let b = bond_pass(&lean, &u, &status, None).unwrap();
            let flat = |v: &[NodeBondFields]| -> Vec<f64> {
                (v.iter())
                    .flat_map(|n| n.stress.into_iter().chain(n.force).chain([n.energy]))
                    .collect()
            };
            let (fa, fb) = (flat(&a), flat(&b));
            let scale = fa.iter().fold(0.0f64, |m, x| m.max(x.abs()));
            let diff = fa
                .iter()
                .zip(&fb)
                .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
            println!("{law}: lean vs stored {diff:e} of {scale:e}");
            assert!(diff <= 1e-14 * scale, "{law}: {diff:e} of {scale:e}");
            let broken: i64 = a.iter().map(|n| n.broken).sum();
            assert_eq!(broken, b.iter().map(|n| n.broken).sum::<i64>());
            assert_eq!(broken as usize, status.iter().filter(|&&s| s == 0).count());
        }
    }
}
