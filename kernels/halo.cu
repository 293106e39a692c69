// The ghost exchange of a distributed run on the device (src/distributed/gpu/): the values
// of the nodes other ranks need packed into one contiguous buffer (halo_gather), and the
// received values of the ghosts put in place (halo_scatter); one thread per value. Node k of
// the list `index` holds its `per` values at buffer[per k .. per k + per], in the order the
// host exchanges them (each neighbouring rank's nodes in ascending global index).

struct HaloParams {
    real* values;      // per values per node (displacement: d; LPS pairs: 2)
    const u32* index;  // count node indices
    real* buffer;      // per * count values
    u64 count;
    u64 per;
};
static_assert(sizeof(HaloParams) == 40, "HaloParams: see src/gpu/params.rs");

PD_KERNEL(halo_gather)(const HaloParams p) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.count * p.per) return;
    const u64 k = t / p.per;
    p.buffer[t] = p.values[(u64)p.index[k] * p.per + (t - k * p.per)];
}

PD_KERNEL(halo_scatter)(const HaloParams p) {
    const u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.count * p.per) return;
    const u64 k = t / p.per;
    p.values[(u64)p.index[k] * p.per + (t - k * p.per)] = p.buffer[t];
}
