//! The CUDA kernel sources of `kernels/` and their run-time compilation by NVRTC.
//!
//! Each stage is one `.cu` file; NVRTC resolves no `#include` of our own files, so a source is
//! the precision prelude (`PD_REAL`, `PD_SUFFIX`), then the [`HEADERS`] (`common.cuh`, one
//! `law_<name>.cuh` per bond law, `bonds.cuh`), then the stage(s).
//! Entry points are named `stage_f32` / `stage_f64`. Compilation errors keep NVRTC's log.

use crate::{Error, Precision, Result};
use cudarc::nvrtc::{compile_ptx_with_opts, result, CompileError, CompileOptions, Ptx};
use std::ffi::{CStr, CString};

/// The headers every stage is compiled with, in order: the shared definitions and the
/// geometry of one bond, one header per bond law (its parameters and bond formulas, twins of
/// `src/material/laws/`), then the bond loops' parameters and walks.
pub const HEADERS: &[&str] = &[
    "common.cuh",
    "law_pmb.cuh",
    "law_lps.cuh",
    "law_softening.cuh",
    "bonds.cuh",
];

/// The text of [`HEADERS`], concatenated.
pub const COMMON: &str = concat!(
    include_str!("../../kernels/common.cuh"),
    include_str!("../../kernels/law_pmb.cuh"),
    include_str!("../../kernels/law_lps.cuh"),
    include_str!("../../kernels/law_softening.cuh"),
    include_str!("../../kernels/bonds.cuh"),
);

/// Headers that stages carry ahead of their own file (not in every program).
pub const STAGE_HEADERS: &[&str] = &["cell_grid.cuh"];

/// One kernel source file and the entry points it defines (without the precision suffix).
#[derive(Debug, Clone, Copy)]
pub struct Stage {
    /// File name in `kernels/`.
    pub file: &'static str,
    /// The file's text.
    pub source: &'static str,
    /// Kernel names defined by the file.
    pub entries: &'static [&'static str],
}

/// A [`Stage`] of `kernels/FILE` with its entry points; `after HEADER`: the header
/// `kernels/HEADER` carried ahead of the file.
macro_rules! stage {
    ($file:literal, [$($entry:literal),* $(,)?]) => {
        Stage {
            file: $file,
            source: include_str!(concat!("../../kernels/", $file)),
            entries: &[$($entry),*],
        }
    };
    ($file:literal after $header:literal, [$($entry:literal),* $(,)?]) => {
        Stage {
            file: $file,
            source: concat!(
                include_str!(concat!("../../kernels/", $header)),
                include_str!(concat!("../../kernels/", $file))
            ),
            entries: &[$($entry),*],
        }
    };
}

/// Every stage, in the order they are concatenated into one program. The neighbour-search
/// stages carry `cell_grid.cuh` (guarded against a second inclusion) ahead of their own file.
pub const STAGES: &[Stage] = &[
    stage!(
        "pmb_force.cu",
        [
            "pmb_force",
            "pmb_force_plain",
            "pmb_force_plain_lattice",
            "pmb_force_lattice_table",
            "pmb_force_materials",
            "pmb_force_softening"
        ]
    ),
    stage!(
        "lps_dilatation.cu",
        ["lps_dilatation", "lps_dilatation_nonlinear"]
    ),
    stage!("lps_force.cu", ["lps_force", "lps_force_nonlinear"]),
    stage!("damage.cu", ["break_bonds", "damage", "strain_energy"]),
    stage!(
        "failure.cu",
        ["soften_bonds", "node_critical_stretch", "history_breaks"]
    ),
    stage!(
        "matrix_bond.cu",
        [
            "matrix_pmb",
            "matrix_lps_extension",
            "matrix_lps_force",
            "matrix_break",
            "matrix_broken",
            "matrix_energy"
        ]
    ),
    stage!(
        "leapfrog.cu",
        [
            "kick",
            "drift",
            "accelerate_kick",
            "apply_conditions",
            "max_abs",
            "probe_sums"
        ]
    ),
    stage!(
        "adr.cu",
        ["adr_residual", "adr_finalize", "adr_velocity", "adr_drift"]
    ),
    stage!("scan.cu", ["scan_blocks", "scan_add"]),
    stage!("halo.cu", ["halo_gather", "halo_scatter"]),
    stage!("cell_bin.cu" after "cell_grid.cuh", ["cell_count", "cell_scatter"]),
    stage!("neighbor_search.cu" after "cell_grid.cuh", ["neighbor_count", "neighbor_fill", "neighbor_sort_rows"]),
];

/// The plain PMB loop with the model's stencil compiled in: not in [`STAGES`], a program of
/// its own per stencil ([`baked_program`]), whose slot lines `backend/gpu/baked.rs` writes.
/// Alone (the kernel-compile test) the file compiles with a one-slot stand-in stencil.
pub const BAKED_STAGE: Stage = stage!("pmb_force_baked.cu", ["pmb_force_baked"]);

