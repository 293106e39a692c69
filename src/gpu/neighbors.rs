//! The neighbour search on the device: the cell-linked list of `neighbors/cell_list.rs` as
//! NVRTC kernels (`kernels/cell_bin.cu`, `scan.cu`, `neighbor_search.cu`), returning the same
//! [`Families`] as [`cell_list_families`](crate::neighbors::cell_list_families), exactly:
//! the same pairs (the host's predicate `within_radius` in the host's f64 arithmetic, without
//! fused multiply-adds), each family sorted ascending, the node itself left out.
//!
//! Phases (each timed, the device ones each ending in a synchronization):
//! 1. grid (host): bounding box and the cell grid of the CPU search, cells of edge >= radius;
//! 2. upload: the positions (f64, m) and the work buffers;
//! 3. binning: cell of every node and count per cell, exclusive scan, scatter of the node
//!    indices and positions into cell order;
//! 4. count: pass 1, one warp per node counts its family over the `3^d` cells around it;
//!    exclusive scan of the counts into the CSR offsets;
//! 5. fill: pass 2 writes each family, sorted (in shared memory, or for families of more
//!    than 512 by one block in global memory);
//! 6. download: offsets and neighbour indices to the host.
//!
//! Device memory is checked before it is taken: the free bytes against what each half of the
//! search holds; too few is an error that says the bytes needed and free. The host receives
//! [`host_bytes`] (8 per node and 4 per bond), as from the CPU search.

use super::device::{driver_error, Gpu};
use crate::neighbors::cell_list::Grid;
use crate::neighbors::{family_radius_squared, Families};
use crate::{Error, Precision, Result};
use cudarc::driver::{CudaFunction, CudaSlice, DevicePtr, DeviceRepr, ValidAsZeroBits};
use rayon::prelude::*;
use std::time::Instant;

/// Kernel parameters of the binning and search kernels; mirrors `NeighborParams` of
/// `kernels/cell_grid.cuh` field by field (change both). Pointers are device addresses.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct NeighborParams {
    positions: u64,
    cell: u64,
    rank: u64,
    cell_start: u64,
    sorted_index: u64,
    sorted_pos: u64,
    offsets: u64,
    neighbors: u64,
    oversize: u64,
    stats: u64,
    lo: [f64; 3],
    inv: [f64; 3],
    cells: [u64; 3],
    r2: f64,
    n: u32,
    dim: i32,
}

/// Parameters of `scan_blocks` / `scan_add` (`kernels/scan.cu`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct ScanParams {
    data: u64,
    sums: u64,
    len: u64,
}

// SAFETY: plain `#[repr(C)]` structs of integers and floats, laid out as the kernels read them.
unsafe impl DeviceRepr for NeighborParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for ScanParams {}

/// Values one block of `scan_blocks` scans (256 threads x `SCAN_ITEMS`).
const SCAN_PER_BLOCK: usize = 2048;
/// Threads per block of every launch ([`Gpu::launch`]); the search runs a warp per node.
const BLOCK: usize = 256;
/// Most nodes: cell indices (at most `2 n + 8` cells) must fit in 32 bits.
pub const MAX_NODES: usize = (1 << 31) - 16;
/// Neighbour indices per pinned staging buffer of the download (64 MiB).
const STAGE: usize = 16 << 20;

/// How the neighbour indices come back to the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Download {
    /// Through two pinned buffers, copied into the result by all host threads while the next
    /// buffer transfers.
    #[default]
    Staged,
    /// One copy into pageable memory (the driver stages it).
    Pageable,
}

/// Seconds per phase of the device search.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SearchTimes {
    /// Bounding box and cell grid on the host.
    pub grid: f64,
    /// Positions to the device, work buffers allocated.
    pub upload: f64,
    /// Cell hash and count, scan, scatter into cell order.
    pub binning: f64,
    /// Pass 1 (family sizes) and the scan into row offsets.
    pub count: f64,
    /// Pass 2 (families written and sorted).
    pub fill: f64,
    /// Offsets and neighbour indices to the host.
    pub download: f64,
    /// Of `download`: copying out of the pinned buffers into the result (the first touch of
    /// its pages included); 0 for the pageable download.
    pub download_copy: f64,
}

