//! The CPU loop backend: node-parallel loops over CSR families with rayon, the reference
//! implementation of every bond law (`theory.md` sections 2 and 3). Each node sums its own
//! bonds in family order, so results are bitwise the same at any thread count.
//!
//! Per bond it keeps the reference length and the weight in the working precision, and a
//! status byte that also says whether the bond may break (`pmb_kernel::{BROKEN, INTACT,
//! KEPT}`), so no square root of the reference length and no no-fail lookup is repeated per
//! step. The PMB force loop, with the bond-break check fused in, is `pmb_kernel.rs`; on a
//! lattice whose bonds' lengths and weights it reproduces bitwise (one material, no surface
//! correction; a CPU with AVX-512) it runs in the slot-table form of `pmb_slots.rs`, eight
//! nodes at a time, reading per bond only its status byte and its length. The
//! failure options that need each node's history (`critical_stretch_alpha`,
//! `break_timing = "after-force"`, `docs/materials.md`) run here only, as a breaking pass of
//! their own before or after the force; so do the softening damage laws (`softening.rs`: a
//! damage value per bond beside the status byte).

use super::blocks::{par_node_blocks, par_node_blocks_with};
use super::pmb_kernel::{
    forces_and_breaks, node_records, stage_displacement, NodeRecord, PmbBonds, Simd, BROKEN,
    INTACT, KEPT,
};
use super::pmb_slots::SlotTable;
use super::softening::SofteningBonds;
use crate::backend::coefficients::{bond_weight, lps_coefficients};
use crate::backend::{Backend, Footprint};
use crate::dynamics::forces::pairs_broken;
use crate::dynamics::Forces;
use crate::material::bonds::bond_length;
use crate::material::laws::{extension, lps, pmb, stretch, Vec3};
use crate::material::{FailureHistory, Law};
use crate::model::BreakTiming;
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::sync::Arc;

/// Reference backend on the CPU.
pub struct CpuLoop<T: Real> {
    problem: Arc<Problem>,
    dim: usize,
    /// Bond status per directed bond: `BROKEN`, `INTACT` or `KEPT` (intact, never breaks).
    status: Vec<u8>,
    /// Reference bond length `|xi|` per bond, m (computed in f64).
    length: Vec<T>,
    /// Per-bond weight: PMB `c lambda beta V_j`; LPS `omega beta V_j`.
    weight: Vec<T>,
    /// PMB: per node, the reference position and the displacement (copied in at each
    /// evaluation), padded, in one cache line.
    records: Vec<NodeRecord<T>>,
    /// PMB on a lattice: the slot table (`pmb_slots.rs`), where it reproduces every bond's
    /// length and weight bitwise.
    slots: Option<SlotTable<T>>,
    /// LPS per node: `alpha_i`, `p_i = d K_d / m_i - alpha_i / d`, `d / m_i`.
    alpha: Vec<T>,
    pcoef: Vec<T>,
    d_over_m: Vec<T>,
    /// LPS dilatation scratch.
    theta: Vec<T>,
    /// Each node's critical stretch `s00 - alpha s_min` from the previous breaking
    /// evaluation (`MaterialConstants::history_breaking` only; empty before the first).
    node_s0: Vec<T>,
    /// Damage per bond in [0, 1] of a softening damage law (empty for the brittle law).
    damage: Vec<T>,
}

