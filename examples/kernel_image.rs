//! Writes the device binary (CUBIN) of each precision's kernel program for an architecture,
//! as the backends compile it, so its machine code can be read without a GPU
//! (`cuobjdump -sass FILE`). `PERIDOT_KERNEL_DEFINES` applies as in a run.
//!
//! `cargo run --release --example kernel_image -- OUT_DIR [sm_90]`

use peridot::gpu::kernels::{compile_cubin, program};
use peridot::Precision;

fn main() {
    let mut args = std::env::args().skip(1);
    let out = std::path::PathBuf::from(args.next().expect("usage: kernel_image OUT_DIR [ARCH]"));
    let arch = args.next().unwrap_or_else(|| "sm_90".into());
    if !peridot::gpu::nvrtc_available() {
        eprintln!("NVRTC not found: set LD_LIBRARY_PATH to its library folder");
        std::process::exit(1);
    }
    std::fs::create_dir_all(&out).expect("create OUT_DIR");
    for precision in [Precision::F32, Precision::F64] {
        let (source, name, options) = program(precision, &arch);
        match compile_cubin(&source, &name, &options) {
            Ok(image) => {
                let path = out.join(format!("peridot_{}_{arch}.cubin", precision.name()));
                std::fs::write(&path, image).expect("write the image");
                println!("{}", path.display());
            }
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
    }
}
