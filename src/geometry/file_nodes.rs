//! Nodes read from a file (a point cloud or a mesh) before the removed shapes are applied:
//! positions (m), volumes (m^3), named node groups, material ids and initial fields.

/// A named node set of the body's file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGroup {
    /// The group's name (a mesh's physical name, or its number as text).
    pub name: String,
    /// Its number (a physical tag, a cell-data value), where it has one.
    pub number: Option<i64>,
    /// Node indices, ascending.
    pub nodes: Vec<usize>,
}

/// The entries of `v` where `keep` holds.
fn pick<X>(v: Vec<X>, keep: &[bool]) -> Vec<X> {
    v.into_iter()
        .zip(keep)
        .filter(|(_, &k)| k)
        .map(|(x, _)| x)
        .collect()
}

/// Nodes read from a file, before removals.
#[derive(Debug, Clone, Default)]
pub(crate) struct FileNodes {
    pub positions: Vec<[f64; 3]>,
    pub volumes: Vec<f64>,
    pub groups: Vec<NodeGroup>,
    pub material_ids: Option<Vec<i64>>,
    /// Initial displacement per node, m (a cloud's `ux, uy, uz` columns).
    pub displacement: Option<Vec<[f64; 3]>>,
    /// Initial velocity per node, m/s (a cloud's `vx, vy, vz` columns).
    pub velocity: Option<Vec<[f64; 3]>>,
}

impl FileNodes {
    /// Keep the nodes where `keep` holds, renumbering the groups.
    pub(crate) fn retain(self, keep: &[bool]) -> FileNodes {
        if keep.iter().all(|&k| k) {
            return self;
        }
        let mut new = vec![usize::MAX; keep.len()];
        let mut n = 0;
        for (i, &k) in keep.iter().enumerate() {
            if k {
                new[i] = n;
                n += 1;
            }
        }
        FileNodes {
            positions: pick(self.positions, keep),
            volumes: pick(self.volumes, keep),
            material_ids: self.material_ids.map(|m| pick(m, keep)),
            displacement: self.displacement.map(|m| pick(m, keep)),
            velocity: self.velocity.map(|m| pick(m, keep)),
            groups: self
                .groups
                .into_iter()
                .map(|g| NodeGroup {
                    nodes: g
                        .nodes
                        .iter()
                        .map(|&i| new[i])
                        .filter(|&i| i != usize::MAX)
                        .collect(),
                    ..g
                })
                .collect(),
        }
    }
}