impl SearchTimes {
    /// Seconds of the kernels: binning, count and fill.
    pub fn device(&self) -> f64 {
        self.binning + self.count + self.fill
    }
    /// Seconds of every phase.
    pub fn total(&self) -> f64 {
        self.grid + self.upload + self.device() + self.download
    }
}

/// The families found on the device, with what the search took.
#[derive(Debug, Clone)]
pub struct DeviceSearch {
    pub families: Families,
    pub times: SearchTimes,
    /// Most device memory the search held at once, bytes.
    pub device_bytes: usize,
    /// Largest family.
    pub largest_family: usize,
    /// Families too large for a warp's shared row, sorted in global memory instead.
    pub sorted_in_global: usize,
}

/// Device bytes of the binning half (positions in both orders, cell, rank and slot arrays,
/// cell starts, counts): `n` nodes, `cells` cells.
pub fn binning_bytes(n: usize, cells: usize) -> usize {
    24 * n + 4 * n + 4 * n + 8 * (cells + 1) + 4 * n + 24 * n + 8 * (n + 1) + scan_bytes(cells + 1)
}

/// Device bytes of the search half: slot arrays, cell starts, offsets and the `bonds`
/// neighbour indices (plus the oversize list, at most `n`).
pub fn search_bytes(n: usize, cells: usize, bonds: usize, oversize: usize) -> usize {
    4 * n + 24 * n + 8 * (cells + 1) + 8 * (n + 1) + 4 * bonds + 4 * oversize + scan_bytes(n + 1)
}

/// Host bytes of the families of `n` nodes and `bonds` bonds.
pub fn host_bytes(n: usize, bonds: usize) -> usize {
    8 * (n + 1) + 4 * bonds
}

/// Block totals held by the recursive scan of `len` values.
fn scan_bytes(len: usize) -> usize {
    let mut total = 0;
    let mut len = len;
    while len > SCAN_PER_BLOCK {
        len = len.div_ceil(SCAN_PER_BLOCK);
        total += 8 * len;
    }
    total
}

fn error(message: String) -> Error {
    Error::Backend {
        backend: "gpu neighbour search".into(),
        message,
    }
}

fn gib(bytes: usize) -> String {
    format!(
        "{bytes} bytes ({:.2} GiB)",
        bytes as f64 / (1u64 << 30) as f64
    )
}

/// The kernels of the search, from the program of `precision` (the search itself is f64).
struct Kernels {
    cell_count: CudaFunction,
    cell_scatter: CudaFunction,
    scan_blocks: CudaFunction,
    scan_add: CudaFunction,
    neighbor_count: CudaFunction,
    neighbor_fill: CudaFunction,
    neighbor_sort_rows: CudaFunction,
}

impl Kernels {
    fn load(gpu: &Gpu, precision: Precision) -> Result<Kernels> {
        let f = |name: &str| gpu.function(precision, name);
        Ok(Kernels {
            cell_count: f("cell_count")?,
            cell_scatter: f("cell_scatter")?,
            scan_blocks: f("scan_blocks")?,
            scan_add: f("scan_add")?,
            neighbor_count: f("neighbor_count")?,
            neighbor_fill: f("neighbor_fill")?,
            neighbor_sort_rows: f("neighbor_sort_rows")?,
        })
    }
}

/// The search's view of the device.
struct Search<'a> {
    gpu: &'a Gpu,
    k: Kernels,
}