impl<T: Real> CpuLoop<T> {
    /// Set up the backend for `problem` (bond status from its pre-cracks and no-fail zones).
    pub fn new(problem: Arc<Problem>) -> Self {
        let p = &problem;
        let (fam, m) = (&p.families, &p.material);
        let (pos, no_fail) = (&p.body.positions, &p.no_fail);
        // (each array filled in place at its exact size: `Families::per_bond`)
        let length = fam.per_bond(|i, _, j| T::of(bond_length(pos, i, j)));
        let weight = fam.per_bond(|i, b, j| T::of(bond_weight(p, b, i, j, bond_length(pos, i, j))));
        let status = fam.per_bond(|i, b, j| match p.initial_mu[b] {
            0 => BROKEN,
            _ if no_fail[i] || no_fail[j] => KEPT,
            _ => INTACT,
        });
        let coef = lps_coefficients(p);
        let to_t = |v: Vec<f64>| v.into_iter().map(T::of).collect::<Vec<T>>();
        let slots = match m.law {
            Law::Pmb { .. } => SlotTable::build(p, &length, &weight),
            Law::Lps { .. } => None,
        };
        // (the slot table keeps its own positions and displacement)
        let records = match (m.law, &slots) {
            (Law::Pmb { .. }, None) => node_records(pos),
            _ => Vec::new(),
        };
        CpuLoop {
            dim: p.dim(),
            status,
            length,
            weight,
            records,
            slots,
            alpha: to_t(coef.alpha),
            pcoef: to_t(coef.pcoef),
            d_over_m: to_t(coef.d_over_m),
            theta: vec![T::zero(); p.body.len()],
            // (a restart's history, exact in either precision; else a fresh one)
            node_s0: p.restored.convert::<T>().node_s0,
            damage: match (m.softening, p.restored.bond_damage.is_empty()) {
                (None, _) => Vec::new(),
                (Some(_), true) => vec![T::zero(); fam.bonds()],
                (Some(_), false) => p.restored.convert::<T>().bond_damage,
            },
            problem,
        }
    }

