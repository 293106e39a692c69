//! Cells into nodes: the volume and centroid of each cell (triangles and tetrahedra in closed
//! form; quadrilaterals and hexahedra by 2- and 8-point Gauss quadrature of the bilinear and
//! trilinear maps, exact for them), checked for inverted and degenerate cells, then one node
//! per cell at its centroid with its volume, or one node per vertex with an equal share of
//! each adjacent cell's volume (`1/3` of a triangle, `1/4` of a quadrilateral or a
//! tetrahedron, `1/8` of a hexahedron). Either way the nodes' volumes sum to the mesh's.
//! Lengths in metres, volumes in m^3 (2D: area times the thickness).

use super::{mesh_error, CellKind, Element, Mesh, FIELD};
use crate::model::MeshNodes;
use crate::{Error, Result};

/// Relative size below which a cell's volume counts as zero (against its bounding box).
const DEGENERATE: f64 = 1e-12;

/// The nodes of a mesh.
#[derive(Debug, Clone)]
pub(crate) struct MeshBody {
    /// Positions, m (z = 0 in 2D).
    pub positions: Vec<[f64; 3]>,
    /// Volumes, m^3.
    pub volumes: Vec<f64>,
    /// Each group's name and its nodes (ascending), in the file's group order.
    pub groups: Vec<(String, i64, Vec<usize>)>,
    /// Material id per node, where any cell has one (0 for a cell of no group).
    pub materials: Option<Vec<i64>>,
    /// How each node is named in messages (`element tag 5`, `node tag 12`).
    pub names: Vec<String>,
}

/// The volume (area in 2D, before the thickness) and centroid of a cell, or why it is bad.
fn measure(
    kind: CellKind,
    x: &[[f64; 3]],
    dim: usize,
) -> std::result::Result<(f64, [f64; 3]), String> {
    let span = (0..dim)
        .map(|a| {
            let (lo, hi) = x
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), p| {
                    (l.min(p[a]), h.max(p[a]))
                });
            hi - lo
        })
        .fold(0.0f64, f64::max);
    let tiny = DEGENERATE * span.powi(dim as i32);
    let (volume, centroid) = match kind {
        CellKind::Triangle => {
            let (e1, e2) = (sub(x[1], x[0]), sub(x[2], x[0]));
            let area = 0.5 * (e1[0] * e2[1] - e1[1] * e2[0]);
            (area.abs(), mean(x))
        }
        CellKind::Tet => {
            let (e1, e2, e3) = (sub(x[1], x[0]), sub(x[2], x[0]), sub(x[3], x[0]));
            let v = dot(cross(e1, e2), e3) / 6.0;
            if v < -tiny {
                return Err(format!(
                    "is inverted: signed volume {v:e} m^3 < 0 (its vertices are ordered the \
                     other way round)"
                ));
            }
            (v, mean(x))
        }
        CellKind::Quad | CellKind::Hex => {
            let (volume, centroid, signs) = gauss(x, dim);
            if signs.0 && signs.1 {
                return Err(format!(
                    "is {} (its Jacobian changes sign)",
                    if dim == 2 {
                        "self-intersecting or not convex"
                    } else {
                        "twisted or inverted"
                    }
                ));
            }
            if dim == 3 && signs.1 {
                return Err(format!(
                    "is inverted: signed volume {:e} m^3 < 0 (its vertices are ordered the \
                     other way round)",
                    -volume
                ));
            }
            (volume, centroid)
        }
        _ => return Err("is not a cell".into()),
    };
    if volume.partial_cmp(&tiny) != Some(std::cmp::Ordering::Greater) || !volume.is_finite() {
        return Err(format!(
            "has zero volume ({volume:e} m^{dim}): its vertices are {}",
            if dim == 2 { "collinear" } else { "coplanar" }
        ));
    }
    Ok((volume, centroid))
}

