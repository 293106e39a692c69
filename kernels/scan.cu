// Exclusive prefix sum of u64 values in place (the cell counts of the binning, the family
// sizes of the neighbour search), in integers, so the result does not depend on the order of
// the additions. Two kernels and a recursion on the host (src/gpu/neighbors.rs):
// scan_blocks scans each block's SCAN_ITEMS * blockDim.x values and writes the block's total,
// the host scans the totals the same way, and scan_add adds each block's scanned total to its
// values. Blocks of 256 threads (Gpu::launch), 2048 values each.

#define SCAN_ITEMS 8

struct ScanParams {
    u64* data;  // len values, replaced by their exclusive prefix sums
    u64* sums;  // one per block: its total (scan_blocks, may be null), its offset (scan_add)
    u64 len;
};

// Inclusive sum over the lanes of a warp.
__device__ __forceinline__ u64 warp_inclusive_sum(u64 v) {
    const int lane = threadIdx.x & 31;
    for (int d = 1; d < 32; d <<= 1) {
        const u64 up = __shfl_up_sync(0xffffffffu, v, d);
        if (lane >= d) v += up;
    }
    return v;
}

PD_KERNEL(scan_blocks)(const ScanParams p) {
    __shared__ u64 warp_total[32];
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const u64 base = ((u64)blockIdx.x * blockDim.x + threadIdx.x) * SCAN_ITEMS;
    u64 v[SCAN_ITEMS];
    u64 sum = 0;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        v[k] = base + k < p.len ? p.data[base + k] : 0;
        sum += v[k];
    }
    const u64 incl = warp_inclusive_sum(sum);
    if (lane == 31) warp_total[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const int warps = blockDim.x >> 5;
        const u64 t = warp_inclusive_sum(lane < warps ? warp_total[lane] : 0);
        if (lane < warps) warp_total[lane] = t;
    }
    __syncthreads();
    u64 run = incl - sum + (warp > 0 ? warp_total[warp - 1] : 0);
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        if (base + k < p.len) p.data[base + k] = run;
        run += v[k];
    }
    if (threadIdx.x == blockDim.x - 1 && p.sums != nullptr) p.sums[blockIdx.x] = run;
}

PD_KERNEL(scan_add)(const ScanParams p) {
    const u64 add = p.sums[blockIdx.x];
    const u64 base = (u64)blockIdx.x * blockDim.x * SCAN_ITEMS;
    for (int k = 0; k < SCAN_ITEMS; ++k) {
        const u64 at = base + (u64)k * blockDim.x + threadIdx.x;
        if (at < p.len) p.data[at] += add;
    }
}
