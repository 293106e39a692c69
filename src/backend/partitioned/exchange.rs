//! Values between the global index space (the problem's) and a subdomain's local one: the
//! gather of the values of a subdomain's local nodes (owned and halo) from a global array,
//! and the scatter of its owned nodes' results back. One implementation for every
//! partitioned backend: the CPU emulation (`emulate.rs`), the GPU streamed engine
//! (`stream/`, into and out of its pinned staging) and the matrix scheme (`matrix.rs`).
//!
//! Values are `per` entries per node (the dimension for vectors, 1 for scalars, 2 for the
//! LPS pairs), or per bond with bond indices in place of node indices. The copies run in
//! parallel over chunks of nodes; each writes a distinct destination, so the result is the
//! same as a sequential copy, value for value.

use crate::partition::Subdomain;
use rayon::prelude::*;

/// Nodes per parallel chunk.
const CHUNK: usize = 1024;

/// A raw pointer that may cross threads (writes to distinct indices).
pub struct SendPtr<T>(pub *mut T);
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

/// Copy `per` values per node of `nodes` from `global` into the start of `local` (in
/// parallel for large subdomains).
pub fn gather_into<T: Copy + Send + Sync>(
    global: &[T],
    nodes: &[usize],
    per: usize,
    local: &mut [T],
) {
    local[..per * nodes.len()]
        .par_chunks_mut(per * CHUNK)
        .zip(nodes.par_chunks(CHUNK))
        .for_each(|(out, chunk)| {
            let first = chunk[0];
            if chunk.windows(2).all(|w| w[1] == w[0] + 1) {
                // consecutive nodes (the common case: slabs of whole cells), one copy
                out.copy_from_slice(&global[per * first..per * (first + chunk.len())]);
                return;
            }
            for (k, &g) in chunk.iter().enumerate() {
                out[per * k..per * (k + 1)].copy_from_slice(&global[per * g..per * (g + 1)]);
            }
        });
}

/// `global` (`per` entries per node) gathered for the nodes `nodes`, in their order.
pub fn gather<T: Copy + Send + Sync>(global: &[T], nodes: &[usize], per: usize) -> Vec<T> {
    let Some(&first) = nodes.first() else {
        return Vec::new();
    };
    // (filled with a value of the type; every entry is overwritten)
    let mut local = vec![global[per * first]; per * nodes.len()];
    gather_into(global, nodes, per, &mut local);
    local
}

/// Call `write(values, g, k)` with the `per` values of `local` of every node `g = nodes[k]`
/// of `nodes` (distinct, each below `len / per`), in parallel over chunks of nodes; the
/// scatters below and the fused explicit update (`fused.rs`) are this loop.
pub fn for_each_node<T: Sync>(
    local: &[T],
    nodes: &[usize],
    per: usize,
    len: usize,
    write: impl Fn(&[T], usize, usize) + Sync,
) {
    local[..per * nodes.len()]
        .par_chunks(per * CHUNK)
        .zip(nodes.par_chunks(CHUNK))
        .enumerate()
        .for_each(|(c, (vals, chunk))| {
            for (k, &g) in chunk.iter().enumerate() {
                assert!(per * (g + 1) <= len, "node {g} out of range");
                write(&vals[per * k..per * (k + 1)], g, c * CHUNK + k);
            }
        });
}

/// Write `local` (`per` entries per node) of the first `nodes.len()` local nodes back to
/// `global`; the nodes are distinct (owned nodes, or a subdomain's own bonds).
pub fn scatter<T: Copy + Send + Sync>(local: &[T], nodes: &[usize], per: usize, global: &mut [T]) {
    let to = SendPtr(global.as_mut_ptr());
    for_each_node(local, nodes, per, global.len(), |vals, g, _| {
        let to = &to;
        // SAFETY: the nodes are distinct, so no two writes alias; in bounds (checked by
        // `for_each_node`).
        unsafe { std::ptr::copy_nonoverlapping(vals.as_ptr(), to.0.add(per * g), per) };
    });
}

/// Write the bond values `local` of `sub`'s owned nodes (in the subdomain's CSR order) to
/// their global bonds ([`Subdomain::global_bonds`]).
pub fn scatter_bonds<T: Copy>(local: &[T], sub: &Subdomain, global: &mut [T]) {
    for k in 0..sub.owned {
        global[sub.global_bonds(k)].copy_from_slice(&local[sub.families.range(k)]);
    }
}
