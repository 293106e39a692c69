//! What a rank of a distributed run gives the outputs from its own part ([`RankOutputs`]):
//! the fields of its owned nodes, for its piece of a snapshot, with no gather (a field read
//! over bonds, the bond-count damage or the dilatation, comes from the rank's part, which
//! holds every bond of its owned nodes); and the whole state gathered where an output needs
//! it, to the rank that writes a checkpoint (with the bond status, the failure history and
//! ADR's history: the other ranks send their owned parts and hold nothing whole) or to every
//! rank at the end of a run. The rank backends of `crate::distributed` implement it; a
//! backend in one process has none ([`Backend::rank_outputs`](super::Backend::rank_outputs)).
//!
//! Units: as the arrays (m, m/s, m/s^2, N/m^3; damage and dilatation dimensionless).

use crate::dynamics::{Adr, State};
use crate::material::FailureHistory;
use crate::{Real, Result};

/// Which ranks a gather brings the whole to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gather {
    /// Every rank.
    Every,
    /// Rank 0 alone (the rank that writes the shared files); the others send their part.
    Root,
}

/// A rank's part of the outputs (see the module documentation). Methods that say so are
/// collective: every rank calls them in the same order.
pub trait RankOutputs<T: Real> {
    /// This rank (0 writes the files shared by the ranks).
    fn rank(&self) -> usize;

    /// The nodes this rank owns (global indices, ascending): its piece of every snapshot;
    /// every `owned_*` array below is in this order.
    fn owned(&self) -> &[usize];

    /// The damage of the owned nodes (the `beta V`-weighted fraction of bonds lost).
    fn owned_damage(&self) -> Result<Vec<T>>;

    /// The bond-count damage of the owned nodes, counted over their bonds in the part.
    fn owned_bond_count_damage(&self) -> Result<Vec<f64>>;

    /// The dilatation of the owned nodes at the driver's global `u` (its owned entries
    /// current; the ghosts' exchanged: collective); `None` for a bond-based law.
    fn owned_dilatation(&mut self, u: &[T]) -> Result<Option<Vec<T>>>;

    /// The whole state into the driver's `state` on the ranks `to` names, from every
    /// rank's owned entries, which a call with `full_sync` or
    /// [`Backend::sync_state`](super::Backend::sync_state) made current (collective).
    fn gather_state(&mut self, state: &mut State<T>, to: Gather) -> Result<()>;

    /// The bond status (global CSR order) and the failure history of every bond and node,
    /// on the ranks `to` names; empty on the others (collective).
    fn bonds_to(&self, to: Gather) -> Result<(Vec<u8>, FailureHistory<T>)>;

    /// ADR's last free force of every dof into `adr` on the ranks `to` names; the others
    /// keep their owned dofs' (collective).
    fn adr_to(&mut self, adr: &mut Adr<T>, to: Gather) -> Result<()>;

    /// Every rank's values of its owned nodes (`per` per node; this rank's `mine`, in the
    /// order of [`RankOutputs::owned`]) as one array over every node on the ranks `to`
    /// names; empty on the others (collective).
    fn owned_to(&self, mine: &[T], per: usize, to: Gather) -> Result<Vec<T>>;
}
