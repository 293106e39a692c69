//! Whether the CUDA driver (`libcuda`) and NVRTC (`libnvrtc`) can be opened. cudarc opens
//! them lazily on its first call and panics when they are missing, so every GPU path asks
//! here first and turns a missing library into an error or a skip.

use std::sync::OnceLock;

/// Library names tried, most specific first: the soname the driver installs, then every name
/// cudarc itself would try for `lib`.
fn candidates(lib: &str, first: &str) -> Vec<String> {
    let mut names = vec![first.to_string()];
    names.extend(cudarc::get_lib_name_candidates(lib));
    names
}

/// The first of `names` that opens, if any.
fn first_openable(names: &[String]) -> Option<String> {
    names.iter().find_map(|name| {
        // SAFETY: opening a shared library runs its initializers; the CUDA driver and NVRTC
        // are designed to be loaded this way (cudarc does the same on its first call).
        unsafe { libloading::Library::new(name) }
            .ok()
            .map(|_| name.clone())
    })
}

/// The driver library name that opens (`libcuda.so.1` on Linux), or `None` without a driver.
pub fn driver_library() -> Option<&'static str> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| first_openable(&candidates("cuda", "libcuda.so.1")))
        .as_deref()
}

/// The NVRTC library name that opens (`libnvrtc.so.13` with CUDA 13), or `None`.
pub fn nvrtc_library() -> Option<&'static str> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| first_openable(&candidates("nvrtc", "libnvrtc.so.13")))
        .as_deref()
}

/// Whether the CUDA driver library can be opened.
pub fn driver_available() -> bool {
    driver_library().is_some()
}

/// Whether the NVRTC library can be opened.
pub fn nvrtc_available() -> bool {
    nvrtc_library().is_some()
}
