//! Matrix export (`peridot export-matrix`, `peridot run --export-stiffness`): the global
//! stiffness `K` (N/m, symmetric, lower triangle stored), the extension operator `B` and the
//! dilatation operator `Theta` (1/m, LPS only) as Matrix Market files, with the sidecar
//! `export.json`, `nodes.csv`, `bonds.csv` and `boundary.json` (`output/export.rs`).
//!
//! `B` and `Theta` are written in full storage (one row of `B`, one column of `Theta` per
//! directed bond, in the order of `bonds.csv`), the form of `theory.md` section 4. `K` is that
//! of the given bond status: the pre-cracks for `export-matrix`, the final damage for a run.
//! [`write_sparsity`] draws the same matrices' sparsity patterns as a PNG (`--format png`).

use super::run::{simulate_from, Outcome, RunOptions};
use super::system_files::{write_static_system, SOLVE_NOTE};
use crate::material::Law;
use crate::model::{Boundary, BoundaryKind, Influence};
use crate::operators::stiffness::stiffness;
use crate::operators::{Mat, Operators, Storage};
use crate::output::export::{
    write_bonds_csv, write_json, write_nodes_csv, BoundarySet, BoundarySets, ExportMaterial,
    ExportSidecar, MatrixFile, RegionSet,
};
use crate::output::matrix_market::{write_matrix_market, Csr, Symmetry};
use crate::output::sparsity::{write_sparsity_png, Pattern};
use crate::output::{OutputFolder, RunStatus, Summary};
use crate::setup::since;
use crate::setup::Problem;
use crate::{Error, Result};
use crate::{Precision, Real};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A matrix `export-matrix` can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exported {
    K,
    B,
    Theta,
}

impl Exported {
    /// The name used by `--what` and in the file name.
    pub fn name(self) -> &'static str {
        match self {
            Exported::K => "K",
            Exported::B => "B",
            Exported::Theta => "Theta",
        }
    }

    /// Parse a `--what` list such as `K,B,Theta` (case-insensitive, no repeats).
    pub fn parse_list(list: &str) -> Result<Vec<Exported>> {
        let mut out = Vec::new();
        for word in list.split(',').map(str::trim) {
            let item = match word.to_ascii_lowercase().as_str() {
                "k" => Exported::K,
                "b" => Exported::B,
                "theta" => Exported::Theta,
                _ => {
                    return Err(Error::Usage {
                        option: "--what".into(),
                        message: format!("{word:?} is not a matrix; choose from K, B, Theta"),
                    })
                }
            };
            if !out.contains(&item) {
                out.push(item);
            }
        }
        Ok(out)
    }
}

/// Write the matrices `what` of `problem` with bond status `bond_status` (per directed bond)
/// and the side files into `dir`; returns the sidecar as written.
pub fn export_matrices(
    problem: &Problem,
    bond_status: &[u8],
    what: &[Exported],
    dir: &Path,
) -> Result<ExportSidecar> {
    check_exportable(problem, what)?;
    let ops = Operators::<f64>::assemble(problem, Storage::Full)?;
    // the folder is made once the operators are; an error that leaves it empty removes the
    // folders this export created (`OutputFolder`)
    OutputFolder::around(Some(dir), || {
        write_export(problem, bond_status, what, dir, &ops)
    })
}

/// The matrices `what` of `problem` at bond status `bond_status` (per directed bond), in
/// memory, in `what`'s order: the matrices [`export_matrices`] writes, for a library caller
/// (`K` with both triangles).
pub fn matrices(
    problem: &Problem,
    bond_status: &[u8],
    what: &[Exported],
) -> Result<Vec<(Exported, Mat<f64>)>> {
    check_exportable(problem, what)?;
    let ops = Operators::<f64>::assemble(problem, Storage::Full)?;
    let one = |&item: &Exported| matrix_of(item, &ops, bond_status).map(|(m, ..)| (item, m));
    what.iter().map(one).collect()
}