/// The entry point of [`BAKED_STAGE`] (without the precision suffix).
pub const BAKED_ENTRY: &str = "pmb_force_baked";

/// The program of [`BAKED_STAGE`] in `precision` for `arch` with the stencil `defines`
/// (`PD_BAKED_DIM`, `PD_BAKED_LINEARIZED`, `PD_BAKED_SLOTS`) ahead of the headers: its
/// source, name and NVRTC options, as [`program`] gives those of every stage.
pub fn baked_program(
    precision: Precision,
    arch: &str,
    defines: &str,
) -> (String, String, Vec<String>) {
    let name = format!("peridot_baked_{}.cu", precision.name());
    let fast = precision == Precision::F32;
    let mut source = prelude(precision);
    source.push_str(defines);
    source.push_str(COMMON);
    source.push_str(&format!("\n// ---- {} ----\n", BAKED_STAGE.file));
    source.push_str(BAKED_STAGE.source);
    (source, name, compile_options(arch, fast))
}

/// The precision prelude: the scalar type, the entry-point suffix and the bond kernels'
/// occupancy target.
pub fn prelude(precision: Precision) -> String {
    let real = match precision {
        Precision::F32 => "float",
        Precision::F64 => "double",
    };
    // Resident blocks of 256 threads per SM the bond kernels keep (a register cap of 64 in
    // f64, 48 in f32; `__launch_bounds__` in common.cuh).
    let min_blocks = match precision {
        Precision::F32 => 5,
        Precision::F64 => 4,
    };
    let mut text = String::new();
    for define in extra_defines() {
        text.push_str(&format!("#define {}\n", define.replacen('=', " ", 1)));
    }
    text.push_str(&format!(
        "#define PD_REAL {real}\n#define PD_SUFFIX _{}\n#ifndef PD_MIN_BLOCKS\n\
         #define PD_MIN_BLOCKS {min_blocks}\n#endif\n",
        precision.name()
    ));
    text
}