    /// The softening loops' view of the bonds (`material.damage_law` softening only).
    fn softening(&self) -> Option<SofteningBonds<'_, T>> {
        let p = &self.problem;
        p.material.softening.map(|law| SofteningBonds {
            offsets: &p.families.offsets,
            neighbors: &p.families.neighbors,
            positions: &p.body.positions,
            length: &self.length,
            weight: &self.weight,
            dim: self.dim,
            linearized: p.material.linearized(),
            law,
        })
    }

    /// Softening: update each bond's damage at `u`; returns the bonds that reached `d = 1`.
    fn soften(&mut self, u: &[T]) -> usize {
        let (mut status, mut damage) = (
            std::mem::take(&mut self.status),
            std::mem::take(&mut self.damage),
        );
        let broken = self
            .softening()
            .map_or(0, |b| b.soften(u, &mut status, &mut damage));
        (self.status, self.damage) = (status, damage);
        broken
    }

    /// The energy the softening bonds have dissipated (`Softening::dissipated`: the work
    /// along the law's envelope to each bond's largest stretch, less what unloading gives
    /// back), J; 0 for the brittle law, whose broken bonds are not counted.
    pub fn dissipated_energy(&self, u: &[T]) -> f64 {
        let Some(bonds) = self.softening() else {
            return 0.0;
        };
        let per_node = bonds.energy_densities(u, &self.status, &self.damage);
        let volumes = &self.problem.body.volumes;
        per_node.iter().zip(volumes).map(|(e, v)| e.1 * v).sum()
    }

    /// Critical stretch in `T`, `+inf` where bonds never break.
    fn s0(&self) -> T {
        T::of(
            self.problem
                .material
                .critical_stretch
                .unwrap_or(f64::INFINITY),
        )
    }

    /// Bond vector `xi` of bond `b = (i -> j)`, in `f64` then rounded, and its length.
    #[inline(always)]
    fn xi(&self, i: usize, j: usize, b: usize) -> (Vec3<T>, T) {
        let p = &self.problem.body.positions;
        let xi = [p[j][0] - p[i][0], p[j][1] - p[i][1], p[j][2] - p[i][2]];
        ([T::of(xi[0]), T::of(xi[1]), T::of(xi[2])], self.length[b])
    }

    #[inline(always)]
    fn eta(&self, u: &[T], i: usize, j: usize) -> Vec3<T> {
        let d = self.dim;
        let mut e = [T::zero(); 3];
        for k in 0..d {
            e[k] = u[d * j + k] - u[d * i + k];
        }
        e
    }

    /// Bond stretch used by the failure criterion (`theory.md`: PMB `s`, LPS `e / x`).
    #[inline(always)]
    fn criterion_stretch(&self, u: &[T], i: usize, j: usize, b: usize) -> T {
        let (xi, x) = self.xi(i, j, b);
        let eta = self.eta(u, i, j);
        // (linearized PMB and LPS: `n . eta / x`; else the nonlinear stretch)
        pmb::criterion_stretch(self.problem.material.linearized(), &xi, &eta, x)
    }

    /// Per node, the least criterion stretch at `u` of its bonds not broken (`+inf` for
    /// none).
    fn least_stretches(&self, u: &[T]) -> Vec<T> {
        let fam = &self.problem.families;
        (0..self.problem.body.len())
            .into_par_iter()
            .map(|i| {
                fam.range(i)
                    .filter(|&b| self.status[b] != BROKEN)
                    .map(|b| self.criterion_stretch(u, i, fam.neighbors[b] as usize, b))
                    .fold(T::infinity(), |m, s| if s < m { s } else { m })
            })
            .collect()
    }

    /// Each node's critical stretch `s0 = s00 - alpha s_min` from its least stretch
    /// (`+inf` for a node without bonds).
    fn critical_stretches(&self, s_min: &[T]) -> Vec<T> {
        let (s00, alpha) = (
            self.s0(),
            T::of(self.problem.material.critical_stretch_alpha),
        );
        let inf = T::infinity();
        s_min
            .iter()
            .map(|&s| if s == inf { inf } else { s00 - alpha * s })
            .collect()
    }

    /// Bond breaking with each node's history (`MaterialConstants::history_breaking`,
    /// `docs/materials.md`): every `INTACT` bond whose stretch at `u` exceeds the smaller
    /// critical stretch of its two ends, as the previous breaking evaluation left them (at
    /// the first, from the stretches at `u`), breaks; then each node's critical stretch
    /// follows from the least stretch of its bonds not broken before this call. Returns the
    /// bonds broken.
    fn history_breaks(&mut self, u: &[T]) -> usize {
        let next = self.next_critical_stretches(u);
        let s0 = match self.node_s0.is_empty() {
            true => next.clone(),
            false => std::mem::take(&mut self.node_s0),
        };
        let broken = self.breaks_past(u, &s0);
        self.node_s0 = next;
        broken
    }

    /// Each node's critical stretch for the next breaking evaluation, `s00 - alpha s_min`
    /// from the least stretch at `u` of its bonds not broken (`+inf` for a node without
    /// bonds: a subdomain's halo nodes, whose owners compute theirs).
    pub fn next_critical_stretches(&self, u: &[T]) -> Vec<T> {
        self.critical_stretches(&self.least_stretches(u))
    }

    /// Break every `INTACT` bond `i -> j` whose criterion stretch at `u` exceeds
    /// `min(s0[i], s0[j])`, `s0` each node's critical stretch. Returns the bonds broken.
    pub fn breaks_past(&mut self, u: &[T], s0: &[T]) -> usize {
        self.breaking_pass(u, |i, j| if s0[j] < s0[i] { s0[j] } else { s0[i] })
    }

    /// Several materials: break every `INTACT` bond past the critical stretch of its pair of
    /// materials (`MaterialMap::s0`). Returns the bonds broken.
    fn pair_breaks(&mut self, u: &[T]) -> usize {
        let Some(map) = self.problem.materials.clone() else {
            return 0;
        };
        if !map.breaks() {
            return 0;
        }
        let s0: Vec<T> = map.critical_stretch.iter().map(|&s| T::of(s)).collect();
        self.breaking_pass(u, |i, j| s0[map.pair(i, j)])
    }

    /// The step's `failure` (breaking, softening) and its force at `u` in the order
    /// `material.break_timing` says. Returns the bonds `failure` broke.
    fn in_order(
        &mut self,
        u: &[T],
        force: &mut [T],
        failure: fn(&mut Self, &[T]) -> usize,
    ) -> Result<usize> {
        Ok(match self.problem.material.break_timing {
            BreakTiming::BeforeForce => {
                let broken = failure(self, u);
                self.internal_force(u, force)?;
                broken
            }
            BreakTiming::AfterForce => {
                self.internal_force(u, force)?;
                failure(self, u)
            }
        })
    }

    /// Break every `INTACT` bond `i -> j` whose criterion stretch at `u` exceeds
    /// `threshold(i, j)`. Returns the bonds broken.
    fn breaking_pass(&mut self, u: &[T], threshold: impl Fn(usize, usize) -> T + Sync) -> usize {
        let mut status = std::mem::take(&mut self.status);
        let fam = &self.problem.families;
        let this = &*self;
        let broken = par_node_blocks(&fam.offsets, &mut status, |nodes, slice| {
            let base = fam.offsets[nodes.start];
            let mut count = 0;
            for i in nodes {
                for b in fam.range(i) {
                    let j = fam.neighbors[b] as usize;
                    if slice[b - base] == INTACT
                        && this.criterion_stretch(u, i, j, b) > threshold(i, j)
                    {
                        slice[b - base] = BROKEN;
                        count += 1;
                    }
                }
            }
            count
        });
        self.status = status;
        broken
    }

    /// The PMB bond loop: forces into `force`, breaking bonds past `s0` first.
    fn pmb_pass(&mut self, u: &[T], force: &mut [T], s0: T) -> usize {
        let p = &self.problem;
        let Law::Pmb { linearized, .. } = p.material.law else {
            unreachable!("pmb_pass on a PMB material only");
        };
        match &mut self.slots {
            Some(t) => t.stage_displacement(u),
            None => stage_displacement(u, self.dim, &mut self.records),
        }
        let bonds = PmbBonds {
            offsets: &p.families.offsets,
            neighbors: &p.families.neighbors,
            length: &self.length,
            weight: &self.weight,
            linearized,
            slots: self.slots.as_ref(),
        };
        let (recs, status) = (&self.records, &mut self.status);
        forces_and_breaks(Simd::detect(), &bonds, self.dim, recs, s0, status, force)
    }

    /// LPS dilatation of every node into `self.theta`, first breaking every `INTACT` bond
    /// whose stretch (`e / x`; nonlinear: `(|y| - x) / x`) exceeds `s0`. Returns the bonds
    /// broken.
    fn dilatation_pass(&mut self, u: &[T], s0: T) -> usize {
        let mut status = std::mem::take(&mut self.status);
        let mut theta = std::mem::take(&mut self.theta);
        let fam = &self.problem.families;
        let this = &*self;
        let linearized = self.problem.material.linearized();
        let broken =
            par_node_blocks_with(&fam.offsets, &mut status, &mut theta, 1, |nodes, st, th| {
                let (base, first) = (fam.offsets[nodes.start], nodes.start);
                let mut count = 0;
                for i in nodes {
                    let mut s = T::zero();
                    for b in fam.range(i) {
                        let j = fam.neighbors[b] as usize;
                        let (xi, x) = this.xi(i, j, b);
                        let k = lps::kinematics(linearized, &xi, &this.eta(u, i, j), x);
                        let e = k.e;
                        let sb = &mut st[b - base];
                        if *sb == INTACT && k.stretch > s0 {
                            *sb = BROKEN;
                            count += 1;
                        }
                        if *sb != BROKEN {
                            s += lps::dilatation_term(this.weight[b], x, e);
                        }
                    }
                    th[i - first] = this.d_over_m[i] * s;
                }
                count
            });
        self.status = status;
        self.theta = theta;
        broken
    }

    /// Force density on node `i` (LPS), with `self.theta` up to date.
    #[inline(always)]
    fn lps_node_force(&self, u: &[T], i: usize) -> Vec3<T> {
        let fam = &self.problem.families;
        let linearized = self.problem.material.linearized();
        let mut f = [T::zero(); 3];
        for b in fam.range(i) {
            if self.status[b] == BROKEN {
                continue;
            }
            let j = fam.neighbors[b] as usize;
            let (xi, x) = self.xi(i, j, b);
            let k = lps::kinematics(linearized, &xi, &self.eta(u, i, j), x);
            let (ni, nj) = (self.node(i), self.node(j));
            let scale = lps::force_scale(self.weight[b], x, k.len, k.e, ni, nj);
            for (fc, dc) in f.iter_mut().zip(k.dir) {
                *fc += scale * dc;
            }
        }
        f
    }

    /// Node `k`'s LPS force-state coefficients and dilatation (`self.theta` up to date).
    #[inline(always)]
    fn node(&self, k: usize) -> lps::NodeState<T> {
        lps::NodeState {
            alpha: self.alpha[k],
            p: self.pcoef[k],
            theta: self.theta[k],
        }
    }

    /// LPS forces with `self.theta` up to date.
    fn lps_forces(&self, u: &[T], force: &mut [T]) {
        let d = self.dim;
        force.par_chunks_mut(d).enumerate().for_each(|(i, out)| {
            out.copy_from_slice(&self.lps_node_force(u, i)[..d]);
        });
    }
}