impl Search<'_> {
    fn alloc<T: DeviceRepr>(&self, len: usize) -> Result<CudaSlice<T>> {
        // SAFETY: every buffer is written by a kernel or a copy before it is read.
        unsafe { self.gpu.stream().alloc::<T>(len.max(1)) }.map_err(driver_error)
    }

    fn zeros<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<T>> {
        self.gpu
            .stream()
            .alloc_zeros::<T>(len.max(1))
            .map_err(driver_error)
    }

    fn addr<T>(&self, s: &CudaSlice<T>) -> u64 {
        let (p, _sync) = s.device_ptr(self.gpu.stream());
        p
    }

    /// Launch `f` over `threads` threads with `params`.
    fn launch<P: DeviceRepr>(&self, f: &CudaFunction, threads: usize, params: &P) -> Result<()> {
        // SAFETY: `params` is the struct `f` takes; its addresses are live buffers of the
        // sizes the kernel indexes for `threads` threads (see each caller).
        unsafe { self.gpu.launch(f, threads, params) }
    }

    fn sync(&self) -> Result<()> {
        self.gpu.synchronize()
    }

    /// Exclusive prefix sums of `len` values at device address `data`, in place.
    fn scan(&self, data: u64, len: usize) -> Result<()> {
        let blocks = len.div_ceil(SCAN_PER_BLOCK);
        if blocks <= 1 {
            let p = ScanParams {
                data,
                sums: 0,
                len: len as u64,
            };
            return self.launch(&self.k.scan_blocks, BLOCK, &p);
        }
        let sums = self.alloc::<u64>(blocks)?;
        let p = ScanParams {
            data,
            sums: self.addr(&sums),
            len: len as u64,
        };
        // scan_blocks and scan_add: one block per SCAN_PER_BLOCK values, `sums` one per block.
        self.launch(&self.k.scan_blocks, blocks * BLOCK, &p)?;
        self.scan(p.sums, blocks)?;
        self.launch(&self.k.scan_add, blocks * BLOCK, &p)
    }

    /// The device's free bytes must cover `need`; otherwise an error naming both.
    fn check_device(&self, need: usize, what: &str) -> Result<()> {
        let (free, total) = self
            .gpu
            .stream()
            .context()
            .mem_get_info()
            .map_err(driver_error)?;
        if need > free {
            return Err(error(format!(
                "{what} needs {} of device memory; {} free of {} on {}",
                gib(need),
                gib(free),
                gib(total),
                self.gpu.name
            )));
        }
        Ok(())
    }

    /// Copy the first `len` values of `src` to a new host vector; also the seconds spent
    /// copying out of the pinned buffers (staged only).
    fn download_u32(
        &self,
        src: &CudaSlice<u32>,
        len: usize,
        how: Download,
    ) -> Result<(Vec<u32>, f64)> {
        let stream = self.gpu.stream();
        let mut out = vec![0u32; len];
        if len == 0 {
            return Ok((out, 0.0));
        }
        if how == Download::Pageable || len <= STAGE {
            stream
                .memcpy_dtoh(&src.slice(..len), &mut out)
                .map_err(driver_error)?;
            self.sync()?;
            return Ok((out, 0.0));
        }
        advise_huge_pages(&mut out);
        let ctx = stream.context();
        // SAFETY: each buffer is read only after the copy into it has completed (below).
        let mut stage = [
            unsafe { ctx.alloc_pinned_with_flags::<u32>(STAGE, 0) }.map_err(driver_error)?,
            unsafe { ctx.alloc_pinned_with_flags::<u32>(STAGE, 0) }.map_err(driver_error)?,
        ];
        // A copy fills a whole buffer (cudarc copies the destination's length), so the last
        // chunk's source window ends at `len` and overlaps the one before it.
        let chunks = len.div_ceil(STAGE);
        let window = |c: usize| (c * STAGE).min(len - STAGE);
        // Each copy is followed by an event of our own: with one stream cudarc records no
        // event of its own on the pinned buffer, so its `as_slice` would not wait for the copy.
        let issue = |c: usize, buf: &mut cudarc::driver::PinnedHostSlice<u32>| {
            let from = window(c);
            stream
                .memcpy_dtoh(&src.slice(from..from + STAGE), buf)
                .map_err(driver_error)?;
            stream.record_event(None).map_err(driver_error)
        };
        let mut done = [Some(issue(0, &mut stage[0])?), None];
        let mut copy_seconds = 0.0;
        for c in 0..chunks {
            if c + 1 < chunks {
                done[(c + 1) % 2] = Some(issue(c + 1, &mut stage[(c + 1) % 2])?);
            }
            if let Some(copied) = done[c % 2].take() {
                copied.synchronize().map_err(driver_error)?;
            }
            let (start, end) = (c * STAGE, ((c + 1) * STAGE).min(len));
            let skip = start - window(c);
            let data = stage[c % 2].as_slice().map_err(driver_error)?;
            let t = Instant::now();
            out[start..end]
                .par_chunks_mut(1 << 18)
                .zip(data[skip..skip + (end - start)].par_chunks(1 << 18))
                .for_each(|(o, i)| o.copy_from_slice(i));
            copy_seconds += t.elapsed().as_secs_f64();
        }
        Ok((out, copy_seconds))
    }
}