/// `|volume|`, centroid and whether the Jacobian was positive / negative at some Gauss point,
/// for a quadrilateral (2D) or hexahedron (3D) in the Gmsh / VTK vertex order.
fn gauss(x: &[[f64; 3]], dim: usize) -> (f64, [f64; 3], (bool, bool)) {
    // reference corners of the vertices, in order
    const CORNERS: [[f64; 3]; 8] = [
        [-1., -1., -1.],
        [1., -1., -1.],
        [1., 1., -1.],
        [-1., 1., -1.],
        [-1., -1., 1.],
        [1., -1., 1.],
        [1., 1., 1.],
        [-1., 1., 1.],
    ];
    let g = 1.0 / 3f64.sqrt();
    let n = x.len();
    let points: Vec<[f64; 3]> = if dim == 2 {
        [[-g, -g], [g, -g], [g, g], [-g, g]]
            .map(|[a, b]| [a, b, 0.0])
            .to_vec()
    } else {
        (0..8).map(|k| CORNERS[k].map(|c| c * g)).collect()
    };
    let (mut volume, mut moment, mut signs) = (0.0, [0.0; 3], (false, false));
    for q in &points {
        // shape functions and their derivatives at q
        let mut jac = [[0.0f64; 3]; 3];
        let mut at = [0.0; 3];
        for (k, xk) in x.iter().enumerate().take(n) {
            let c = CORNERS[k];
            let f: [f64; 3] =
                std::array::from_fn(|a| if a < dim { 1.0 + c[a] * q[a] } else { 1.0 });
            let scale = 0.5f64.powi(dim as i32);
            let shape = scale * f[0] * f[1] * f[2];
            for (a, jrow) in jac.iter_mut().enumerate().take(dim) {
                let mut d = scale * c[a];
                for (b, fb) in f.iter().enumerate() {
                    if b != a {
                        d *= fb;
                    }
                }
                for (r, jr) in jrow.iter_mut().enumerate().take(dim) {
                    *jr += d * xk[r];
                }
            }
            for r in 0..3 {
                at[r] += shape * xk[r];
            }
        }
        let det = if dim == 2 {
            jac[0][0] * jac[1][1] - jac[0][1] * jac[1][0]
        } else {
            dot(cross(jac[0], jac[1]), jac[2])
        };
        if det > 0.0 {
            signs.0 = true;
        } else if det < 0.0 {
            signs.1 = true;
        }
        volume += det;
        for r in 0..3 {
            moment[r] += det * at[r];
        }
    }
    let centroid = moment.map(|m| m / volume);
    (volume.abs(), centroid, signs)
}

fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn mean(x: &[[f64; 3]]) -> [f64; 3] {
    let n = x.len() as f64;
    std::array::from_fn(|a| x.iter().map(|p| p[a]).sum::<f64>() / n)
}

/// The nodes of `mesh` for a body of dimension `dim` (cells of that dimension; lower ones
/// only carry groups), `thickness` in 2D, one per cell or per vertex by `mode`.
pub(crate) fn discretize(
    mesh: &Mesh,
    dim: usize,
    thickness: f64,
    mode: MeshNodes,
) -> Result<MeshBody> {
    let origin = &mesh.origin;
    let cells: Vec<&Element> = mesh
        .elements
        .iter()
        .filter(|e| e.kind.dim() == dim)
        .collect();
    if cells.is_empty() {
        let found: Vec<&str> = {
            let mut k: Vec<&str> = mesh.elements.iter().map(|e| e.kind.name()).collect();
            k.sort();
            k.dedup();
            k
        };
        return Err(mesh_error(
            origin,
            format!(
                "no {dim}D cells ({}); the file holds {}",
                if dim == 2 {
                    "triangles or quadrilaterals"
                } else {
                    "tetrahedra or hexahedra"
                },
                if found.is_empty() {
                    "no elements".to_string()
                } else {
                    found.join(", ")
                }
            ),
        ));
    }
    let plane_z = if dim == 2 {
        Some(mesh.vertices[cells[0].nodes[0] as usize][2])
    } else {
        None
    };
    let mut measured = Vec::with_capacity(cells.len());
    let mut x = [[0.0; 3]; 8];
    for e in &cells {
        let vs = e.vertex_list();
        for (k, &v) in vs.iter().enumerate() {
            x[k] = mesh.vertices[v as usize];
            if let Some(z) = plane_z {
                if x[k][2] != z {
                    return Err(mesh_error(
                        origin,
                        format!(
                            "{} {}{}: node {} has z = {} m, but a 2D body's mesh lies in one \
                             plane z = {z} m",
                            mesh.element_word,
                            e.id,
                            e.place.show(),
                            mesh.vertex_ids[v as usize],
                            x[k][2]
                        ),
                    ));
                }
                x[k][2] = 0.0;
            }
        }
        let (v, c) = measure(e.kind, &x[..vs.len()], dim).map_err(|why| {
            Error::model(FIELD, format!("{} ({}) {why}", mesh.at(e), e.kind.name()))
        })?;
        measured.push((v * if dim == 2 { thickness } else { 1.0 }, c));
    }
    let has_material = cells.iter().any(|e| e.material.is_some());
    let mut body = match mode {
        MeshNodes::Centroids => MeshBody {
            positions: measured.iter().map(|m| m.1).collect(),
            volumes: measured.iter().map(|m| m.0).collect(),
            groups: Vec::new(),
            materials: has_material
                .then(|| cells.iter().map(|e| e.material.unwrap_or(0)).collect()),
            names: cells
                .iter()
                .map(|e| format!("{} {}", mesh.element_word, e.id))
                .collect(),
        },
        MeshNodes::Vertices => lumped(mesh, &cells, &measured, has_material, plane_z.is_some()),
    };
    body.groups = groups(mesh, &cells, dim, mode);
    Ok(body)
}