impl<T: Real> Forces<T> for CpuLoop<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        if let Some(bonds) = self.softening() {
            bonds.forces(u, &self.status, &self.damage, force);
            return Ok(());
        }
        match self.problem.material.law {
            Law::Pmb { .. } => {
                self.pmb_pass(u, force, T::infinity());
            }
            Law::Lps { .. } => {
                self.dilatation_pass(u, T::infinity());
                self.lps_forces(u, force);
            }
        }
        Ok(())
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        if self.problem.material.softening.is_some() {
            return Ok(self.soften(u));
        }
        if self.problem.materials.is_some() {
            return Ok(self.pair_breaks(u));
        }
        if self.problem.material.critical_stretch.is_none() {
            return Ok(0);
        }
        let s0 = self.s0();
        Ok(self.breaking_pass(u, |_, _| s0))
    }

    fn break_bonds_and_force(&mut self, u: &[T], force: &mut [T]) -> Result<usize> {
        if self.problem.material.softening.is_some() {
            return self.in_order(u, force, Self::soften);
        }
        if self.problem.material.history_breaking() {
            return self.in_order(u, force, Self::history_breaks);
        }
        if self.problem.materials.is_some() {
            return self.in_order(u, force, Self::pair_breaks);
        }
        let s0 = self.s0();
        Ok(match self.problem.material.law {
            Law::Pmb { .. } => self.pmb_pass(u, force, s0),
            Law::Lps { .. } => {
                let broken = self.dilatation_pass(u, s0);
                self.lps_forces(u, force);
                broken
            }
        })
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        let p = &self.problem;
        let fam = &p.families;
        let softening = !self.damage.is_empty();
        phi.par_iter_mut().enumerate().for_each(|(i, out)| {
            let (mut intact, mut total) = (0.0, 0.0);
            for b in fam.range(i) {
                let bv = p.bonds.beta[b] * p.body.volumes[fam.neighbors[b] as usize];
                total += bv;
                if self.status[b] != BROKEN {
                    // (a softening bond counts by what it keeps, `1 - d`)
                    intact += match softening {
                        true => bv * (1.0 - self.damage[b].f64()),
                        false => bv,
                    };
                }
            }
            *out = T::of(if total > 0.0 {
                1.0 - intact / total
            } else {
                0.0
            });
        });
        Ok(())
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if !matches!(self.problem.material.law, Law::Lps { .. }) {
            return Ok(false);
        }
        self.dilatation_pass(u, T::infinity());
        theta.copy_from_slice(&self.theta);
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        if let Some(bonds) = self.softening() {
            let per_node = bonds.energy_densities(u, &self.status, &self.damage);
            let volumes = &self.problem.body.volumes;
            return Ok(per_node.iter().zip(volumes).map(|(e, v)| e.0 * v).sum());
        }
        let law = self.problem.material.law;
        if let Law::Lps { .. } = law {
            self.dilatation_pass(u, T::infinity());
        }
        let p = &self.problem;
        let this = &*self;
        let per_node: Vec<f64> = (0..p.body.len())
            .into_par_iter()
            .map(|i| this.node_energy_density(u, i, law) * p.body.volumes[i])
            .collect();
        Ok(per_node.iter().sum())
    }

    fn broken_bonds(&self) -> usize {
        self.status.iter().filter(|&&s| s == BROKEN).count()
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        Ok(self.status.iter().map(|&s| u8::from(s != BROKEN)).collect())
    }

    fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        Ok((!self.damage.is_empty()).then(|| self.damage.clone()))
    }

    fn failure_history(&self) -> Result<FailureHistory<T>> {
        Ok(FailureHistory {
            bond_damage: self.damage.clone(),
            node_s0: self.node_s0.clone(),
        })
    }

    fn bonds_broken(&self, pairs: &[[u32; 2]]) -> Result<Vec<bool>> {
        let families = &self.problem.families;
        Ok(pairs_broken(families, pairs, |k| self.status[k] == BROKEN))
    }
}

