// Neighbour search over the binned nodes (cell_bin.cu), in two passes with one warp per node:
// the warp of slot s takes node i = sorted_index[s] and walks the 3^(d-1) runs of 3 cells
// that are contiguous along x in cell order (9 runs in 3D, 3 in 2D), 32 candidates at a time,
// with the host's predicate (cell_grid.cuh). Nodes of one cell take consecutive warps, so a
// block's warps read the same candidates and find them in cache.
//
//   neighbor_count       family size of each node into offsets[i] (and the largest size, and
//                        how many exceed NBR_ROW_CAP, into stats); the host scans offsets.
//   neighbor_fill        the family compacted by ballot into the warp's shared row, sorted
//                        there by a bitonic network, written to neighbors[offsets[i]..];
//                        families over NBR_ROW_CAP go straight to global memory unsorted and
//                        their node onto the oversize list.
//   neighbor_sort_rows   one block per oversize family: the same network in global memory.
//
// The sort is the bitonic network in its "flip" form: every compare-exchange puts the smaller
// value at the lower index, so a row of k values sorts as if padded with +infinity up to the
// next power of two, and every comparison with a padding slot is simply skipped.

#define NBR_WARPS 8        // warps per block: blocks of 256 threads (Gpu::launch)
#define NBR_ROW_CAP 512    // largest family sorted in shared memory (2 KiB per warp)
#define NBR_FULL 0xffffffffu

// Call visit(hit, j) for every candidate j of node self (at xi) in the 3^d cells around it,
// 32 at a time: every lane of the warp calls it the same number of times (hit false past the
// end of a run), so visit may use warp votes. hit: j != self and within the radius.
template <typename Visit>
__device__ __forceinline__ void for_each_candidate(const NeighborParams& p, u32 self,
                                                   const double xi[3], Visit visit) {
    const u32 lane = threadIdx.x & 31;
    u64 lo[3] = {0, 0, 0};
    u64 hi[3] = {0, 0, 0};
#pragma unroll
    for (int a = 0; a < 3; ++a) {  // unrolled: the arrays stay in registers
        if (a < p.dim) {
            const u64 c = cell_coord(p, a, xi[a]);
            lo[a] = c > 0 ? c - 1 : 0;
            hi[a] = c + 1 < p.cells[a] ? c + 1 : p.cells[a] - 1;
        }
    }
    for (u64 z = lo[2]; z <= hi[2]; ++z) {
        for (u64 y = lo[1]; y <= hi[1]; ++y) {
            const u64 from = ld(p.cell_start + cell_index(p, lo[0], y, z));
            const u64 to = ld(p.cell_start + cell_index(p, hi[0], y, z) + 1);
            for (u64 base = from; base < to; base += 32) {
                const u64 k = base + lane;
                bool hit = false;
                u32 j = 0;
                if (k < to) {
                    j = ld(p.sorted_index + k);
                    const double xj[3] = {ld(p.sorted_pos + 3 * k), ld(p.sorted_pos + 3 * k + 1),
                                          ld(p.sorted_pos + 3 * k + 2)};
                    hit = j != self && within_radius(xi, xj, p.dim, p.r2);
                }
                visit(hit, j);
            }
        }
    }
}

// Node and position of slot s.
__device__ __forceinline__ u32 slot_node(const NeighborParams& p, u64 s, double xi[3]) {
#pragma unroll
    for (int a = 0; a < 3; ++a) xi[a] = ld(p.sorted_pos + 3 * s + a);
    return ld(p.sorted_index + s);
}

