// Counting sort of the nodes into the cells of the grid (cell_grid.cuh), one thread per node:
// cell_count hashes each node to its cell and counts the cell's nodes, an exclusive scan
// (scan.cu) turns the counts into the first slot of each cell, cell_scatter writes each
// node's index and position to its slot. The order of the nodes within a cell is their
// arrival order at the atomic counter, so it varies between runs; the families do not,
// since every family is sorted afterwards.

// Cell of node i, and its place within the cell (the counter's value before its increment).
// cell_start must hold zeros.
PD_KERNEL(cell_count)(const NeighborParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    u64 c[3] = {0, 0, 0};
#pragma unroll
    for (int a = 0; a < 3; ++a) {
        if (a < p.dim) c[a] = cell_coord(p, a, ld(p.positions + 3 * (u64)i + a));
    }
    const u64 cell = cell_index(p, c[0], c[1], c[2]);
    p.cell[i] = (u32)cell;
    p.rank[i] = (u32)atomicAdd(p.cell_start + cell, 1ull);
}

// Node i and its position to slot cell_start[cell] + rank (cell_start scanned).
PD_KERNEL(cell_scatter)(const NeighborParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const u64 slot = ld(p.cell_start + ld(p.cell + i)) + ld(p.rank + i);
    p.sorted_index[slot] = i;
#pragma unroll
    for (int a = 0; a < 3; ++a) p.sorted_pos[3 * slot + a] = ld(p.positions + 3 * (u64)i + a);
}
