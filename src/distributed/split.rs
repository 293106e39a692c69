//! A rank's owned nodes split for the overlap of the ghost exchange with force work: the
//! interior (no ghost in its family) and the boundary (a ghost in its family), each with a
//! [`CpuLoop`] of its own over the same local nodes (owned, then ghosts) that holds only its
//! nodes' families and bonds. The interior's bond work runs while the ghosts' values travel;
//! the boundary's once they are in. A node's bonds are summed by one loop, in its CSR order,
//! so every per-node result is the single loop's bit for bit; the two are put back together
//! per node (forces, dilatation, damage, bond status).
//!
//! Units: m, N/m^3, 1 (dilatation, damage).

use super::part::{local_problem, BondArrays};
use super::RankSetup;
use crate::backend::CpuLoop;
use crate::dynamics::Forces;
use crate::partition::Subdomain;
use crate::setup::Problem;
use crate::{Real, Result};
use std::sync::Arc;
use std::time::Instant;

/// The two loops of a rank and which owned nodes each holds.
pub struct Split<T: Real> {
    pub inner: CpuLoop<T>,
    pub edge: CpuLoop<T>,
    /// Local indices of the boundary nodes (ascending).
    pub boundary: Vec<usize>,
    /// Per owned node: on the boundary.
    on_edge: Vec<bool>,
    /// Per owned node: its family's length.
    family: Vec<usize>,
}

/// The problems of a [`Split`]'s two loops, before the loops are made.
pub struct SplitParts {
    inner: Problem,
    edge: Problem,
    on_edge: Vec<bool>,
    family: Vec<usize>,
}

impl SplitParts {
    /// The problems of `sub`'s interior and boundary nodes (`on_edge`: per owned node, a
    /// ghost in its family), built straight from the subdomain (`part.rs`), in parallel;
    /// `times.part` their seconds.
    pub fn new(
        problem: &Problem,
        sub: &Subdomain,
        on_edge: Vec<bool>,
        times: &mut RankSetup,
    ) -> SplitParts {
        let t0 = Instant::now();
        let part =
            |edge: bool| local_problem(problem, sub, None, |k| on_edge[k] == edge, BondArrays::All);
        let (inner, edge) = rayon::join(|| part(false), || part(true));
        let family = (0..sub.owned)
            .map(|k| sub.families.range(k).len())
            .collect();
        times.part = Some(t0.elapsed().as_secs_f64());
        SplitParts {
            inner,
            edge,
            on_edge,
            family,
        }
    }
}

impl<T: Real> Split<T> {
    /// The two loops of `parts` (their per-bond coefficients: the run's `assembly`).
    pub fn new(parts: SplitParts) -> Split<T> {
        let SplitParts {
            inner,
            edge,
            on_edge,
            family,
        } = parts;
        let loops = |p: Problem| CpuLoop::new(Arc::new(p));
        let (inner, edge) = rayon::join(|| loops(inner), || loops(edge));
        Split {
            inner,
            edge,
            boundary: (0..on_edge.len()).filter(|&k| on_edge[k]).collect(),
            family,
            on_edge,
        }
    }

    /// `into` (`per` values per local node, the interior's) with the boundary nodes' values
    /// from `edge`.
    pub fn merge<V: Copy>(&self, into: &mut [V], edge: &[V], per: usize) {
        for &k in &self.boundary {
            into[per * k..per * (k + 1)].copy_from_slice(&edge[per * k..per * (k + 1)]);
        }
    }

    /// Whether the bond `i -> j` (local indices, `i` owned) is broken, from the loop that
    /// holds `i`'s bonds (`CpuLoop::bond_broken_scan`).
    pub fn bond_broken(&self, i: usize, j: u32) -> bool {
        match self.on_edge[i] {
            true => self.edge.bond_broken_scan(i, j),
            false => self.inner.bond_broken_scan(i, j),
        }
    }

    /// The damage of the local nodes (owned: from the loop holding their bonds).
    pub fn damage(&self, phi: &mut [T]) -> Result<()> {
        let mut edge = vec![T::zero(); phi.len()];
        self.inner.damage(phi)?;
        self.edge.damage(&mut edge)?;
        self.merge(phi, &edge, 1);
        Ok(())
    }

    /// The owned nodes' bond status in their CSR order.
    pub fn bond_status(&self) -> Result<Vec<u8>> {
        Ok(self.per_bond(self.inner.bond_status()?, self.edge.bond_status()?))
    }

    /// The owned nodes' damage per bond (a softening law's; `None` for the brittle law) in
    /// their CSR order.
    pub fn bond_damage(&self) -> Result<Option<Vec<T>>> {
        Ok(
            match (self.inner.bond_damage()?, self.edge.bond_damage()?) {
                (Some(inner), Some(edge)) => Some(self.per_bond(inner, edge)),
                _ => None,
            },
        )
    }

    /// The owned nodes' per-bond values in their CSR order, from the interior's `inner` and
    /// the boundary's `edge`.
    fn per_bond<V: Copy>(&self, inner: Vec<V>, edge: Vec<V>) -> Vec<V> {
        let mut status = Vec::with_capacity(inner.len() + edge.len());
        let (mut a, mut b) = (0, 0);
        for (k, &len) in self.family.iter().enumerate() {
            let (from, at) = match self.on_edge[k] {
                true => (&edge, &mut b),
                false => (&inner, &mut a),
            };
            status.extend_from_slice(&from[*at..*at + len]);
            *at += len;
        }
        status
    }

    /// Each local node's next critical stretch at `u` (`CpuLoop::next_critical_stretches`:
    /// owned nodes' from the loop holding their bonds, `+inf` for the ghosts).
    pub fn next_critical_stretches(&self, u: &[T]) -> Vec<T> {
        let mut next = self.inner.next_critical_stretches(u);
        self.merge(&mut next, &self.edge.next_critical_stretches(u), 1);
        next
    }

    pub fn broken_bonds(&self) -> usize {
        self.inner.broken_bonds() + self.edge.broken_bonds()
    }

    pub fn memory_bytes(&self) -> usize {
        self.inner.memory_bytes() + self.edge.memory_bytes()
    }

    pub fn bytes_per_step(&self) -> usize {
        self.inner.bytes_per_step() + self.edge.bytes_per_step()
    }
}