/// The files of [`export_matrices`] from the assembled `ops`, into the existing `dir`.
fn write_export(
    problem: &Problem,
    bond_status: &[u8],
    what: &[Exported],
    dir: &Path,
    ops: &Operators<f64>,
) -> Result<ExportSidecar> {
    let mut matrices = Vec::new();
    for &item in what {
        let (matrix, symmetry, description, units) = matrix_of(item, ops, bond_status)?;
        let file = format!("{}.mtx", item.name());
        let comments = vec![
            format!("peridot export of model {}: {description}", problem.name),
            format!(
                "units {units}; dof = {} * node + component; see export.json",
                problem.dim()
            ),
        ];
        let owned = csr(&matrix);
        let stored = write_matrix_market(&dir.join(&file), Csr::from(&owned), symmetry, &comments)?;
        matrices.push(MatrixFile {
            name: item.name().into(),
            file,
            rows: matrix.nrows(),
            cols: matrix.ncols(),
            stored_entries: stored,
            symmetry: if symmetry == Symmetry::Symmetric {
                "symmetric (lower triangle stored)".into()
            } else {
                "general".into()
            },
            description: description.into(),
            units: units.into(),
        });
    }
    let body = &problem.body;
    write_nodes_csv(
        &dir.join("nodes.csv"),
        &body.positions,
        &body.volumes,
        body.dim(),
    )?;
    let bonds_file = (what.contains(&Exported::B) || what.contains(&Exported::Theta)).then(|| {
        let fam = &problem.families;
        write_bonds_csv(
            &dir.join("bonds.csv"),
            &fam.offsets,
            &fam.neighbors,
            bond_status,
        )
        .map(|_| "bonds.csv".to_string())
    });
    let bonds_file = bonds_file.transpose()?;
    write_json(&dir.join("boundary.json"), &boundary_sets(problem))?;
    let mut sidecar = sidecar(problem, bond_status, matrices, bonds_file);
    if what.contains(&Exported::K) {
        let files = write_static_system(problem, bond_status, dir)?;
        if files.load_file.is_some() {
            sidecar.notes.push(SOLVE_NOTE.into());
        }
        sidecar.static_system = Some(files);
    }
    write_json(&dir.join("export.json"), &sidecar)?;
    Ok(sidecar)
}

/// `Theta` exists for LPS only: asking for it on another material is a usage error.
fn check_exportable(problem: &Problem, what: &[Exported]) -> Result<()> {
    if what.contains(&Exported::Theta) && !matches!(problem.material.law, Law::Lps { .. }) {
        return Err(Error::Usage {
            option: "--what".into(),
            message: format!(
                "Theta exists for LPS only; this model's material is {}",
                problem.material.name()
            ),
        });
    }
    Ok(())
}

/// The matrix `item` of the operators `ops` at bond status `bond_status`, with its symmetry,
/// description and units.
fn matrix_of(
    item: Exported,
    ops: &Operators<f64>,
    bond_status: &[u8],
) -> Result<(Mat<f64>, Symmetry, &'static str, &'static str)> {
    Ok(match item {
        Exported::K => (
            stiffness(ops, &ops.row_status(bond_status))?,
            Symmetry::Symmetric,
            "global stiffness K = B^T W M (A_d + G S Theta M) B; f_int = -K u",
            "N/m",
        ),
        Exported::B => (
            ops.b.clone(),
            Symmetry::General,
            "extensions e = B u; row b = bond b of bonds.csv: -n at node i, +n at node j",
            "1",
        ),
        Exported::Theta => (
            ops.theta.clone().expect("LPS operators have Theta"),
            Symmetry::General,
            "dilatation theta = Theta (mu o e); column b = bond b of bonds.csv",
            "1/m",
        ),
    })
}

