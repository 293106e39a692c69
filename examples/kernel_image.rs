//! Writes the device binary (CUBIN) of each precision's kernel program for an architecture,
//! as the backends compile it, so its machine code can be read without a GPU
//! (`cuobjdump -sass FILE`). `PERIDOT_KERNEL_DEFINES` applies as in a run. With a model
//! (and `--set` overrides), also the baked PMB loop of its stencil where it has one
//! (`peridot_baked_f32_sm_90.cubin`, ...).
//!
//! `cargo run --release --example kernel_image -- OUT_DIR [sm_90] [MODEL [key=value]...]`

use peridot::backend::gpu::baked::baked_defines;
use peridot::backend::gpu::lattice::Stencil;
use peridot::gpu::kernels::{baked_program, compile_cubin, program};
use peridot::Precision;
use std::path::{Path, PathBuf};

fn main() {
    let mut args = std::env::args().skip(1);
    let out = PathBuf::from(
        args.next()
            .expect("usage: kernel_image OUT_DIR [ARCH] [MODEL]"),
    );
    let arch = args.next().unwrap_or_else(|| "sm_90".into());
    let model = args.next();
    let overrides: Vec<String> = args.collect();
    if !peridot::gpu::nvrtc_available() {
        eprintln!("NVRTC not found: set LD_LIBRARY_PATH to its library folder");
        std::process::exit(1);
    }
    std::fs::create_dir_all(&out).expect("create OUT_DIR");
    for precision in [Precision::F32, Precision::F64] {
        let (source, name, options) = program(precision, &arch);
        write(
            &out,
            &format!("peridot_{}_{arch}", precision.name()),
            &source,
            &name,
            &options,
        );
    }
    let Some(model) = model else {
        return;
    };
    let path = Path::new(&model);
    let model = peridot::model::load(path, &overrides).expect("load the model");
    let dir = path.parent().unwrap_or(Path::new("."));
    let body = peridot::geometry::build_body(&model, dir).expect("build the body");
    let Some(stencil) = Stencil::of_body(&model, &body) else {
        eprintln!("the body is not a full box lattice: no baked loop");
        return;
    };
    let linear = model.material.model == peridot::model::MaterialModel::PmbLinear;
    for precision in [Precision::F32, Precision::F64] {
        let defines = match precision {
            Precision::F32 => baked_defines::<f32>(&stencil, body.dx, body.dim(), linear),
            Precision::F64 => baked_defines::<f64>(&stencil, body.dx, body.dim(), linear),
        };
        let (source, name, options) = baked_program(precision, &arch, &defines);
        write(
            &out,
            &format!("peridot_baked_{}_{arch}", precision.name()),
            &source,
            &name,
            &options,
        );
    }
}

/// Compile `source` and write its image as `OUT/STEM.cubin`, or exit with the log.
fn write(out: &Path, stem: &str, source: &str, name: &str, options: &[String]) {
    match compile_cubin(source, name, options) {
        Ok(image) => {
            let path = out.join(format!("{stem}.cubin"));
            std::fs::write(&path, image).expect("write the image");
            println!("{}", path.display());
        }
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
