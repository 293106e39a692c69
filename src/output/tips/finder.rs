//! Cracks and their tips in one damage field (the rule is in `docs/crack-tips.md`). Lengths
//! in metres, damage dimensionless.
//!
//! 1. **Crack nodes**: nodes outside the exclusion zone whose damage is at least the
//!    threshold.
//! 2. **Cracks**: the connected components of the crack nodes, two nodes being linked when
//!    they lie within [`LINK_SPACINGS`] `dx` of each other (edge and face diagonals of a
//!    lattice).
//! 3. **Skeleton**: in each component, with path lengths measured along the links, the node
//!    `A` farthest from the component's first node, then repeatedly the node farthest from
//!    the skeleton so far (first `{A}`, then every shortest path added), added with its
//!    shortest path back to the skeleton while that distance is at least one horizon. The
//!    ends so found are the crack's extreme points: two for a straight crack, three for a
//!    Y. A component whose first path is shorter than a horizon is not yet a crack and is
//!    not reported. The crack's length is the skeleton's length.
//! 4. **Tips**: the ends, except an end that meets the exclusion zone (a damaged excluded
//!    node within the link distance): there the crack runs on into the boundary or a loaded
//!    layer, so a straight crack from an edge has one tip. A tip's position is the mean of
//!    its end node and the crack nodes linked to it, which puts it on the crack's centre line
//!    (a crack between two lattice rows damages both).

use crate::neighbors::CellList;
use rayon::prelude::*;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Nodes closer than this many lattice spacings belong to the same crack.
pub const LINK_SPACINGS: f64 = 1.5;

/// One damage field and what the finder needs to read it.
#[derive(Clone, Copy, Debug)]
pub struct DamageField<'a> {
    /// Reference positions, m (z = 0 in 2D).
    pub positions: &'a [[f64; 3]],
    /// 2 or 3.
    pub dim: usize,
    /// Lattice spacing, m.
    pub dx: f64,
    /// Horizon, m: the shortest branch that counts, and the shortest crack.
    pub delta: f64,
    /// Damage per node (0..1).
    pub damage: &'a [f64],
    /// Nodes whose damage is not read: within a horizon of the boundary or of a loaded
    /// region ([`exclusion_mask`](super::exclusion_mask)).
    pub excluded: &'a [bool],
    /// Damage at or above which a node is a crack node.
    pub threshold: f64,
}

/// One crack of a damage field.
#[derive(Clone, Debug, PartialEq)]
pub struct Crack {
    /// Number of crack nodes.
    pub nodes: usize,
    /// Length of the skeleton, m.
    pub length: f64,
    /// Tip positions, m, in the order found.
    pub tips: Vec<[f64; 3]>,
}

/// The cracks of `field`, ordered by their lowest node index.
pub fn find_cracks(field: &DamageField) -> Vec<Crack> {
    assert_eq!(field.damage.len(), field.positions.len(), "damage per node");
    let over: Vec<usize> = (0..field.positions.len())
        .into_par_iter()
        .filter(|&i| field.damage[i] >= field.threshold)
        .collect();
    find_cracks_among(field, &over)
}

/// [`find_cracks`] from `over`, the nodes whose damage is at or above the threshold
/// (ascending), as a backend that thresholds on its device gives them; `field.damage` is
/// not read. The same cracks as from the whole field.
pub fn find_cracks_among(field: &DamageField, over: &[usize]) -> Vec<Crack> {
    assert_eq!(field.excluded.len(), field.positions.len(), "mask per node");
    let (crack, outside): (Vec<usize>, Vec<usize>) =
        over.par_iter().partition(|&&i| !field.excluded[i]);
    if crack.is_empty() {
        return Vec::new();
    }
    // The crack nodes first, then the damaged excluded ones (which only mark where a crack
    // runs into the exclusion zone).
    let nodes: Vec<usize> = crack.iter().copied().chain(outside).collect();
    let points: Vec<[f64; 3]> = nodes.iter().map(|&i| field.positions[i]).collect();
    let link = LINK_SPACINGS * field.dx;
    let list = CellList::new(&points, field.dim, link);
    let graph = Graph::new(&list, &points, crack.len());
    // (components in parallel, each thread with its own walk; collected in order)
    graph
        .components()
        .into_par_iter()
        .map_init(
            || Walk::new(crack.len()),
            |walk, c| graph.crack(&c, field.delta, walk),
        )
        .flatten()
        .collect()
}

/// The links among the crack nodes `0..n` (local indices) and which of them touch the
/// exclusion zone.
struct Graph<'a> {
    points: &'a [[f64; 3]],
    links: Vec<Vec<u32>>,
    touches: Vec<bool>,
}

