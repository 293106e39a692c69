//! Probe CSV: per output step, the mean displacement (m) and the total force (N) of each
//! named region, then the position (m), velocity (m/s) and contact force (N) of each rigid
//! impactor, one row per step.
//!
//! Header: `step,time,<name>_ux,<name>_uy[,<name>_uz],<name>_fx,<name>_fy[,<name>_fz]` for
//! each region in order (components up to `dim`), then
//! `<imp>_x,<imp>_y[,<imp>_z],<imp>_vx,..,<imp>_fx,..` for each impactor. Numbers are written in the shortest form
//! that parses back to the same `f64` (`1.25e-3`, `0`), readable by pandas, numpy and
//! spreadsheets. Every row is flushed, so the file is complete up to the last step if the
//! run stops.

use super::{create_starting_with, format_f64, invalid_input};
use crate::{Error, Real};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The values of one region at one step. Components beyond the model's dimension are
/// ignored.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProbeValues {
    /// Mean displacement of the region's nodes in metres.
    pub mean_displacement: [f64; 3],
    /// Total force on the region in newtons.
    pub force: [f64; 3],
}

/// The values of one rigid impactor at one step (`docs/contact.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ImpactorValues {
    /// Reference point (a sphere's or cylinder's centre, a punch's `min` corner), m.
    pub position: [f64; 3],
    /// Velocity, m/s.
    pub velocity: [f64; 3],
    /// Contact force the body exerts on it, N.
    pub force: [f64; 3],
}

/// The probe regions of a run: each region's nodes and their volumes (m^3), in the order of
/// the probe file's columns. A backend that holds the state elsewhere (a device) reduces it
/// there from these lists; [`ProbeRegions::on_host`] is the reference.
#[derive(Debug, Clone)]
pub struct ProbeRegions {
    /// Spatial dimension (1, 2 or 3).
    pub dim: usize,
    /// One entry per region: `(node indices, their volumes)`.
    pub regions: Vec<(Vec<usize>, Vec<f64>)>,
}

impl ProbeRegions {
    /// Regions of `nodes` lists, volumes from `volumes` (per node of the body).
    pub fn new<'a>(
        dim: usize,
        nodes: impl IntoIterator<Item = &'a [usize]>,
        volumes: &[f64],
    ) -> Self {
        let regions = nodes
            .into_iter()
            .map(|list| (list.to_vec(), list.iter().map(|&i| volumes[i]).collect()))
            .collect();
        ProbeRegions { dim, regions }
    }

    /// Region-mean displacement (m) and summed force (N) of every region, from the
    /// displacement `u` and the force density `f` (N/m^3), both flat node-major.
    pub fn on_host<T: Real>(&self, u: &[T], f: &[T]) -> Vec<ProbeValues> {
        let d = self.dim;
        self.regions
            .iter()
            .map(|(nodes, vols)| {
                let mut pv = ProbeValues::default();
                for (&i, &vol) in nodes.iter().zip(vols) {
                    for k in 0..d {
                        pv.mean_displacement[k] += u[d * i + k].f64() / nodes.len() as f64;
                        pv.force[k] += f[d * i + k].f64() * vol;
                    }
                }
                pv
            })
            .collect()
    }
}

/// Writes the probe CSV row by row.
#[derive(Debug)]
pub struct ProbeWriter {
    path: PathBuf,
    writer: BufWriter<File>,
    regions: usize,
    dim: usize,
    line: String,
    impactors: usize,
}

const AXES: [&str; 3] = ["x", "y", "z"];

impl ProbeWriter {
    /// CSV at `path` with header
    /// `step,time,<name>_ux,<name>_uy[,<name>_uz],<name>_fx,<name>_fy[,<name>_fz]` per region
    /// name. `dim` is 1, 2 or 3. Names containing a comma, quote or line break are quoted as
    /// RFC 4180 asks.
    pub fn create(path: &Path, names: &[String], dim: usize) -> crate::Result<Self> {
        Self::with_impactors(path, names, &[], dim)
    }

