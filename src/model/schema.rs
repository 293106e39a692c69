//! The model file schema: plain serde structs, one per TOML table, with unknown keys refused.
//! Values are SI. Checks of ranges and cross-field rules live in `validate.rs`.

use serde::{Deserialize, Serialize};

/// A whole model file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Model {
    /// Name used for the default output folder; defaults to the file stem.
    #[serde(default)]
    pub name: Option<String>,
    /// The material, or the first of several (`[[material]]`): the options every material
    /// shares (model, density, influence, failure options) are read from it.
    pub material: Material,
    /// Several materials (`[[material]]` in a model file, `docs/materials.md`), the first
    /// of them also `material`; empty for the single `[material]` form.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub materials: Vec<NamedMaterial>,
    /// Interface rules of bonds between two of `materials` (`[[interface]]`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interface: Vec<Interface>,
    pub discretization: Discretization,
    pub geometry: Geometry,
    #[serde(default)]
    pub precrack: Vec<Precrack>,
    #[serde(default)]
    pub region: Vec<Region>,
    #[serde(default)]
    pub boundary: Vec<Boundary>,
    /// Initial fields at t = 0, applied in order after a point cloud's columns.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub initial: Vec<Initial>,
    /// Short-range contact between nodes that are not bonded (`docs/contact.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contact: Option<Contact>,
    /// Rigid impactors (`docs/contact.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub impactor: Vec<Impactor>,
    pub solver: Solver,
    #[serde(default)]
    pub output: Output,
}

/// Constitutive model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MaterialModel {
    /// Bond-based prototype micro-elastic brittle, nonlinear stretch `(|y| - x) / x`.
    Pmb,
    /// PMB with the linearized stretch `n . eta / x`.
    PmbLinear,
    /// Linearized ordinary state-based (LPS), any admissible Poisson ratio.
    Lps,
    /// Ordinary state-based with the nonlinear extension `|y| - x` and forces along the
    /// deformed bond (Silling et al. 2007; LAMMPS `peri/lps`, Peridigm "Elastic").
    LpsNonlinear,
}

impl MaterialModel {
    /// Whether the model is state-based (LPS, linearized or not).
    pub fn is_state_based(self) -> bool {
        matches!(self, MaterialModel::Lps | MaterialModel::LpsNonlinear)
    }

    /// The name a model file gives the model.
    pub fn name(self) -> &'static str {
        match self {
            MaterialModel::Pmb => "pmb",
            MaterialModel::PmbLinear => "pmb-linear",
            MaterialModel::Lps => "lps",
            MaterialModel::LpsNonlinear => "lps-nonlinear",
        }
    }
}

/// When a step's bonds break, relative to its force evaluation (`docs/materials.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BreakTiming {
    /// A bond past its critical stretch at the step's displacement breaks first, and that
    /// step's force omits it.
    #[default]
    BeforeForce,
    /// The step's force counts every bond intact at its start; bonds past the critical
    /// stretch (of the previous step, with `alpha`) break after it, for the next step: the
    /// order of LAMMPS PERI.
    AfterForce,
}

/// The bond's force-stretch law past the onset of damage (`docs/materials.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum DamageLaw {
    /// The force drops to zero at the critical stretch: the bond breaks (PMB's law).
    #[default]
    Brittle,
    /// Linear elastic to the critical stretch `s0`, then linear softening to zero force at
    /// the final stretch `s1` (Gerstle et al.; Zaccariotto et al.).
    Bilinear,
    /// Linear elastic to `s0`, linear softening to `kink_force_ratio` of the peak force at
    /// `kink_stretch`, then linear to zero at `final_stretch` (Yang et al.; PeriPy).
    Trilinear,
}

impl DamageLaw {
    /// The name a model file gives the law.
    pub fn name(self) -> &'static str {
        match self {
            DamageLaw::Brittle => "brittle",
            DamageLaw::Bilinear => "bilinear",
            DamageLaw::Trilinear => "trilinear",
        }
    }
}

/// Influence function `omega(x)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Influence {
    /// `omega = 1`.
    One,
    /// `omega = delta / x` (default).
    #[default]
    DeltaOverX,
}