impl<T: Real> CpuLoop<T> {
    pub fn memory_bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, nb) = (self.problem.body.len(), self.status.len());
        // status, length and weight per bond (and a softening law's damage); four LPS
        // coefficients per node; PMB padded positions (4 f64) and displacement (4 T) per node
        let padded = self.records.len() * std::mem::size_of::<NodeRecord<T>>();
        let slots = self.slots.as_ref().map_or(0, |s| s.memory_bytes());
        nb * (1 + 2 * t) + self.damage.len() * t + 4 * n * t + padded + slots
    }

    pub fn bytes_per_step(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, nb, d) = (self.problem.body.len(), self.status.len(), self.dim);
        // per bond: neighbour index, status, length, weight; per node: positions (f64),
        // offset, displacement in, force out (LPS: theta written once and read once more)
        if let Some(table) = &self.slots {
            // slot table: the status byte per bond and (where it reads it) its length; per
            // node its position and volume, the offset, the displacement in, staged and read
            // back, and the force out
            let length = if table.reads_length() { t } else { 0 };
            return nb * (1 + length) + n * (3 * 8 + 8 + 8 + 4 * d * t);
        }
        let lps = matches!(self.problem.material.law, Law::Lps { .. });
        let node = 3 * 8 + 8 + 2 * d * t + if lps { 2 * t + 3 * t } else { 0 };
        nb * (4 + 1 + 2 * t) + n * node
    }
}

