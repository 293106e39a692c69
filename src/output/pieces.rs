//! The pieces of a snapshot written in parallel (a distributed run, `docs/distributed.md`):
//! each rank writes the nodes it owns as a `.vtu` piece of its own
//! (`<stem>_<step>_<rank>.vtu`), from its own values (the run hands the series the fields of
//! those nodes alone), rank 0 the `.pvtu` that lists the pieces and the `.pvd` of the series
//! (`vtk.rs`). This file holds a rank's share ([`Pieces`]) and the picking of a piece's
//! values out of arrays of the whole body ([`pick`]).
//!
//! Units: as the arrays (m, m/s, m^3, N/m^3, J/m^3, Pa).

/// A rank's share of every snapshot.
#[derive(Debug, Clone)]
pub struct Pieces {
    pub rank: usize,
    pub ranks: usize,
    /// The nodes this rank writes (global indices, ascending).
    pub nodes: Vec<usize>,
}

/// `per` values per node of `values` (an array of the whole body) at `nodes`, in that order.
pub fn pick<T: Copy>(values: &[T], nodes: &[usize], per: usize) -> Vec<T> {
    let mut out = Vec::with_capacity(per * nodes.len());
    for &i in nodes {
        out.extend_from_slice(&values[per * i..per * (i + 1)]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::pick;

    /// Two components per node at nodes 0 and 2 of three: the first and last pairs, in order.
    #[test]
    fn pick_takes_each_nodes_components_in_order() {
        let values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        assert_eq!(pick(&values, &[2, 0], 2), vec![5.0, 6.0, 1.0, 2.0]);
    }
}
