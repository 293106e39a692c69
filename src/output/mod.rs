//! Output: VTK XML series, CSV probes, summary JSON, PNG damage map, progress reporting.
//! (Interface placeholder; replaced by the full implementation.)
#![allow(missing_docs, unused)]
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub struct NodeFields<'a> {
    pub dim: usize,
    pub positions: &'a [[f64; 3]],
    pub volumes: &'a [f64],
    pub displacement: &'a [f64],
    pub velocity: &'a [f64],
    pub damage: &'a [f64],
    pub dilatation: Option<&'a [f64]>,
}
pub struct VtkSeries;
impl VtkSeries {
    pub fn new(dir: &Path, stem: &str) -> crate::Result<Self> { Ok(VtkSeries) }
    pub fn write(&mut self, step: usize, time: f64, fields: &NodeFields) -> crate::Result<PathBuf> { Ok(PathBuf::new()) }
}
pub struct ProbeValues { pub mean_displacement: [f64; 3], pub force: [f64; 3] }
pub struct ProbeWriter;
impl ProbeWriter {
    pub fn create(path: &Path, names: &[String], dim: usize) -> crate::Result<Self> { Ok(ProbeWriter) }
    pub fn write_row(&mut self, step: usize, time: f64, values: &[ProbeValues]) -> crate::Result<()> { Ok(()) }
}
#[derive(Serialize, Deserialize, Default, Clone, Debug)]
pub struct PhaseSeconds { pub neighbors: Option<f64>, pub assembly: Option<f64>, pub forces: Option<f64>, pub update: Option<f64>, pub transfers: Option<f64>, pub output: Option<f64> }
#[derive(Serialize, Deserialize, Default, Clone, Debug)]
pub struct Summary {
    pub model: String, pub nodes: usize, pub bonds: usize, pub steps: usize,
    pub backend: String, pub precision: String, pub dt: f64, pub wall_seconds: f64,
    pub phase_seconds: PhaseSeconds, pub node_steps_per_second: f64,
    pub peak_rss_bytes: u64, pub peak_gpu_bytes: Option<u64>,
    pub broken_bonds: usize, pub max_damage: f64,
    pub static_residual: Option<f64>,
    pub solver: String, pub dimension: String, pub material: String,
    pub dx: f64, pub delta: f64, pub final_time: f64,
    pub converged: Option<bool>, pub stopped_early: Option<String>, pub warnings: Vec<String>,
}
impl Summary { pub fn write(&self, path: &Path) -> crate::Result<()> { Ok(()) } }
pub fn peak_rss_bytes() -> u64 { 0 }
pub fn write_damage_png(path: &Path, positions: &[[f64; 3]], dim: usize, dx: f64, damage: &[f64]) -> crate::Result<()> { Ok(()) }
pub struct Progress;
impl Progress {
    pub fn new(total: u64, label: &str) -> Self { Progress }
    pub fn set(&mut self, position: u64) {}
    pub fn set_message(&mut self, msg: &str) {}
    pub fn finish(&mut self) {}
}
