//! What a subdomain run reports (`summary.json` key `subdomains`) and how it uses the device:
//! residency, timings and traffic per force evaluation, memory; and what each rank of a
//! distributed run reports (`summary.json` key `ranks`, [`RankReport`]). Units: seconds,
//! bytes, B/s.

use serde::{Deserialize, Serialize};

/// How the subdomains use the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Residency {
    /// One slot per subdomain: static data uploaded once, only node state moves.
    #[default]
    Resident,
    /// Two slots, everything a subdomain needs moves every pass.
    Streamed,
    /// As many subdomains resident as fit beside two streaming slots, which the others
    /// share.
    Mixed,
}

/// What the caller asks for: the residency that fits a budget, or streaming (to measure it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResidencyRequest {
    /// Resident where it fits the budget, else streamed.
    Auto,
    /// Streamed even when resident would fit.
    Streamed,
}

/// Timings and traffic of the passes so far (seconds summed over passes; bytes likewise).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct StreamTimes {
    /// Force evaluations (calls of `internal_force` or `break_bonds_and_force`).
    pub force_evaluations: usize,
    /// Wall-clock seconds of the force evaluations.
    pub wall: f64,
    /// Device seconds of the kernels.
    pub compute: f64,
    /// Copy-engine seconds host to device and device to host.
    pub copy_in: f64,
    pub copy_out: f64,
    /// Host seconds gathering inputs and scattering results.
    pub host: f64,
    /// Bytes copied host to device and back.
    pub bytes_in: u64,
    pub bytes_out: u64,
}

/// Subdomain execution as `summary.json` reports it (`subdomains`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamReport {
    pub count: usize,
    pub residency: Residency,
    /// Subdomains with a slot of their own (all of them when resident, none streamed).
    pub resident_subdomains: usize,
    /// Device bytes the in-core `gpu-loop` would allocate for this model (`peridot info`).
    pub in_core_bytes: u64,
    /// Pinned copy bandwidth measured at setup, host to device and back, B/s.
    pub pinned_h2d_bytes_per_second: f64,
    pub pinned_d2h_bytes_per_second: f64,
    /// What overlap can at best reach per evaluation: max(kernels, bytes in / bandwidth in,
    /// bytes out / bandwidth out), s; and the measured time over it.
    pub bound_seconds_per_evaluation: f64,
    pub ratio_to_bound: f64,
    /// The budget the plan was made for, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget_bytes: Option<u64>,
    /// Device bytes this backend allocated (the slots and a counter).
    pub allocated_bytes: u64,
    /// Device memory in use by the process before the slots were allocated and after
    /// (`cuMemGetInfo`: total minus free), bytes.
    pub device_used_before: u64,
    pub device_used_after: u64,
    /// Per force evaluation: bytes copied in and out, and seconds (wall, kernels, copies
    /// in and out, host gather and scatter; hidden = kernels + copies - wall, the part of
    /// the work overlap took off the clock).
    pub bytes_in_per_evaluation: f64,
    pub bytes_out_per_evaluation: f64,
    pub seconds_per_evaluation: f64,
    pub compute_seconds_per_evaluation: f64,
    pub copy_in_seconds_per_evaluation: f64,
    pub copy_out_seconds_per_evaluation: f64,
    pub host_seconds_per_evaluation: f64,
    pub hidden_seconds_per_evaluation: f64,
}

impl StreamReport {
    /// This report (its counts, memory and pinned bandwidths set) with the per-evaluation
    /// figures of `t`: traffic, seconds, the copy bound and the ratio to it.
    pub fn with_times(self, t: &StreamTimes) -> StreamReport {
        let e = t.force_evaluations.max(1) as f64;
        let bound = (t.compute / e)
            .max(t.bytes_in as f64 / e / self.pinned_h2d_bytes_per_second)
            .max(t.bytes_out as f64 / e / self.pinned_d2h_bytes_per_second);
        StreamReport {
            bound_seconds_per_evaluation: bound,
            ratio_to_bound: if bound > 0.0 { t.wall / e / bound } else { 0.0 },
            bytes_in_per_evaluation: t.bytes_in as f64 / e,
            bytes_out_per_evaluation: t.bytes_out as f64 / e,
            seconds_per_evaluation: t.wall / e,
            compute_seconds_per_evaluation: t.compute / e,
            copy_in_seconds_per_evaluation: t.copy_in / e,
            copy_out_seconds_per_evaluation: t.copy_out / e,
            host_seconds_per_evaluation: t.host / e,
            hidden_seconds_per_evaluation: ((t.compute + t.copy_in + t.copy_out - t.wall) / e)
                .max(0.0),
            ..self
        }
    }
}

