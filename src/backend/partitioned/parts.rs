//! The host side of subdomain streaming: each subdomain's data in the form the `gpu-loop`
//! kernels read, in page-locked memory so its copies to the device are asynchronous.
//!
//! Per subdomain, one contiguous *static block* (what never changes during a run: the sliced
//! families, node records (and in f32 their f32 copies relative to the body's centre, the
//! same for every subdomain), horizon volumes, no-fail flags, LPS coefficients and (several
//! materials) material indices of its owned and halo nodes, each field 256-byte aligned) is
//! copied with one call, and the bond status
//! bits `mu` (changed by the kernels) are a pinned array of their own that travels both ways when the
//! subdomain does not stay on the device.
//!
//! Units as the kernels': positions m, volumes m^3.

use super::exchange::{gather, scatter_bonds};
use crate::backend::coefficients::LpsCoefficients;
use crate::backend::gpu::bond_loop::{node_records, node_records_f32, record_centre};
use crate::gpu::layout::{pack_status, status_words, unpack_status, SlicedLayout};
use crate::gpu::pinned::Pinned;
use crate::gpu::Gpu;
use crate::partition::Subdomain;
use crate::setup::Problem;
use crate::{Real, Result};

/// Alignment of each field in a static block, bytes (coalesced device loads).
const ALIGN: usize = 256;

/// Byte offsets of the fields of a static block.
#[derive(Debug, Clone, Copy, Default)]
pub struct Offsets {
    pub slice_start: usize,
    pub lengths: usize,
    pub neighbors: usize,
    pub records: usize,
    /// f32 records relative to the body's centre (precision f32 only; empty in f64).
    pub records_f32: usize,
    pub horizon_volume: usize,
    pub no_fail: usize,
    pub alpha: usize,
    pub pcoef: usize,
    pub d_over_m: usize,
    /// Several materials: each local node's material index (`u8`, `MaterialMap::node`);
    /// `None` for one material.
    pub material: Option<usize>,
    /// Bytes of the whole block.
    pub total: usize,
}

/// Lays out fields one after another, each aligned.
struct Packer {
    end: usize,
}

impl Packer {
    fn field(&mut self, bytes: usize) -> usize {
        let at = self.end.next_multiple_of(ALIGN);
        self.end = at + bytes;
        at
    }
}

/// Write `values` at byte `at` of `block`.
fn put<V: Copy>(block: &mut [u8], at: usize, values: &[V]) {
    let bytes = std::mem::size_of_val(values);
    // SAFETY: `values` are plain numbers (u64, u32, u8, f32, f64) viewed as their bytes.
    let src = unsafe { std::slice::from_raw_parts(values.as_ptr() as *const u8, bytes) };
    block[at..at + bytes].copy_from_slice(src);
}

/// The `len` values of type `V` at byte `at` of `block` (`at` aligned for `V`).
fn field<V: Copy>(block: &mut [u8], at: usize, len: usize) -> &mut [V] {
    let bytes = &mut block[at..at + len * std::mem::size_of::<V>()];
    // SAFETY: `V` is a plain number type (u32 here), valid for any bytes; `align_to_mut`
    // returns the aligned middle, checked below to be the whole range.
    let (head, values, tail) = unsafe { bytes.align_to_mut::<V>() };
    assert!(
        head.is_empty() && tail.is_empty(),
        "field at {at} is aligned"
    );
    values
}

/// The damage of `sub`'s owned bonds in `layout`'s sliced order, as the bytes of values in
/// `T`, pinned: a restart's (`Problem::restored`), else zero.
fn damage_block<T: Real>(
    gpu: &Gpu,
    problem: &Problem,
    sub: &Subdomain,
    layout: &SlicedLayout,
) -> Result<Pinned<u8>> {
    let restored = &problem.restored.bond_damage;
    let csr: Vec<T> = match restored.is_empty() {
        true => vec![T::zero(); sub.bonds()],
        false => (0..sub.owned)
            .flat_map(|k| sub.global_bonds(k))
            .map(|b| T::of(restored[b]))
            .collect(),
    };
    let device = layout.to_device(&csr, T::zero());
    let mut block = Pinned::<u8>::zeroed(gpu, std::mem::size_of_val(&device[..]))?;
    put(&mut block, 0, &device);
    Ok(block)
}

/// One subdomain on the host: the partition's description and its pinned data.
pub struct Part {
    /// Owned and halo nodes (the families' neighbour lists are dropped once packed).
    pub sub: Subdomain,
    /// Sliced order of the owned nodes' families.
    pub layout: SlicedLayout,
    /// The static block and its field offsets.
    pub block: Pinned<u8>,
    pub offsets: Offsets,
    /// Bond status bits in sliced order (`layout::pack_status`; current on the host while
    /// the subdomain is not on the device).
    pub mu: Pinned<u32>,
    /// A softening damage law: the damage of every slot of the sliced order, the bytes of
    /// values of the run's precision (current on the host while the subdomain is not on
    /// the device); `None` for the brittle law.
    pub damage: Option<Pinned<u8>>,
}