/// `[material]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Material {
    pub model: MaterialModel,
    /// Young's modulus `E`, Pa (exclusive with `micromodulus`; one of the two is required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub youngs_modulus: Option<f64>,
    /// The PMB bond constant `c`, N/m^6 (in 2D the constant of the engine's volumes
    /// `V = h A`, thickness included: `c = 9 E / (pi h delta^3)` in plane stress), given
    /// directly instead of `youngs_modulus` (`pmb` and `pmb-linear` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micromodulus: Option<f64>,
    /// Poisson ratio. Required for LPS; for PMB it is fixed by the dimension and may be
    /// given only with that value.
    #[serde(default)]
    pub poisson_ratio: Option<f64>,
    /// Mass density, kg/m^3.
    pub density: f64,
    /// Critical energy release rate `G0`, J/m^2. Gives the critical stretch.
    #[serde(default)]
    pub fracture_energy: Option<f64>,
    /// Critical stretch `s0`, given directly (exclusive with `fracture_energy`).
    #[serde(default)]
    pub critical_stretch: Option<f64>,
    /// `alpha` of the critical stretch `s0 = s00 - alpha s_min` (Silling and Askari 2005;
    /// LAMMPS PERI's `alpha`): `s00` the critical stretch above, `s_min` the least stretch of
    /// the node's intact bonds at the previous force evaluation; a bond breaks past the
    /// smaller `s0` of its two ends. Default 0 (`s0 = s00`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_stretch_alpha: Option<f64>,
    /// When bonds break relative to the force evaluation of a step (default `before-force`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub break_timing: Option<BreakTiming>,
    /// The bond's damage law (default `brittle`; `bilinear` and `trilinear` soften, PMB
    /// only, `docs/materials.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damage_law: Option<DamageLaw>,
    /// The stretch at which a softening bond carries no force and breaks (`bilinear`,
    /// `trilinear`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_stretch: Option<f64>,
    /// `trilinear`: the stretch of the kink between the two softening slopes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kink_stretch: Option<f64>,
    /// `trilinear`: the bond force at the kink as a fraction of the peak force (default
    /// 0.25, as Yang et al. and PeriPy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kink_force_ratio: Option<f64>,
    /// Influence function (LPS only; PMB uses the constant micromodulus).
    #[serde(default)]
    pub influence: Influence,
    /// Volume-method surface correction of the micromodulus (PMB only).
    #[serde(default)]
    pub surface_correction: bool,
}

/// One of several materials (`[[material]]`, `docs/materials.md`): its name, the nodes it
/// takes, and its constants (the keys of `[material]`). A model file writes the constants
/// beside `name`, `id` and `regions` in one table; they are split at parsing
/// (`crate::model::several`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedMaterial {
    pub name: String,
    /// The material id of a point cloud's `material` column or a mesh's physical group whose
    /// nodes take this material.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    /// Names of `[[region]]` tables whose nodes take this material.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regions: Vec<String>,
    pub material: Material,
}

/// How a bond between two different materials gets its constants (`[[interface]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum InterfaceRule {
    /// The constants of the softer material (the smaller Young's modulus): the default.
    #[default]
    Softer,
    /// Harmonic means of the two materials' micromoduli and critical stretches.
    Harmonic,
    /// The interface's own `micromodulus` (or `youngs_modulus`) and `critical_stretch`.
    Explicit,
}

impl InterfaceRule {
    /// The name a model file gives the rule.
    pub fn name(self) -> &'static str {
        match self {
            InterfaceRule::Softer => "softer",
            InterfaceRule::Harmonic => "harmonic",
            InterfaceRule::Explicit => "explicit",
        }
    }
}

/// `[[interface]]`: the rule of the bonds between two named materials.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interface {
    /// The two materials' names.
    pub materials: Vec<String>,
    #[serde(default)]
    pub rule: InterfaceRule,
    /// `explicit`, PMB: the interface bonds' Young's modulus, Pa (gives `c` as a material's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub youngs_modulus: Option<f64>,
    /// `explicit`, PMB: the interface bonds' micromodulus `c`, N/m^6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub micromodulus: Option<f64>,
    /// `explicit`: the interface bonds' critical stretch (none: they never break).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_stretch: Option<f64>,
}

/// Spatial setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Dimension {
    PlaneStress,
    PlaneStrain,
    #[serde(rename = "3d")]
    ThreeD,
}

impl Dimension {
    /// Number of spatial dimensions `d`.
    pub fn d(self) -> usize {
        match self {
            Dimension::ThreeD => 3,
            _ => 2,
        }
    }
}

