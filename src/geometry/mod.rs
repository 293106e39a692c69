//! Geometry: the discretized body (node positions and volumes), named regions as node sets,
//! and pre-cracks as predicates on bonds. Lengths in metres, volumes in m^3 (2D volumes
//! include the thickness: `V = dx^2 h`).

pub mod body;
pub mod precrack;
pub mod regions;

pub use body::{build_body, Body};
pub use precrack::bond_crosses_precrack;
pub use regions::region_nodes;