impl<T: Real> Backend<T> for CpuLoop<T> {
    fn name(&self) -> &'static str {
        "cpu-loop"
    }

    fn footprint(&self) -> Footprint {
        Footprint::new(self.memory_bytes(), self.bytes_per_step())
    }
}

impl<T: Real> CpuLoop<T> {
    /// Whether the bond `i -> j` is broken, found by a scan of `i`'s family (a rank's local
    /// families are in the global order, not ascending in local index); false where `j` is
    /// not in it (the contact of crack faces across ranks, `distributed/contact.rs`).
    pub fn bond_broken_scan(&self, i: usize, j: u32) -> bool {
        let fam = &self.problem.families;
        (fam.range(i).zip(fam.family(i))).any(|(b, &n)| n == j && self.status[b] == BROKEN)
    }

    /// LPS, phase one of a subdomain step (`crate::backend::partitioned::emulate`): the dilatation of
    /// every node into `theta`, first breaking (with `breaking`) every intact bond past the
    /// critical stretch, as [`Backend::break_bonds_and_force`] does. Returns the bonds broken.
    pub fn dilatation_and_breaks(&mut self, u: &[T], breaking: bool, theta: &mut [T]) -> usize {
        let s0 = if breaking { self.s0() } else { T::infinity() };
        if breaking && self.problem.materials.is_some() {
            let broken = self.pair_breaks(u);
            self.dilatation_pass(u, T::infinity());
            theta.copy_from_slice(&self.theta);
            return broken;
        }
        let broken = self.dilatation_pass(u, s0);
        theta.copy_from_slice(&self.theta);
        broken
    }

    /// LPS, phase two of a subdomain step: forces at `u` with the dilatation `theta` of every
    /// node given (owned nodes' from phase one, halo nodes' from their own subdomains).
    pub fn lps_forces_with(&mut self, u: &[T], theta: &[T], force: &mut [T]) {
        self.theta.copy_from_slice(theta);
        self.lps_forces(u, force);
    }
}

impl<T: Real> CpuLoop<T> {
    /// Strain energy density of node `i`, J/m^3 (LPS needs `self.theta` up to date).
    fn node_energy_density(&self, u: &[T], i: usize, law: Law) -> f64 {
        let fam = &self.problem.families;
        let d = self.dim as f64;
        let mut w = 0.0;
        for b in fam.range(i) {
            if self.status[b] == BROKEN {
                continue;
            }
            let j = fam.neighbors[b] as usize;
            let (xi, x) = self.xi(i, j, b);
            let eta = self.eta(u, i, j);
            let (x, wb) = (x.f64(), self.weight[b].f64());
            w += match law {
                Law::Pmb { linearized, .. } => {
                    let s = if linearized {
                        extension(&xi, &eta, T::of(x)).f64() / x
                    } else {
                        stretch(&xi, &eta, T::of(x)).0.f64()
                    };
                    pmb::energy_density(wb, s, x)
                }
                Law::Lps { linearized, .. } => {
                    let e = lps::kinematics(linearized, &xi, &eta, T::of(x)).e.f64();
                    let (alpha, theta) = (self.alpha[i].f64(), self.theta[i].f64());
                    lps::bond_energy_density(alpha, wb, e, theta, x, d)
                }
            };
        }
        if let (Law::Lps { .. }, Law::Lps { kd, .. }) = (law, self.problem.law_of(i)) {
            w += lps::dilatation_energy_density(kd, self.theta[i].f64());
        }
        w
    }
}
