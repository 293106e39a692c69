//! The CUDA kernel sources of `kernels/` and their run-time compilation by NVRTC.
//!
//! Each stage is one `.cu` file; NVRTC resolves no `#include` of our own files, so a source is
//! the precision prelude (`PD_REAL`, `PD_SUFFIX`), then `common.cuh`, then the stage(s).
//! Entry points are named `stage_f32` / `stage_f64`. Compilation errors keep NVRTC's log.

use crate::{Error, Precision, Result};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions, Ptx};

/// The header every stage is compiled with.
pub const COMMON: &str = include_str!("../../kernels/common.cuh");

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

/// Every stage, in the order they are concatenated into one program.
pub const STAGES: &[Stage] = &[
    Stage {
        file: "pmb_force.cu",
        source: include_str!("../../kernels/pmb_force.cu"),
        entries: &["pmb_force"],
    },
    Stage {
        file: "lps_dilatation.cu",
        source: include_str!("../../kernels/lps_dilatation.cu"),
        entries: &["lps_dilatation"],
    },
    Stage {
        file: "lps_force.cu",
        source: include_str!("../../kernels/lps_force.cu"),
        entries: &["lps_force"],
    },
    Stage {
        file: "damage.cu",
        source: include_str!("../../kernels/damage.cu"),
        entries: &["break_bonds", "damage", "strain_energy"],
    },
    Stage {
        file: "leapfrog.cu",
        source: include_str!("../../kernels/leapfrog.cu"),
        entries: &[
            "kick",
            "drift",
            "accelerate_kick",
            "apply_conditions",
            "max_abs",
        ],
    },
];

/// The precision prelude: the scalar type and the entry-point suffix.
pub fn prelude(precision: Precision) -> String {
    let real = match precision {
        Precision::F32 => "float",
        Precision::F64 => "double",
    };
    format!(
        "#define PD_REAL {real}\n#define PD_SUFFIX _{}\n",
        precision.name()
    )
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

/// Compile `source` (named `name` in messages) to PTX for `arch` (`sm_90`). The caller must
/// have checked [`super::nvrtc_available`]. A failed compilation returns [`Error::Kernel`]
/// with NVRTC's log.
pub fn compile(source: &str, name: &str, arch: &str) -> Result<Ptx> {
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some(name.to_string()),
        ..Default::default()
    };
    compile_ptx_with_opts(source, opts).map_err(|e| {
        let log = match &e {
            CompileError::CompileError { log, .. } => log.to_string_lossy().into_owned(),
            other => format!("{other:?}"),
        };
        Error::Kernel {
            name: name.to_string(),
            arch: arch.to_string(),
            log,
        }
    })
}

/// Compile one stage alone in `precision` (what the kernel-compile test does per file).
pub fn compile_stage(stage: &Stage, precision: Precision, arch: &str) -> Result<Ptx> {
    let name = format!("{}[{}]", stage.file, precision.name());
    compile(&program_source(precision, &[*stage]), &name, arch)
}

/// Compile every stage into one program in `precision` (what a backend loads).
pub fn compile_all(precision: Precision, arch: &str) -> Result<Ptx> {
    let name = format!("peridot_{}.cu", precision.name());
    compile(&program_source(precision, STAGES), &name, arch)
}