/// Partial-volume treatment of bonds near the horizon edge (`theory.md` section 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PartialVolume {
    #[default]
    None,
    Linear,
    LinearTruncated,
}

/// `[discretization]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Discretization {
    pub dimension: Dimension,
    /// Out-of-plane thickness `h` in 2D, m.
    #[serde(default)]
    pub thickness: Option<f64>,
    /// Lattice spacing, m. For point clouds it is the nominal spacing used for partial volumes
    /// and the cell size.
    pub dx: f64,
    /// Horizon as a multiple of `dx` (exclusive with `delta`).
    #[serde(default)]
    pub horizon_factor: Option<f64>,
    /// Horizon in metres (exclusive with `horizon_factor`).
    #[serde(default)]
    pub delta: Option<f64>,
    #[serde(default)]
    pub partial_volume: PartialVolume,
}

/// `[geometry]`: either a union of boxes minus holes, filled by a regular lattice, or a point
/// cloud from CSV.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    /// Axis-aligned boxes whose union is the body.
    #[serde(default, rename = "box")]
    pub boxes: Vec<BoxShape>,
    /// Shapes removed from the body.
    #[serde(default)]
    pub remove: Vec<Shape>,
    /// CSV point cloud with columns `x,y[,z],volume` (header line optional), relative to the
    /// model file.
    #[serde(default)]
    pub points_csv: Option<String>,
    /// A mesh file, `.msh` (Gmsh 4.1) or `.vtu`, relative to the model file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh: Option<String>,
    /// Where a mesh's nodes go: one per cell (`centroids`, default) or per vertex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mesh_nodes: Option<MeshNodes>,
}

/// Nodes of a mesh body (`geometry.mesh_nodes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum MeshNodes {
    /// One node per cell at its centroid, with the cell's volume.
    #[default]
    Centroids,
    /// One node per vertex, with an equal share of each adjacent cell's volume.
    Vertices,
}

/// An axis-aligned box `[min, max]` (2 or 3 components each).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BoxShape {
    pub min: Vec<f64>,
    pub max: Vec<f64>,
}

/// A shape used to remove material or to select a region.
///
/// `All` is a struct variant without fields (`Shape::All {}`), so that `shape = "all"` with
/// any other key is refused like an unknown key of the other shapes (serde ignores extra
/// keys of a unit variant).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "shape", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Shape {
    /// Axis-aligned box.
    Box { min: Vec<f64>, max: Vec<f64> },
    /// Disc (2D) or sphere (3D).
    Circle { center: Vec<f64>, radius: f64 },
    /// Cylinder around `axis` through `center`, half length `half_length` along the axis
    /// (unbounded if absent).
    Cylinder {
        center: Vec<f64>,
        axis: Vec<f64>,
        radius: f64,
        #[serde(default)]
        half_length: Option<f64>,
    },
    /// Slot of width `width` around the segment `start -> end` (2D), or around it extruded
    /// through the thickness (3D: `start`, `end` 3D points; all z kept).
    Notch {
        start: Vec<f64>,
        end: Vec<f64>,
        width: f64,
    },
    /// Layer of nodes at a face of the body's bounding box: `side` is `-x`, `+x`, `-y`, `+y`,
    /// `-z`, `+z`; depth in metres, or in multiples of `dx` or of `delta` (exactly one).
    Edge {
        side: String,
        #[serde(default)]
        depth: Option<f64>,
        #[serde(default)]
        depth_dx: Option<f64>,
        #[serde(default)]
        depth_delta: Option<f64>,
    },
    /// Lattice nodes added outside the body (a loading layer, like Madenci and Oterkus's
    /// fictitious layers): the rows of the body's lattice within the depth of face `side` of
    /// `geometry.box` entry `box` (default 0; required with several boxes), over that face,
    /// outside every box. Regions only; depth in metres, or in multiples of `dx` or of
    /// `delta` (exactly one).
    Layer {
        side: String,
        #[serde(default)]
        depth: Option<f64>,
        #[serde(default)]
        depth_dx: Option<f64>,
        #[serde(default)]
        depth_delta: Option<f64>,
        #[serde(default, rename = "box")]
        of_box: Option<usize>,
    },
    /// Every node.
    All {},
    /// The nodes of a named group of the body's file: a mesh's physical group (by name, or
    /// by number where unnamed), a `.vtu`'s cell-data value, or a point cloud's region
    /// column. Regions only.
    Group { group: String },
}