/// Draw the sparsity patterns of the matrices `what` (full storage, both triangles of `K`)
/// side by side, in that order, into the PNG `path` (`output/sparsity.rs`). Returns each
/// panel's name, rows, columns and non-zeros.
pub fn write_sparsity(
    problem: &Problem,
    bond_status: &[u8],
    what: &[Exported],
    path: &Path,
) -> Result<Vec<(&'static str, usize, usize, usize)>> {
    check_exportable(problem, what)?;
    let ops = Operators::<f64>::assemble(problem, Storage::Full)?;
    let matrices = what
        .iter()
        .map(|&item| matrix_of(item, &ops, bond_status).map(|m| (item.name(), m.0)))
        .collect::<Result<Vec<_>>>()?;
    // the folder is made once the matrices are (removed again should the picture fail)
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    let patterns: Vec<Pattern<'_, u32>> = matrices
        .iter()
        .map(|(_, m)| Pattern {
            rows: m.nrows(),
            cols: m.ncols(),
            row_ptr: m.symbolic().row_ptr(),
            col_idx: m.symbolic().col_idx(),
        })
        .collect();
    OutputFolder::around(parent, || write_sparsity_png(path, &patterns))?;
    Ok(matrices
        .iter()
        .map(|(name, m)| (*name, m.nrows(), m.ncols(), m.val().len()))
        .collect())
}

/// Convert at the edge: the engine's CSR matrix as the writer's plain view.
fn csr(m: &Mat<f64>) -> CsrOwned {
    let sym = m.symbolic();
    CsrOwned {
        nrows: m.nrows(),
        ncols: m.ncols(),
        row_ptr: sym.row_ptr().iter().map(|&p| p as usize).collect(),
        col_idx: sym.col_idx().iter().map(|&c| c as usize).collect(),
        val: m.val().to_vec(),
    }
}

/// Owned arrays behind a [`Csr`] view.
struct CsrOwned {
    nrows: usize,
    ncols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<usize>,
    val: Vec<f64>,
}

impl<'a> From<&'a CsrOwned> for Csr<'a> {
    fn from(m: &'a CsrOwned) -> Csr<'a> {
        Csr {
            nrows: m.nrows,
            ncols: m.ncols,
            row_ptr: &m.row_ptr,
            col_idx: &m.col_idx,
            val: &m.val,
        }
    }
}

fn kebab<V: serde::Serialize>(value: &V) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn boundary_sets(problem: &Problem) -> BoundarySets {
    let regions = problem
        .regions
        .iter()
        .map(|r| RegionSet {
            name: r.name.clone(),
            nodes: r.nodes.clone(),
        })
        .collect();
    let boundary = problem
        .model
        .boundary
        .iter()
        .enumerate()
        .map(|(index, b)| boundary_set(problem, index, b))
        .collect();
    BoundarySets { regions, boundary }
}

fn boundary_set(problem: &Problem, index: usize, b: &Boundary) -> BoundarySet {
    let d = problem.dim();
    let axes = ["x", "y", "z"];
    let values: Vec<(String, f64)> = match b.kind {
        BoundaryKind::Fixed => (0..d).map(|k| (axes[k].to_string(), 0.0)).collect(),
        BoundaryKind::NoFail => Vec::new(),
        _ => [b.x, b.y, b.z]
            .iter()
            .take(d)
            .enumerate()
            .filter_map(|(k, v)| v.map(|v| (axes[k].to_string(), v)))
            .collect(),
    };
    BoundarySet {
        index,
        region: b.region.clone(),
        kind: kebab(&b.kind),
        prescribes_displacement: matches!(
            b.kind,
            BoundaryKind::Fixed | BoundaryKind::Displacement | BoundaryKind::Velocity
        ),
        components: values.iter().map(|v| v.0.clone()).collect(),
        values: values.iter().map(|v| v.1).collect(),
        nodes: problem.region(&b.region).to_vec(),
    }
}

