//! Every kernel in `kernels/` compiles with NVRTC for both precisions (arch sm_90, the H100
//! of `docs/gpu-validation.md`), each stage alone and all stages as the one program a backend
//! loads. NVRTC needs no GPU: CI gets it from the `nvidia-cuda-nvrtc` wheel (`.ci/run`).
//! Where the library cannot be opened the test says `skipped: NVRTC library not found` and
//! passes; it never reaches cudarc then (cudarc would panic).

use peridot::backend::gpu::baked::baked_defines;
use peridot::backend::gpu::lattice::Stencil;
use peridot::gpu::kernels::{
    baked_program, compile, compile_all, compile_cubin, compile_stage, entry_name, resource_report,
    BAKED_STAGE, HEADERS, STAGES, STAGE_HEADERS,
};
use peridot::{Error, Precision};
use std::io::Write;

const ARCH: &str = "sm_90";

/// A line on the terminal even when the harness captures test output.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The NVRTC library name, or `None` after saying the test is skipped.
fn nvrtc() -> Option<&'static str> {
    let lib = peridot::gpu::detect::nvrtc_library();
    if lib.is_none() {
        say("skipped: NVRTC library not found");
    }
    lib
}

#[test]
fn every_kernel_compiles_in_both_precisions() {
    let Some(lib) = nvrtc() else {
        return;
    };
    say(&format!("NVRTC: {lib}"));
    // The sources are compiled in; the folder is read only to check that none is left out
    // (it is absent where the test binary was carried to another machine).
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels");
    let files: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|f| f.ends_with(".cu") || f.ends_with(".cuh"))
                .collect()
        })
        .unwrap_or_else(|_| {
            say(&format!(
                "{dir} not found: not checking that every file is listed"
            ));
            Vec::new()
        });
    for f in &files {
        let listed = match f.ends_with(".cuh") {
            true => HEADERS.contains(&f.as_str()) || STAGE_HEADERS.contains(&f.as_str()),
            false => STAGES.iter().any(|s| s.file == f) || BAKED_STAGE.file == f,
        };
        assert!(
            listed,
            "kernels/{f} is not listed in peridot::gpu::kernels (STAGES, HEADERS)"
        );
    }
    let mut failures = Vec::new();
    for precision in [Precision::F32, Precision::F64] {
        for stage in STAGES.iter().chain([&BAKED_STAGE]) {
            match compile_stage(stage, precision, ARCH) {
                Ok(ptx) => {
                    let text = ptx.to_src();
                    for entry in stage.entries {
                        let name = entry_name(entry, precision);
                        assert!(
                            text.contains(&format!(".entry {name}(")),
                            "{}: no entry point {name} in the PTX",
                            stage.file
                        );
                    }
                    println!("compiled {} [{}]", stage.file, precision.name());
                }
                Err(e) => failures.push(e.to_string()),
            }
        }
        if let Err(e) = compile_all(precision, ARCH) {
            failures.push(e.to_string());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A source that does not compile gives `Error::Kernel` carrying NVRTC's log, which names the
/// line, rather than a panic.
#[test]
fn a_compile_error_keeps_the_nvrtc_log() {
    if nvrtc().is_none() {
        return;
    }
    let src = "extern \"C\" __global__ void broken_f64(double* x) {\n  x[0] = undefined_name;\n}\n";
    match compile(src, "broken.cu", ARCH, false) {
        Err(Error::Kernel { name, arch, log }) => {
            assert_eq!((name.as_str(), arch.as_str()), ("broken.cu", ARCH));
            assert!(log.contains("undefined_name"), "log: {log}");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("a broken source compiled"),
    }
}

/// The assembler's registers, stack and spills per kernel, printed for the record (what sets
/// occupancy on the GPU); the bond kernels must not spill.
#[test]
fn resource_report_shows_no_spills() {
    if nvrtc().is_none() {
        return;
    }
    for precision in [Precision::F32, Precision::F64] {
        let log = resource_report(precision, ARCH).expect("program compiles");
        let mut entry = String::new();
        for line in log.lines() {
            if let Some(rest) = line.split("Compiling entry function '").nth(1) {
                entry = rest.split('\'').next().unwrap_or("").to_string();
            } else if line.contains("Used") {
                say(&format!(
                    "{entry:24} {}",
                    line.trim_start_matches("ptxas info    : ")
                ));
            } else if line.contains("spill stores") {
                assert!(
                    line.contains(" 0 bytes spill stores"),
                    "{entry} spills: {line}"
                );
            }
        }
    }
}

/// The device binary a backend loads (and the on-disk cache keeps) compiles for both
/// precisions: an ELF image from NVRTC, no GPU needed; and NVRTC reports a version.
#[test]
fn program_compiles_to_a_device_binary() {
    if nvrtc().is_none() {
        return;
    }
    let version = peridot::gpu::kernels::nvrtc_version().expect("NVRTC version");
    say(&format!("NVRTC version {}.{}", version.0, version.1));
    assert!(version.0 >= 12, "{version:?}");
    for precision in [Precision::F32, Precision::F64] {
        let (source, name, options) = peridot::gpu::kernels::program(precision, ARCH);
        let image = peridot::gpu::kernels::compile_cubin(&source, &name, &options)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(image.starts_with(b"\x7fELF"), "{name}: not an ELF image");
        assert!(image.len() > 10_000, "{name}: {} bytes", image.len());
    }
    // a broken source is an error carrying NVRTC's log, not a panic
    let options = peridot::gpu::kernels::compile_options(ARCH, false);
    let e =
        peridot::gpu::kernels::compile_cubin("this is not C", "broken.cu", &options).unwrap_err();
    assert!(matches!(e, Error::Kernel { .. }), "{e}");
}

/// The baked PMB loop (`backend/gpu/baked.rs`) compiles for the stencils of a 3D and a 2D
/// box lattice (122 and 28 slots at horizon 3.015 dx), nonlinear and linearized, in both
/// precisions, to a device binary with its one entry point.
#[test]
fn baked_loop_compiles_for_lattice_stencils() {
    if nvrtc().is_none() {
        return;
    }
    let boxes = [
        (
            "3d",
            "box = [{ min = [0, 0, 0], max = [0.01, 0.01, 0.01] }]",
            "",
            122,
        ),
        (
            "plane-stress",
            "box = [{ min = [0, 0], max = [0.01, 0.01] }]",
            "thickness = 1e-3\n",
            28,
        ),
    ];
    for (dim, geometry, thick, slots) in boxes {
        let text = format!(
            "name = \"b\"\n[material]\nmodel = \"pmb\"\nyoungs_modulus = 70e9\ndensity = 2400\n\
             [discretization]\ndimension = \"{dim}\"\n{thick}dx = 1e-3\nhorizon_factor = 3.015\n\
             [geometry]\n{geometry}\n[solver]\nkind = \"explicit\"\nsteps = 1\n"
        );
        let model = peridot::model::parse(&text, "baked.toml", &[]).unwrap();
        let body = peridot::geometry::build_body(&model, std::path::Path::new(".")).unwrap();
        let stencil = Stencil::of_body(&model, &body).expect("a full box lattice");
        for linearized in [false, true] {
            for precision in [Precision::F32, Precision::F64] {
                let defines = match precision {
                    Precision::F32 => {
                        baked_defines::<f32>(&stencil, body.dx, body.dim(), linearized)
                    }
                    Precision::F64 => {
                        baked_defines::<f64>(&stencil, body.dx, body.dim(), linearized)
                    }
                };
                let lines = defines
                    .lines()
                    .filter(|l| l.trim_start().starts_with("S("))
                    .count();
                assert_eq!(lines, slots, "{dim}: slot lines");
                let (source, name, options) = baked_program(precision, ARCH, &defines);
                let image =
                    compile_cubin(&source, &name, &options).unwrap_or_else(|e| panic!("{e}"));
                assert!(image.starts_with(b"\x7fELF"), "{name}: not an ELF image");
                let entry = entry_name(BAKED_STAGE.entries[0], precision);
                assert!(
                    image.windows(entry.len()).any(|w| w == entry.as_bytes()),
                    "{entry}"
                );
            }
        }
        say(&format!("baked loop compiled: {dim}, {slots} slots"));
    }
}
