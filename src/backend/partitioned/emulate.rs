//! CPU emulation of subdomain-partitioned execution: what the GPU streaming will do, one
//! subdomain at a time, run on the CPU so CI can check it against the in-core run.
//!
//! Each subdomain is a small [`Problem`] of its owned nodes (with their full families, in
//! local indices and global CSR order) and its halo nodes (no families: read-only), with a
//! [`CpuLoop`] of its own. The bond status of the owned nodes' bonds lives in that backend for
//! the whole run and is written back on request ([`Backend::bond_status`]). Per evaluation,
//! the subdomain gathers the displacement of its owned and halo nodes (the values every
//! subdomain reads are those of the same step: read-only), computes the force density of its
//! owned nodes with the CPU loop kernel, and scatters it back.
//!
//! LPS needs the dilatation of halo nodes: two phases. Phase one computes, per subdomain, the
//! dilatation of its owned nodes (breaking their over-stretched bonds first, as in core);
//! the dilatations are exchanged through a global array; phase two gathers those of owned and
//! halo nodes and computes the owned forces. The halo stays one family radius wide.
//!
//! Forces, bond status, damage and dilatation equal the in-core CPU loop backend's bitwise
//! (same per-bond arithmetic, same summation order per node); the strain energy is summed per
//! subdomain, so it agrees to round-off only.

use super::exchange::{gather, scatter, scatter_bonds};
use super::fused::{self, scatter_forces, Carry, FusedForces, Update};
use crate::backend::{Backend, CpuLoop, Footprint};
use crate::dynamics::{ExplicitCall, Forces, State};
use crate::geometry::Body;
use crate::material::{BondData, FailureHistory, Law};
use crate::model::BreakTiming;
use crate::neighbors::Families;
use crate::partition::{partition, Subdomain};
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// One subdomain and its own CPU loop backend.
struct Part<T: Real> {
    sub: Subdomain,
    backend: CpuLoop<T>,
}

/// The partitioned execution of a problem, one subdomain after another.
pub struct PartitionedCpu<T: Real> {
    parts: Vec<Part<T>>,
    dim: usize,
    lps: bool,
    /// Bonds break with each node's history (`MaterialConstants::history_breaking`, a
    /// brittle law): the breaking passes run here, between the subdomains' force passes.
    history: Option<BreakTiming>,
    /// Each node's critical stretch from the previous breaking evaluation (global; empty
    /// before the first), as the in-core loop keeps it.
    node_s0: Vec<T>,
    /// Global dilatation, exchanged between the two LPS phases.
    theta: Vec<T>,
    /// The displacement the fused explicit update drifts into.
    carry: Carry<T>,
}

/// The problem of one subdomain: owned nodes with their families, halo nodes without.
pub fn local_problem(problem: &Problem, sub: &Subdomain) -> Problem {
    let mut offsets = sub.families.offsets.clone();
    offsets.resize(sub.nodes.len() + 1, sub.families.bonds());
    let families = Families {
        offsets,
        neighbors: sub.families.neighbors.clone(),
    };
    let bond_index: Vec<usize> = (0..sub.owned).flat_map(|k| sub.global_bonds(k)).collect();
    problem_of(problem, &sub.nodes, families, &bond_index)
}

/// A problem of the global `nodes` of `problem` (local index = position in `nodes`) with
/// `families` in local indices, whose local bond `k` is the global bond `bond_index[k]`: the
/// geometry and per-node data gathered by node, the per-bond data by bond.
pub(crate) fn problem_of(
    problem: &Problem,
    nodes: &[usize],
    families: Families,
    bond_index: &[usize],
) -> Problem {
    let b = &problem.bonds;
    let body = &problem.body;
    let by_bond = |v: &[f64]| gather(v, bond_index, 1);
    let initial_mu = gather(&problem.initial_mu, bond_index, 1);
    let precracked = initial_mu.par_iter().filter(|&&m| m == 0).count();
    Problem {
        name: problem.name.clone(),
        model: problem.model.clone(),
        body: Body {
            positions: gather(&body.positions, nodes, 1),
            volumes: gather(&body.volumes, nodes, 1),
            dimension: body.dimension,
            dx: body.dx,
            delta: body.delta,
            thickness: body.thickness,
            bbox_min: body.bbox_min,
            bbox_max: body.bbox_max,
            layers: Vec::new(),
            core_min: body.core_min,
            core_max: body.core_max,
            groups: Vec::new(),
            material_ids: body.material_ids.as_ref().map(|m| gather(m, nodes, 1)),
            initial_displacement: None,
            initial_velocity: None,
        },
        families,
        material: problem.material,
        materials: problem
            .materials
            .as_ref()
            .map(|m| crate::material::MaterialMap {
                node: gather(&m.node, nodes, 1),
                ..m.clone()
            }),
        bonds: BondData {
            beta: by_bond(&b.beta),
            correction: b.correction.as_ref().map(|c| by_bond(c)),
            horizon_volume: gather(&b.horizon_volume, nodes, 1),
            weighted_volume: gather(&b.weighted_volume, nodes, 1),
        },
        initial_mu,
        no_fail: gather(&problem.no_fail, nodes, 1),
        regions: Vec::new(),
        neighbor_seconds: 0.0,
        neighbor_search: problem.neighbor_search,
        bonds_stored: true,
        precracked,
        stable_step: None,
        ghosts_from: None,
        // (a restart's damage per bond, by bond; each node's critical stretch stays with the
        // backend that exchanges it between subdomains)
        restored: crate::material::FailureHistory {
            bond_damage: match problem.restored.bond_damage.is_empty() {
                true => Vec::new(),
                false => by_bond(&problem.restored.bond_damage),
            },
            node_s0: Vec::new(),
        },
        setup: Default::default(),
    }
}

