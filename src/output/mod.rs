//! Output: VTK XML series, CSV probes, summary JSON, PNG damage map, progress reporting.
