//! Files of a matrix export (`peridot export-matrix`, `peridot run --export-stiffness`) beside
//! the Matrix Market files themselves (`matrix_market.rs`):
//!
//! | file | contents |
//! |---|---|
//! | `export.json` | the sidecar: dof ordering, dimension, sizes, material constants, units, files |
//! | `nodes.csv` | `node,x,y[,z],volume`: reference positions (m) and volumes (m^3), 0-based |
//! | `bonds.csv` | `bond,i,j,status`: the directed bond of each row of `B` and column of `Theta` |
//! | `boundary.json` | named regions and boundary entries: node indices, components, values |
//!
//! Node and dof indices in CSV and JSON are 0-based (`dof = d * node + component`); Matrix
//! Market indices are 1-based, as that format requires.

use super::{format_f64, invalid_input, write_atomically};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// The sidecar `export.json`.
#[derive(Serialize, Debug, Clone)]
pub struct ExportSidecar {
    pub model: String,
    /// Spatial dimension `d`.
    pub dimension: usize,
    /// `plane-stress`, `plane-strain` or `3d`.
    pub setting: String,
    pub nodes: usize,
    /// `d * nodes`.
    pub dofs: usize,
    /// Directed bonds (rows of `B`, columns of `Theta`).
    pub bonds: usize,
    /// Directed bonds broken in the exported state (pre-cracks, damage of a run).
    pub broken_bonds: usize,
    /// How a dof index maps to a node and a component.
    pub dof_ordering: String,
    /// How the indices of each file count.
    pub index_base: String,
    pub material: ExportMaterial,
    /// Unit of every quantity in the files.
    pub units: BTreeMap<String, String>,
    pub matrices: Vec<MatrixFile>,
    pub nodes_file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bonds_file: Option<String>,
    pub boundary_file: String,
    /// The static system `K u = f` beside `K` (`f.mtx`, `prescribed.csv`,
    /// `rigid_modes.mtx`); absent where `K` is not exported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_system: Option<SystemFiles>,
    /// How to load the files (SciPy, MATLAB).
    pub notes: Vec<String>,
}

