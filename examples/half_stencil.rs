//! Whether computing each bond once (Newton's third law) would make the 3D f32 lattice loop
//! faster on the GPU: the kernels of `examples/half_stencil.cu` on an `N^3` box lattice
//! (spacing 1, horizon 3.015, 122 bonds a node, PMB nonlinear, nothing breaks), timed and
//! checked against one thread per node over the whole stencil (`full_ref`). Prints the
//! node-steps per second of each form (a step here is one force evaluation) and the largest
//! difference of the half form's forces from the reference over the largest force.
//!
//! ```text
//! cargo run --release --example half_stencil -- [N] [REPS]
//! ```
//! `N`: nodes along each edge, a multiple of 32 (default 160: 4.1 M nodes); `REPS`: timed
//! evaluations, the fastest kept (default 30). `TILE=32,4,4` (the default) sets the tile:
//! 32 nodes along x, each of the others at least 3 (the horizon). Needs a GPU and NVRTC.

use cudarc::driver::sys::CUfunction_attribute_enum;
use cudarc::driver::{CudaContext, DeviceRepr, LaunchConfig, PushKernelArg};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};
use std::time::Instant;

const SOURCE: &str = include_str!("half_stencil.cu");
const HALF_MAX: usize = 64;
const FULL_MAX: usize = 128;
const R: i32 = 3;
const HORIZON: f64 = 3.015;

#[repr(C)]
#[derive(Clone, Copy)]
struct HalfSlots {
    xi: [[f32; HALF_MAX]; 3],
    x: [f32; HALF_MAX],
    rx: [f32; HALF_MAX],
    so: [i32; HALF_MAX],
    k: i32,
}
unsafe impl DeviceRepr for HalfSlots {}

#[repr(C)]
#[derive(Clone, Copy)]
struct FullSlots {
    step: [[i32; 3]; FULL_MAX],
    xi: [[f32; 3]; FULL_MAX],
    x: [f32; FULL_MAX],
    rx: [f32; FULL_MAX],
    k: i32,
}
unsafe impl DeviceRepr for FullSlots {}

/// The lattice steps within the horizon, less the node itself.
fn stencil() -> Vec<[i32; 3]> {
    let mut out = Vec::new();
    for c in -R..=R {
        for b in -R..=R {
            for a in -R..=R {
                let r2 = (a * a + b * b + c * c) as f64;
                if r2 > 0.0 && r2.sqrt() <= HORIZON {
                    out.push([a, b, c]);
                }
            }
        }
    }
    out
}

fn forward(s: &[i32; 3]) -> bool {
    s[2] > 0 || (s[2] == 0 && (s[1] > 0 || (s[1] == 0 && s[0] > 0)))
}