PD_KERNEL(neighbor_count)(const NeighborParams p) {
    __shared__ u32 block_max;
    __shared__ u32 block_over;
    if (threadIdx.x == 0) {
        block_max = 0;
        block_over = 0;
    }
    __syncthreads();
    const u64 slot = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    if (slot < p.n) {  // the same for the whole warp
        double xi[3];
        const u32 i = slot_node(p, slot, xi);
        u32 count = 0;
        for_each_candidate(p, i, xi, [&](bool hit, u32) { count += hit ? 1u : 0u; });
        for (int d = 16; d > 0; d >>= 1) count += __shfl_xor_sync(NBR_FULL, count, d);
        if ((threadIdx.x & 31) == 0) {
            p.offsets[i] = count;
            atomicMax(&block_max, count);
            if (count > NBR_ROW_CAP) atomicAdd(&block_over, 1u);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        if (block_max != 0) atomicMax(p.stats + 0, (u64)block_max);
        if (block_over != 0) atomicAdd(p.stats + 1, (u64)block_over);
    }
}

// Smaller value to the lower index; slots at or past k are padding (+infinity): skipped.
template <typename I>
__device__ __forceinline__ void compare_exchange(u32* a, I lo, I hi, I k) {
    if (hi >= k) return;
    const u32 x = a[lo];
    const u32 y = a[hi];
    if (x > y) {
        a[lo] = y;
        a[hi] = x;
    }
}

// Sort a[0..k) ascending with `threads` threads (a warp: BLOCK false; a block: true), this
// one being `tid`. The bitonic network in flip form over the next power of two above k.
template <bool BLOCK, typename I>
__device__ void sort_ascending(u32* a, I k, I tid, I threads) {
    I pow2 = 1;
    while (pow2 < k) pow2 <<= 1;
    const I pairs = pow2 >> 1;
    for (I size = 2; size <= pow2 && size != 0; size <<= 1) {
        const I half = size >> 1;
        for (I t = tid; t < pairs; t += threads) {
            const I first = (t & ~(half - 1)) << 1;
            const I off = t & (half - 1);
            compare_exchange<I>(a, first + off, first + size - 1 - off, k);
        }
        if (BLOCK) __syncthreads(); else __syncwarp();
        for (I stride = half >> 1; stride > 0; stride >>= 1) {
            for (I t = tid; t < pairs; t += threads) {
                const I lo = ((t & ~(stride - 1)) << 1) + (t & (stride - 1));
                compare_exchange<I>(a, lo, lo + stride, k);
            }
            if (BLOCK) __syncthreads(); else __syncwarp();
        }
    }
}

PD_KERNEL(neighbor_fill)(const NeighborParams p) {
    __shared__ u32 rows[NBR_WARPS][NBR_ROW_CAP];
    const u64 slot = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const u32 lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5;
    if (slot >= p.n || warp >= NBR_WARPS) return;  // the same for the whole warp
    double xi[3];
    const u32 i = slot_node(p, slot, xi);
    const u64 begin = ld(p.offsets + i);
    const u32 size = (u32)(ld(p.offsets + i + 1) - begin);
    const bool in_shared = size <= NBR_ROW_CAP;
    u32* row = in_shared ? rows[warp] : p.neighbors + begin;
    const u32 below = (1u << lane) - 1u;
    u32 filled = 0;
    for_each_candidate(p, i, xi, [&](bool hit, u32 j) {
        const u32 mask = __ballot_sync(NBR_FULL, hit);
        if (hit) {
            const u32 at = filled + __popc(mask & below);
            if (at < size) row[at] = j;
        }
        filled += __popc(mask);
    });
    if (filled != size) {  // never: both passes test the same pairs
        if (lane == 0) atomicAdd(p.stats + 2, 1ull);
        return;
    }
    if (in_shared) {
        __syncwarp();
        sort_ascending<false, u32>(row, size, lane, 32u);
        for (u32 t = lane; t < size; t += 32) p.neighbors[begin + t] = row[t];
    } else if (lane == 0) {
        p.oversize[atomicAdd(p.stats + 3, 1ull)] = i;
    }
}

// One block per node of the oversize list: its family, filled unsorted, sorted in place.
PD_KERNEL(neighbor_sort_rows)(const NeighborParams p) {
    const u32 i = ld(p.oversize + blockIdx.x);
    const u64 begin = ld(p.offsets + i);
    const u64 size = ld(p.offsets + i + 1) - begin;
    sort_ascending<true, u64>(p.neighbors + begin, size, (u64)threadIdx.x, (u64)blockDim.x);
}