/// One rank of a distributed run as `summary.json` reports it (`ranks`, one entry per rank):
/// its share of the model and its ghost exchanges.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankReport {
    pub rank: usize,
    /// Owned nodes, their directed bonds, ghost nodes, neighbouring ranks.
    pub nodes: usize,
    pub bonds: usize,
    pub ghosts: usize,
    pub peers: usize,
    /// Bytes received per time step (the ghosts' displacement; and dilatation for LPS).
    pub halo_bytes_per_step: u64,
    /// Ghost exchanges so far and the bytes they received.
    pub exchanges: u64,
    pub bytes_received: u64,
    /// Wall seconds of the exchanges (pack, messages, unpack: waiting for the neighbours
    /// included) and of the force evaluations (exchanges included; on a GPU rank's explicit
    /// calls the device loop alone, as the summary's `forces` phase).
    pub exchange_seconds: f64,
    pub forces_seconds: f64,
    /// The parts of `exchange_seconds` on a GPU rank: the host waiting for the device to
    /// have packed the values it sends (`wait_seconds`: the device still busy with earlier
    /// work), and the messages (`message_seconds`: posting, travel, waiting for the
    /// neighbours). On a CPU rank `wait_seconds` is 0 and `message_seconds` the messages'
    /// wall time not hidden by the interior's work.
    pub wait_seconds: f64,
    pub message_seconds: f64,
    /// The CUDA device ordinal the rank ran on (-1: none, a CPU rank).
    pub device: i64,
    /// Wall seconds a GPU rank moved its state around the force evaluations: the owned
    /// state uploaded at an explicit call where the device does not hold it and gathered to
    /// every rank at a full sync (ADR: the displacement up, the forces down); 0 on a CPU
    /// rank.
    pub state_seconds: f64,
    /// A GPU rank's halo messages went from device memory to device memory (a CUDA-aware MPI
    /// that reports it), not through page-locked host buffers; false on a CPU rank.
    pub device_buffers: bool,
    /// Wall seconds of bond work a CPU rank ran while its messages travelled (the
    /// interior's, or a matrix part's rows that read no ghost): what the overlap hid at
    /// most, beside `exchange_seconds`, what it did not. 0 on a GPU rank, whose overlapped
    /// work is enqueued on the device.
    pub overlapped_seconds: f64,
    /// The rank's process's peak resident memory when the report is made (the end of the
    /// run), bytes (`VmHWM`; 0 where it cannot be read; thread ranks share one process).
    pub peak_rss_bytes: u64,
}

impl RankReport {
    /// Number of values [`RankReport::to_values`] gives.
    pub const VALUES: usize = 17;

    /// The report as numbers (for a gather across ranks).
    pub fn to_values(&self) -> [f64; RankReport::VALUES] {
        [
            self.rank as f64,
            self.nodes as f64,
            self.bonds as f64,
            self.ghosts as f64,
            self.peers as f64,
            self.halo_bytes_per_step as f64,
            self.exchanges as f64,
            self.bytes_received as f64,
            self.exchange_seconds,
            self.forces_seconds,
            self.wait_seconds,
            self.message_seconds,
            self.device as f64,
            self.state_seconds,
            f64::from(u8::from(self.device_buffers)),
            self.overlapped_seconds,
            self.peak_rss_bytes as f64,
        ]
    }

    /// The report from [`RankReport::to_values`]' numbers.
    pub fn from_values(v: &[f64]) -> RankReport {
        RankReport {
            rank: v[0] as usize,
            nodes: v[1] as usize,
            bonds: v[2] as usize,
            ghosts: v[3] as usize,
            peers: v[4] as usize,
            halo_bytes_per_step: v[5] as u64,
            exchanges: v[6] as u64,
            bytes_received: v[7] as u64,
            exchange_seconds: v[8],
            forces_seconds: v[9],
            wait_seconds: v[10],
            message_seconds: v[11],
            device: v[12] as i64,
            state_seconds: v[13],
            device_buffers: v[14] != 0.0,
            overlapped_seconds: v[15],
            peak_rss_bytes: v[16] as u64,
        }
    }
}
