//! [`Forces`]: what the time-stepping algorithms need of a backend, one force evaluation with
//! its damage and dilatation. Every backend implements it; `crate::backend::Backend` adds
//! the time-loop hooks a backend may take over (device loops, fused passes) and its
//! footprint.
//!
//! Units: displacement m, force density N/m^3 (`rho a = L + b`), energy J. Vectors are flat,
//! node-major: component `k` of node `i` is at `d * i + k`.

use crate::material::FailureHistory;
use crate::{Real, Result};
use rayon::prelude::*;

/// The physics of one execution: internal forces, bond breaking, damage, dilatation and
/// energy at a displacement field. A fault of the execution (a device call that fails) is an
/// `Err`; the driver writes what it can and reports it.
pub trait Forces<T: Real>: Send + AsForces<T> {
    /// Internal force density `L_i`, N/m^3, at displacement `u`, with the current bond status.
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()>;

    /// Break every intact bond whose stretch at `u` exceeds the critical stretch, unless an end
    /// node is in a no-fail zone. Broken bonds stay broken. Returns the number of directed
    /// bonds broken by this call.
    fn break_bonds(&mut self, u: &[T]) -> Result<usize>;

    /// [`break_bonds`](Forces::break_bonds) then [`internal_force`](Forces::internal_force)
    /// at the same `u`: what a step with damage checking does. An execution may fuse the two
    /// into one pass over the bonds (the results must be those of the two calls). Returns
    /// the number of directed bonds broken.
    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        let broken = self.break_bonds(u)?;
        self.internal_force(u, force)?;
        Ok(broken)
    }

    /// Local damage `phi_i` in [0, 1].
    fn damage(&self, phi: &mut [T]) -> Result<()>;

    /// Dilatation `theta_i` at `u` (LPS); `false` (and `theta` untouched) for bond-based models.
    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool>;

    /// Total strain energy at `u`, J.
    fn strain_energy(&mut self, u: &[T]) -> Result<f64>;

    /// Number of broken directed bonds, pre-cracks included.
    fn broken_bonds(&self) -> usize;

    /// Bond status per directed bond in CSR order: 1 intact, 0 broken.
    fn bond_status(&self) -> Result<Vec<u8>>;

    /// The nodes whose damage ([`Forces::damage`], compared in f64) is at or above
    /// `threshold`, ascending: what a crack-tip sample needs. `None` (the default) where the
    /// backend has no cheaper way than the whole field, which the caller then reads; a GPU
    /// backend thresholds on the device and sends back only these nodes.
    fn nodes_at_or_above(&mut self, _threshold: f64) -> Result<Option<Vec<usize>>> {
        Ok(None)
    }

    /// The bond-count damage of each node ([`bond_count_damage`]), `offsets` the families'
    /// CSR offsets. The default reads the bond status (and a softening law's damage) bond by
    /// bond; a device backend counts on its own status bits instead of sending them over.
    fn bond_count_damage(&self, offsets: &[usize]) -> Result<Vec<f64>> {
        let status = self.bond_status()?;
        let damage = self.bond_damage()?;
        Ok(bond_count_damage(offsets, &status, damage.as_deref()))
    }

    /// Damage per directed bond in CSR order, in [0, 1], of a softening damage law
    /// (`docs/materials.md`); `None` where each bond is intact or broken, as
    /// [`bond_status`](Forces::bond_status) says (the default: only `cpu-loop` and
    /// `gpu-loop` run the softening laws).
    fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        Ok(None)
    }

    /// What bond failure remembers besides the bond status, for a restart checkpoint: a
    /// softening law's damage per bond, each node's critical stretch with
    /// `critical_stretch_alpha` (default: nothing, for backends that run neither).
    fn failure_history(&self) -> Result<FailureHistory<T>> {
        Ok(FailureHistory::default())
    }

    /// For each pair `[i, j]` of nodes bonded in the reference configuration, whether the
    /// bond `i -> j` is broken: what the contact of crack faces asks (`docs/contact.md`). The
    /// default is an error: only the backends that run contact answer.
    fn bonds_broken(&self, _pairs: &[[u32; 2]]) -> Result<Vec<bool>> {
        Err(crate::Error::model(
            "contact.crack_faces",
            "this backend cannot give the bond status of contact pairs; contact runs on \
             cpu-loop and gpu-loop",
        ))
    }

    /// Where this execution holds part of the body (a rank of a distributed run): what
    /// contact needs to compute its nodes' contact forces (`dynamics/contact/`). `None` (the
    /// default): the whole body is here.
    fn part_of_body(&self) -> Option<&dyn PartOfBody<T>> {
        None
    }
}

