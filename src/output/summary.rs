//! `summary.json`: what a run did and how fast, written once at the end of `run` and
//! `solve-static`.
//!
//! The key names are fixed by the contract (`docs/contract.md`): `model`, `nodes`, `bonds`
//! (directed bonds, the sum of family sizes), `steps`, `backend`, `precision`, `dt`,
//! `wall_seconds`, `phase_seconds`, `node_steps_per_second`, `peak_rss_bytes`,
//! `peak_gpu_bytes` (GPU backends only), `broken_bonds`, `max_damage`, `status` (how the run
//! ended, [`RunStatus`]) and `static_residual` (`solve-static` only); beyond those,
//! `neighbor_search` (`cpu` or `device`) says where the families were built, `setup` breaks
//! the time before the first step into phases ([`SetupTimes`]) and `process_seconds` counts
//! from process start (where the caller knows it), and `crack_tips` ([`CrackTipSummary`])
//! what the crack-tip samples found. Optional keys are left out rather than written as
//! `null`. Units are SI (seconds, metres, bytes); `static_residual` is whatever norm the static solver reports.

use super::write_atomically;
use crate::setup::SetupTimes;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

/// Seconds spent in each phase of a run; a phase that does not apply is `None` and left out
/// of the JSON.
#[derive(Serialize, Deserialize, Default, Clone, Debug, PartialEq)]
pub struct PhaseSeconds {
    /// Building the neighbour families.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub neighbors: Option<f64>,
    /// Assembling matrices (matrix backends, static solves).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub assembly: Option<f64>,
    /// Force evaluation and damage update.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub forces: Option<f64>,
    /// Time integration (velocity and displacement update, boundary conditions).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub update: Option<f64>,
    /// Host-device copies (GPU backends).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub transfers: Option<f64>,
    /// Writing VTK, probes and images.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub output: Option<f64>,
    /// Factorizing and solving a linear system (static solves).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub solve: Option<f64>,
}

impl PhaseSeconds {
    /// Sum of the phases that are present.
    pub fn total(&self) -> f64 {
        [
            self.neighbors,
            self.assembly,
            self.forces,
            self.update,
            self.transfers,
            self.output,
            self.solve,
        ]
        .into_iter()
        .flatten()
        .sum()
    }
}

/// The summary key `output_seconds`: the output phase by kind of output, on the run's own
/// thread (their sum is `phase_seconds.output`), and the snapshot writer thread's time beside
/// it. Units: s.
#[derive(Serialize, Deserialize, Default, Clone, Copy, Debug, PartialEq)]
#[serde(default)]
pub struct OutputSeconds {
    /// Gathering each snapshot's fields (and from a device, copying them) and handing them
    /// to the writer thread, and at the end waiting for it to finish.
    pub snapshots: f64,
    /// Probe rows.
    pub probes: f64,
    /// Crack-tip samples: the damage field, the tip finder and tracker, `crack_tips.csv`.
    pub crack_tips: f64,
    /// Restart checkpoints.
    pub checkpoints: f64,
    /// `damage.png` of the final state.
    pub picture: f64,
    /// The snapshot writer thread's own time encoding and writing `.vtu` files, overlapped
    /// with the time loop (except what `snapshots` waits for at the end).
    pub snapshot_writer: f64,
}

impl OutputSeconds {
    /// The seconds on the run's own thread: `phase_seconds.output`.
    pub fn on_run_thread(&self) -> f64 {
        self.snapshots + self.probes + self.crack_tips + self.checkpoints + self.picture
    }
}

/// How a run ended, the summary key `status`.
#[derive(Serialize, Deserialize, Default, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// It ran to its last step (or a static solve finished).
    #[default]
    Completed,
    /// It was cancelled (`peridot run`: SIGINT or SIGTERM) and stopped at `stopped_at_step`,
    /// with that step's outputs written.
    Interrupted,
    /// An error stopped it; `stopped_early` has the message.
    Failed,
    /// The stability check stopped it at `stopped_at_step` (NaN or blow-up); `stopped_early`
    /// has the message.
    Unstable,
    /// A run stepped from a library has steps to go (only in the summary such a session
    /// gives before its end; never in `summary.json`).
    Running,
}

impl RunStatus {
    /// The name written in `summary.json`.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
            RunStatus::Unstable => "unstable",
            RunStatus::Running => "running",
        }
    }
}