/// The files of the static system `K u = f` (`solver::implicit::StaticSystem`).
#[derive(Serialize, Debug, Clone, Default)]
pub struct SystemFiles {
    /// The load vector `f`, N, a Matrix Market array (dofs x 1); absent where the loads are
    /// out of equilibrium on a body free to move (`refused` says why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_file: Option<String>,
    /// `dof,value` of every prescribed dof, m.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prescribed_file: Option<String>,
    /// The free rigid-body modes, a Matrix Market array (dofs x modes, orthonormal
    /// columns); absent where conditions hold every mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rigid_modes_file: Option<String>,
    /// The dofs `solve-static` holds at zero to remove the modes (0-based).
    pub supports: Vec<usize>,
    /// Why there is no system (loads out of equilibrium).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// Material constants as the engine uses them, SI.
#[derive(Serialize, Debug, Clone)]
pub struct ExportMaterial {
    /// `pmb`, `pmb-linear` or `lps`.
    pub model: String,
    pub youngs_modulus: f64,
    pub poisson_ratio: f64,
    pub density: f64,
    /// Horizon `delta`, m.
    pub horizon: f64,
    /// Lattice spacing, m.
    pub dx: f64,
    /// 2D thickness, m (1 in 3D).
    pub thickness: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critical_stretch: Option<f64>,
    /// PMB micromodulus `c`, N/m^6 (2D: includes `1/h`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micromodulus: Option<f64>,
    /// LPS `K_d`, Pa.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dilatation_modulus: Option<f64>,
    /// LPS shear modulus `G`, Pa.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shear_modulus: Option<f64>,
    /// LPS influence function (`delta-over-x` or `one`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub influence: Option<String>,
    /// `none`, `linear` or `linear-truncated`.
    pub partial_volume: String,
    pub surface_correction: bool,
}

/// One matrix file of an export.
#[derive(Serialize, Debug, Clone)]
pub struct MatrixFile {
    /// `K`, `B` or `Theta`.
    pub name: String,
    pub file: String,
    pub rows: usize,
    pub cols: usize,
    /// Entries stored in the file (a symmetric file stores its lower triangle).
    pub stored_entries: usize,
    /// `general`, or `symmetric` (lower triangle stored).
    pub symmetry: String,
    pub description: String,
    pub units: String,
}

/// Named regions and boundary entries, `boundary.json`.
#[derive(Serialize, Debug, Clone, Default)]
pub struct BoundarySets {
    pub regions: Vec<RegionSet>,
    pub boundary: Vec<BoundarySet>,
}

/// A named region's nodes.
#[derive(Serialize, Debug, Clone)]
pub struct RegionSet {
    pub name: String,
    pub nodes: Vec<usize>,
}

/// One `[[boundary]]` entry of the model, resolved to nodes.
#[derive(Serialize, Debug, Clone)]
pub struct BoundarySet {
    /// Position in the model's `boundary` array.
    pub index: usize,
    pub region: String,
    /// `fixed`, `displacement`, `velocity`, `body-force`, `traction`, ...
    pub kind: String,
    /// Whether the entry prescribes the displacement of its components (fixed, displacement,
    /// velocity), i.e. whether its dofs are Dirichlet dofs of a static solve.
    pub prescribes_displacement: bool,
    /// The components it acts on (`x`, `y`, `z`) ...
    pub components: Vec<String>,
    /// ... and its value on each, in the unit of its kind (m, m/s, N/m^3, Pa; 0 for fixed).
    pub values: Vec<f64>,
    pub nodes: Vec<usize>,
}

/// Write `value` as pretty JSON with a final newline.
pub fn write_json<V: Serialize>(path: &Path, value: &V) -> crate::Result<()> {
    write_atomically(path, |w| {
        serde_json::to_writer_pretty(&mut *w, value).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
}

/// `nodes.csv`: `node,x,y[,z],volume`.
pub fn write_nodes_csv(
    path: &Path,
    positions: &[[f64; 3]],
    volumes: &[f64],
    dim: usize,
) -> crate::Result<()> {
    if positions.len() != volumes.len() || !(2..=3).contains(&dim) {
        return Err(invalid_input(
            path,
            format!(
                "{} positions, {} volumes, dimension {dim}",
                positions.len(),
                volumes.len()
            ),
        ));
    }
    let axes = ["x", "y", "z"];
    write_atomically(path, |w| {
        writeln!(w, "node,{},volume", axes[..dim].join(","))?;
        for (i, (p, v)) in positions.iter().zip(volumes).enumerate() {
            write!(w, "{i}")?;
            for x in &p[..dim] {
                write!(w, ",{}", format_f64(*x))?;
            }
            writeln!(w, ",{}", format_f64(*v))?;
        }
        Ok(())
    })
}

/// `bonds.csv`: `bond,i,j,status` for every directed bond in CSR order (`offsets`,
/// `neighbors` as in the families; status 1 intact, 0 broken).
pub fn write_bonds_csv(
    path: &Path,
    offsets: &[usize],
    neighbors: &[u32],
    status: &[u8],
) -> crate::Result<()> {
    if status.len() != neighbors.len() || offsets.last() != Some(&neighbors.len()) {
        return Err(invalid_input(
            path,
            format!("{} bonds, {} status values", neighbors.len(), status.len()),
        ));
    }
    write_atomically(path, |w| {
        writeln!(w, "bond,i,j,status")?;
        for i in 0..offsets.len() - 1 {
            for b in offsets[i]..offsets[i + 1] {
                writeln!(w, "{b},{i},{},{}", neighbors[b], status[b])?;
            }
        }
        Ok(())
    })
}