    /// [`ProbeWriter::create`] with the columns of the impactors named `impactors` after the
    /// regions': `<imp>_x.., <imp>_vx.., <imp>_fx..`.
    pub fn with_impactors(
        path: &Path,
        names: &[String],
        impactors: &[String],
        dim: usize,
    ) -> crate::Result<Self> {
        if !(1..=3).contains(&dim) {
            return Err(invalid_input(
                path,
                format!("dim is {dim}, expected 1, 2 or 3"),
            ));
        }
        let mut header = String::from("step,time");
        for name in names {
            for quantity in ["u", "f"] {
                for axis in &AXES[..dim] {
                    header.push(',');
                    header.push_str(&csv_field(&format!("{name}_{quantity}{axis}")));
                }
            }
        }
        for name in impactors {
            for quantity in ["", "v", "f"] {
                for axis in &AXES[..dim] {
                    header.push(',');
                    header.push_str(&csv_field(&format!("{name}_{quantity}{axis}")));
                }
            }
        }
        header.push('\n');
        let mut writer = Self::starting_with(path, header.as_bytes(), names.len(), dim)?;
        writer.impactors = impactors.len();
        Ok(writer)
    }

    /// Continue a probe file whose content up to a restart step is `text` (header and rows,
    /// as a checkpoint kept it): `path` is written with `text`, and rows are appended.
    pub fn resume(
        path: &Path,
        text: &[u8],
        names: &[String],
        impactors: usize,
        dim: usize,
    ) -> crate::Result<Self> {
        if !text.starts_with(b"step,time") {
            return Err(invalid_input(
                path,
                "the restart's probe rows have no header",
            ));
        }
        let mut w = Self::starting_with(path, text, names.len(), dim)?;
        w.impactors = impactors;
        Ok(w)
    }

    /// A writer of `path` that starts with `text`.
    fn starting_with(path: &Path, text: &[u8], regions: usize, dim: usize) -> crate::Result<Self> {
        Ok(ProbeWriter {
            path: path.to_path_buf(),
            writer: create_starting_with(path, text)?,
            regions,
            dim,
            line: String::new(),
            impactors: 0,
        })
    }

    /// One row; flushed so the file is complete if the run stops. `values` has one entry per
    /// region name given to [`ProbeWriter::create`], in the same order.
    pub fn write_row(
        &mut self,
        step: usize,
        time: f64,
        values: &[ProbeValues],
    ) -> crate::Result<()> {
        self.write_row_with(step, time, values, &[])
    }

    /// [`ProbeWriter::write_row`] with the values of the impactors given to
    /// [`ProbeWriter::with_impactors`], in the same order.
    pub fn write_row_with(
        &mut self,
        step: usize,
        time: f64,
        values: &[ProbeValues],
        impactors: &[ImpactorValues],
    ) -> crate::Result<()> {
        if impactors.len() != self.impactors {
            return Err(invalid_input(
                &self.path,
                format!(
                    "{} impactor values for {} impactors",
                    impactors.len(),
                    self.impactors
                ),
            ));
        }
        if values.len() != self.regions {
            return Err(invalid_input(
                &self.path,
                format!("{} probe values for {} regions", values.len(), self.regions),
            ));
        }
        self.line.clear();
        self.line.push_str(&step.to_string());
        self.line.push(',');
        self.line.push_str(&format_f64(time));
        for value in values {
            for vector in [&value.mean_displacement, &value.force] {
                for component in &vector[..self.dim] {
                    self.line.push(',');
                    self.line.push_str(&format_f64(*component));
                }
            }
        }
        for imp in impactors {
            for vector in [&imp.position, &imp.velocity, &imp.force] {
                for component in &vector[..self.dim] {
                    self.line.push(',');
                    self.line.push_str(&format_f64(*component));
                }
            }
        }
        self.line.push('\n');
        self.writer
            .write_all(self.line.as_bytes())
            .and_then(|()| self.writer.flush())
            .map_err(|e| Error::io(&self.path, e))
    }

    /// Path of the CSV file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// `text` as a CSV field: unchanged unless it holds a comma, quote or line break, in which
/// case it is quoted with inner quotes doubled.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}