fn sidecar(
    problem: &Problem,
    bond_status: &[u8],
    matrices: Vec<MatrixFile>,
    bonds_file: Option<String>,
) -> ExportSidecar {
    let (m, body, d) = (&problem.material, &problem.body, problem.dim());
    let (micromodulus, kd, g, influence) = match m.law {
        Law::Pmb { c, .. } => (Some(c), None, None, None),
        Law::Lps {
            kd, g, influence, ..
        } => (
            None,
            Some(kd),
            Some(g),
            Some(match influence {
                Influence::DeltaOverX => "delta-over-x".to_string(),
                Influence::One => "one".to_string(),
            }),
        ),
    };
    let units = [
        ("K", "N/m"),
        ("B", "1"),
        ("Theta", "1/m"),
        ("positions", "m"),
        ("volumes", "m^3"),
        ("displacement", "m"),
        ("force", "N"),
        ("youngs_modulus", "Pa"),
        ("density", "kg/m^3"),
        ("micromodulus", "N/m^6"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect::<BTreeMap<_, _>>();
    let load = |name: &str| match name {
        "K" => "K = scipy.io.mmread('K.mtx').tocsr()  # MATLAB: K = mmread('K.mtx');".to_string(),
        other => format!("{other} = scipy.io.mmread('{other}.mtx').tocsr()"),
    };
    ExportSidecar {
        model: problem.name.clone(),
        dimension: d,
        setting: kebab(&problem.model.discretization.dimension),
        nodes: body.len(),
        dofs: d * body.len(),
        bonds: problem.families.bonds(),
        broken_bonds: bond_status.iter().filter(|&&s| s == 0).count(),
        dof_ordering: format!(
            "dof = {d} * node + component (component 0 = x, 1 = y{}); node indices as in \
             nodes.csv",
            if d == 3 { ", 2 = z" } else { "" }
        ),
        index_base: "CSV and JSON indices are 0-based; Matrix Market indices are 1-based \
                     (file row = dof + 1)"
            .into(),
        material: ExportMaterial {
            model: m.name().into(),
            youngs_modulus: m.youngs_modulus,
            poisson_ratio: m.poisson_ratio,
            density: m.density,
            horizon: body.delta,
            dx: body.dx,
            thickness: body.thickness,
            critical_stretch: m.critical_stretch,
            micromodulus,
            dilatation_modulus: kd,
            shear_modulus: g,
            influence,
            partial_volume: kebab(&problem.model.discretization.partial_volume),
            surface_correction: m.surface_correction,
        },
        units,
        notes: matrices.iter().map(|f| load(&f.name)).collect(),
        matrices,
        nodes_file: "nodes.csv".into(),
        bonds_file,
        boundary_file: "boundary.json".into(),
        static_system: None,
    }
}

/// Run `problem` like [`super::run::run`], then write the global stiffness `K` of the final bond status
/// (with the export side files, `solver/export.rs`) into the output folder, and rewrite
/// `summary.json` with the export's time added to the output phase. An interrupted run
/// exports nothing. With `restart`, the run resumes as [`super::run::run_restarted`] does.
pub fn run_and_export_stiffness(
    problem: Problem,
    opts: &RunOptions,
    restart: Option<&Path>,
) -> Result<Summary> {
    let (problem_out, status, mut summary) = match opts.precision {
        Precision::F32 => final_status(simulate_from::<f32>(problem, opts, restart)?)?,
        Precision::F64 => final_status(simulate_from::<f64>(problem, opts, restart)?)?,
    };
    let Some(dir) = &opts.out_dir else {
        return Ok(summary);
    };
    if summary.status == RunStatus::Interrupted {
        return Ok(summary);
    }
    let t0 = Instant::now();
    export_matrices(&problem_out, &status, &[Exported::K], dir)?;
    let seconds = t0.elapsed().as_secs_f64();
    let output = summary.phase_seconds.output.unwrap_or(0.0);
    summary.phase_seconds.output = Some(output + seconds);
    summary.wall_seconds += seconds;
    summary.process_seconds = opts.process_start.map(since);
    summary.write(&dir.join("summary.json"))?;
    Ok(summary)
}

/// The problem, final bond status and summary of a finished run.
fn final_status<T: Real>(o: Outcome<T>) -> Result<(Arc<Problem>, Vec<u8>, Summary)> {
    Ok((o.problem, o.backend.bond_status()?, o.summary))
}
