//! GPU infrastructure shared by the GPU backends: finding the CUDA driver, NVRTC and cuSPARSE
//! without touching cudarc (which panics when a library is missing), the kernel sources of
//! `kernels/` and their run-time compilation, the process-wide device with its cache of
//! compiled modules, a small safe wrapper of cuSPARSE's sparse matrix-vector product, the
//! device order of per-bond arrays, the `#[repr(C)]` kernel parameter structs, the
//! neighbour search on the device (`neighbors`), and pinned host buffers with asynchronous
//! copies (`pinned`).
//!
//! Nothing here runs on a machine without CUDA unless [`detect`] has said the library is
//! there: CPU-only runs and CI never reach a cudarc call.

pub mod cusparse;
pub mod detect;
pub mod device;
pub mod kernel_cache;
pub mod kernels;
pub mod layout;
pub mod neighbors;
pub mod params;
pub mod pinned;

pub use detect::{cusparse_available, driver_available, nvrtc_available};
pub use device::{select_device, Gpu};
