//! Output: VTK XML series, CSV probes, summary JSON, PNG damage map, progress reporting.
//!
//! This module owns every file a run leaves behind and the progress lines on the terminal.
//! It reads plain `f64` arrays (see [`NodeFields`]) and knows nothing about the solver's
//! precision or backend.
//!
//! | file | module | contents |
//! |---|---|---|
//! | `<stem>_<step:06>.vtu`, `<stem>.pvd` | [`vtk`] | per-node fields, a time series for ParaView |
//! | `probes.csv` (name chosen by the caller) | [`probes`] | region-mean displacement and force per step |
//! | `summary.json` | [`summary`] | run totals, the keys fixed by the contract |
//! | `crack_tips.csv` | [`tips`] | crack tips per sample: id, position, speed |
//! | `checkpoints/step_<step:08>.ckpt` | [`checkpoint`] | restart state, versioned and checksummed |
//! | `damage.png` | [`image`] | damage map (2D body, or the mid-plane slice of a 3D body) |
//! | sparsity PNG | [`sparsity`] | where the non-zeros of sparse operators lie |
//! | (stderr) | [`progress`] | progress bar or plain progress lines |
//!
//! Units are SI throughout: positions and displacements in metres, velocities in m/s,
//! volumes in m^3, forces in newtons, force densities in N/m^3, energy densities in J/m^3,
//! stresses in Pa, times in seconds; damage and dilatation are dimensionless.
//!
//! Errors: a failed write is [`Error::Io`] naming the file. Inconsistent inputs (array lengths
//! that do not match, an empty body for the PNG) are reported the same way, as an
//! `InvalidInput` I/O error naming the file that could not be written, never as a panic.

pub mod checkpoint;
pub mod export;
pub mod folder;
mod font;
pub mod image;
pub mod matrix_market;
pub mod pieces;
pub mod probes;
pub mod progress;
pub mod sparsity;
pub mod summary;
pub mod tips;
pub mod vtk;

pub use folder::OutputFolder;
pub use image::write_damage_png;
pub use pieces::Pieces;
pub use probes::{ImpactorValues, ProbeRegions, ProbeValues, ProbeWriter};
pub use progress::Progress;
pub use summary::{
    peak_rss_bytes, CrackTipSummary, OutputSeconds, PhaseSeconds, RunStatus, StaticSolveInfo,
    Summary, TipSeconds,
};
pub use vtk::VtkSeries;

use crate::model::OutputField;
use crate::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Per-node fields of one output step, all in f64, SI units. Vectors are flat with `dim`
/// components per node (node-major: `u[dim * i + k]`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeFields<'a> {
    /// Spatial dimension of the vectors below (1, 2 or 3).
    pub dim: usize,
    /// Reference positions in metres (z = 0 in 2D).
    pub positions: &'a [[f64; 3]],
    /// Nodal volumes in m^3.
    pub volumes: &'a [f64],
    /// Displacement in metres, `dim` components per node.
    pub displacement: &'a [f64],
    /// Velocity in m/s, `dim` components per node.
    pub velocity: &'a [f64],
    /// Damage, the `beta V`-weighted fraction of each node's bonds lost (0..1;
    /// `docs/materials.md`).
    pub damage: &'a [f64],
    /// The fraction of each node's bonds lost, each bond counting the same (0..1), where the
    /// writer has it (`damage_bond_count` in the `.vtu`).
    pub damage_bond_count: Option<&'a [f64]>,
    /// Dilatation (LPS only), dimensionless.
    pub dilatation: Option<&'a [f64]>,
    /// Internal (bond) force density `L_i`, N/m^3, `dim` components per node.
    pub force_density: Option<&'a [f64]>,
    /// Strain energy density, J/m^3.
    pub strain_energy_density: Option<&'a [f64]>,
    /// Bond virial stress, Pa, 9 components per node (row-major `s_xx s_xy s_xz s_yx ...`).
    pub stress: Option<&'a [f64]>,
    /// Material id per node.
    pub material_id: Option<&'a [i64]>,
    /// Broken bonds per node (of its directed bonds `i -> j`).
    pub broken_bonds: Option<&'a [i64]>,
    /// The arrays to write among those given (`output.fields`); `None`: every one given.
    pub only: Option<&'a [OutputField]>,
}

impl NodeFields<'_> {
    /// Number of nodes (the length of `positions`).
    pub fn nodes(&self) -> usize {
        self.positions.len()
    }

    /// Check that every array has the length `positions` implies. The message names the
    /// first array that does not.
    pub fn check(&self) -> std::result::Result<(), String> {
        let n = self.nodes();
        if !(1..=3).contains(&self.dim) {
            return Err(format!("dim is {}, expected 1, 2 or 3", self.dim));
        }
        let vector = n * self.dim;
        let arrays = [
            ("volumes", self.volumes.len(), n),
            ("displacement", self.displacement.len(), vector),
            ("velocity", self.velocity.len(), vector),
            ("damage", self.damage.len(), n),
            (
                "damage_bond_count",
                self.damage_bond_count.map_or(n, <[f64]>::len),
                n,
            ),
            ("dilatation", self.dilatation.map_or(n, <[f64]>::len), n),
            (
                "force_density",
                self.force_density.map_or(vector, <[f64]>::len),
                vector,
            ),
            (
                "strain_energy_density",
                self.strain_energy_density.map_or(n, <[f64]>::len),
                n,
            ),
            ("stress", self.stress.map_or(9 * n, <[f64]>::len), 9 * n),
            ("material_id", self.material_id.map_or(n, <[i64]>::len), n),
            ("broken_bonds", self.broken_bonds.map_or(n, <[i64]>::len), n),
        ];
        for (name, len, expected) in arrays {
            if len != expected {
                return Err(format!(
                    "{name} has {len} values, expected {expected} ({n} nodes, dim {})",
                    self.dim
                ));
            }
        }
        Ok(())
    }
}

/// An `InvalidInput` error on `path`: the inputs given for that file are inconsistent.
pub(crate) fn invalid_input(path: &Path, message: impl Into<String>) -> Error {
    Error::io(
        path,
        std::io::Error::new(std::io::ErrorKind::InvalidInput, message.into()),
    )
}

/// A buffered writer of a new file at `path` that starts with `text`, flushed (the header of
/// a CSV that grows row by row).
pub(crate) fn create_starting_with(path: &Path, text: &[u8]) -> crate::Result<BufWriter<File>> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut writer = BufWriter::new(file);
    writer
        .write_all(text)
        .and_then(|()| writer.flush())
        .map_err(|e| Error::io(path, e))?;
    Ok(writer)
}

/// Write `path` through a buffered temporary file in the same folder, then rename it over
/// `path`, so readers never see a half-written file (a run killed mid-write keeps the
/// previous version). No fsync: this guards against a stopped process, not a power cut.
pub(crate) fn write_atomically(
    path: &Path,
    body: impl FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
) -> crate::Result<()> {
    let tmp = temporary_path(path);
    let result = File::create(&tmp).and_then(|file| {
        let mut writer = BufWriter::new(file);
        body(&mut writer)?;
        writer.flush()
    });
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// `<path>.tmp`, next to `path`.
fn temporary_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    path.with_file_name(name)
}

/// Shortest text that parses back to exactly `x` (`0`, `1.5e-3`); `NaN`, `inf` and `-inf`
/// for non-finite values.
pub(crate) fn format_f64(x: f64) -> String {
    if x == 0.0 {
        if x.is_sign_negative() {
            "-0".to_string()
        } else {
            "0".to_string()
        }
    } else {
        format!("{x:e}")
    }
}