impl<'a> Graph<'a> {
    fn new(list: &CellList, points: &'a [[f64; 3]], n: usize) -> Graph<'a> {
        let (links, touches): (Vec<Vec<u32>>, Vec<bool>) = (0..n)
            .into_par_iter()
            .map_init(Vec::new, |family, k| {
                list.family_into(k, family);
                let touches = family.iter().any(|&j| j as usize >= n);
                let links = family.iter().copied().filter(|&j| (j as usize) < n);
                (links.collect(), touches)
            })
            .unzip();
        Graph {
            points,
            links,
            touches,
        }
    }

    /// Connected components, each as ascending local indices, ordered by their first.
    fn components(&self) -> Vec<Vec<usize>> {
        let n = self.links.len();
        let mut seen = vec![false; n];
        let mut out = Vec::new();
        for s in 0..n {
            if seen[s] {
                continue;
            }
            seen[s] = true;
            let mut comp = vec![s];
            let mut k = 0;
            while k < comp.len() {
                for &j in &self.links[comp[k]] {
                    if !seen[j as usize] {
                        seen[j as usize] = true;
                        comp.push(j as usize);
                    }
                }
                k += 1;
            }
            comp.sort_unstable();
            out.push(comp);
        }
        out
    }

    fn distance(&self, a: usize, b: usize) -> f64 {
        let (p, q) = (self.points[a], self.points[b]);
        ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt()
    }

    /// The crack of component `comp` (see the module documentation), or `None` when it is
    /// shorter than `min_branch`.
    fn crack(&self, comp: &[usize], min_branch: f64, walk: &mut Walk) -> Option<Crack> {
        walk.run(self, comp, &[comp[0]]);
        let first = walk.farthest(comp);
        let mut ends = vec![first];
        let mut length = 0.0;
        // Distances to the skeleton so far: a full walk from its first node, then after each
        // branch only the improvements the branch's nodes bring (distances only shrink), so
        // a crack with many branches costs a few walks, not one per branch.
        walk.run(self, comp, &[first]);
        let mut branch = Vec::new();
        loop {
            let end = walk.farthest(comp);
            let reach = walk.dist[end];
            if reach < min_branch {
                break;
            }
            length += reach;
            ends.push(end);
            branch.clear();
            let mut k = end;
            while walk.dist[k] > 0.0 {
                branch.push(k);
                k = walk.pred[k] as usize;
            }
            walk.extend(self, &branch);
        }
        walk.reset(comp);
        if ends.len() < 2 {
            return None;
        }
        let tips = ends
            .into_iter()
            .filter(|&e| !self.touches[e])
            .map(|e| self.tip_position(e))
            .collect();
        Some(Crack {
            nodes: comp.len(),
            length,
            tips,
        })
    }

    /// The mean position of end node `e` and the crack nodes linked to it.
    fn tip_position(&self, e: usize) -> [f64; 3] {
        let mut sum = self.points[e];
        for &j in &self.links[e] {
            for (s, x) in sum.iter_mut().zip(self.points[j as usize]) {
                *s += x;
            }
        }
        let n = (self.links[e].len() + 1) as f64;
        sum.map(|s| s / n)
    }
}

/// Shortest path lengths along the links from a set of sources (Dijkstra), with scratch
/// arrays kept over the whole field and reset per component.
struct Walk {
    dist: Vec<f64>,
    pred: Vec<u32>,
}

/// A heap entry ordered so that `BinaryHeap` pops the smallest distance first (then the
/// lowest node, for a deterministic order).
#[derive(PartialEq)]
struct Entry(f64, usize);

impl Eq for Entry {}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        other.0.total_cmp(&self.0).then(other.1.cmp(&self.1))
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Walk {
    fn new(n: usize) -> Walk {
        Walk {
            dist: vec![f64::INFINITY; n],
            pred: vec![u32::MAX; n],
        }
    }

    fn reset(&mut self, comp: &[usize]) {
        for &k in comp {
            self.dist[k] = f64::INFINITY;
            self.pred[k] = u32::MAX;
        }
    }

    fn run(&mut self, graph: &Graph, comp: &[usize], sources: &[usize]) {
        self.reset(comp);
        self.extend(graph, sources);
    }

    /// Add `sources` (distance zero) to the current walk and lower the distances they
    /// shorten; nodes they do not bring closer are not visited.
    fn extend(&mut self, graph: &Graph, sources: &[usize]) {
        let mut heap = BinaryHeap::new();
        for &s in sources {
            self.dist[s] = 0.0;
            heap.push(Entry(0.0, s));
        }
        while let Some(Entry(d, k)) = heap.pop() {
            if d > self.dist[k] {
                continue;
            }
            for &j in &graph.links[k] {
                let j = j as usize;
                let through = d + graph.distance(k, j);
                if through < self.dist[j] {
                    self.dist[j] = through;
                    self.pred[j] = k as u32;
                    heap.push(Entry(through, j));
                }
            }
        }
    }

    /// The node of `comp` farthest from the sources (the lowest index among equals).
    fn farthest(&self, comp: &[usize]) -> usize {
        let mut best = comp[0];
        for &k in comp {
            if self.dist[k] > self.dist[best] {
                best = k;
            }
        }
        best
    }
}
