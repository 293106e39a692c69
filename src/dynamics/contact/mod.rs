//! Contact (`docs/contact.md`): the short-range repulsive force between nodes that are not
//! bonded, and rigid impactors (`impactor.rs`).
//!
//! Two nodes `i`, `j` that are not bonded (their reference distance is beyond the family
//! radius, so they were never in each other's family) and closer than the contact distance
//! `d_c` in the current configuration repel each other with the force density on `i`
//!
//! `f_ij = c_sr (d_c - r) / delta V_j (y_i - y_j) / r`, `r = |y_i - y_j|`,
//!
//! Silling's short-range force (EMU; LAMMPS `pair peri/*`), `c_sr = stiffness_factor c` with
//! `c` the PMB bond constant of the material's `E` (`15 c` by default, as EMU and LAMMPS) and
//! `d_c = distance_factor dx` (0.9 dx by default). `V_i f_ij = -V_j f_ji`, so momentum is
//! kept. Units: m, N/m^3.
//!
//! Crack faces (`crack_faces`, default on): a pair whose bond has broken repels too, as one
//! never bonded, with the contact distance `min(d_c, distance_factor |xi|)` (`|xi|` its
//! reference length, so a pair closer than `d_c` at rest is not pushed apart when its bond
//! breaks). Its bond's status comes from the backend ([`Forces::bonds_broken`]) after the
//! step's breaking, for the pairs closer than that distance only.
//!
//! The pairs come from a list of the pairs closer than `d_c + skin` (`pairs.rs`), searched by
//! a cell list over the current positions and searched again once some node has moved more
//! than `skin / 2` since the last search (then no pair can have closed by more than the skin,
//! so none closer than `d_c` is missing). Each node sums its pairs in ascending partner
//! order and only those closer than `d_c`, so the result does not depend on when the list
//! was searched, nor on the thread count: bitwise the same (the Determinism invariant of
//! `docs/architecture.md`). Every sum is in `f64` whatever the run's precision.
//!
//! Where the backend computes part of the nodes (a rank, [`Forces::part_of_body`],
//! `distributed/contact.rs`), [`Contact::evaluate`] computes its owned nodes' force density
//! from their displacements and those of the other parts' nodes within the search radius of
//! them (the contact halo, found again at each pair search, whose rule then takes the
//! largest travel over every part), and each impactor's reaction from every part's node
//! terms merged in node order: the one-process values, bit for bit.

mod impactor;
mod pairs;

pub use impactor::{ImpactorState, RigidImpactor};
pub use pairs::PairList;

use crate::dynamics::forces::{Forces, PartOfBody, ReactionTerm};
use crate::material::family_radius;
use crate::neighbors::family_radius_squared;
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;

/// Default contact distance in multiples of `dx`.
pub const DEFAULT_DISTANCE_FACTOR: f64 = 0.9;
/// Default short-range constant in multiples of the PMB bond constant.
pub const DEFAULT_STIFFNESS_FACTOR: f64 = crate::material::constants::CONTACT_STIFFNESS_FACTOR;
/// Default skin of the pair list in multiples of `dx`.
pub const DEFAULT_SKIN_FACTOR: f64 = 0.5;

/// The contact of a run: the node pair law, the impactors, the pair list and the last
/// contact force density.
#[derive(Debug, Clone)]
pub struct Contact {
    dim: usize,
    /// Reference positions, m, and volumes, m^3.
    x: Vec<[f64; 3]>,
    volumes: Vec<f64>,
    delta: f64,
    /// Short-range constant `c_sr`, N/m^6.
    c_sr: f64,
    /// Node pair contact: `Some(d_c)`, m.
    distance: Option<f64>,
    /// `distance_factor`: a crack face pair's contact distance is this times its reference
    /// length where that is below `d_c`.
    distance_factor: f64,
    /// Whether pairs of broken bonds repel (crack faces).
    crack_faces: bool,
    /// The pair list (`None` without node pair contact).
    pub pairs: Option<PairList>,
    /// The rigid impactors.
    pub impactors: Vec<RigidImpactor>,
    /// Contact force density of every node, N/m^3, node-major.
    pub force: Vec<f64>,
}