/// `[[precrack]]`: bonds crossing it start broken. 2D: segment `start -> end`.
/// 3D: planar rectangle `origin + s * edge1 + t * edge2`, `s, t in [0, 1]`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Precrack {
    #[serde(default)]
    pub start: Option<Vec<f64>>,
    #[serde(default)]
    pub end: Option<Vec<f64>>,
    #[serde(default)]
    pub origin: Option<Vec<f64>>,
    #[serde(default)]
    pub edge1: Option<Vec<f64>>,
    #[serde(default)]
    pub edge2: Option<Vec<f64>>,
}

/// `[[region]]`: a named node set. The shape keys sit beside `name` (`shape = "box"`,
/// `min`, `max`); an unknown key is refused by the shape.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Region {
    pub name: String,
    #[serde(flatten)]
    pub shape: Shape,
}

/// What a boundary condition does to the nodes of its region.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundaryKind {
    /// Body force density, N/m^3, on the given components.
    BodyForce,
    /// Traction, Pa, on the face of an `edge` region: spread over the region's nodes as the
    /// body force density `t A / sum V` (`A` the face area), so it follows `dx` changes.
    Traction,
    /// Prescribed displacement, m, on the given components.
    Displacement,
    /// Prescribed velocity, m/s, on the given components (displacement integrates it).
    Velocity,
    /// All components held at zero displacement.
    Fixed,
    /// Initial velocity, m/s (t = 0 only).
    InitialVelocity,
    /// Bonds with an end in the region never break.
    NoFail,
}

/// Time profile of a boundary value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Ramp {
    /// Full value from the start.
    #[default]
    None,
    /// Linear from 0 to the value over the ramp duration, then held.
    Linear,
    /// Smooth 5th-order `10 r^3 - 15 r^4 + 6 r^5`, zero slope and curvature at both ends.
    Smooth,
}

/// `[[boundary]]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Boundary {
    pub region: String,
    pub kind: BoundaryKind,
    #[serde(default)]
    pub x: Option<f64>,
    #[serde(default)]
    pub y: Option<f64>,
    #[serde(default)]
    pub z: Option<f64>,
    #[serde(default)]
    pub ramp: Ramp,
    /// Ramp duration in seconds (explicit) ...
    #[serde(default)]
    pub ramp_time: Option<f64>,
    /// ... or in steps (explicit or ADR iterations).
    #[serde(default)]
    pub ramp_steps: Option<usize>,
}

/// `[[initial]]`: a uniform initial velocity and / or displacement of a region's nodes (or
/// every node) at t = 0, set over what came before it (a cloud's columns, earlier tables).
/// An initial displacement deforms the body: its bonds start stretched and pull at step 0.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Initial {
    /// The region; absent: every node.
    #[serde(default)]
    pub region: Option<String>,
    /// Velocity, m/s, `d` components.
    #[serde(default)]
    pub velocity: Option<Vec<f64>>,
    /// Displacement, m, `d` components.
    #[serde(default)]
    pub displacement: Option<Vec<f64>>,
}

/// `[contact]`: the short-range repulsive force between nodes that are not bonded, and the
/// stiffness of the impactors' penalty (`docs/contact.md`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contact {
    /// Whether nodes repel each other (default true); impactors act either way.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Contact distance `d_c` in multiples of `dx` (default 0.9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distance_factor: Option<f64>,
    /// Short-range constant `c_sr` in multiples of the PMB bond constant `c` (default 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stiffness_factor: Option<f64>,
    /// Skin of the contact pair list in multiples of `dx` (default 0.5): the list holds the
    /// pairs closer than `d_c + skin` and is searched again once a node has moved more than
    /// half the skin since the last search.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skin_factor: Option<f64>,
    /// Whether pairs whose bond has broken repel like pairs never bonded (crack faces;
    /// default true); `false`: only pairs never bonded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crack_faces: Option<bool>,
}

impl Contact {
    /// Whether pairs of broken bonds repel: contact enabled with `crack_faces` (default on).
    pub fn crack_faces_on(&self) -> bool {
        self.enabled && self.crack_faces.unwrap_or(true)
    }
}

