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

/// The cuSPARSE entry points `gpu::cusparse` calls; a library missing one of them is treated
/// as absent (cudarc would panic on the first call of a missing symbol).
pub const CUSPARSE_SYMBOLS: &[&str] = &[
    "cusparseCreate",
    "cusparseDestroy",
    "cusparseSetStream",
    "cusparseCreateCsr",
    "cusparseDestroySpMat",
    "cusparseCreateDnVec",
    "cusparseDestroyDnVec",
    "cusparseDnVecSetValues",
    "cusparseSpMV_bufferSize",
    "cusparseSpMV",
];

/// Folders searched for cuSPARSE when no name opens through the loader's path: the CUDA
/// toolkit's and those of NVIDIA's Python wheels (`nvidia-cusparse-cu12`, the CUDA 13
/// `nvidia/cu13` layout).
fn cusparse_folders() -> Vec<std::path::PathBuf> {
    let mut dirs = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var) {
            let home = std::path::PathBuf::from(home);
            dirs.push(home.join("lib64"));
            dirs.push(home.join("targets/x86_64-linux/lib"));
        }
    }
    for d in [
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/lib/x86_64-linux-gnu",
    ] {
        dirs.push(d.into());
    }
    // site-packages of the Python environments found at their usual places
    for root in ["/opt/torch/.venv/lib", "/usr/local/lib", "/usr/lib"] {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for e in entries.flatten() {
            let py = e.path();
            if !py
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("python3"))
            {
                continue;
            }
            for sub in ["site-packages", "dist-packages"] {
                for lib in ["nvidia/cu13/lib", "nvidia/cusparse/lib"] {
                    dirs.push(py.join(sub).join(lib));
                }
            }
        }
    }
    dirs
}

/// Whether `lib` exports every symbol of [`CUSPARSE_SYMBOLS`].
fn has_cusparse_symbols(lib: &libloading::Library) -> bool {
    CUSPARSE_SYMBOLS.iter().all(|s| {
        // SAFETY: only the symbol's presence is checked; nothing is called.
        unsafe { lib.get::<*const std::ffi::c_void>(s.as_bytes()) }.is_ok()
    })
}

/// The cuSPARSE library name that cudarc will open (`libcusparse.so.12` with CUDA 12 and
/// 13), or `None`. Where no name opens through the loader's search path but the library lies
/// in a known folder (the CUDA toolkit, a Python wheel), it is opened there by path and kept
/// loaded: the loader then answers cudarc's open by name with the library already loaded
/// (same soname). A library that lacks a function this build calls counts as absent.
pub fn cusparse_library() -> Option<&'static str> {
    static FOUND: OnceLock<Option<String>> = OnceLock::new();
    FOUND
        .get_or_init(|| {
            let names = cudarc::get_lib_name_candidates("cusparse");
            let open = |name: &String| {
                // SAFETY: as in `first_openable`; cuSPARSE is designed to be loaded this way.
                unsafe { libloading::Library::new(name) }.ok()
            };
            // cudarc takes the first name that opens: that library must have the symbols
            let first = |names: &[String]| {
                names
                    .iter()
                    .find_map(|n| open(n).map(|lib| (n.clone(), has_cusparse_symbols(&lib))))
            };
            if let Some((name, complete)) = first(&names) {
                return complete.then_some(name);
            }
            for dir in cusparse_folders() {
                for file in ["libcusparse.so.12", "libcusparse.so.13", "libcusparse.so"] {
                    let path = dir.join(file);
                    if !path.exists() {
                        continue;
                    }
                    // SAFETY: as above, by path.
                    let Ok(lib) = (unsafe { libloading::Library::new(&path) }) else {
                        continue;
                    };
                    if !has_cusparse_symbols(&lib) {
                        continue;
                    }
                    // Keep it loaded for the life of the process, then check that cudarc's
                    // names now resolve to it.
                    std::mem::forget(lib);
                    if let Some((name, complete)) = first(&names) {
                        return complete.then_some(name);
                    }
                }
            }
            None
        })
        .as_deref()
}

/// Whether cuSPARSE can be opened (and has every function this build calls).
pub fn cusparse_available() -> bool {
    cusparse_library().is_some()
}