fn geometry(s: &[i32; 3]) -> ([f32; 3], f32, f32) {
    let x = ((s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) as f64).sqrt();
    (s.map(|v| v as f32), x as f32, (1.0 / x) as f32)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let edge: usize = args.next().map_or(Ok(160), |a| a.parse())?;
    let reps: usize = args.next().map_or(Ok(30), |a| a.parse())?;
    assert!(edge % 32 == 0, "N must be a multiple of 32");
    let tile_dims: Vec<usize> = std::env::var("TILE")
        .unwrap_or_else(|_| "32,4,4".into())
        .split(',')
        .map(|v| v.parse())
        .collect::<Result<_, _>>()?;
    let [tx, ty, tz] = tile_dims[..] else {
        return Err("TILE: three numbers".into());
    };
    assert!(
        tx == 32 && ty >= 3 && tz >= 3 && tx * ty * tz <= 1024,
        "TILE: 32,>=3,>=3"
    );
    let source = format!("#define TX {tx}\n#define TY {ty}\n#define TZ {tz}\n{SOURCE}");
    let (rx_, ry_, rz_) = (tx + 6, ty + 6, tz + 3);
    let rn = rx_ * ry_ * rz_;
    let n = edge * edge * edge;
    let all = stencil();
    let half: Vec<_> = all.iter().copied().filter(forward).collect();
    println!(
        "{n} nodes, {} bonds a node, {} forward slots",
        all.len(),
        half.len()
    );

    let ctx = CudaContext::new(0)?;
    let stream = ctx.default_stream();
    println!("tile {tx} x {ty} x {tz}");
    let ptx = compile_ptx_with_opts(
        source,
        CompileOptions {
            arch: Some("sm_90"),
            options: vec!["--use_fast_math".into(), "--std=c++17".into()],
            ..Default::default()
        },
    )?;
    let module = ctx.load_module(ptx)?;
    let tile = module.load_function("half_tile")?;
    let gather = module.load_function("half_gather")?;
    let full = module.load_function("full_ref")?;
    let shared = (6 * rn * 4) as i32;
    tile.set_attribute(
        CUfunction_attribute_enum::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        shared,
    )?;

    // an affine strain of 1e-4 plus a small deterministic ripple (nothing breaks)
    let u: Vec<f32> = (0..n)
        .flat_map(|i| {
            let p = [i % edge, (i / edge) % edge, i / (edge * edge)].map(|v| v as f64);
            (0..3).map(move |k| {
                (1e-4 * p[k] + 1e-6 * ((p[0] * 0.37 + p[1] * 0.11 + p[2] * 0.23 + k as f64).sin()))
                    as f32
            })
        })
        .collect();
    // forward slots' status: set where the neighbour is in the box
    let k = half.len();
    let mut status = vec![0u32; n / 32 * k];
    for i in 0..n {
        let p = [i % edge, (i / edge) % edge, i / (edge * edge)].map(|v| v as i32);
        for (m, s) in half.iter().enumerate() {
            let q = [p[0] + s[0], p[1] + s[1], p[2] + s[2]];
            if q.iter().all(|&v| v >= 0 && v < edge as i32) {
                status[i / 32 * k + m] |= 1 << (i % 32);
            }
        }
    }
    let mut hs = HalfSlots {
        xi: [[0.0; HALF_MAX]; 3],
        x: [0.0; HALF_MAX],
        rx: [0.0; HALF_MAX],
        so: [0; HALF_MAX],
        k: k as i32,
    };
    for (m, s) in half.iter().enumerate() {
        let (xi, x, r) = geometry(s);
        for c in 0..3 {
            hs.xi[c][m] = xi[c];
        }
        (hs.x[m], hs.rx[m]) = (x, r);
        hs.so[m] = s[0] + rx_ as i32 * (s[1] + ry_ as i32 * s[2]);
    }
    let mut fs = FullSlots {
        step: [[0; 3]; FULL_MAX],
        xi: [[0.0; 3]; FULL_MAX],
        x: [0.0; FULL_MAX],
        rx: [0.0; FULL_MAX],
        k: all.len() as i32,
    };
    for (m, s) in all.iter().enumerate() {
        let (xi, x, r) = geometry(s);
        (fs.step[m], fs.xi[m], fs.x[m], fs.rx[m]) = (*s, xi, x, r);
    }

    let du = stream.clone_htod(&u)?;
    let dstatus = stream.clone_htod(&status)?;
    let blocks = [edge / tx, edge.div_ceil(ty), edge.div_ceil(tz)];
    let mut partial = stream.alloc_zeros::<f32>(3 * n)?;
    let mut halo = stream.alloc_zeros::<f32>(blocks.iter().product::<usize>() * 3 * rn)?;
    let mut f_half = stream.alloc_zeros::<f32>(3 * n)?;
    let mut f_ref = stream.alloc_zeros::<f32>(3 * n)?;
    let e = edge as i32;
    let (s_break, weight) = (1.0f32, 1.0f32);

    let tile_cfg = LaunchConfig {
        grid_dim: (blocks[0] as u32, blocks[1] as u32, blocks[2] as u32),
        block_dim: ((tx * ty * tz) as u32, 1, 1),
        shared_mem_bytes: shared as u32,
    };
    let flat = LaunchConfig {
        grid_dim: (n.div_ceil(256) as u32, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    };
    let time = |what: &str, f: &mut dyn FnMut() -> Result<(), Box<dyn std::error::Error>>| {
        let mut best = f64::INFINITY;
        for _ in 0..reps {
            let t0 = Instant::now();
            f().unwrap();
            stream.synchronize().unwrap();
            best = best.min(t0.elapsed().as_secs_f64());
        }
        println!(
            "{what:28} {:9.3} ms  {:.3e} node-steps/s",
            best * 1e3,
            n as f64 / best
        );
        best
    };
    let s = stream.clone();
    let mut run_ref = || -> Result<(), Box<dyn std::error::Error>> {
        let mut b = s.launch_builder(&full);
        b.arg(&du)
            .arg(&mut f_ref)
            .arg(&e)
            .arg(&e)
            .arg(&e)
            .arg(&s_break)
            .arg(&weight)
            .arg(&fs);
        unsafe { b.launch(flat) }?;
        Ok(())
    };
    time("full stencil (reference)", &mut run_ref);
    let s = stream.clone();
    let mut run_half = |with_gather: bool| -> Result<(), Box<dyn std::error::Error>> {
        let mut b = s.launch_builder(&tile);
        b.arg(&du).arg(&dstatus).arg(&mut partial).arg(&mut halo);
        b.arg(&e).arg(&e).arg(&e).arg(&s_break).arg(&hs);
        unsafe { b.launch(tile_cfg) }?;
        if with_gather {
            let mut g = s.launch_builder(&gather);
            g.arg(&partial)
                .arg(&halo)
                .arg(&mut f_half)
                .arg(&e)
                .arg(&e)
                .arg(&e)
                .arg(&weight);
            unsafe { g.launch(flat) }?;
        }
        Ok(())
    };
    time("half: tile kernel alone", &mut || run_half(false));
    time("half: tile + gather", &mut || run_half(true));

    let a = stream.clone_dtoh(&f_ref)?;
    let b = stream.clone_dtoh(&f_half)?;
    let scale = a.iter().fold(0f32, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(&b)
        .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
    println!(
        "largest force {scale:.4e}, largest difference {diff:.3e} ({:.2e} of it)",
        diff / scale
    );
    Ok(())
}