/// The contents of `summary.json`. See the module documentation for the fixed keys.
#[derive(Serialize, Deserialize, Default, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct Summary {
    /// Model name.
    pub model: String,
    /// Number of nodes.
    pub nodes: usize,
    /// Directed bonds (each pair counted from both ends).
    pub bonds: usize,
    /// Time steps (or relaxation iterations) taken.
    pub steps: usize,
    /// Backend that ran (`cpu-loop`, `cpu-matrix`, `gpu-loop`, `gpu-matrix`).
    pub backend: String,
    /// `f32` or `f64`.
    pub precision: String,
    /// Time step in seconds.
    pub dt: f64,
    /// Wall-clock seconds of the whole run.
    pub wall_seconds: f64,
    /// Seconds per phase.
    pub phase_seconds: PhaseSeconds,
    /// Where `phase_seconds.output` went, and the snapshot writer's own seconds (runs with
    /// outputs; left out otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_seconds: Option<OutputSeconds>,
    /// Seconds of each setup phase before the first step (parse, body, neighbours, bond
    /// data, regions, time step, assembly, kernel compilation, upload) and from process
    /// start to the first step; phases that did not run are left out.
    pub setup: SetupTimes,
    /// Seconds from process start to this summary (the command line gives the start;
    /// library use without it leaves the key out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub process_seconds: Option<f64>,
    /// Where the neighbour search (`phase_seconds.neighbors`) ran: `cpu` or `device`.
    pub neighbor_search: String,
    /// nodes x steps / seconds of the time-stepping loop (setup and output excluded).
    pub node_steps_per_second: f64,
    /// Peak resident memory of the process in bytes (0 where unavailable).
    pub peak_rss_bytes: u64,
    /// Peak GPU memory in bytes (GPU backends only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_gpu_bytes: Option<u64>,
    /// Subdomain execution: count, residency, memory and per-evaluation traffic and times
    /// (runs with `--subdomains` or a GPU memory budget only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subdomains: Option<crate::partition::StreamReport>,
    /// A distributed run's ranks, one entry each: owned nodes, bonds, ghosts, neighbours,
    /// halo bytes per step, exchanges and their seconds (`docs/distributed.md`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ranks: Option<Vec<crate::partition::RankReport>>,
    /// Directed bonds broken at the end of the run.
    pub broken_bonds: usize,
    /// Largest nodal damage at the end of the run (0..1).
    pub max_damage: f64,
    /// Final residual of a static solve, as the solver defines it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_residual: Option<f64>,
    /// Solver as the model names it (explicit dynamics, dynamic relaxation, static).
    pub solver: String,
    /// Dimension and 2D assumption as the model names it.
    pub dimension: String,
    /// Material model as the model names it (PMB, LPS).
    pub material: String,
    /// Lattice spacing in metres.
    pub dx: f64,
    /// Horizon in metres.
    pub delta: f64,
    /// Simulated time at the end of the run in seconds.
    pub final_time: f64,
    /// Whether a relaxation or static solve met its tolerance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub converged: Option<bool>,
    /// How the run ended: `completed`, `interrupted`, `failed` or `unstable` (a session stepped
    /// from a library says `running` before its last step; never in `summary.json`).
    pub status: RunStatus,
    /// The step an interrupted or unstable run stopped at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_at_step: Option<usize>,
    /// The step of the checkpoint a restarted run (`--restart`) resumed from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restarted_from_step: Option<usize>,
    /// The last checkpoint this run wrote (a path), where it wrote one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_checkpoint: Option<String>,
    /// Why the run stopped before its end time, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<String>,
    /// Warnings issued during the run.
    pub warnings: Vec<String>,
    /// How a static solve went (`solve-static` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub static_solve: Option<StaticSolveInfo>,
    /// The cracks' tips over the run (`run` where the body can crack; `crack_tips.csv`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crack_tips: Option<CrackTipSummary>,
}

/// The summary key `crack_tips`: what the tip samples of a run add up to
/// (`docs/crack-tips.md`). Lengths in metres, speeds in m/s, times in seconds.
#[derive(Serialize, Deserialize, Default, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct CrackTipSummary {
    /// Damage at or above which a node was a crack node.
    pub threshold: f64,
    /// Samples taken (rows of `crack_tips.csv` are per tip per sample).
    pub samples: usize,
    /// Tips over the run: the ids given out (a branch's children count as new tips).
    pub tips: u64,
    /// Tips of the last sample.
    pub tips_at_end: usize,
    /// The longest crack of any sample, along its skeleton, m.
    pub longest_crack: f64,
    /// The fastest tip speed fitted over at least one horizon of travel, m/s (0: none).
    pub fastest_tip_speed: f64,
    /// Time of the first sample that saw a tip branch, s (absent: no branching).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_branching_time: Option<f64>,
    /// Tip moves between two samples longer than a horizon and faster than the dilatational
    /// wave speed: the damage crossing the threshold over a length at once, not a tip
    /// running (its speed fit starts again there).
    pub bursts: usize,
    /// The axis across a thin 3D plate whose tips were found through its thickness, one
    /// point per lattice column (`"x"`, `"y"` or `"z"`; absent: found node by node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thin_axis: Option<String>,
    /// Where the samples' time went, s (the run's `output_seconds.crack_tips` in all).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seconds: Option<TipSeconds>,
}