impl Contact {
    /// The contact of `problem`, `None` where its model has neither `[contact]` (enabled)
    /// nor an impactor.
    pub fn of(problem: &Problem) -> Option<Contact> {
        let model = &problem.model;
        let table = model.contact.as_ref();
        let pairs_on = table.is_some_and(|c| c.enabled);
        if !pairs_on && model.impactor.is_empty() {
            return None;
        }
        let body = &problem.body;
        let (dim, dx, delta) = (body.dim(), body.dx, body.delta);
        let c_sr = problem.contact_constant()?;
        let factor = |f: Option<f64>, default: f64| f.unwrap_or(default);
        let distance_factor = factor(
            table.and_then(|t| t.distance_factor),
            DEFAULT_DISTANCE_FACTOR,
        );
        let distance = dx * distance_factor;
        let skin = dx * factor(table.and_then(|t| t.skin_factor), DEFAULT_SKIN_FACTOR);
        let crack_faces = crack_faces_on(model);
        let bonded = family_radius_squared(family_radius(
            model.discretization.partial_volume,
            delta,
            dx,
        ));
        let pairs = pairs_on.then(|| PairList::new(distance + skin, skin, bonded, crack_faces));
        Some(Contact {
            dim,
            x: body.positions.clone(),
            volumes: body.volumes.clone(),
            delta,
            c_sr,
            distance: pairs_on.then_some(distance),
            distance_factor,
            crack_faces,
            pairs,
            impactors: (model.impactor.iter().enumerate())
                .map(|(k, imp)| RigidImpactor::new(k, imp, dim))
                .collect(),
            force: vec![0.0; body.len() * dim],
        })
    }

    /// The short-range constant `c_sr`, N/m^6.
    pub fn stiffness(&self) -> f64 {
        self.c_sr
    }

    /// The contact distance `d_c`, m (`None` without node pair contact).
    pub fn distance(&self) -> Option<f64> {
        self.distance
    }

    /// The impactors' half kick and drift of a step of `dt` s.
    pub fn kick_drift(&mut self, dt: f64) {
        self.impactors.iter_mut().for_each(|i| i.kick_drift(dt));
    }

    /// The impactors' second half kick, `h = dt / 2`.
    pub fn kick(&mut self, h: f64) {
        self.impactors.iter_mut().for_each(|i| i.kick(h));
    }

    /// The current positions `x + u`, m.
    fn current<T: Real>(&self, u: &[T]) -> Vec<[f64; 3]> {
        let d = self.dim;
        (self.x.par_iter().enumerate())
            .map(|(i, x)| {
                let mut y = *x;
                for k in 0..d {
                    y[k] += u[d * i + k].f64();
                }
                y
            })
            .collect()
    }

    /// Whether pairs of broken bonds repel (crack faces).
    pub fn crack_faces(&self) -> bool {
        self.crack_faces
    }

    /// The contact distance of the pair `i`, `j` bonded in the reference configuration (its
    /// bond broken): `min(d_c, distance_factor |xi|)`, m.
    fn face_distance(&self, dc: f64, i: usize, j: usize) -> f64 {
        let xi: f64 = (0..self.dim)
            .map(|k| (self.x[j][k] - self.x[i][k]).powi(2))
            .sum::<f64>()
            .sqrt();
        dc.min(self.distance_factor * xi)
    }

    /// The bonded pairs `[i, j]`, `i < j`, ascending, closer than their contact distance at
    /// `y`: those whose bond's status decides their contact (with `owns`, those with an end
    /// owned).
    fn face_candidates(&self, y: &[[f64; 3]], owns: Option<&[bool]>) -> Vec<[u32; 2]> {
        let (Some(list), Some(dc), true) = (&self.pairs, self.distance, self.crack_faces) else {
            return Vec::new();
        };
        let d = self.dim;
        let mine = |i: usize| owns.is_none_or(|o| o[i]);
        let per_node: Vec<Vec<[u32; 2]>> = (0..y.len())
            .into_par_iter()
            .map(|i| {
                (list.partners(i).iter())
                    .map(|&j| j as usize)
                    .filter(|&j| j > i && (mine(i) || mine(j)))
                    .filter(|&j| list.bonded(&self.x[i], &self.x[j], d))
                    .filter(|&j| separation(&y[i], &y[j], d) < self.face_distance(dc, i, j))
                    .map(|j| [i as u32, j as u32])
                    .collect()
            })
            .collect();
        per_node.concat()
    }

