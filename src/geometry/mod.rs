//! Geometry: the discretized body (node positions and volumes), named regions as node sets,
//! and pre-cracks as predicates on bonds. Lengths in metres, volumes in m^3 (2D volumes
//! include the thickness: `V = dx^2 h`).
//!
//! `body.rs` builds the body from `lattice.rs` (box union filled by a lattice) or `points.rs`
//! (CSV point cloud) or `mesh/` (a Gmsh or VTK mesh) and adds the nodes of loading layers outside the boxes (`layers.rs`);
//! `shapes.rs` holds the one set of shape predicates used by removal and
//! regions; `regions.rs` selects node sets; `precrack.rs` tests bonds against pre-cracks.

pub mod body;
mod file_nodes;
pub(crate) mod lattice;
pub mod layers;
mod mesh;
mod points;
pub mod precrack;
pub mod regions;
mod shapes;

pub use body::{build_body, Body, NodeGroup};
pub use mesh::node_count as mesh_node_count;
pub use precrack::bond_crosses_precrack;
pub use regions::region_nodes;