impl<T: Real> PartitionedCpu<T> {
    /// Partition `problem` into `count` subdomains ([`partition`]) and set up each one.
    pub fn new(problem: &Problem, count: usize) -> Result<Self> {
        crate::backend::check_material(problem, "cpu-loop", crate::backend::Scheme::CpuLoopParts)?;
        crate::backend::check_contact(problem, "cpu-loop", crate::backend::Placement::Subdomains)?;
        let parts = partition(problem, count)?
            .into_iter()
            .map(|sub| {
                let local = Arc::new(local_problem(problem, &sub));
                Part {
                    backend: CpuLoop::new(local),
                    sub,
                }
            })
            .collect();
        Ok(PartitionedCpu {
            parts,
            dim: problem.dim(),
            lps: matches!(problem.material.law, Law::Lps { .. }),
            history: history_timing(problem),
            node_s0: problem.restored.convert::<T>().node_s0,
            theta: vec![T::zero(); problem.body.len()],
            carry: Carry::default(),
        })
    }

    /// The subdomains.
    pub fn subdomains(&self) -> impl Iterator<Item = &Subdomain> {
        self.parts.iter().map(|p| &p.sub)
    }

    /// LPS phase one: the dilatation of every subdomain's owned nodes into `self.theta`.
    fn dilatation_phase(&mut self, u: &[T], breaking: bool) -> usize {
        let mut broken = 0;
        for part in &mut self.parts {
            let u_local = gather(u, &part.sub.nodes, self.dim);
            let mut theta_local = vec![T::zero(); part.sub.nodes.len()];
            broken += part
                .backend
                .dilatation_and_breaks(&u_local, breaking, &mut theta_local);
            scatter(&theta_local, part.sub.owned_nodes(), 1, &mut self.theta);
        }
        broken
    }

    /// Bond breaking with each node's history, as `CpuLoop` in core does it: every
    /// subdomain's owned nodes' next critical stretch at `u` (exchanged through a global
    /// array: a bond's threshold reads both ends'), then each subdomain breaks its owned
    /// bonds past the smaller critical stretch of their ends from the previous evaluation
    /// (at the first, from this one). Returns the bonds broken.
    fn history_breaks(&mut self, u: &[T]) -> usize {
        let d = self.dim;
        let mut next = vec![T::infinity(); self.theta.len()];
        for part in &self.parts {
            let local = part
                .backend
                .next_critical_stretches(&gather(u, &part.sub.nodes, d));
            scatter(&local, part.sub.owned_nodes(), 1, &mut next);
        }
        let s0 = match self.node_s0.is_empty() {
            true => next.clone(),
            false => std::mem::take(&mut self.node_s0),
        };
        let mut broken = 0;
        for part in &mut self.parts {
            let (nodes, b) = (&part.sub.nodes, &mut part.backend);
            broken += b.breaks_past(&gather(u, nodes, d), &gather(&s0, nodes, 1));
        }
        self.node_s0 = next;
        broken
    }

    /// The sum of `f` over the subdomains, each given the displacement of its local nodes.
    fn sum_over_parts<R: std::iter::Sum<R>>(
        &mut self,
        u: &[T],
        mut f: impl FnMut(&mut CpuLoop<T>, &[T]) -> Result<R>,
    ) -> Result<R> {
        let d = self.dim;
        self.parts
            .iter_mut()
            .map(|p| f(&mut p.backend, &gather(u, &p.sub.nodes, d)))
            .sum()
    }
}