    /// The contact force density at displacement `u` into `self.force` (N/m^3), and each
    /// impactor's contact force (N, summed over nodes in index order); the pair list is
    /// searched again first where the rule asks. With crack faces, `forces` says which of
    /// the bonded pairs closer than their contact distance have a broken bond (its status
    /// after this step's breaking).
    ///
    /// Where `forces` computes part of the body ([`Forces::part_of_body`]: a rank), the
    /// force density of its owned nodes only (the others' are zero), from the displacements
    /// of its contact halo where node pairs are on (`part_pairs`: the same pairs closer than
    /// `d_c` and sums as one process); the impactors' forces from every part's terms merged
    /// in node order, so
    /// every part sums them as one process does, bit for bit.
    pub fn evaluate<T: Real>(&mut self, u: &[T], forces: &dyn Forces<T>) -> Result<()> {
        let d = self.dim;
        let part = forces.part_of_body();
        let owns = part.map(|p| p.owns());
        let y = match part {
            Some(p) => self.part_pairs(u, p)?,
            None => {
                let y = self.current(u);
                if let Some(list) = self.pairs.as_mut() {
                    list.update(&y, &self.x, u, d);
                }
                y
            }
        };
        let candidates = self.face_candidates(&y, owns);
        let faces: Vec<[u32; 2]> = if candidates.is_empty() {
            Vec::new()
        } else {
            let broken = forces.bonds_broken(&candidates)?;
            (candidates.into_iter().zip(broken))
                .filter_map(|(pair, b)| b.then_some(pair))
                .collect()
        };
        let mut force = std::mem::take(&mut self.force);
        force.par_chunks_mut(d).enumerate().for_each(|(i, f)| {
            f.iter_mut().for_each(|x| *x = 0.0);
            if owns.is_none_or(|o| o[i]) {
                self.node_force(i, &y, &faces, f);
            }
        });
        self.force = force;
        let terms = self.reaction_terms(&y, owns);
        let terms = match part {
            Some(p) if !self.impactors.is_empty() => p.merged_terms(&terms)?,
            _ => terms,
        };
        let mut totals = vec![[0.0; 3]; self.impactors.len()];
        for (k, _, term) in terms {
            let total = &mut totals[k as usize];
            for c in 0..d {
                total[c] -= term[c];
            }
        }
        for (imp, total) in self.impactors.iter_mut().zip(totals) {
            imp.force = total;
        }
        Ok(())
    }

    /// The current positions of a part of the body (`p`), m: exact at its owned nodes and,
    /// with node pairs on, at the other parts' nodes within the pair list's search radius of
    /// them (the contact halo, filled from their owners; the rest of the body is not read).
    /// The pair list is searched again among those nodes when the one-process rule asks (the largest travel over every part), after the halo
    /// is found again: a node of another part farther than the search radius from every
    /// owned node at the search is not within `d_c` of one before the next search (the
    /// skin), so the owned nodes' pairs closer than `d_c` are the one-process ones, summed
    /// in the same ascending order.
    fn part_pairs<T: Real>(&mut self, u: &[T], p: &dyn PartOfBody<T>) -> Result<Vec<[f64; 3]>> {
        let d = self.dim;
        let owns = Some(p.owns());
        let Some(list) = self.pairs.as_ref() else {
            return Ok(self.current(u));
        };
        let due = list.due(u, d, owns, |m| p.max_over_parts(m));
        let nodes = if due {
            Some(p.find_contact_nodes(&self.current(u), list.radius())?)
        } else {
            None
        };
        let mut known = u.to_vec();
        p.fill_contact_nodes(&mut known)?;
        let y = self.current(&known);
        if let (Some(nodes), Some(list)) = (nodes, self.pairs.as_mut()) {
            let found = list.search_among(&y, &self.x, d, &nodes);
            list.keep(found, &known);
        }
        Ok(y)
    }