/// Extra kernel defines from `PERIDOT_KERNEL_DEFINES` (`NAME=VALUE` separated by spaces), a
/// knob for measuring kernel variants on the GPU without rebuilding (`scripts/gpu_perf.sh`);
/// names must be identifiers and values plain words, anything else is ignored.
fn extra_defines() -> Vec<String> {
    let ok = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '=')
    };
    std::env::var("PERIDOT_KERNEL_DEFINES")
        .map(|v| {
            v.split_whitespace()
                .filter(|w| ok(w) && w.starts_with("PD_"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `PERIDOT_KERNEL_DEFINES` turns the host-chosen variant `name` off (`name=0`): for
/// variants that change what the host uploads and launches (`PD_LATTICE`).
pub fn variant_off(name: &str) -> bool {
    extra_defines().iter().any(|d| *d == format!("{name}=0"))
}

/// Full source of a program holding `stages` in `precision`.
pub fn program_source(precision: Precision, stages: &[Stage]) -> String {
    let mut src = prelude(precision);
    src.push_str(COMMON);
    for s in stages {
        src.push_str(&format!("\n// ---- {} ----\n", s.file));
        src.push_str(s.source);
    }
    src
}

/// Name of the entry point `entry` in `precision` (`pmb_force_f64`).
pub fn entry_name(entry: &str, precision: Precision) -> String {
    format!("{entry}_{}", precision.name())
}

/// Compile `source` (named `name` in messages) to PTX for `arch` (`sm_90`), with
/// approximate division, square root and reciprocal square root where `fast_math` (the f32
/// programs: their error stays near one unit in the last place, far inside the f32
/// tolerance). The caller must have checked [`super::nvrtc_available`]. A failed compilation
/// returns [`Error::Kernel`] with NVRTC's log.
pub fn compile(source: &str, name: &str, arch: &str, fast_math: bool) -> Result<Ptx> {
    let opts = CompileOptions {
        options: compile_options(arch, fast_math),
        name: Some(name.to_string()),
        ..Default::default()
    };
    compile_ptx_with_opts(source, opts).map_err(|e| kernel_error(e, name, arch))
}

/// A failed compilation of `name` as [`Error::Kernel`], with NVRTC's log.
fn kernel_error(e: CompileError, name: &str, arch: &str) -> Error {
    let log = match &e {
        CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
        other => format!("{other:?}"),
    };
    Error::Kernel {
        name: name.to_string(),
        arch: arch.to_string(),
        log,
    }
}

/// Compile one stage alone in `precision` (what the kernel-compile test does per file).
pub fn compile_stage(stage: &Stage, precision: Precision, arch: &str) -> Result<Ptx> {
    let name = format!("{}[{}]", stage.file, precision.name());
    let fast = precision == Precision::F32;
    compile(&program_source(precision, &[*stage]), &name, arch, fast)
}

/// Compile every stage into one program in `precision` (what a backend loads).
pub fn compile_all(precision: Precision, arch: &str) -> Result<Ptx> {
    let (source, name, options) = program(precision, arch);
    let opts = CompileOptions {
        options,
        name: Some(name.clone()),
        ..Default::default()
    };
    compile_ptx_with_opts(source, opts).map_err(|e| kernel_error(e, &name, arch))
}

fn base_options(arch: &str) -> Vec<String> {
    vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()]
}

/// The NVRTC options of a program for `arch`, approximate arithmetic where `fast_math`.
pub fn compile_options(arch: &str, fast_math: bool) -> Vec<String> {
    let mut options = base_options(arch);
    if fast_math {
        // (cudarc's `use_fast_math` field passes only `--fmad=true`)
        options.push("--use_fast_math".into());
    }
    options
}

/// The program of every stage in `precision` as loaded by a backend: its source, name and
/// NVRTC options for `arch` (what [`compile_all`] compiles, and what the on-disk cache keys).
pub fn program(precision: Precision, arch: &str) -> (String, String, Vec<String>) {
    let name = format!("peridot_{}.cu", precision.name());
    let fast = precision == Precision::F32;
    let source = program_source(precision, STAGES);
    (source, name, compile_options(arch, fast))
}

/// NVRTC's `(major, minor)` version. The caller must have checked
/// [`super::nvrtc_available`].
pub fn nvrtc_version() -> Result<(i32, i32)> {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: two valid out-pointers; the library is loaded (checked by the caller).
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| Error::Kernel {
            name: "nvrtcVersion".into(),
            arch: String::new(),
            log: format!("{e:?}"),
        })?;
    Ok((major, minor))
}

/// Compile `source` with `options` to a device binary (CUBIN) for the real architecture the
/// options name (`--gpu-architecture=sm_90`): what the driver loads without compiling PTX
/// again, and what the on-disk cache keeps. The caller must have checked
/// [`super::nvrtc_available`]. A failed compilation returns [`Error::Kernel`] with NVRTC's
/// log.
pub fn compile_cubin(source: &str, name: &str, options: &[String]) -> Result<Vec<u8>> {
    let arch = options
        .iter()
        .find_map(|o| o.strip_prefix("--gpu-architecture="))
        .unwrap_or_default();
    let fail = |log: String| Error::Kernel {
        name: name.to_string(),
        arch: arch.to_string(),
        log,
    };
    let src = CString::new(source).map_err(|e| fail(e.to_string()))?;
    let cname = CString::new(name).map_err(|e| fail(e.to_string()))?;
    let prog = result::create_program(&src, Some(&cname)).map_err(|e| fail(format!("{e:?}")))?;
    // SAFETY: `prog` is a live program created above, destroyed once at the end and not
    // used after; the buffer handed to nvrtcGetCUBIN has the size NVRTC reported.
    let image = unsafe {
        let image = match result::compile_program(prog, options) {
            Ok(()) => {
                let mut size = 0usize;
                cudarc::nvrtc::sys::nvrtcGetCUBINSize(prog, &mut size)
                    .result()
                    .and_then(|()| {
                        let mut buf = vec![0u8; size];
                        cudarc::nvrtc::sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr().cast())
                            .result()
                            .map(|()| buf)
                    })
                    .map_err(|e| fail(format!("{e:?}")))
            }
            Err(_) => Err(fail(program_log(prog))),
        };
        let _ = result::destroy_program(prog);
        image
    };
    match image {
        Ok(buf) if buf.is_empty() => Err(fail(format!(
            "no device binary: the options name no real architecture ({options:?})"
        ))),
        other => other,
    }
}

/// NVRTC's log of `prog`.
///
/// # Safety
/// `prog` must be a live program.
unsafe fn program_log(prog: cudarc::nvrtc::sys::nvrtcProgram) -> String {
    // SAFETY: as this function's.
    unsafe { result::get_program_log(prog) }
        .map(|raw| {
            // SAFETY: NVRTC returns a NUL-terminated log.
            unsafe { CStr::from_ptr(raw.as_ptr()) }
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default()
}

/// The assembler's resource report (registers, stack, spills per entry point) of the program
/// of all stages in `precision` for `arch`: what sets occupancy, read without a GPU. The
/// caller must have checked [`super::nvrtc_available`].
pub fn resource_report(precision: Precision, arch: &str) -> Result<String> {
    let name = format!("peridot_{}.cu", precision.name());
    let fail = |log: String| Error::Kernel {
        name: name.clone(),
        arch: arch.to_string(),
        log,
    };
    let src = CString::new(program_source(precision, STAGES)).map_err(|e| fail(e.to_string()))?;
    let prog = result::create_program(&src, None).map_err(|e| fail(format!("{e:?}")))?;
    let mut options = compile_options(arch, precision == Precision::F32);
    options.push("--ptxas-options=--verbose".into());
    // SAFETY: `prog` is a live program created above; it is destroyed once below.
    let compiled = unsafe { result::compile_program(prog, &options) };
    // SAFETY: as above.
    let log = unsafe { program_log(prog) };
    // SAFETY: as above; not used after this.
    let _ = unsafe { result::destroy_program(prog) };
    compiled.map_err(|_| fail(log.clone()))?;
    Ok(log)
}