/// Ask the kernel for transparent huge pages under `v` (not yet touched: a large zeroed
/// vector is fresh mapped memory), so that its first touch faults 2 MiB pages rather than
/// 4 KiB ones. Advice only: where it is refused nothing changes.
fn advise_huge_pages(v: &mut [u32]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(v);
        let (lo, hi) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if hi > lo {
            // SAFETY: [lo, hi) lies inside `v`'s allocation, which we own; MADV_HUGEPAGE
            // changes no contents, only how pages are backed.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// Families of radius `radius` (m) of `positions` (m; the first `dim` components count) by
/// the cell list on the device, with the kernels of `precision`'s program (the one a GPU
/// backend of that precision loads, so the program is compiled once per process).
pub fn device_families(
    gpu: &Gpu,
    precision: Precision,
    positions: &[[f64; 3]],
    dim: usize,
    radius: f64,
) -> Result<DeviceSearch> {
    device_families_with(gpu, precision, positions, dim, radius, Download::default())
}

/// [`device_families`] with the download path chosen.
pub fn device_families_with(
    gpu: &Gpu,
    precision: Precision,
    positions: &[[f64; 3]],
    dim: usize,
    radius: f64,
    download: Download,
) -> Result<DeviceSearch> {
    assert!(dim == 2 || dim == 3, "dimension must be 2 or 3, got {dim}");
    let n = positions.len();
    let mut times = SearchTimes::default();
    if n == 0 {
        return Ok(DeviceSearch {
            families: Families {
                offsets: vec![0],
                neighbors: Vec::new(),
            },
            times,
            device_bytes: 0,
            largest_family: 0,
            sorted_in_global: 0,
        });
    }
    if n > MAX_NODES {
        return Err(error(format!(
            "{n} nodes exceed the {MAX_NODES} of the device search; use the CPU search"
        )));
    }
    let s = Search {
        gpu,
        k: Kernels::load(gpu, precision)?,
    };
    let stream = gpu.stream();

    let t = Instant::now();
    let grid = Grid::new(positions, dim, radius);
    let cells = grid.len();
    times.grid = t.elapsed().as_secs_f64();

    let t = Instant::now();
    let setup = binning_bytes(n, cells);
    s.check_device(setup, &format!("binning {n} nodes into {cells} cells"))?;
    // SAFETY: `[f64; 3]` has no padding, so the positions are 3 n contiguous f64.
    let flat = unsafe { std::slice::from_raw_parts(positions.as_ptr().cast::<f64>(), 3 * n) };
    let pos = stream.clone_htod(flat).map_err(driver_error)?;
    let cell = s.alloc::<u32>(n)?;
    let rank = s.alloc::<u32>(n)?;
    let cell_start = s.zeros::<u64>(cells + 1)?;
    let sorted_index = s.alloc::<u32>(n)?;
    let sorted_pos = s.alloc::<f64>(3 * n)?;
    let offsets = s.zeros::<u64>(n + 1)?;
    let stats = s.zeros::<u64>(4)?;
    s.sync()?;
    times.upload = t.elapsed().as_secs_f64();

    let mut p = NeighborParams {
        positions: s.addr(&pos),
        cell: s.addr(&cell),
        rank: s.addr(&rank),
        cell_start: s.addr(&cell_start),
        sorted_index: s.addr(&sorted_index),
        sorted_pos: s.addr(&sorted_pos),
        offsets: s.addr(&offsets),
        neighbors: 0,
        oversize: 0,
        stats: s.addr(&stats),
        lo: grid.lo,
        inv: grid.inv,
        cells: grid.cells.map(|c| c as u64),
        r2: family_radius_squared(radius),
        n: n as u32,
        dim: dim as i32,
    };

    // Binning: cell_count and cell_scatter one thread per node; cell_start holds cells + 1.
    let t = Instant::now();
    s.launch(&s.k.cell_count, n, &p)?;
    s.scan(p.cell_start, cells + 1)?;
    s.launch(&s.k.cell_scatter, n, &p)?;
    s.sync()?;
    times.binning = t.elapsed().as_secs_f64();
    drop((pos, cell, rank));
    p.positions = 0;
    p.cell = 0;
    p.rank = 0;

    // Pass 1: a warp per slot; offsets holds n + 1 (the last stays 0 until the scan).
    let t = Instant::now();
    s.launch(&s.k.neighbor_count, 32 * n, &p)?;
    s.scan(p.offsets, n + 1)?;
    let mut bonds_dev = [0u64; 1];
    stream
        .memcpy_dtoh(&offsets.slice(n..n + 1), &mut bonds_dev)
        .map_err(driver_error)?;
    let mut st = [0u64; 4];
    stream.memcpy_dtoh(&stats, &mut st).map_err(driver_error)?;
    s.sync()?;
    times.count = t.elapsed().as_secs_f64();
    let bonds = bonds_dev[0] as usize;
    let (largest, oversize_rows) = (st[0] as usize, st[1] as usize);

    let t = Instant::now();
    let need = search_bytes(n, cells, bonds, oversize_rows);
    s.check_device(
        4 * bonds.max(1) + 4 * oversize_rows.max(1),
        &format!("the families of {n} nodes ({bonds} bonds)"),
    )?;
    let neighbors = s.alloc::<u32>(bonds)?;
    let oversize = s.alloc::<u32>(oversize_rows)?;
    p.neighbors = s.addr(&neighbors);
    p.oversize = s.addr(&oversize);
    // Pass 2: a warp per slot; then a block per oversize family.
    s.launch(&s.k.neighbor_fill, 32 * n, &p)?;
    if oversize_rows > 0 {
        s.launch(&s.k.neighbor_sort_rows, BLOCK * oversize_rows, &p)?;
    }
    stream.memcpy_dtoh(&stats, &mut st).map_err(driver_error)?;
    s.sync()?;
    times.fill = t.elapsed().as_secs_f64();
    if st[2] != 0 || st[3] as usize != oversize_rows {
        return Err(error(format!(
            "internal: {} families filled with another size than counted, {} of {} oversize \
             families listed",
            st[2], st[3], oversize_rows
        )));
    }

    let t = Instant::now();
    let off: Vec<u64> = stream.clone_dtoh(&offsets).map_err(driver_error)?;
    s.sync()?;
    let (neighbors, copy_seconds) = s.download_u32(&neighbors, bonds, download)?;
    times.download_copy = copy_seconds;
    let offsets: Vec<usize> = off.into_iter().map(|o| o as usize).collect();
    times.download = t.elapsed().as_secs_f64();

    Ok(DeviceSearch {
        families: Families { offsets, neighbors },
        times,
        device_bytes: setup.max(need),
        largest_family: largest,
        sorted_in_global: oversize_rows,
    })
}
