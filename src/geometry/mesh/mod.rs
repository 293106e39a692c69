//! Bodies from meshes: a Gmsh `.msh` file (format 4.1, ASCII or binary; `msh.rs`) or a VTK
//! XML unstructured grid `.vtu` (ASCII, base64 or raw appended data; `vtu.rs`) of
//! triangles and quadrilaterals (2D) or tetrahedra and hexahedra (3D), made into nodes by
//! `cells.rs`: one node per cell at its centroid with the cell's volume, or one node per
//! vertex with an equal share of each cell around it (`geometry.mesh_nodes`).
//!
//! Named node sets come from the file: Gmsh physical groups (by name, or by number where
//! unnamed) and the values of an integer cell-data array of a `.vtu` (by value). They are
//! selected by `[[region]]` entries of `shape = "group"`. Each cell's first physical group
//! of the body's dimension (msh) or its cell-data value (vtu) is its material id.
//!
//! Every problem is an error naming `geometry.mesh`, the file, the cell (its element tag in a
//! `.msh`, its index from 0 in a `.vtu`) and, where the reader knows it, the line (ASCII) or
//! the byte offset (binary). Lengths in metres, volumes in m^3 (2D: area times thickness).

mod cells;
mod msh;
mod vtu;

use cells::discretize;

use crate::{Error, Result};
use std::path::Path;

/// The field every error of the mesh readers names.
pub(crate) const FIELD: &str = "geometry.mesh";

/// The element kinds read from a mesh (first order only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CellKind {
    Point,
    Line,
    Triangle,
    Quad,
    Tet,
    Hex,
}

impl CellKind {
    /// Vertices of one element.
    pub(crate) fn vertices(self) -> usize {
        match self {
            CellKind::Point => 1,
            CellKind::Line => 2,
            CellKind::Triangle => 3,
            CellKind::Quad | CellKind::Tet => 4,
            CellKind::Hex => 8,
        }
    }

    /// Topological dimension.
    pub(crate) fn dim(self) -> usize {
        match self {
            CellKind::Point => 0,
            CellKind::Line => 1,
            CellKind::Triangle | CellKind::Quad => 2,
            CellKind::Tet | CellKind::Hex => 3,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            CellKind::Point => "point",
            CellKind::Line => "line",
            CellKind::Triangle => "triangle",
            CellKind::Quad => "quadrilateral",
            CellKind::Tet => "tetrahedron",
            CellKind::Hex => "hexahedron",
        }
    }
}

/// Where in the file an element was read, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// Line number from 1 (ASCII).
    Line(usize),
    /// Byte offset from the start of the file (binary).
    Byte(usize),
    /// Not known beyond the cell's index.
    Unknown,
}

impl Place {
    pub(crate) fn show(self) -> String {
        match self {
            Place::Line(l) => format!(" (line {l})"),
            Place::Byte(b) => format!(" (byte {b})"),
            Place::Unknown => String::new(),
        }
    }
}

/// One element of a mesh.
#[derive(Debug, Clone)]
pub(crate) struct Element {
    pub kind: CellKind,
    /// Vertex indices into [`Mesh::vertices`]; the first `kind.vertices()` are used.
    pub nodes: [u32; 8],
    /// The element tag (msh) or cell index (vtu).
    pub id: u64,
    /// Indices into [`Mesh::groups`].
    pub groups: Vec<u32>,
    /// Material id (the first physical group of its dimension, or the cell-data value).
    pub material: Option<i64>,
    pub place: Place,
}

impl Element {
    pub(crate) fn vertex_list(&self) -> &[u32] {
        &self.nodes[..self.kind.vertices()]
    }
}

/// A named group of elements.
#[derive(Debug, Clone)]
pub(crate) struct Group {
    /// The physical name, or the number as text where it has none.
    pub name: String,
    /// The physical tag (msh) or the cell-data value (vtu).
    pub number: i64,
}

/// A mesh as read: vertices, elements and groups.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mesh {
    /// Vertex coordinates, m.
    pub vertices: Vec<[f64; 3]>,
    /// Each vertex's id in the file (node tag, or point index).
    pub vertex_ids: Vec<u64>,
    pub elements: Vec<Element>,
    pub groups: Vec<Group>,
    /// The file, for messages.
    pub origin: String,
    /// How the file names an element: `element tag` (msh) or `cell` (vtu, from 0).
    pub element_word: &'static str,
}

impl Mesh {
    /// `"<file>: <element word> <id> (line n)"`.
    pub(crate) fn at(&self, e: &Element) -> String {
        format!(
            "{}: {} {}{}",
            self.origin,
            self.element_word,
            e.id,
            e.place.show()
        )
    }
}

