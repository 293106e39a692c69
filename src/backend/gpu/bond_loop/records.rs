//! The per-node arrays the bond kernels read: node records `[x, y, z, V]` in f64 and, for
//! the f32 kernels, relative to the body's centre in f32 (one 16-byte load per node and per
//! neighbour); where no f32 kernel needs an f64 position only the volumes are kept in f64.
//! Also used by the subdomain engine (`backend/partitioned/`), whose records must agree.
//!
//! Units: m (positions), m^3 (volumes).

use crate::geometry::Body;
use crate::model::PartialVolume;
use crate::setup::Problem;

/// Whether the f32 kernels of `problem` need the f64 node records (positions for the exact
/// bond lengths of the partial-volume factor in damage); else only the f64 volumes are kept.
pub(super) fn records_kept(problem: &Problem, t: usize) -> bool {
    records_kept_for(problem.model.discretization.partial_volume, t)
}

/// [`records_kept`] for partial volumes `kind`.
pub(super) fn records_kept_for(kind: PartialVolume, t: usize) -> bool {
    t == 8 || kind != PartialVolume::None
}

/// Node records `[x, y, z, V]` (m, m^3) of `nodes`, in that order: what the bond kernels
/// read per node and per neighbour.
pub(crate) fn node_records(body: &Body, nodes: impl Iterator<Item = usize>) -> Vec<f64> {
    nodes
        .flat_map(|i| {
            let x = body.positions[i];
            [x[0], x[1], x[2], body.volumes[i]]
        })
        .collect()
}

/// The point the f32 node records are relative to: the centre of the body's bounding box, m
/// (the same for every subdomain of a body, so their records agree).
pub(crate) fn record_centre(body: &Body) -> [f64; 3] {
    std::array::from_fn(|k| 0.5 * (body.bbox_min[k] + body.bbox_max[k]))
}

/// The f32 node records `[x - cx, y - cy, z - cz, V]` (m, m^3) of the f64 records `records`
/// ([`node_records`]) with `centre` ([`record_centre`]): what the f32 bond kernels read per
/// node and per neighbour (one 16-byte load, no conversion). The differences are taken in f64
/// and rounded once; relative to the centre the rounding of a position is at most 2^-24 of
/// the body's half extent, the size of the rounding the f32 displacement already carries.
pub(crate) fn node_records_f32(records: &[f64], centre: [f64; 3]) -> Vec<f32> {
    records
        .chunks_exact(4)
        .flat_map(|r| {
            [
                (r[0] - centre[0]) as f32,
                (r[1] - centre[1]) as f32,
                (r[2] - centre[2]) as f32,
                r[3] as f32,
            ]
        })
        .collect()
}

/// The node arrays a backend in precision bytes `t` uploads for `problem`: the f64 array
/// `nodes` (the records, or where [`records_kept`] says not, the volumes alone), whether it
/// holds the volumes only, and the f32 records (empty in f64, whose kernels read only
/// `nodes`).
pub(super) fn node_arrays(problem: &Problem, t: usize) -> (Vec<f64>, bool, Vec<f32>) {
    let records = node_records(&problem.body, 0..problem.body.len());
    let nodes_f32 = if t == 4 {
        node_records_f32(&records, record_centre(&problem.body))
    } else {
        Vec::new()
    };
    let volumes_only = !records_kept(problem, t);
    let nodes = match volumes_only {
        true => problem.body.volumes.clone(),
        false => records,
    };
    (nodes, volumes_only, nodes_f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f32 records are the f64 records less the centre, rounded once; volumes rounded.
    #[test]
    fn f32_records_are_the_f64_records_relative_to_the_centre() {
        let records = [1.0, 2.0, 3.0, 0.5, 3.0, 4.0, 5.0, 0.1];
        let f32s = node_records_f32(&records, [2.0, 3.0, 4.0]);
        assert_eq!(f32s, [-1.0, -1.0, -1.0, 0.5, 1.0, 1.0, 1.0, 0.1f32]);
        // far from the origin the difference is taken in f64 first
        let far = node_records_f32(&[10.000_001, 0.0, 0.0, 1.0], [10.0, 0.0, 0.0]);
        assert_eq!(far[0], (10.000_001f64 - 10.0) as f32);
    }
}
