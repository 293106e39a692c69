//! The process-wide GPU: device 0 (or the one [`select_device`] chose: a rank of a
//! distributed run takes its local rank modulo the devices), its default stream, and the compiled kernel modules (one
//! program per precision, compiled by NVRTC to a device binary for the device's compute
//! capability on first use, kept for the life of the process and on disk between runs,
//! `kernel_cache.rs`).

use super::detect::{driver_available, nvrtc_available};
use super::kernel_cache::{CacheKey, KernelCache, KeyParts};
use super::kernels;
use crate::{Error, Precision, Result};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaStream, DeviceRepr, DriverError, LaunchConfig,
    PushKernelArg,
};
use cudarc::nvrtc::Ptx;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Threads per block of every kernel (one thread per node or per dof).
const BLOCK: u32 = 256;

/// An open CUDA device with its compiled kernels.
pub struct Gpu {
    stream: Arc<CudaStream>,
    /// Device name (`NVIDIA H100 80GB HBM3`).
    pub name: String,
    /// NVRTC target (`sm_90`).
    pub arch: String,
    /// Device memory, bytes.
    pub total_memory: usize,
    /// The driver's version (`13000` for CUDA 13.0).
    pub driver_version: i32,
    /// The device's ordinal among the visible ones.
    pub ordinal: usize,
    /// Compiled modules, `[f32, f64]`.
    modules: Mutex<[Option<Arc<CudaModule>>; 2]>,
    /// Modules of the baked PMB loop made so far, with their sources
    /// ([`Gpu::baked_function`]), shared by the views of [`Gpu::on_stream`].
    baked: Arc<Mutex<Vec<(String, Arc<CudaModule>)>>>,
    /// Nanoseconds spent making modules (compiling or reading the cache, and loading),
    /// shared by the views of [`Gpu::on_stream`].
    compile_nanos: Arc<AtomicU64>,
}

/// Where a loaded kernel program came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgramOrigin {
    /// Compiled by NVRTC now (and stored in the cache where there is one).
    Compiled,
    /// Read from the on-disk cache.
    Cached,
}

/// The process's GPU, once opened.
static GPU: OnceLock<std::result::Result<Arc<Gpu>, String>> = OnceLock::new();

/// The local rank whose device [`Gpu::get`] opens (`usize::MAX`: none chosen, device 0).
static LOCAL_RANK: AtomicUsize = AtomicUsize::new(usize::MAX);

/// Make [`Gpu::get`] open device `local_rank % devices` instead of device 0: ranks of a
/// distributed run on one host (`local_rank`: the rank among them) take distinct devices
/// while there are enough, and share them round-robin beyond. Call it before the device is
/// first opened; later it changes nothing.
pub fn select_device(local_rank: usize) {
    LOCAL_RANK.store(local_rank, Ordering::SeqCst);
}

/// A driver error as a backend error.
pub fn driver_error(e: DriverError) -> Error {
    Error::Backend {
        backend: "gpu".into(),
        message: format!("CUDA driver: {e:?}"),
    }
}

fn backend_error(message: impl Into<String>) -> Error {
    Error::Backend {
        backend: "gpu".into(),
        message: message.into(),
    }
}

impl Gpu {
    /// The device, opened on the first call. Without a CUDA driver or device this is an
    /// error (never a panic), and cudarc is not called at all without a driver.
    pub fn get() -> Result<Arc<Gpu>> {
        GPU.get_or_init(|| Gpu::open().map(Arc::new))
            .clone()
            .map_err(backend_error)
    }

    /// The device where an earlier [`Gpu::get`] opened it; never opens one.
    pub fn opened() -> Option<Arc<Gpu>> {
        GPU.get().and_then(|g| g.as_ref().ok().cloned())
    }

    /// Seconds this process has spent making kernel modules on this device (compiling or
    /// reading the on-disk cache, and loading).
    pub fn compile_seconds(&self) -> f64 {
        self.compile_nanos.load(Ordering::Relaxed) as f64 * 1e-9
    }

