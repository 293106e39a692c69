// The cell grid and the family predicate shared by the cell binning (cell_bin.cu) and the
// neighbour search (neighbor_search.cu). Not a stage of its own: the host prepends it to both
// stages (src/gpu/kernels.rs), so it is guarded against a second inclusion in the program of
// all stages. Positions in metres, always f64 whatever the precision of the program.

#ifndef PD_CELL_GRID_CUH
#define PD_CELL_GRID_CUH

// Everything the binning and search kernels read or write; mirrors `NeighborParams` of
// src/gpu/neighbors.rs field by field (change both). The grid (lo, inv, cells) is the host's
// `Grid` of src/neighbors/cell_list.rs, computed there, so a node lands in the same cell as on
// the CPU. Kernels run with 256 threads per block (Gpu::launch).
struct NeighborParams {
    const double* positions;  // 3 n, input order
    u32* cell;                // n, cell of each node
    u32* rank;                // n, place of each node within its cell (arrival order)
    u64* cell_start;          // cells + 1: nodes per cell, then (scanned) first slot per cell
    u32* sorted_index;        // n, node at each slot (cell order)
    double* sorted_pos;       // 3 n, positions in slot order
    u64* offsets;             // n + 1: family sizes, then (scanned) CSR row offsets
    u32* neighbors;           // bonds, CSR column indices (out)
    u32* oversize;            // nodes whose family is sorted by neighbor_sort_rows
    u64* stats;               // [0] largest family, [1] families over NBR_ROW_CAP,
                              // [2] rows filled with another count than counted, [3] cursor
    double lo[3];             // lower corner of the bounding box
    double inv[3];            // cells per metre along each axis (0 on a flat axis)
    u64 cells[3];             // cells along each axis (1 beyond dim)
    double r2;                // squared family radius, r^2 (1 + 1e-10) (family_radius_squared)
    u32 n;                    // nodes
    int dim;                  // 2 or 3
};

// Cell coordinate along axis a, as Grid::coords on the host: t = (x - lo) inv truncated and
// clamped to the grid; negative and NaN values land in cell 0. The same rounding as the host
// (no contraction into an FMA), so a node is binned exactly where the CPU bins it.
__device__ __forceinline__ u64 cell_coord(const NeighborParams& p, int a, double x) {
    const double t = __dmul_rn(__dsub_rn(x, p.lo[a]), p.inv[a]);
    if (!(t > 0.0)) return 0;
    if (t >= (double)p.cells[a]) return p.cells[a] - 1;
    return (u64)t;
}

__device__ __forceinline__ u64 cell_index(const NeighborParams& p, u64 cx, u64 cy, u64 cz) {
    return (cz * p.cells[1] + cy) * p.cells[0] + cx;
}

// The family predicate, bit for bit `within_radius` of src/neighbors/mod.rs: the squared
// distance over the first dim components, each product and sum rounded on its own (the
// host's f64 arithmetic in the host's order), compared with r2. `a` is the node whose family
// is built, `b` the candidate.
__device__ __forceinline__ bool within_radius(const double a[3], const double b[3], int dim,
                                              double r2) {
    const double dx = __dsub_rn(b[0], a[0]);
    const double dy = __dsub_rn(b[1], a[1]);
    double d2 = __dadd_rn(__dmul_rn(dx, dx), __dmul_rn(dy, dy));
    if (dim == 3) {
        const double dz = __dsub_rn(b[2], a[2]);
        d2 = __dadd_rn(d2, __dmul_rn(dz, dz));
    }
    return d2 <= r2;
}

#endif  // PD_CELL_GRID_CUH