impl Part {
    /// Pack subdomain `sub` of `problem` (`lps`: the coefficients of the state-based law, per
    /// global node) in precision `T`.
    pub fn new<T: Real>(
        gpu: &Gpu,
        problem: &Problem,
        mut sub: Subdomain,
        lps: Option<&LpsCoefficients>,
    ) -> Result<Part> {
        let layout = SlicedLayout::new(&sub.families);
        let local = sub.nodes.len();
        let t = std::mem::size_of::<T>();
        let per_node = if lps.is_some() { local * t } else { 0 };
        let mut p = Packer { end: 0 };
        let mut offsets = Offsets {
            slice_start: p.field(8 * layout.slice_start.len()),
            lengths: p.field(4 * layout.lengths.len()),
            neighbors: p.field(4 * layout.padded_len()),
            records: p.field(32 * local),
            records_f32: p.field(if t == 4 { 16 * local } else { 0 }),
            horizon_volume: p.field(8 * local),
            no_fail: p.field(local),
            alpha: p.field(per_node),
            pcoef: p.field(per_node),
            d_over_m: p.field(per_node),
            material: problem.materials.as_ref().map(|_| p.field(local)),
            total: 0,
        };
        offsets.total = p.end.next_multiple_of(ALIGN);
        let mut block = Pinned::<u8>::zeroed(gpu, offsets.total)?;
        let o = offsets;
        put(&mut block, o.slice_start, &layout.slice_start);
        put(&mut block, o.lengths, &layout.lengths);
        let slots = layout.padded_len();
        layout.write_device(
            &sub.families.neighbors,
            field(&mut block, o.neighbors, slots),
        );
        let records = node_records(&problem.body, sub.nodes.iter().copied());
        put(&mut block, o.records, &records);
        if t == 4 {
            let centre = record_centre(&problem.body);
            put(
                &mut block,
                o.records_f32,
                &node_records_f32(&records, centre),
            );
        }
        let of_nodes = |v: &[f64]| gather(v, &sub.nodes, 1);
        put(
            &mut block,
            o.horizon_volume,
            &of_nodes(&problem.bonds.horizon_volume),
        );
        let no_fail = gather(&problem.no_fail, &sub.nodes, 1)
            .into_iter()
            .map(u8::from);
        put(&mut block, o.no_fail, &no_fail.collect::<Vec<u8>>());
        if let Some(c) = lps {
            let to_t = |v: &[f64]| -> Vec<T> { of_nodes(v).into_iter().map(T::of).collect() };
            put(&mut block, o.alpha, &to_t(&c.alpha));
            put(&mut block, o.pcoef, &to_t(&c.pcoef));
            put(&mut block, o.d_over_m, &to_t(&c.d_over_m));
        }
        if let (Some(at), Some(map)) = (o.material, &problem.materials) {
            put(&mut block, at, &gather(&map.node, &sub.nodes, 1));
        }
        let mu_csr = sub.initial_status(problem);
        let damage = match problem.material.softening {
            Some(_) => Some(damage_block::<T>(gpu, problem, &sub, &layout)?),
            None => None,
        };
        sub.families.neighbors = Vec::new();
        let mut mu = Pinned::<u32>::zeroed(gpu, status_words(slots))?;
        mu.copy_from_slice(&pack_status(&layout.to_device(&mu_csr, 0)));
        Ok(Part {
            sub,
            layout,
            block,
            offsets,
            mu,
            damage,
        })
    }

    /// Local nodes (owned and halo).
    pub fn local(&self) -> usize {
        self.sub.nodes.len()
    }

    /// Owned nodes.
    pub fn owned(&self) -> usize {
        self.sub.owned
    }

    /// Write this subdomain's damage per bond (`device`: the bytes of its sliced order's
    /// values in `T`) into the global CSR array.
    pub fn scatter_damage<T: Real>(&self, device: &[u8], damage: &mut [T]) {
        let mut values = vec![T::zero(); self.layout.padded_len()];
        // SAFETY: `T` is f32 or f64, any bytes are a value; the lengths agree (checked).
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr() as *mut u8, device.len()) };
        assert_eq!(device.len(), std::mem::size_of_val(&values[..]));
        bytes.copy_from_slice(device);
        scatter_bonds(&self.layout.to_csr(&values), &self.sub, damage);
    }

    /// Write this subdomain's bond status (status bits `mu` of the sliced order) into the
    /// global CSR array.
    pub fn scatter_status(&self, mu: &[u32], status: &mut [u8]) {
        let local = self
            .layout
            .to_csr(&unpack_status(mu, self.layout.padded_len()));
        scatter_bonds(&local, &self.sub, status);
    }
}