/// One node per vertex used by a cell, in the file's vertex order, with an equal share of
/// each adjacent cell's volume; a vertex takes the material of its first cell.
fn lumped(
    mesh: &Mesh,
    cells: &[&Element],
    measured: &[(f64, [f64; 3])],
    has_material: bool,
    plane: bool,
) -> MeshBody {
    let node_of = vertex_nodes(mesh, cells);
    let n = node_of.iter().filter(|&&k| k != u32::MAX).count();
    let mut positions = vec![[0.0; 3]; n];
    let mut names = vec![String::new(); n];
    for (v, &k) in node_of.iter().enumerate() {
        if k != u32::MAX {
            let mut p = mesh.vertices[v];
            if plane {
                p[2] = 0.0;
            }
            positions[k as usize] = p;
            names[k as usize] = format!("node tag {}", mesh.vertex_ids[v]);
        }
    }
    let mut volumes = vec![0.0; n];
    let mut materials = vec![None; n];
    for (e, m) in cells.iter().zip(measured) {
        let share = m.0 / e.kind.vertices() as f64;
        for &v in e.vertex_list() {
            let k = node_of[v as usize] as usize;
            volumes[k] += share;
            if materials[k].is_none() {
                materials[k] = Some(e.material.unwrap_or(0));
            }
        }
    }
    MeshBody {
        positions,
        volumes,
        groups: Vec::new(),
        materials: has_material.then(|| materials.into_iter().map(|m| m.unwrap_or(0)).collect()),
        names,
    }
}

/// The node of each vertex in vertex mode (`u32::MAX` for a vertex of no cell).
fn vertex_nodes(mesh: &Mesh, cells: &[&Element]) -> Vec<u32> {
    let mut used = vec![false; mesh.vertices.len()];
    for e in cells {
        for &v in e.vertex_list() {
            used[v as usize] = true;
        }
    }
    let mut next = 0u32;
    used.iter()
        .map(|&u| {
            if u {
                next += 1;
                next - 1
            } else {
                u32::MAX
            }
        })
        .collect()
}

/// The nodes of every group. A cell of a group gives its node (centroids) or its vertices'
/// nodes (vertices); an element of lower dimension (a boundary face, edge or point) gives
/// its vertices' nodes, or the cells that have a face on it: at least `min(d, its vertex
/// count)` of its vertices.
fn groups(
    mesh: &Mesh,
    cells: &[&Element],
    dim: usize,
    mode: MeshNodes,
) -> Vec<(String, i64, Vec<usize>)> {
    let node_of = match mode {
        MeshNodes::Vertices => vertex_nodes(mesh, cells),
        MeshNodes::Centroids => Vec::new(),
    };
    // cells around each vertex (centroid mode), built on first need
    let mut around: Option<Vec<Vec<u32>>> = None;
    let mut sets: Vec<Vec<usize>> = vec![Vec::new(); mesh.groups.len()];
    let mut cell = 0usize;
    for e in &mesh.elements {
        let is_cell = e.kind.dim() == dim;
        if !e.groups.is_empty() {
            let nodes: Vec<usize> = match (mode, is_cell) {
                (MeshNodes::Centroids, true) => vec![cell],
                (MeshNodes::Vertices, _) => e
                    .vertex_list()
                    .iter()
                    .map(|&v| node_of[v as usize])
                    .filter(|&k| k != u32::MAX)
                    .map(|k| k as usize)
                    .collect(),
                (MeshNodes::Centroids, false) if e.kind.dim() > dim => Vec::new(),
                (MeshNodes::Centroids, false) => {
                    let around = around.get_or_insert_with(|| {
                        let mut a = vec![Vec::new(); mesh.vertices.len()];
                        for (c, e) in cells.iter().enumerate() {
                            for &v in e.vertex_list() {
                                a[v as usize].push(c as u32);
                            }
                        }
                        a
                    });
                    let vs = e.vertex_list();
                    let need = dim.min(vs.len());
                    around[vs[0] as usize]
                        .iter()
                        .chain(if need > 1 {
                            &around[vs[1] as usize][..]
                        } else {
                            &[]
                        })
                        .filter(|&&c| {
                            let cv = cells[c as usize].vertex_list();
                            vs.iter().filter(|v| cv.contains(v)).count() >= need
                        })
                        .map(|&c| c as usize)
                        .collect()
                }
            };
            for &g in &e.groups {
                sets[g as usize].extend_from_slice(&nodes);
            }
        }
        if is_cell {
            cell += 1;
        }
    }
    mesh.groups
        .iter()
        .zip(sets)
        .map(|(g, mut s)| {
            s.sort_unstable();
            s.dedup();
            (g.name.clone(), g.number, s)
        })
        .collect()
}
