//! The contact pair list: for each node, the nodes it is not bonded to (with crack faces on,
//! also those it is bonded to, whose bond may break) that were closer than `d_c + skin` at
//! the last search, ascending (CSR). Searched by the cell list of
//! `crate::neighbors` over the current positions; searched again when a node has moved more
//! than `skin / 2` since (each pair's distance then changed by less than the skin). Units: m.

use crate::neighbors::{cell_list_families, within_radius, Families};
use crate::Real;
use rayon::prelude::*;

/// The pair list and its rule.
#[derive(Debug, Clone)]
pub struct PairList {
    /// Search radius `d_c + skin`, m.
    radius: f64,
    /// Skin, m.
    skin: f64,
    /// Squared family radius of the body, m^2: pairs within it in the reference
    /// configuration are bonded and get no contact force.
    bonded_r2: f64,
    /// Whether bonded pairs are listed too (their bonds may break: crack faces).
    with_bonded: bool,
    /// The list (empty before the first search).
    list: Families,
    /// Displacement at the last search, m, node-major.
    at_search: Vec<f64>,
    /// Searches so far.
    pub searches: usize,
}

impl PairList {
    /// A list of search radius `radius` (m), `skin` (m), excluding pairs whose reference
    /// squared distance is within `bonded_r2` (m^2) unless `with_bonded`.
    pub fn new(radius: f64, skin: f64, bonded_r2: f64, with_bonded: bool) -> Self {
        PairList {
            radius,
            skin,
            bonded_r2,
            with_bonded,
            list: Families::default(),
            at_search: Vec::new(),
            searches: 0,
        }
    }

    /// Whether nodes at reference positions `a`, `b` are bonded (the family predicate).
    pub fn bonded(&self, a: &[f64; 3], b: &[f64; 3], dim: usize) -> bool {
        within_radius(a, b, dim, self.bonded_r2)
    }

    /// The partners of node `i`, ascending.
    pub fn partners(&self, i: usize) -> &[u32] {
        self.list.family(i)
    }

    /// Search again if no search was made yet or some node moved more than `skin / 2`
    /// since the last one; `y` current and `x` reference positions, `u` the displacement.
    pub fn update<T: Real>(&mut self, y: &[[f64; 3]], x: &[[f64; 3]], u: &[T], dim: usize) {
        if self.due(u, dim, None, |m| m) {
            let list = self.search(y, x, dim);
            self.keep(list, u);
        }
    }

    /// Whether a search is due: none made yet, or some node (of `owns` where given: a part
    /// of the body) moved more than `skin / 2` since the last one; `merge` makes the
    /// largest travel over every part (the identity in one process). Where parts call it,
    /// each calls `merge` at every call after its first search (collective).
    pub fn due<T: Real>(
        &self,
        u: &[T],
        dim: usize,
        owns: Option<&[bool]>,
        merge: impl Fn(f64) -> f64,
    ) -> bool {
        self.at_search.is_empty() || merge(self.max_travel(u, dim, owns)) > 0.5 * self.skin
    }

    /// Take `list`, searched at displacement `u`, as the list of a new search.
    pub fn keep<T: Real>(&mut self, list: Families, u: &[T]) {
        self.list = list;
        self.at_search = u.iter().map(|v| v.f64()).collect();
        self.searches += 1;
    }

    /// The search radius `d_c + skin`, m.
    pub fn radius(&self) -> f64 {
        self.radius
    }

    /// The largest distance a node (of `owns` where given) has moved since the last
    /// search, m.
    fn max_travel<T: Real>(&self, u: &[T], dim: usize, owns: Option<&[bool]>) -> f64 {
        (u.par_chunks(dim)
            .zip(self.at_search.par_chunks(dim))
            .enumerate())
        .filter(|(i, _)| owns.is_none_or(|o| o[*i]))
        .map(|(_, (now, then))| {
            (0..dim)
                .map(|k| (now[k].f64() - then[k]).powi(2))
                .sum::<f64>()
                .sqrt()
        })
        .reduce(|| 0.0, f64::max)
    }

    /// [`search`](Self::search) among `nodes` alone (global indices, ascending; `y` and `x`
    /// read there): the list of every node of the body, each of `nodes` with its partners
    /// among `nodes` (the same partners, in the same order, as the whole body's search
    /// finds among them), the other nodes with none. A part of the body's list over the
    /// nodes it knows (`Contact::evaluate`).
    pub fn search_among(
        &self,
        y: &[[f64; 3]],
        x: &[[f64; 3]],
        dim: usize,
        nodes: &[u32],
    ) -> Families {
        let pick =
            |v: &[[f64; 3]]| -> Vec<[f64; 3]> { nodes.iter().map(|&i| v[i as usize]).collect() };
        let (ys, xs) = (pick(y), pick(x));
        let near = self.search(&ys, &xs, dim);
        let mut offsets = Vec::with_capacity(y.len() + 1);
        offsets.push(0);
        let mut next = nodes.iter().enumerate().peekable();
        for i in 0..y.len() {
            let mut end = offsets.last().copied().unwrap_or(0);
            if let Some((k, _)) = next.next_if(|&(_, &g)| g as usize == i) {
                end += near.family(k).len();
            }
            offsets.push(end);
        }
        // (the local indices are ascending with the global ones: each family stays sorted)
        let neighbors = near.neighbors.iter().map(|&k| nodes[k as usize]).collect();
        Families { offsets, neighbors }
    }

    /// The pairs closer than the search radius at `y` that are not bonded (all of them with
    /// bonded pairs listed).
    pub fn search(&self, y: &[[f64; 3]], x: &[[f64; 3]], dim: usize) -> Families {
        let near = cell_list_families(y, dim, self.radius);
        if self.with_bonded {
            return near;
        }
        let kept: Vec<Vec<u32>> = (0..near.nodes())
            .into_par_iter()
            .map(|i| {
                (near.family(i).iter().copied())
                    .filter(|&j| !self.bonded(&x[i], &x[j as usize], dim))
                    .collect()
            })
            .collect();
        let mut offsets = Vec::with_capacity(kept.len() + 1);
        offsets.push(0);
        for k in &kept {
            offsets.push(offsets.last().copied().unwrap_or(0) + k.len());
        }
        Families {
            offsets,
            neighbors: kept.concat(),
        }
    }

    /// The list of the last search.
    pub fn list(&self) -> &Families {
        &self.list
    }
}
