//! The device order of per-bond arrays: sliced ELL with slices of 32 nodes (one warp).
//! Within a slice the bonds are stored slot-major: slot `k` of the slice's `l`-th node is at
//! `slice_start + 32 k + l`, with the slice padded to its longest family. A warp of
//! thread-per-node kernels then reads 32 consecutive entries per bond slot (coalesced), where
//! the CSR order would have each thread stream its own row and the rows of ~200,000
//! resident threads thrash the L2 cache (measured in `docs/gpu-validation.md`).
//!
//! The host keeps CSR order (`Families`); this module maps arrays between the two orders.
//!
//! Bond status on the device is one bit per slot ([`pack_status`]): bit `s % 32` of word
//! `s / 32`. Every slice starts at a multiple of 32 slots, so a slice's word `k` holds bond
//! `k` of its 32 nodes, bit `l` for its node `l`: a warp reads one word per bond.

use crate::neighbors::Families;
use rayon::prelude::*;

/// Nodes per slice: the warp size.
pub const SLICE: usize = 32;

/// Sliced layout of a family list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlicedLayout {
    /// Start of each slice in the device arrays (`slices + 1` entries; the last is the
    /// padded length).
    pub slice_start: Vec<u64>,
    /// Family size of each node.
    pub lengths: Vec<u32>,
    /// CSR offsets of the families (to map back).
    offsets: Vec<usize>,
}

impl SlicedLayout {
    pub fn new(families: &Families) -> Self {
        let n = families.nodes();
        let lengths: Vec<u32> = (0..n)
            .map(|i| (families.offsets[i + 1] - families.offsets[i]) as u32)
            .collect();
        let mut slice_start = Vec::with_capacity(n.div_ceil(SLICE) + 1);
        let mut start = 0u64;
        slice_start.push(0);
        for slice in lengths.chunks(SLICE) {
            start += SLICE as u64 * u64::from(slice.iter().copied().max().unwrap_or(0));
            slice_start.push(start);
        }
        SlicedLayout {
            slice_start,
            lengths,
            offsets: families.offsets.clone(),
        }
    }

    /// The layout of `n` families of `k` slots each (a full box lattice's stencil: no
    /// padding).
    pub fn uniform(n: usize, k: usize) -> Self {
        let slices = n.div_ceil(SLICE);
        SlicedLayout {
            slice_start: (0..=slices).map(|s| (s * SLICE * k) as u64).collect(),
            lengths: vec![k as u32; n],
            offsets: (0..=n).map(|i| i * k).collect(),
        }
    }

    /// Entries of a per-bond device array, padding included.
    pub fn padded_len(&self) -> usize {
        *self.slice_start.last().unwrap_or(&0) as usize
    }

    /// Device index of slot `k` of node `i`.
    #[inline]
    pub fn index(&self, i: usize, k: usize) -> usize {
        self.slice_start[i / SLICE] as usize + SLICE * k + i % SLICE
    }

    /// Intact bonds of each node from the device's status bits (`words`: bit `s % 32` of
    /// word `s / 32` for slot `s`): the set bits among the node's slots (a lattice slot
    /// outside the box, like padding, is never set).
    pub fn intact_per_node(&self, words: &[u32]) -> Vec<u32> {
        (0..self.lengths.len())
            .into_par_iter()
            .map(|i| {
                let first = self.slice_start[i / SLICE] as usize / SLICE;
                let bit = 1u32 << (i % SLICE);
                let slots = self.lengths[i] as usize;
                words[first..first + slots]
                    .iter()
                    .filter(|&&w| w & bit != 0)
                    .count() as u32
            })
            .collect()
    }

    /// `csr` (one value per bond, CSR order) in device order; padding slots hold `fill`.
    pub fn to_device<V: Copy + Send + Sync>(&self, csr: &[V], fill: V) -> Vec<V> {
        let mut out = vec![fill; self.padded_len()];
        self.write_device(csr, &mut out);
        out
    }

    /// Write `csr` (one value per bond, CSR order) into `out` (`padded_len` entries) in
    /// device order; padding slots are left as they are.
    pub fn write_device<V: Copy + Send + Sync>(&self, csr: &[V], out: &mut [V]) {
        assert_eq!(csr.len(), *self.offsets.last().unwrap_or(&0));
        assert_eq!(out.len(), self.padded_len());
        let starts = &self.slice_start;
        // Each slice owns a contiguous piece of `out`.
        let mut pieces = Vec::with_capacity(starts.len());
        let mut rest = out;
        for s in 0..starts.len().saturating_sub(1) {
            let (head, tail) = rest.split_at_mut((starts[s + 1] - starts[s]) as usize);
            pieces.push((s, head));
            rest = tail;
        }
        pieces.into_par_iter().for_each(|(s, piece)| {
            let first = s * SLICE;
            let last = (first + SLICE).min(self.lengths.len());
            for i in first..last {
                let row = &csr[self.offsets[i]..self.offsets[i + 1]];
                for (k, &v) in row.iter().enumerate() {
                    piece[SLICE * k + i % SLICE] = v;
                }
            }
        });
    }

