//! peridot: peridynamic fracture simulation.
//!
//! Data flows one way through the modules:
//! `model` (parse and validate the TOML model file) -> `geometry` (points, volumes, regions,
//! pre-cracks) -> `neighbors` (cell list, CSR families) -> `material` (PMB and LPS constants,
//! critical stretch, lattice sums) -> `operators` (the sparse matrices of the matrix
//! formulation) -> `backend` (force evaluation and damage, one trait, several
//! executions) -> `solver` (explicit leapfrog, adaptive dynamic relaxation, implicit static
//! solve, matrix export) -> `output` (VTK, CSV probes, summary JSON, PNG damage map, Matrix
//! Market files, progress). `partition` splits a problem into subdomains of cell slabs for
//! models larger than GPU memory (plan, CPU emulation). `gpu` (CUDA driver detection, the
//! NVRTC-compiled kernels of `kernels/`) serves the GPU backends.
//!
//! Units are SI throughout: metres, kilograms, seconds, pascals, newtons.

pub mod backend;
pub mod bench;
pub mod distributed;
pub mod dynamics;
pub mod error;
pub mod geometry;
pub mod gpu;
pub mod material;
pub mod model;
pub mod neighbors;
pub mod operators;
pub mod output;
pub mod partition;
pub mod real;
pub mod setup;
pub mod solver;

pub use error::{Error, Result};
pub use real::{Precision, Real};