/// The time of a run's crack-tip samples by part, s.
#[derive(Serialize, Deserialize, Default, Clone, Copy, Debug, PartialEq)]
#[serde(default)]
pub struct TipSeconds {
    /// The damage field from the backend, in f64 (on a GPU backend: its kernel and copy).
    pub damage: f64,
    /// The finder: crack nodes, their links, skeletons and tips.
    pub finder: f64,
    /// The tracker (ids, speeds, branching) and `crack_tips.csv`.
    pub tracker: f64,
    /// Samples whose cracks were those of the sample before (no bond broke in between), which
    /// read no damage field.
    pub reused: usize,
}

/// Details of a static solve, under the summary key `static_solve`.
#[derive(Serialize, Deserialize, Default, Clone, Debug, PartialEq)]
#[serde(default)]
pub struct StaticSolveInfo {
    /// `"llt"` (sparse Cholesky) or `"lu"` (the fallback when Cholesky fails).
    pub factorization: String,
    /// Unknowns of the reduced system (dofs neither prescribed nor supports).
    pub free_dofs: usize,
    /// Dofs with a prescribed displacement (fixed, displacement and velocity conditions).
    pub prescribed_dofs: usize,
    /// Rigid-body modes no boundary condition holds, removed by supports (0: none needed).
    pub rigid_modes_removed: usize,
    /// Dofs held at zero to remove those modes (`dof = d * node + component`).
    pub support_dofs: Vec<usize>,
    /// Connected pieces of the intact bonds (1 for an undamaged body).
    pub pieces: usize,
    /// `|Q^T f| / |f|`: the part of the load along the removed modes before it was relieved
    /// (0 when no mode was removed).
    pub load_imbalance: f64,
    /// `|K u - f|` over the supports relative to the load scale: what the supports carry
    /// (round-off when the loads are in equilibrium).
    pub support_load: f64,
    /// Iterative-refinement steps after the first solve.
    pub refinement_steps: usize,
    /// Bonds whose stretch in the solution exceeds the critical stretch (the linear solve
    /// breaks none; a non-zero count means the load would start a crack).
    pub bonds_over_critical_stretch: usize,
    /// The non-zeros of the assembled stiffness `K`.
    pub stiffness_nnz: usize,
}

impl Summary {
    /// Write as pretty-printed JSON (with a final newline). The file is replaced atomically.
    /// Non-finite numbers are written as `null`, as JSON has no NaN or infinity.
    pub fn write(&self, path: &Path) -> crate::Result<()> {
        write_atomically(path, |w| {
            serde_json::to_writer_pretty(&mut *w, self).map_err(std::io::Error::other)?;
            w.write_all(b"\n")
        })
    }

    /// Read a summary written by [`Summary::write`]. Missing keys take their default.
    pub fn read(path: &Path) -> crate::Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| {
            Error::io(
                path,
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })
    }
}

/// Peak resident set size of this process in bytes (`VmHWM` from `/proc/self/status`); 0
/// where that is unavailable (not Linux, or `/proc` not mounted).
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| parse_vm_hwm(&status))
        .unwrap_or(0)
}

/// The `VmHWM:   1234 kB` line of a `/proc/<pid>/status` text, in bytes.
fn parse_vm_hwm(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let mut words = line["VmHWM:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    let scale = match words.next() {
        Some("kB") | Some("KB") | Some("kb") => 1024,
        Some("mB") | Some("MB") => 1024 * 1024,
        Some("B") | None => 1,
        Some(_) => return None,
    };
    Some(value * scale)
}

#[cfg(test)]
mod tests {
    use super::parse_vm_hwm;

    // The kernel reports VmHWM in kB; other units or a missing line must not be misread.
    #[test]
    fn vm_hwm_is_parsed_in_bytes() {
        let status = "Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_vm_hwm(status), Some(1234 * 1024));
        assert_eq!(parse_vm_hwm("Name:\tx\n"), None);
        assert_eq!(parse_vm_hwm("VmHWM: 12 furlongs\n"), None);
    }
}