    fn open() -> std::result::Result<Gpu, String> {
        if !driver_available() {
            return Err("no CUDA driver found; use --backend cpu-loop".into());
        }
        // cudarc panics on a missing driver symbol; keep that an error too.
        let opened = catch_unwind(AssertUnwindSafe(
            || -> std::result::Result<_, DriverError> {
                let count = CudaContext::device_count()?;
                if count < 1 {
                    return Ok(None);
                }
                let ordinal = match LOCAL_RANK.load(Ordering::SeqCst) {
                    usize::MAX => 0,
                    r => r % count as usize,
                };
                let ctx = CudaContext::new(ordinal)?;
                let (major, minor) = ctx.compute_capability()?;
                let name = ctx.name()?;
                let total = ctx.total_mem()?;
                let mut driver = 0;
                // SAFETY: a valid out-pointer; the driver is loaded (checked above).
                unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) }.result()?;
                Ok(Some((ctx, (major, minor), name, total, driver, ordinal)))
            },
        ));
        let (ctx, (major, minor), name, total_memory, driver_version, ordinal) = match opened {
            Ok(Ok(Some(found))) => found,
            Ok(Ok(None)) => return Err("no CUDA device found; use --backend cpu-loop".into()),
            Ok(Err(e)) => {
                return Err(format!(
                    "no usable CUDA device ({e:?}); use --backend cpu-loop"
                ))
            }
            Err(_) => {
                return Err(
                    "the CUDA driver is missing a function this build needs (CUDA 13 \
                            or newer is required); use --backend cpu-loop"
                        .into(),
                )
            }
        };
        Ok(Gpu {
            stream: ctx.default_stream(),
            name,
            arch: format!("sm_{major}{minor}"),
            total_memory,
            driver_version,
            ordinal,
            modules: Mutex::new([None, None]),
            baked: Arc::default(),
            compile_nanos: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The stream every kernel and copy of this process runs on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// The module of all kernels in `precision`, compiled and loaded on first use.
    pub fn module(&self, precision: Precision) -> Result<Arc<CudaModule>> {
        let slot = match precision {
            Precision::F32 => 0,
            Precision::F64 => 1,
        };
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = &modules[slot] {
            return Ok(m.clone());
        }
        let t0 = Instant::now();
        let made = self.load_program(precision, KernelCache::from_env().as_ref());
        let nanos = t0.elapsed().as_nanos() as u64;
        self.compile_nanos.fetch_add(nanos, Ordering::Relaxed);
        let (module, _) = made?;
        modules[slot] = Some(module.clone());
        Ok(module)
    }

    /// Make the module of all kernels in `precision` (not kept: [`Gpu::module`] keeps it):
    /// the device binary from `cache` where it holds one for this source, these options,
    /// this NVRTC, driver and device; otherwise compiled by NVRTC and stored there (a cache
    /// that cannot be written is passed over). Should the driver refuse the device binary,
    /// the program is compiled to PTX and loaded from that.
    pub fn load_program(
        &self,
        precision: Precision,
        cache: Option<&KernelCache>,
    ) -> Result<(Arc<CudaModule>, ProgramOrigin)> {
        let (source, name, options) = kernels::program(precision, &self.arch);
        self.load_source(&source, &name, &options, cache)
    }

    /// Make the module of the program `source` (named `name`, compiled with `options`) as
    /// [`Gpu::load_program`] makes the program of all kernels.
    fn load_source(
        &self,
        source: &str,
        name: &str,
        options: &[String],
        cache: Option<&KernelCache>,
    ) -> Result<(Arc<CudaModule>, ProgramOrigin)> {
        if !nvrtc_available() {
            return Err(backend_error(
                "NVRTC (libnvrtc) not found, so the kernels cannot be compiled; install the \
                 CUDA toolkit or the nvidia-cuda-nvrtc wheel, or use --backend cpu-loop",
            ));
        }
        let key = CacheKey::new(&KeyParts {
            source,
            options,
            nvrtc: kernels::nvrtc_version()?,
            driver: self.driver_version,
            device: &self.name,
            arch: &self.arch,
        });
        let context = self.stream.context();
        if let Some(image) = cache.and_then(|c| c.load(&key)) {
            if let Ok(module) = context.load_module(Ptx::from_binary(image)) {
                return Ok((module, ProgramOrigin::Cached));
            }
        }
        let image = kernels::compile_cubin(source, name, options)?;
        match context.load_module(Ptx::from_binary(image.clone())) {
            Ok(module) => {
                if let Some(c) = cache {
                    // (a cache that cannot be written costs the next run a compilation)
                    let _ = c.store(&key, &image);
                }
                Ok((module, ProgramOrigin::Compiled))
            }
            Err(_) => {
                let fast = options.iter().any(|o| o == "--use_fast_math");
                let ptx = kernels::compile(source, name, &self.arch, fast)?;
                let module = context.load_module(ptx).map_err(driver_error)?;
                Ok((module, ProgramOrigin::Compiled))
            }
        }
    }

    /// The plain PMB loop with a stencil compiled in (`kernels/pmb_force_baked.cu`) in
    /// `precision`, for the stencil that `defines` writes (`backend/gpu/baked.rs`): made
    /// once per process and stencil (and kept on disk as the program of all kernels is);
    /// its seconds count in [`Gpu::compile_seconds`].
    pub fn baked_function(&self, precision: Precision, defines: &str) -> Result<CudaFunction> {
        let (source, name, options) = kernels::baked_program(precision, &self.arch, defines);
        let mut baked = self.baked.lock().unwrap_or_else(|p| p.into_inner());
        let module = match baked.iter().find(|(s, _)| *s == source) {
            Some((_, m)) => m.clone(),
            None => {
                let t0 = Instant::now();
                let made =
                    self.load_source(&source, &name, &options, KernelCache::from_env().as_ref());
                let nanos = t0.elapsed().as_nanos() as u64;
                self.compile_nanos.fetch_add(nanos, Ordering::Relaxed);
                let (module, _) = made?;
                baked.push((source, module.clone()));
                module
            }
        };
        module
            .load_function(&kernels::entry_name(kernels::BAKED_ENTRY, precision))
            .map_err(driver_error)
    }

    /// Kernel `entry` (without suffix) in `precision`.
    pub fn function(&self, precision: Precision, entry: &str) -> Result<CudaFunction> {
        self.module(precision)?
            .load_function(&kernels::entry_name(entry, precision))
            .map_err(driver_error)
    }

    /// Launch `f` over `threads` threads (one per node or dof) with `params` by value.
    ///
    /// # Safety
    /// `params` must be the parameter struct `f` takes, with every device address in it
    /// valid for what the kernel reads and writes for `threads` threads.
    pub unsafe fn launch<P: DeviceRepr>(
        &self,
        f: &CudaFunction,
        threads: usize,
        params: &P,
    ) -> Result<()> {
        // SAFETY: as this function's.
        unsafe { self.launch_on(&self.stream, f, threads, params) }
    }

    /// [`Gpu::launch`] on `stream` instead of the process stream.
    ///
    /// # Safety
    /// As [`Gpu::launch`].
    pub unsafe fn launch_on<P: DeviceRepr>(
        &self,
        stream: &Arc<CudaStream>,
        f: &CudaFunction,
        threads: usize,
        params: &P,
    ) -> Result<()> {
        if threads == 0 {
            return Ok(());
        }
        let blocks = u32::try_from(threads.div_ceil(BLOCK as usize))
            .map_err(|_| backend_error(format!("{threads} threads exceed one launch")))?;
        let cfg = LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut builder = stream.launch_builder(f);
        builder.arg(params);
        // SAFETY: the caller guarantees `params` matches the kernel and its addresses.
        unsafe { builder.launch(cfg) }
            .map(|_| ())
            .map_err(driver_error)
    }

    /// `(free, total)` device memory in bytes, as the driver reports it now.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.stream
            .context()
            .bind_to_thread()
            .map_err(driver_error)?;
        cudarc::driver::result::mem_get_info().map_err(driver_error)
    }

    /// A clear error, before any allocation, when `backend` needs `needed` bytes of device
    /// memory for a model and fewer are free: it names both and what to try instead.
    pub fn ensure_fits(&self, backend: &str, needed: usize) -> Result<()> {
        let (free, total) = self.memory_info()?;
        let fits = "--precision f32, a coarser discretization.dx, or --backend cpu-loop \
                    (`peridot info` shows the bytes per node of each backend)";
        match device_shortfall(backend, needed, (free, total), &self.name, fits) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A new stream of this device that does not synchronize with the process stream
    /// (for copies and kernels that overlap).
    pub fn new_stream(&self) -> Result<Arc<CudaStream>> {
        self.stream.context().new_stream().map_err(driver_error)
    }

    /// This device with `stream` as the stream its work goes to (kernels, copies, cuSPARSE
    /// handles opened on it), sharing the compiled modules: two backends on two such views
    /// run concurrently (the streamed matrix scheme, `partition/matrix.rs`).
    pub fn on_stream(&self, stream: Arc<CudaStream>) -> Arc<Gpu> {
        let modules = self
            .modules
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        Arc::new(Gpu {
            stream,
            name: self.name.clone(),
            arch: self.arch.clone(),
            total_memory: self.total_memory,
            driver_version: self.driver_version,
            ordinal: self.ordinal,
            modules: Mutex::new(modules),
            baked: self.baked.clone(),
            compile_nanos: self.compile_nanos.clone(),
        })
    }

    /// Wait for all work on the stream.
    pub fn synchronize(&self) -> Result<()> {
        self.stream.synchronize().map_err(driver_error)
    }
}

/// The error of `backend` needing `needed` bytes of device memory where `free` of `total`
/// are free on device `name`, naming both numbers and `fits` (what to try instead); `None`
/// where it fits. Pure: the memory guard (`backend/estimate.rs`) and
/// [`Gpu::ensure_fits`] both word their refusal through it.
pub fn device_shortfall(
    backend: &str,
    needed: usize,
    (free, total): (usize, usize),
    name: &str,
    fits: &str,
) -> Option<Error> {
    if needed <= free {
        return None;
    }
    let gib = |b: usize| b as f64 / (1u64 << 30) as f64;
    Some(Error::Backend {
        backend: backend.into(),
        message: format!(
            "the model needs {:.2} GiB ({needed} bytes) of GPU memory, but only {:.2} GiB \
             ({free} bytes) of the {:.2} GiB on {name} are free; try {fits}",
            gib(needed),
            gib(free),
            gib(total),
        ),
    })
}

#[cfg(test)]
mod shortfall_tests {
    use super::device_shortfall;

    /// 3 GiB needed where 2 GiB of 80 GiB are free is refused naming both numbers, the
    /// device and the advice; 2 GiB needed fits (equal bytes fit: the driver gives what it
    /// reports free).
    #[test]
    fn a_model_above_the_free_device_memory_is_refused_naming_both() {
        let gib = 1usize << 30;
        let err = device_shortfall("gpu-loop", 3 * gib, (2 * gib, 80 * gib), "H100", "f32")
            .expect("3 GiB do not fit in 2 GiB")
            .to_string();
        for part in [
            "3.00 GiB",
            "2.00 GiB",
            "80.00 GiB",
            "H100",
            "gpu-loop",
            "try f32",
        ] {
            assert!(err.contains(part), "{part} missing: {err}");
        }
        assert!(device_shortfall("gpu-loop", 2 * gib, (2 * gib, 80 * gib), "H100", "").is_none());
    }
}
