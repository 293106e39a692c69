//! Where the time before a run's first step goes: the `setup` object of `summary.json`.
//!
//! Each phase is `None` where it did not run (a problem built by a library caller has no
//! `parse`; a CPU backend compiles no kernel) and is then left out of the JSON. Units: s.

use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Seconds of each setup phase, in the order a run takes them.
#[derive(Serialize, Deserialize, Default, Clone, Copy, Debug, PartialEq)]
pub struct SetupTimes {
    /// Reading the model file, applying `--set` overrides, validating.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub parse: Option<f64>,
    /// Discretizing the body (lattice fill or point cloud) and its checks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub body: Option<f64>,
    /// The neighbour search (stored families, or a lean problem's family sizes); the same
    /// figure as `phase_seconds.neighbors`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub neighbors: Option<f64>,
    /// The bond data: per-bond factors (stored problem), per-node horizon and weighted
    /// volumes, the initial bond status of pre-cracks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub bonds: Option<f64>,
    /// Named region node sets and no-fail nodes.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub regions: Option<f64>,
    /// The stable time step (a pass over every bond; on a rank of a distributed run, over
    /// its share of the nodes, in the shared setup: `setup/shared.rs`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub time_step: Option<f64>,
    /// A rank of a distributed run: the cut of the body into one part per rank.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rank_cut: Option<f64>,
    /// A rank of a distributed run: its subdomain (its owned nodes' families in local
    /// indices, from the problem's or searched for them alone; its ghosts) and halo lists.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rank_subdomain: Option<f64>,
    /// A rank of a distributed run: its local problems (`cpu-loop`: interior and boundary;
    /// `gpu-loop`: in device order; the matrix scheme's, before its operators' assembly),
    /// their bonds' data gathered or computed per bond.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub rank_part: Option<f64>,
    /// Creating a CPU backend (per-bond coefficients, matrix assembly); with
    /// `kernel_compilation`, `upload` and the `rank_*` phases, `phase_seconds.assembly`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub assembly: Option<f64>,
    /// Compiling (or reading from the on-disk cache) and loading the kernel program: every
    /// compilation of this setup, the device neighbour search's included.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub kernel_compilation: Option<f64>,
    /// Creating a GPU backend, less its kernel compilation: the device arrays prepared on
    /// the host (and for `gpu-matrix` assembled) and copied to the device.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub upload: Option<f64>,
    /// Opening the run's outputs: the output folder, the probe file, the snapshot writer,
    /// the crack-tip tracker and the nodes it leaves out.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub outputs: Option<f64>,
    /// Step 0: the initial force evaluation and the step-0 outputs (snapshot handed to its
    /// writer, probe row, crack tips).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub step_zero: Option<f64>,
    /// Opening the GPU and making its kernel program, on a thread of its own while the host
    /// builds the body, families and bond data (`peridot run` on a GPU backend): overlapped,
    /// so not part of [`total`](Self::total); `kernel_compilation` then counts only what
    /// the backend still waited for.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub device_open: Option<f64>,
    /// Seconds from process start (where the caller gave it, `RunOptions::process_start`)
    /// to the first step of the time loop, the step-0 outputs included.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub to_first_step: Option<f64>,
}

impl SetupTimes {
    /// Sum of the phases present (`to_first_step` is a point in time, not a phase, and
    /// `device_open` overlaps the others).
    pub fn total(&self) -> f64 {
        [
            self.parse,
            self.body,
            self.neighbors,
            self.bonds,
            self.regions,
            self.time_step,
            self.rank_cut,
            self.rank_subdomain,
            self.rank_part,
            self.assembly,
            self.kernel_compilation,
            self.upload,
            self.outputs,
            self.step_zero,
        ]
        .into_iter()
        .flatten()
        .sum()
    }

    /// Add `seconds` to `kernel_compilation` (nothing for zero: no compilation ran).
    pub fn add_compilation(&mut self, seconds: f64) {
        if seconds > 0.0 {
            self.kernel_compilation = Some(self.kernel_compilation.unwrap_or(0.0) + seconds);
        }
    }
}

/// Seconds since `t0`.
pub fn since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64()
}

/// `f()` and its wall time in seconds.
pub fn timed<R>(f: impl FnOnce() -> R) -> (R, f64) {
    let t0 = Instant::now();
    let r = f();
    (r, since(t0))
}

#[cfg(test)]
mod tests {
    use super::SetupTimes;

    // Absent phases stay out of the JSON; present ones keep their names and sum.
    #[test]
    fn absent_phases_are_left_out() {
        let mut t = SetupTimes {
            parse: Some(0.5),
            neighbors: Some(1.0),
            ..Default::default()
        };
        t.add_compilation(0.0);
        assert_eq!(t.kernel_compilation, None);
        t.add_compilation(0.25);
        t.add_compilation(0.25);
        assert_eq!(t.kernel_compilation, Some(0.5));
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(
            json,
            r#"{"parse":0.5,"neighbors":1.0,"kernel_compilation":0.5}"#
        );
        assert_eq!(t.total(), 2.0);
    }
}
