//! The CPU backends: [`CpuLoop`] (`bond_loop.rs`), the reference loop over each node's bonds
//! (its PMB bond loop in `pmb_kernel.rs`, vectorized; `blocks.rs` the lock-free node-block
//! parallel iteration; `pmb_slots.rs` its slot-table form for lattices, several nodes
//! at a time; `softening.rs` the softening damage laws' per-bond damage and
//! forces), and [`CpuMatrix`] (`matrix.rs`), the matrix formulation as sparse
//! products of the operators of `crate::operators`.

pub mod blocks;
pub mod bond_loop;
pub mod matrix;
pub mod pmb_kernel;
pub mod pmb_slots;
pub mod softening;
pub mod status;

pub use bond_loop::CpuLoop;
pub use matrix::CpuMatrix;
