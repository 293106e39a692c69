//! The pieces of a snapshot written in parallel (a distributed run, `docs/distributed.md`):
//! each rank writes the nodes it owns as a `.vtu` piece of its own
//! (`<stem>_<step>_<rank>.vtu`), rank 0 the `.pvtu` that lists the pieces and the `.pvd` of
//! the series (`vtk.rs`). This file holds a rank's share ([`Pieces`]) and the subset of the
//! snapshot's arrays it writes.
//!
//! Units: as the arrays (m, m/s, m^3, N/m^3, J/m^3, Pa).

use super::NodeFields;

/// A rank's share of every snapshot.
#[derive(Debug, Clone)]
pub struct Pieces {
    pub rank: usize,
    pub ranks: usize,
    /// The nodes this rank writes (global indices, ascending).
    pub nodes: Vec<usize>,
}

/// The arrays of a snapshot at a subset of its nodes.
pub(super) struct Subset {
    positions: Vec<[f64; 3]>,
    volumes: Vec<f64>,
    displacement: Vec<f64>,
    velocity: Vec<f64>,
    damage: Vec<f64>,
    damage_bond_count: Option<Vec<f64>>,
    dilatation: Option<Vec<f64>>,
    force_density: Option<Vec<f64>>,
    strain_energy_density: Option<Vec<f64>>,
    stress: Option<Vec<f64>>,
    material_id: Option<Vec<i64>>,
    broken_bonds: Option<Vec<i64>>,
}

/// `per` values per node of `values` at `nodes`.
fn pick<T: Copy>(values: &[T], nodes: &[usize], per: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(per * nodes.len());
    for &i in nodes {
        out.extend_from_slice(&values[per * i..per * (i + 1)]);
    }
    out
}

impl Subset {
    /// The arrays of `fields` at `nodes`.
    pub(super) fn of(fields: &NodeFields, nodes: &[usize]) -> Subset {
        let d = fields.dim;
        let opt = |v: Option<&[f64]>, per: usize| v.map(|v| pick(v, nodes, per));
        let ints = |v: Option<&[i64]>| v.map(|v| pick(v, nodes, 1));
        Subset {
            positions: pick(fields.positions, nodes, 1),
            volumes: pick(fields.volumes, nodes, 1),
            displacement: pick(fields.displacement, nodes, d),
            velocity: pick(fields.velocity, nodes, d),
            damage: pick(fields.damage, nodes, 1),
            damage_bond_count: opt(fields.damage_bond_count, 1),
            dilatation: opt(fields.dilatation, 1),
            force_density: opt(fields.force_density, d),
            strain_energy_density: opt(fields.strain_energy_density, 1),
            stress: opt(fields.stress, 9),
            material_id: ints(fields.material_id),
            broken_bonds: ints(fields.broken_bonds),
        }
    }

    /// The subset as the fields of a snapshot (choosing the arrays `like` chooses).
    pub(super) fn view<'a>(&'a self, like: &NodeFields<'a>) -> NodeFields<'a> {
        NodeFields {
            dim: like.dim,
            positions: &self.positions,
            volumes: &self.volumes,
            displacement: &self.displacement,
            velocity: &self.velocity,
            damage: &self.damage,
            damage_bond_count: self.damage_bond_count.as_deref(),
            dilatation: self.dilatation.as_deref(),
            force_density: self.force_density.as_deref(),
            strain_energy_density: self.strain_energy_density.as_deref(),
            stress: self.stress.as_deref(),
            material_id: self.material_id.as_deref(),
            broken_bonds: self.broken_bonds.as_deref(),
            only: like.only,
        }
    }
}
