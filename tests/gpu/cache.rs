//! The on-disk kernel cache on a device: a first load compiles the program and stores its
//! device binary, a second load reads it back (no compilation) and its kernels load; an
//! entry damaged on disk is compiled again. Timings of both are printed.
//!
//! Without a CUDA device the test prints `skipped: no CUDA device` and passes.

use super::{have_gpu, say};
use peridot::gpu::device::ProgramOrigin;
use peridot::gpu::kernel_cache::KernelCache;
use peridot::gpu::kernels::entry_name;
use peridot::gpu::Gpu;
use peridot::Precision;
use std::time::Instant;

#[test]
fn second_load_of_the_kernels_hits_the_disk_cache() {
    if !have_gpu() {
        return;
    }
    let gpu = Gpu::get().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cache = KernelCache::at(dir.path().join("kernels"));
    for precision in [Precision::F64, Precision::F32] {
        let t0 = Instant::now();
        let (_, first) = gpu.load_program(precision, Some(&cache)).unwrap();
        let cold = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let (module, second) = gpu.load_program(precision, Some(&cache)).unwrap();
        let warm = t0.elapsed().as_secs_f64();
        say(&format!(
            "kernels {}: compiled in {cold:.3} s, from the cache in {warm:.3} s",
            precision.name()
        ));
        assert_eq!(first, ProgramOrigin::Compiled);
        assert_eq!(second, ProgramOrigin::Cached);
        module
            .load_function(&entry_name("pmb_force", precision))
            .expect("a kernel of the cached program");
    }
    // every entry damaged: compiled again, no error
    for entry in std::fs::read_dir(cache.dir()).unwrap() {
        std::fs::write(entry.unwrap().path(), b"damaged").unwrap();
    }
    let (_, again) = gpu.load_program(Precision::F64, Some(&cache)).unwrap();
    assert_eq!(again, ProgramOrigin::Compiled);
    let (_, off) = gpu.load_program(Precision::F64, None).unwrap();
    assert_eq!(off, ProgramOrigin::Compiled);
}