/// What contact (`dynamics/contact/`) needs of an execution that computes the forces of
/// part of the nodes (its owned nodes; a rank of a distributed run): which nodes, the largest
/// travel over every part (the pair list's rule), the displacements of the other parts'
/// nodes near its own (the contact halo, found again at each pair search), and the
/// impactors' reaction terms of every part merged in node order (so each part sums them as
/// one process does). [`Forces::bonds_broken`] answers for the pairs with an owned end.
/// Collective: every part calls these in the same order. Units: m, N.
pub trait PartOfBody<T: Real> {
    /// Per node (global index): whether this part computes its forces.
    fn owns(&self) -> &[bool];
    /// The largest of every part's `x`.
    fn max_over_parts(&self, x: f64) -> f64;
    /// Find which nodes of the other parts lie within `reach` (m) of this part's owned
    /// nodes at the current positions `y` (read at the owned nodes only), and return every
    /// node this part then knows: its owned nodes and those, ascending.
    fn find_contact_nodes(&self, y: &[[f64; 3]], reach: f64) -> Result<Vec<u32>>;
    /// Fill `u` (current at the owned nodes) with the displacements of the other parts'
    /// nodes of the last [`find_contact_nodes`](Self::find_contact_nodes), from their
    /// owners, m.
    fn fill_contact_nodes(&self, u: &mut [T]) -> Result<()>;
    /// Every part's `(impactor, node, term)` triples merged, ascending by impactor and
    /// node (this part's `mine`, in that order too).
    fn merged_terms(&self, mine: &[ReactionTerm]) -> Result<Vec<ReactionTerm>>;
}

/// One node's term of an impactor's reaction: `(impactor, node, V_i f_i)`, N.
pub type ReactionTerm = (u32, u32, [f64; 3]);

/// Whether the bond `i -> j` of each pair is broken, `families` the CSR families and
/// `broken(k)` bond `k`'s status; a pair not in `i`'s family is not a broken bond (false).
pub fn pairs_broken(
    families: &crate::neighbors::Families,
    pairs: &[[u32; 2]],
    broken: impl Fn(usize) -> bool,
) -> Vec<bool> {
    pairs
        .iter()
        .map(|&[i, j]| {
            let i = i as usize;
            (families.family(i).binary_search(&j)).is_ok_and(|k| broken(families.offsets[i] + k))
        })
        .collect()
}

/// The force evaluation of a time step: with `damage`, bonds past the critical stretch break
/// first ([`Forces::break_bonds_and_force`]); without, forces only. Returns the bonds broken.
pub fn evaluate<T: Real>(
    forces: &mut dyn Forces<T>,
    damage: bool,
    u: &[T],
    force: &mut [T],
) -> Result<usize> {
    if damage {
        forces.break_bonds_and_force(u, force)
    } else {
        forces.internal_force(u, force)?;
        Ok(0)
    }
}

/// The bond-count damage of a node of `family` bonds of which `intact` hold, for status
/// bits alone (no softening damage): `1 - intact / family`, 0 for a node without bonds.
pub fn count_damage(intact: u32, family: usize) -> f64 {
    match family {
        0 => 0.0,
        n => 1.0 - intact as f64 / n as f64,
    }
}

/// The bond-count damage of each node (`docs/materials.md`): `1 - (sum of what its bonds
/// keep) / (its bonds)`, a bond keeping 0 when broken, `1 - d` with a softening law's damage
/// `d`, else 1 (0 for a node without bonds). `offsets` the families' CSR offsets, `status`
/// 1 intact / 0 broken per bond.
pub fn bond_count_damage<T: Real>(
    offsets: &[usize],
    status: &[u8],
    damage: Option<&[T]>,
) -> Vec<f64> {
    (0..offsets.len() - 1)
        .into_par_iter()
        .map(|i| {
            let bonds = offsets[i]..offsets[i + 1];
            if bonds.is_empty() {
                return 0.0;
            }
            let n = bonds.len() as f64;
            let kept: f64 = bonds
                .map(|b| match (status[b], damage) {
                    (0, _) => 0.0,
                    (_, Some(d)) => 1.0 - d[b].f64(),
                    (_, None) => 1.0,
                })
                .sum();
            1.0 - kept / n
        })
        .collect()
}

/// A force evaluation as a trait object, so provided methods of traits built on [`Forces`]
/// can hand `self` to code that takes `&mut dyn Forces` (implemented for every sized one).
pub trait AsForces<T: Real> {
    fn as_forces(&mut self) -> &mut dyn Forces<T>;
}

impl<T: Real, F: Forces<T>> AsForces<T> for F {
    fn as_forces(&mut self) -> &mut dyn Forces<T> {
        self
    }
}