    /// The contact force density of node `i` at `y` into `f` (zero on entry), N/m^3: its
    /// pairs closer than their contact distance in ascending partner order (`faces` the
    /// bonded pairs whose bond is broken), then the impactors.
    fn node_force(&self, i: usize, y: &[[f64; 3]], faces: &[[u32; 2]], f: &mut [f64]) {
        let d = self.dim;
        let (c_sr, delta, vol) = (self.c_sr, self.delta, &self.volumes);
        if let (Some(list), Some(dc)) = (&self.pairs, self.distance) {
            for &j in list.partners(i) {
                let j = j as usize;
                let dc = if !list.bonded(&self.x[i], &self.x[j], d) {
                    dc
                } else if faces
                    .binary_search(&[i.min(j) as u32, i.max(j) as u32])
                    .is_ok()
                {
                    self.face_distance(dc, i, j)
                } else {
                    continue;
                };
                let r = separation(&y[i], &y[j], d);
                if r < dc && r > 0.0 {
                    let s = c_sr * (dc - r) / delta * vol[j] / r;
                    for k in 0..d {
                        f[k] += s * (y[i][k] - y[j][k]);
                    }
                }
            }
        }
        for imp in &self.impactors {
            if let Some((p, n)) = imp.penetration(&y[i]) {
                let s = c_sr * p / delta * vol[i];
                for k in 0..d {
                    f[k] += s * n[k];
                }
            }
        }
    }

    /// The terms of the impactors' reactions at `y`, `(impactor, node, V_i^2 c_sr p / delta
    /// n)` (N) of the nodes inside each (with `owns`, the owned ones), ascending by impactor
    /// and node: each impactor's force is minus their sum in this order.
    fn reaction_terms(&self, y: &[[f64; 3]], owns: Option<&[bool]>) -> Vec<ReactionTerm> {
        let (c_sr, delta, vol, d) = (self.c_sr, self.delta, &self.volumes, self.dim);
        let mut terms = Vec::new();
        for (k, imp) in self.impactors.iter().enumerate() {
            let inside: Vec<ReactionTerm> = (0..y.len())
                .into_par_iter()
                .filter(|&i| owns.is_none_or(|o| o[i]))
                .filter_map(|i| {
                    let (p, n) = imp.penetration(&y[i])?;
                    let s = c_sr * p / delta * vol[i] * vol[i];
                    let mut term = [0.0; 3];
                    for c in 0..d {
                        term[c] = s * n[c];
                    }
                    Some((k as u32, i as u32, term))
                })
                .collect();
            terms.extend(inside);
        }
        terms
    }

    /// The contact energy at displacement `u`, J: `c_sr (d_c - r)^2 / (2 delta) V_i V_j`
    /// per pair never bonded closer than `d_c` (each pair once; crack faces not counted) and `c_sr p^2 / (2 delta) V_i^2` per node
    /// inside an impactor (the potentials of the forces above). Searches no list: brute
    /// force over the pairs, for tests of small bodies.
    pub fn energy<T: Real>(&self, u: &[T]) -> f64 {
        let (d, y) = (self.dim, self.current(u));
        let k = self.c_sr / (2.0 * self.delta);
        let mut e = 0.0;
        if let (Some(dc), Some(list)) = (self.distance, &self.pairs) {
            for i in 0..y.len() {
                for j in i + 1..y.len() {
                    let r2: f64 = (0..d).map(|c| (y[i][c] - y[j][c]).powi(2)).sum();
                    if r2.sqrt() < dc && !list.bonded(&self.x[i], &self.x[j], d) {
                        e += k * (dc - r2.sqrt()).powi(2) * self.volumes[i] * self.volumes[j];
                    }
                }
            }
        }
        for imp in &self.impactors {
            for (i, yi) in y.iter().enumerate() {
                if let Some((p, _)) = imp.penetration(yi) {
                    e += k * p * p * self.volumes[i] * self.volumes[i];
                }
            }
        }
        e
    }

    /// Total momentum of the impactors, kg m/s (free ones only).
    pub fn impactor_momentum(&self) -> [f64; 3] {
        let mut p = [0.0; 3];
        for imp in &self.impactors {
            if let Some(m) = imp.mass {
                for (p, v) in p.iter_mut().zip(imp.velocity) {
                    *p += m * v;
                }
            }
        }
        p
    }
}

/// Whether `model` has crack-face contact: `[contact]` enabled with `crack_faces` (default
/// on), so that the pairs of broken bonds repel and the backend answers their bond status
/// ([`Forces::bonds_broken`]).
pub fn crack_faces_on(model: &crate::model::Model) -> bool {
    (model.contact.as_ref()).is_some_and(|c| c.crack_faces_on())
}

/// `|a - b|` over the first `d` components, m (the force's own arithmetic: the same `r`).
fn separation(a: &[f64; 3], b: &[f64; 3], d: usize) -> f64 {
    let mut diff = [0.0; 3];
    for k in 0..d {
        diff[k] = a[k] - b[k];
    }
    diff[..d].iter().map(|x| x * x).sum::<f64>().sqrt()
}