/// The shape of a rigid impactor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImpactorShape {
    /// A ball (3D) or a disc (2D) of `radius` around `center`.
    Sphere,
    /// A cylinder of `radius` around `axis` through `center`, `half_length` along the axis
    /// (3D; unbounded if absent); in 2D a disc, as `sphere`.
    Cylinder,
    /// A flat punch: the axis-aligned box `[min, max]`.
    Punch,
}

/// How a rigid impactor moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ImpactorMotion {
    /// Its own mass, its initial velocity, the contact force: the same leapfrog as the body.
    #[default]
    Free,
    /// Constant velocity, whatever the contact force.
    Prescribed,
}

/// `[[impactor]]`: a rigid body that pushes the body's nodes out of it (`docs/contact.md`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Impactor {
    /// The name of its columns in `probes.csv` (default `impactor<k>`, `k` from 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub shape: ImpactorShape,
    /// Centre, m (`sphere`, `cylinder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub center: Option<Vec<f64>>,
    /// Radius, m (`sphere`, `cylinder`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub radius: Option<f64>,
    /// Axis direction (`cylinder` in 3D).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axis: Option<Vec<f64>>,
    /// Half length along the axis, m (`cylinder` in 3D; unbounded if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub half_length: Option<f64>,
    /// Box corners, m (`punch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Vec<f64>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Vec<f64>>,
    /// Mass, kg (`free`; in 2D the mass of the thickness `h`, as the nodes' volumes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mass: Option<f64>,
    /// Initial velocity (`free`) or the constant velocity (`prescribed`), m/s.
    pub velocity: Vec<f64>,
    #[serde(default)]
    pub motion: ImpactorMotion,
}

impl Impactor {
    /// The name of entry `k`'s columns in `probes.csv`: `name`, else `impactor<k + 1>`.
    pub fn probe_name(&self, k: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("impactor{}", k + 1))
    }
}

/// Time integration scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// Explicit leapfrog (velocity-Verlet form).
    Explicit,
    /// Adaptive dynamic relaxation (quasi-static).
    Adr,
}

/// `[solver]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Solver {
    pub kind: SolverKind,
    /// Number of steps (explicit) or iterations (ADR, total over all load steps).
    pub steps: usize,
    /// Time step, s (explicit). Automatic (stable dt x safety factor) if absent.
    #[serde(default)]
    pub dt: Option<f64>,
    /// Factor on the stable time step, in (0, 1]. Default 0.8.
    #[serde(default)]
    pub safety_factor: Option<f64>,
    /// Accept a `dt` above the stable one (a warning instead of an error).
    #[serde(default)]
    pub force_dt: bool,
    /// Viscous damping coefficient `eta_d`, N s/m^4 (force density per velocity).
    #[serde(default)]
    pub damping: Option<f64>,
    /// ADR: relative residual tolerance for each load step. Default 1e-8.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// ADR: number of load steps, each relaxed to the tolerance. With `load_steps` absent, ADR
    /// runs the seeds' mode: one iteration per increment of a slow ramp for `steps` iterations.
    #[serde(default)]
    pub load_steps: Option<usize>,
    /// Whether bonds break (default true).
    #[serde(default = "yes")]
    pub damage: bool,
    /// GPU memory for subdomain-partitioned execution (`docs/subdomains.md`): bytes, or text
    /// with a unit (`"2GiB"`). `peridot info` plans subdomains for it.
    #[serde(default)]
    pub gpu_memory_budget: Option<super::size::ByteSize>,
    /// How a run across MPI ranks cuts the model into one part per rank
    /// (`docs/distributed.md`): `auto` (the default), `slabs` or `blocks`. How the run
    /// executes, not what it computes: a restart may change it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank_partition: Option<RankPartition>,
}

/// `solver.rank_partition`: the cut of a model into the parts of the ranks of a distributed
/// run, of the cell grid (cells one family radius wide) balanced by directed bonds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RankPartition {
    /// Blocks where they have fewer ghosts than slabs (the cell bound), else slabs.
    #[default]
    Auto,
    /// Slabs of cells along the body's longest axis.
    Slabs,
    /// Blocks: the cell grid cut along two or three axes (the product of P with the fewest
    /// ghosts); slabs where P has no such product (P prime) or the body no room for one.
    Blocks,
}

impl RankPartition {
    /// The name of the option's value (`auto`, `slabs`, `blocks`).
    pub fn name(self) -> &'static str {
        match self {
            RankPartition::Auto => "auto",
            RankPartition::Slabs => "slabs",
            RankPartition::Blocks => "blocks",
        }
    }
}