impl<T: Real> FusedForces<T> for PartitionedCpu<T> {
    /// Forces of every subdomain's owned nodes into `force`, breaking bonds first with
    /// `check`, the explicit update fused into the scatter with `update`. Returns the bonds
    /// broken.
    fn forces_with(
        &mut self,
        u: &[T],
        force: &mut [T],
        check: bool,
        mut update: Option<&mut Update<'_, T>>,
    ) -> Result<usize> {
        let history = self.history.filter(|_| check);
        let mut broken = match history {
            Some(BreakTiming::BeforeForce) => self.history_breaks(u),
            _ => 0,
        };
        // (with history the force pass breaks nothing)
        let check = check && history.is_none();
        broken += if self.lps {
            self.dilatation_phase(u, check)
        } else {
            0
        };
        let d = self.dim;
        let mut pmb_broken = 0;
        for part in &mut self.parts {
            let u_local = gather(u, &part.sub.nodes, d);
            let mut f_local = vec![T::zero(); u_local.len()];
            if self.lps {
                let theta_local = gather(&self.theta, &part.sub.nodes, 1);
                part.backend
                    .lps_forces_with(&u_local, &theta_local, &mut f_local);
            } else if check {
                pmb_broken += part.backend.break_bonds_and_force(&u_local, &mut f_local)?;
            } else {
                part.backend.internal_force(&u_local, &mut f_local)?;
            }
            let owned = part.sub.owned_nodes();
            scatter_forces(&f_local, owned, d, force, update.as_deref_mut());
        }
        if history == Some(BreakTiming::AfterForce) {
            broken += self.history_breaks(u);
        }
        Ok(broken + pmb_broken)
    }

    fn carry(&mut self) -> &mut Carry<T> {
        &mut self.carry
    }
}

impl<T: Real> Forces<T> for PartitionedCpu<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.forces_with(u, force, false, None).map(|_| ())
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.sum_over_parts(u, |b, u| b.break_bonds(u))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        self.forces_with(u, force, true, None)
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        for part in &self.parts {
            let mut local = vec![T::zero(); part.sub.nodes.len()];
            part.backend.damage(&mut local)?;
            scatter(&local, part.sub.owned_nodes(), 1, phi);
        }
        Ok(())
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if !self.lps {
            return Ok(false);
        }
        self.dilatation_phase(u, false);
        theta.copy_from_slice(&self.theta);
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        self.sum_over_parts(u, |b, u| b.strain_energy(u))
    }

    fn broken_bonds(&self) -> usize {
        self.parts.iter().map(|p| p.backend.broken_bonds()).sum()
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        let bonds = self.parts.iter().map(|p| p.sub.bonds()).sum();
        let mut status = vec![0; bonds];
        for part in &self.parts {
            scatter_bonds(&part.backend.bond_status()?, &part.sub, &mut status);
        }
        Ok(status)
    }

    fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        let mut global: Option<Vec<T>> = None;
        for part in &self.parts {
            let Some(local) = part.backend.bond_damage()? else {
                return Ok(None);
            };
            let bonds = self.parts.iter().map(|p| p.sub.bonds()).sum();
            let all = global.get_or_insert_with(|| vec![T::zero(); bonds]);
            scatter_bonds(&local, &part.sub, all);
        }
        Ok(global)
    }

    fn failure_history(&self) -> Result<FailureHistory<T>> {
        Ok(FailureHistory {
            bond_damage: self.bond_damage()?.unwrap_or_default(),
            node_s0: self.node_s0.clone(),
        })
    }
}

/// When bonds break with each node's history (`MaterialConstants::history_breaking`)
/// relative to the force; `None` without history, or with a softening law, whose damage
/// each subdomain's loop updates in that order itself (a bond's damage reads its own
/// stretch only).
pub(crate) fn history_timing(problem: &Problem) -> Option<BreakTiming> {
    let m = &problem.material;
    (m.history_breaking() && m.softening.is_none()).then_some(m.break_timing)
}

impl<T: Real> PartitionedCpu<T> {
    pub fn memory_bytes(&self) -> usize {
        self.parts.iter().map(|p| p.backend.memory_bytes()).sum()
    }

    pub fn bytes_per_step(&self) -> usize {
        self.parts.iter().map(|p| p.backend.bytes_per_step()).sum()
    }
}

impl<T: Real> Backend<T> for PartitionedCpu<T> {
    fn advance_explicit(&mut self, call: ExplicitCall<'_, T>) -> Result<usize> {
        fused::advance_explicit(self, call)
    }

    fn state_changed(&mut self, _state: &State<T>) -> Result<()> {
        fused::state_changed(self);
        Ok(())
    }

    fn footprint(&self) -> Footprint {
        Footprint::new(self.memory_bytes(), self.bytes_per_step())
    }

    fn name(&self) -> &'static str {
        "cpu-loop-partitioned"
    }
}
