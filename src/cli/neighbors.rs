//! `peridot neighbors`: the neighbour search alone, timed. Builds the body of a model (after
//! the memory guard and with the checks `validate`, `info` and `run` make), runs
//! the search on the device and/or the CPU (`--search device,cpu`; by default on the device
//! where a GPU is usable, else on the CPU), prints each one's phase
//! times, the family sizes and the memory, and with both checks that they give the same
//! families exactly. The benchmark behind the device-search figures of
//! `docs/gpu-validation.md`.

use super::ModelArgs;
use peridot::backend::BackendKind;
use peridot::gpu::neighbors::{device_families_with, DeviceSearch, Download};
use peridot::neighbors::{cell_list_families, Families};
use peridot::setup::memory::{self, Estimate, ModelCounts};
use peridot::Precision;
use std::time::Instant;

/// Where a search runs (`--search`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SearchKind {
    /// The device where a CUDA device is usable, the CPU otherwise (said on stderr).
    Auto,
    /// The cell list on the CUDA device.
    Device,
    /// The cell list on the CPU.
    Cpu,
}

/// How the device families come back (`--download`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DownloadKind {
    /// Through two pinned buffers, copied out by all host threads.
    Staged,
    /// One copy into pageable memory.
    Pageable,
}

/// Parsed `peridot neighbors` options.
pub struct NeighborArgs {
    pub search: Vec<SearchKind>,
    pub repeat: usize,
    pub download: DownloadKind,
    pub precision: Precision,
}

const GIB: f64 = (1u64 << 30) as f64;

fn print_device(k: usize, d: &DeviceSearch) {
    let t = &d.times;
    println!(
        "device search {k}: {:.3} s = grid {:.3} + upload {:.3} + binning {:.3} + count {:.3} \
         + fill {:.3} + download {:.3} (host copy {:.3}); kernels {:.3} s; device memory \
         {:.2} GiB; largest family {}, {} sorted in global memory",
        t.total(),
        t.grid,
        t.upload,
        t.binning,
        t.count,
        t.fill,
        t.download,
        t.download_copy,
        t.device(),
        d.device_bytes as f64 / GIB,
        d.largest_family,
        d.sorted_in_global
    );
}

fn describe(f: &Families) -> String {
    let (min, mean, max) = f.size_stats();
    format!(
        "{} bonds (family size min {min}, mean {mean:.2}, max {max}), {:.2} GiB on the host",
        f.bonds(),
        Families::bytes_for(f.nodes(), f.bonds()) as f64 / GIB
    )
}

pub fn neighbors(model: &ModelArgs, args: NeighborArgs) -> anyhow::Result<()> {
    if args.repeat == 0 {
        anyhow::bail!("--repeat: must be at least 1");
    }
    let t = Instant::now();
    let (m, dir) = super::load_model(model)?;
    // the memory guard, then the checks `validate`, `info` and `run` make on the body
    let lists = if args.search.len() > 1 { 2 } else { 1 };
    let counts = ModelCounts::of(&m, &dir, Precision::F64);
    let (n, bonds) = (counts.nodes, counts.bonds());
    let families = Families::bytes_for(n as usize, bonds as usize) as f64;
    let held = Estimate {
        what: format!(
            "peridot neighbors ({lists} family list{})",
            if lists > 1 { "s" } else { "" }
        ),
        nodes: n,
        bonds: lists as f64 * bonds,
        // positions and volumes, and each search's families (kept to compare them)
        host: n * memory::BODY_BYTES_PER_NODE as f64 + lists as f64 * families,
        device: None,
    };
    memory::check_host(&held, model.memory_limit_bytes()?, |cap| {
        vec![counts.coarser_dx(held.host, cap)]
    })?;
    let body = peridot::setup::checked_body(&m, &dir)?;
    let radius =
        peridot::material::family_radius(m.discretization.partial_volume, body.delta, body.dx);
    println!(
        "{}: {}D, {} nodes, dx {:.4e} m, radius {:.4e} m ({:.4} dx); body built in {:.3} s",
        m.name.as_deref().unwrap_or("model"),
        body.dim(),
        body.len(),
        body.dx,
        radius,
        radius / body.dx,
        t.elapsed().as_secs_f64()
    );
    let download = match args.download {
        DownloadKind::Staged => Download::Staged,
        DownloadKind::Pageable => Download::Pageable,
    };
    let mut device: Option<Families> = None;
    let mut cpu: Option<Families> = None;
    for kind in &args.search {
        let kind = match kind {
            SearchKind::Auto => {
                let (chosen, why) = peridot::backend::resolve_auto(args.precision);
                let kind = match chosen {
                    BackendKind::CpuLoop => SearchKind::Cpu,
                    _ => SearchKind::Device,
                };
                let name = if kind == SearchKind::Cpu {
                    "cpu"
                } else {
                    "device"
                };
                eprintln!("search auto: {why}; using {name}");
                kind
            }
            kind => *kind,
        };
        match kind {
            SearchKind::Auto => unreachable!("resolved above"),
            SearchKind::Device => {
                let t = Instant::now();
                let gpu = peridot::gpu::Gpu::get()?;
                gpu.module(args.precision)?;
                println!(
                    "{} ({}): kernel program ({}) ready in {:.3} s",
                    gpu.name,
                    gpu.arch,
                    args.precision.name(),
                    t.elapsed().as_secs_f64()
                );
                for k in 1..=args.repeat {
                    drop(device.take()); // free the previous families before the next search
                    let d = device_families_with(
                        &gpu,
                        args.precision,
                        &body.positions,
                        body.dim(),
                        radius,
                        download,
                    )?;
                    print_device(k, &d);
                    device = Some(d.families);
                }
                println!("device families: {}", describe(device.as_ref().unwrap()));
            }
            SearchKind::Cpu => {
                for k in 1..=args.repeat {
                    drop(cpu.take());
                    let t = Instant::now();
                    let f = cell_list_families(&body.positions, body.dim(), radius);
                    println!(
                        "cpu search {k}: {:.3} s ({} threads)",
                        t.elapsed().as_secs_f64(),
                        rayon::current_num_threads()
                    );
                    cpu = Some(f);
                }
                println!("cpu families: {}", describe(cpu.as_ref().unwrap()));
            }
        }
    }
    if let (Some(d), Some(c)) = (&device, &cpu) {
        if d == c {
            println!(
                "device == cpu: identical ({} offsets, {} neighbour indices)",
                c.offsets.len(),
                c.neighbors.len()
            );
        } else {
            let first = (0..c.nodes().min(d.nodes()))
                .find(|&i| d.family(i) != c.family(i))
                .map_or("none".to_string(), |i| i.to_string());
            anyhow::bail!(
                "device and cpu families differ: {} vs {} bonds, first different node {first}",
                d.bonds(),
                c.bonds()
            );
        }
    }
    Ok(())
}