    /// A device-order array back in CSR order (padding dropped).
    pub fn to_csr<V: Copy + Send + Sync>(&self, device: &[V]) -> Vec<V> {
        assert_eq!(device.len(), self.padded_len());
        (0..self.lengths.len())
            .into_par_iter()
            .flat_map_iter(|i| (0..self.lengths[i] as usize).map(move |k| device[self.index(i, k)]))
            .collect()
    }
}

/// Status words of `slots` slots (one bit per slot).
pub fn status_words(slots: usize) -> usize {
    slots.div_ceil(32)
}

/// Bond status bytes (one per slot, nonzero intact) as the device's bits: slot `s` is bit
/// `s % 32` of word `s / 32`; bits beyond `status.len()` are 0 (broken: padding).
pub fn pack_status(status: &[u8]) -> Vec<u32> {
    status
        .par_chunks(32)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u32, |w, (l, &m)| w | (u32::from(m != 0) << l))
        })
        .collect()
}

/// The device's status bits back as one byte per slot (1 intact, 0 broken), `slots` long.
pub fn unpack_status(words: &[u32], slots: usize) -> Vec<u8> {
    assert!(words.len() * 32 >= slots);
    (0..slots)
        .into_par_iter()
        .map(|s| ((words[s / 32] >> (s % 32)) & 1) as u8)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Families of uneven sizes over more than one slice map to the device order and back,
    /// each slot where the formula says, padding filled.
    #[test]
    fn device_order_round_trip() {
        let sizes: Vec<usize> = (0..70)
            .map(|i| (i * 7) % 5 + usize::from(i == 40) * 9)
            .collect();
        let mut offsets = vec![0];
        for s in &sizes {
            offsets.push(offsets.last().unwrap() + s);
        }
        let nb = *offsets.last().unwrap();
        let fam = Families {
            offsets,
            neighbors: (0..nb as u32).collect(),
        };
        let layout = SlicedLayout::new(&fam);
        assert_eq!(layout.slice_start.len(), 4);
        let widths = [4u64, 9, 4];
        for s in 0..3 {
            let w = layout.slice_start[s + 1] - layout.slice_start[s];
            assert_eq!(w, 32 * widths[s]);
        }
        let dev = layout.to_device(&fam.neighbors, u32::MAX);
        for i in 0..70 {
            for (k, &j) in fam.family(i).iter().enumerate() {
                assert_eq!(dev[layout.index(i, k)], j);
            }
        }
        let padding = dev.iter().filter(|&&v| v == u32::MAX).count();
        assert_eq!(padding, layout.padded_len() - nb);
        assert_eq!(layout.to_csr(&dev), fam.neighbors);
    }

    /// The uniform layout is the layout of families that are all `k` long.
    #[test]
    fn uniform_layout_equals_the_layout_of_equal_families() {
        for (n, k) in [(70, 5), (64, 3), (1, 0)] {
            let fam = Families {
                offsets: (0..=n).map(|i| i * k).collect(),
                neighbors: vec![0; n * k],
            };
            assert_eq!(
                SlicedLayout::uniform(n, k),
                SlicedLayout::new(&fam),
                "{n} x {k}"
            );
        }
    }

    /// Status bytes survive the bits and back; bit l of word k is slot 32 k + l, the slot of
    /// bond k of a slice's node l (the kernels' addressing), and padding reads broken.
    #[test]
    fn status_bits_round_trip() {
        let status: Vec<u8> = (0..100)
            .map(|s| u8::from(s % 3 != 0) * (1 + s as u8 % 2))
            .collect();
        let words = pack_status(&status);
        assert_eq!(words.len(), status_words(100));
        for (s, &m) in status.iter().enumerate() {
            assert_eq!((words[s / 32] >> (s % 32)) & 1 == 1, m != 0, "slot {s}");
        }
        assert_eq!(words[3] >> 4, 0, "bits past the last slot are broken");
        let back = unpack_status(&words, 100);
        let expect: Vec<u8> = status.iter().map(|&m| u8::from(m != 0)).collect();
        assert_eq!(back, expect);
    }
}