fn yes() -> bool {
    true
}

/// `[output]`
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Output {
    /// Write a VTK snapshot every this many steps (0: only the last). Default 0.
    #[serde(default)]
    pub vtk_every: usize,
    /// Write VTK files at all. Default true.
    #[serde(default = "yes")]
    pub vtk: bool,
    /// Probe rows every this many steps. Default: steps / 100, at least 1.
    #[serde(default)]
    pub probe_every: Option<usize>,
    /// Regions whose mean displacement and summed force are written to `probes.csv`.
    #[serde(default)]
    pub probes: Vec<String>,
    /// Write `damage.png`. Default true.
    #[serde(default = "yes")]
    pub image: bool,
    /// Crack-tip samples (`crack_tips.csv`, `docs/crack-tips.md`) every this many steps.
    /// Default: steps / 100, at least 1; 0 writes no crack tips.
    #[serde(default)]
    pub tips_every: Option<usize>,
    /// Damage at or above which a node is a crack node for the tip finder. Default: the rule
    /// of `docs/crack-tips.md` (0.38 at a horizon of 3.015 dx in 2D).
    #[serde(default)]
    pub tips_threshold: Option<f64>,
    /// Write a restart checkpoint every this many steps (ADR: iterations); absent or 0:
    /// none (an interrupted run still writes one).
    #[serde(default)]
    pub checkpoint_every: Option<usize>,
    /// How many checkpoints to keep, the newest; older ones are removed. Default 2.
    #[serde(default)]
    pub checkpoint_keep: Option<usize>,
    /// The per-node arrays each VTK snapshot holds, in any order (the file keeps its own);
    /// absent: [`OutputField::DEFAULT`], the arrays written before the key existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<OutputField>>,
}

/// A per-node array a VTK snapshot can hold (`docs/models.md`, `output::vtk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputField {
    /// `displacement`, m.
    Displacement,
    /// `velocity`, m/s.
    Velocity,
    /// `damage`, the `beta V`-weighted fraction of bonds lost.
    Damage,
    /// `damage_bond_count`, each bond counting the same.
    DamageBondCount,
    /// `volume`, m^3.
    Volume,
    /// `dilatation` (LPS only).
    Dilatation,
    /// `force_density_N_m3`: the internal (bond) force density `L_i`.
    ForceDensity,
    /// `strain_energy_density_J_m3`.
    StrainEnergyDensity,
    /// `stress_Pa`: the bond virial stress tensor, 9 components.
    Stress,
    /// `material_id` (0 where the body gives none).
    MaterialId,
    /// `broken_bonds`: broken bonds of each node's family.
    BrokenBonds,
}

impl OutputField {
    /// The fields made by a pass over every node's bonds on the host.
    pub const ON_BONDS: [OutputField; 4] = [
        OutputField::ForceDensity,
        OutputField::StrainEnergyDensity,
        OutputField::Stress,
        OutputField::BrokenBonds,
    ];

    /// The arrays of a snapshot without `output.fields` (dilatation for LPS only).
    pub const DEFAULT: [OutputField; 6] = [
        OutputField::Displacement,
        OutputField::Velocity,
        OutputField::Damage,
        OutputField::DamageBondCount,
        OutputField::Volume,
        OutputField::Dilatation,
    ];
}

impl Output {
    /// Whether the snapshots hold a field made by a pass over every node's bonds on the host
    /// ([`OutputField::ON_BONDS`]), which reads the bond status (across ranks: gathered whole
    /// to every rank at each snapshot).
    pub fn reads_bonds(&self) -> bool {
        self.vtk && OutputField::ON_BONDS.iter().any(|&f| self.writes(f))
    }

    /// Whether the snapshots hold `field` (`fields`, else [`OutputField::DEFAULT`]).
    pub fn writes(&self, field: OutputField) -> bool {
        match &self.fields {
            Some(list) => list.contains(&field),
            None => OutputField::DEFAULT.contains(&field),
        }
    }
}

impl Default for Output {
    fn default() -> Self {
        Output {
            vtk_every: 0,
            vtk: true,
            probe_every: None,
            probes: Vec::new(),
            image: true,
            tips_every: None,
            tips_threshold: None,
            checkpoint_every: None,
            checkpoint_keep: None,
            fields: None,
        }
    }
}