/// Read the mesh file at `path`, chosen by its extension (`.msh` or `.vtu`).
pub(crate) fn read_mesh(path: &Path) -> Result<Mesh> {
    let origin = path.display().to_string();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let reader: fn(&[u8], &str) -> Result<Mesh> = match ext.as_deref() {
        Some("msh") => msh::parse_msh,
        Some("vtu") => vtu::parse_vtu,
        _ => {
            return Err(Error::model(
                FIELD,
                format!("{origin}: unknown mesh format; expected a .msh (Gmsh 4.1) or .vtu file"),
            ))
        }
    };
    let data = std::fs::read(path)
        .map_err(|e| Error::model(FIELD, format!("cannot read {origin}: {e}")))?;
    reader(&data, &origin)
}

/// An error of `origin` at `what`.
pub(crate) fn mesh_error(origin: &str, what: impl std::fmt::Display) -> Error {
    Error::model(FIELD, format!("{origin}: {what}"))
}

/// The most a mesh's mean node spacing and `discretization.dx` may differ by, as a factor:
/// further apart, one of them is in the wrong unit.
const SPACING_FACTOR: f64 = 4.0;

/// The nodes of the mesh file at `path` for `model` (`dx` the model's spacing, `thickness`
/// in 2D): read, made into nodes, checked (partial volumes, spacing, repeated nodes).
pub(crate) fn mesh_nodes(
    model: &crate::model::Model,
    path: &Path,
    dx: f64,
    thickness: f64,
) -> Result<super::file_nodes::FileNodes> {
    use crate::model::validate::num;
    use crate::model::PartialVolume;
    let disc = &model.discretization;
    let dim = disc.dimension.d();
    if disc.partial_volume != PartialVolume::None {
        return Err(Error::model(
            "discretization.partial_volume",
            "the linear partial volumes assume every node is a lattice cell of edge dx; a \
             mesh's cells are not: use partial_volume = \"none\" with geometry.mesh",
        ));
    }
    let mode = model.geometry.mesh_nodes.unwrap_or_default();
    let mesh = read_mesh(path)?;
    let body = discretize(&mesh, dim, thickness, mode)?;
    let n = body.positions.len();
    if n > super::lattice::MAX_NODES {
        return Err(mesh_error(
            &mesh.origin,
            format!(
                "{n} nodes, more than {} (2^31 - 16, the node index limit)",
                super::lattice::MAX_NODES
            ),
        ));
    }
    let total: f64 = body.volumes.iter().sum();
    let spacing =
        (total / (n as f64 * if dim == 2 { thickness } else { 1.0 })).powf(1.0 / dim as f64);
    if !(dx <= SPACING_FACTOR * spacing && spacing <= SPACING_FACTOR * dx) {
        return Err(Error::model(
            "discretization.dx",
            format!(
                "dx = {} m, but the mesh's {n} nodes have a mean spacing (volume per node)^(1/{dim}) \
                 = {} m, more than a factor {SPACING_FACTOR} away: give dx near it (the horizon \
                 is horizon_factor x dx), or check the mesh's unit (it is read in metres)",
                num(dx),
                num(spacing)
            ),
        ));
    }
    let mut seen: std::collections::HashMap<[u64; 3], usize> = Default::default();
    for (i, p) in body.positions.iter().enumerate() {
        if let Some(j) = seen.insert(p.map(|x| (x + 0.0).to_bits()), i) {
            return Err(mesh_error(
                &mesh.origin,
                format!(
                    "{} and {} give nodes at the same point ({}, {}, {}) m: a repeated {}",
                    body.names[j],
                    body.names[i],
                    p[0],
                    p[1],
                    p[2],
                    match mode {
                        crate::model::MeshNodes::Centroids => "cell",
                        crate::model::MeshNodes::Vertices => "vertex (merge duplicate nodes)",
                    }
                ),
            ));
        }
    }
    Ok(super::file_nodes::FileNodes {
        positions: body.positions,
        volumes: body.volumes,
        groups: body
            .groups
            .into_iter()
            .map(|(name, number, nodes)| super::file_nodes::NodeGroup {
                name,
                number: Some(number),
                nodes,
            })
            .collect(),
        material_ids: body.materials,
        ..Default::default()
    })
}

/// The node count of the mesh at `path` for `model` (cells of the body's dimension, or the
/// vertices they use), without checks; `None` where it cannot be read.
pub fn node_count(model: &crate::model::Model, path: &Path) -> Option<f64> {
    let dim = model.discretization.dimension.d();
    let mesh = read_mesh(path).ok()?;
    let cells = mesh.elements.iter().filter(|e| e.kind.dim() == dim);
    Some(match model.geometry.mesh_nodes.unwrap_or_default() {
        crate::model::MeshNodes::Centroids => cells.count() as f64,
        crate::model::MeshNodes::Vertices => {
            let mut used = vec![false; mesh.vertices.len()];
            for e in cells {
                for &v in e.vertex_list() {
                    used[v as usize] = true;
                }
            }
            used.iter().filter(|&&u| u).count() as f64
        }
    })
}
