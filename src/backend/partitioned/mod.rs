//! Backends that run a problem subdomain by subdomain (`docs/subdomains.md`), on the cuts of
//! `crate::partition`: the CPU emulation of the loop scheme ([`PartitionedCpu`],
//! `emulate.rs`, bitwise the in-core CPU loop), the loop scheme on the GPU ([`GpuStreamed`],
//! `stream/`: subdomains on device slots, copies overlapping computation, the host data in
//! pinned memory packed by `parts.rs`), the matrix scheme in subdomains
//! ([`PartitionedMatrix`], `matrix.rs`, on the parts of `matrix_part.rs`; streamed through
//! two device slots by `matrix_stream.rs`), the explicit step fused into their force scatter
//! (`fused.rs`), the plan that sizes a cut for a memory budget (`plan.rs`) and what a run
//! asks of subdomains (`request.rs`). Shared by them: the gather and scatter of values
//! between global and local indices (`exchange.rs`) and the `subdomains` report of the
//! streamed backends (`report.rs`).
//!
//! Imports between these files go one way: `exchange`, `report` below everything;
//! `fused`, `parts` on them; `emulate`, `matrix_part` next; then `stream/`, `matrix`,
//! `matrix_stream`; `plan`, `request` on top.
//!
//! Units: memory in bytes; node indices global (the problem's) or local (a subdomain's).

pub mod emulate;
pub(crate) mod exchange;
pub(crate) mod fused;
pub mod matrix;
mod matrix_part;
pub mod matrix_stream;
mod parts;
pub mod plan;
mod report;
pub mod request;
pub mod stream;

pub use emulate::PartitionedCpu;
pub use matrix::PartitionedMatrix;
pub use plan::parse_bytes;
pub use request::{budget_bytes, budget_bytes_for, SubdomainRequest};
pub use stream::GpuStreamed;
