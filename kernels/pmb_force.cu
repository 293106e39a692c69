// PMB force density (theory.md section 2), one thread per node over its family:
// L_i = sum_j w_ij s_ij mu_ij y/|y| (nonlinear) or w_ij (n . eta / x) mu_ij n (linearized),
// with w = c lambda beta V_j recomputed per bond (`bond_weight`). With check_bonds, a bond
// whose stretch exceeds s0 is broken before it contributes (the damage check fused into the
// force pass; the reverse bond has the same stretch and is broken by its own node's thread,
// so the result equals a separate breaking pass). With p.update the explicit update of the
// node's dofs is fused into the store (`store_force`).

template <int D, bool LINEARIZED, bool PLAIN, int NB = PD_NB_ANY, bool MATS = false>
__device__ __forceinline__ void pmb_node_law(const BondParams& p, u32 i) {
    const Node<D> node = load_node<D>(p, i);
    const bool can_break = p.check_bonds != 0 && ld(p.no_fail + i) == 0;
    const real s_break = break_threshold(p, can_break);
    real f[3] = {(real)0, (real)0, (real)0};
    u32 broken = 0;
    auto bond = [&](u32 j, const Bond& bd) -> bool {
        real scale, dir[3];
        const real s = pmb_bond<D, LINEARIZED>(bd, &scale, dir);
        // (MATS, several materials: the pair's critical stretch and micromodulus)
        const real t = MATS ? bond_threshold(p, s_break, i, j) : s_break;
        if (s > t && ld(p.no_fail + j) == 0) {
            ++broken;
            return true;
        }
        scale *= bond_weight<PD_LAW_PMB, PLAIN, MATS>(p, bd, i, j);
        for (int k = 0; k < D; ++k) f[k] += scale * dir[k];
        return false;
    };
    // (the deeper look-ahead only in the f32 plain nonlinear loop: elsewhere it would spill)
    if constexpr (PD_PREFETCH >= 2 && PLAIN && !LINEARIZED && sizeof(real) == 4) {
        walk_bonds_deep<D>(p, i, node, bond);
    } else {
        walk_bonds<D, NB>(p, i, node, bond);
    }
    store_force<D>(p, i, node, f);
    count_broken(p, broken);
}

// The law as a compile-time choice too (fewer live registers in the bond loop).
template <int D, bool PLAIN, int NB = PD_NB_ANY, bool MATS = false>
__device__ __forceinline__ void pmb_node(const BondParams& p, u32 i) {
    if (p.linearized != 0) pmb_node_law<D, true, PLAIN, NB, MATS>(p, i);
    else pmb_node_law<D, false, PLAIN, NB, MATS>(p, i);
}

// Several materials (p.material set, docs/materials.md): the general loop with each bond's
// micromodulus and critical stretch from the pair table.
template <int D>
__device__ __forceinline__ void pmb_node_materials(const BondParams& p, u32 i) {
    pmb_node<D, false, PD_NB_ANY, true>(p, i);
}

template <int D>
__device__ __forceinline__ void pmb_node_any(const BondParams& p, u32 i) {
    pmb_node<D, false>(p, i);
}

template <int D>
__device__ __forceinline__ void pmb_node_plain(const BondParams& p, u32 i) {
    pmb_node<D, true, PD_NB_LIST>(p, i);
}

// The same on a full box lattice: neighbours from the stencil, no list (p.stencil set).
template <int D>
__device__ __forceinline__ void pmb_node_plain_lattice(const BondParams& p, u32 i) {
    pmb_node<D, true, PD_NB_LATTICE>(p, i);
}

// The plain loop on a full box lattice of one node volume (p.slot_geometry set): a slot's
// bond vector, length and 1 / length come from its SlotGeometry, the same for every node, so
// a bond reads its status bit, one table entry that every lane of the warp shares, and the
// neighbour's displacement; no position, no bond length computed. The weight is c V.
// The neighbour offset travels in the entry's first pad. PD_TABLE_UNROLL (a define the host
// can add, src/gpu/kernels.rs): the bonds unrolled per loop trip (default 1 in f32, 2 in f64).
// (measured on the H100, docs/results.md: one bond a trip is fastest in f32, 2.75e9 against
// 2.24e9 node-steps/s at four; f64 is the same at 1, 2, 4 and 8)
#ifndef PD_TABLE_UNROLL
#define PD_TABLE_UNROLL (sizeof(real) == 4 ? 1 : 2)
#endif
// The slot table in shared memory: each block first copies it (up to PD_TABLE_SHARED_MAX
// slots) there, so a bond reads its entry from shared memory instead of through L1.
// PD_TABLE_SHARED: 1 always, 0 never, 2 (default) in f64 only. Measured on the H100
// (docs/results.md, "The slot-table loop, variants of 2026-11-27"): 3D f64 +5-8 %, 3D f32
// -10 %; 2D within the noise.
#ifndef PD_TABLE_SHARED
#define PD_TABLE_SHARED 2
#endif
#define PD_TABLE_SHARED_ON (PD_TABLE_SHARED == 1 || (PD_TABLE_SHARED == 2 && sizeof(real) == 8))
#define PD_TABLE_SHARED_MAX 256

// Where a table loop reads its slots: the device table, and the first `cached` of them in
// shared memory (offsets apart, as integers).
struct SlotSource {
    const SlotGeometry* geo;
    const SlotGeometry* sh;
    const int* off;
    u32 cached;
};

__device__ __forceinline__ SlotGeometry slot_entry(const SlotSource& t, u32 m, int* off) {
    if (PD_TABLE_SHARED_ON && m < t.cached) {
        *off = t.off[m];
        return t.sh[m];
    }
    const SlotGeometry g = load_slot(t.geo + m);
    *off = slot_offset(g);
    return g;
}

// One slot-table bond of a node with displacement `ui` to its neighbour j: broken where it
// stretches past `s_break` and j can fail (its bit cleared in `word`), else its force w s
// dir added to `f`.
template <int D, bool LINEARIZED>
__device__ __forceinline__ void table_bond(const BondParams& p, const SlotGeometry& g, u32 j,
                                           const real ui[3], real s_break, real w, u32* word,
                                           u32 bit, real f[3], u32& broken) {
    real uj[3];
    load_u<D>(p.u, j, uj);
    Bond bd;
    for (int k = 0; k < 3; ++k) {
        bd.xi[k] = g.xi[k];
        bd.eta[k] = k < D ? uj[k] - ui[k] : (real)0;
    }
    bd.x = g.x;
    bd.rx = g.rx;
    bd.vol = (real)1;
    real scale, dir[3];
    const real s = pmb_bond<D, LINEARIZED>(bd, &scale, dir);
    lattice_bond_end<D>(p, j, s, scale, dir, s_break, w, word, bit, f, broken);
}

template <int D, bool LINEARIZED>
__device__ __forceinline__ void pmb_node_table_law(const BondParams& p, u32 i,
                                                   const SlotSource& table) {
    const LatticeNode<D> n = lattice_node<D>(p, i);
    const u32 slots = ld(p.lengths + i);
    real f[3] = {(real)0, (real)0, (real)0};
    u32 broken = 0;
#pragma unroll PD_TABLE_UNROLL
    for (u32 m = 0; m < slots; ++m) {
        if ((n.st[m] & n.bit) == 0) continue;
        int off;
        const SlotGeometry g = slot_entry(table, m, &off);
        table_bond<D, LINEARIZED>(p, g, i + (u32)off, n.node.u, n.s_break, n.w, n.st + m,
                                  n.bit, f, broken);
    }
    store_force<D>(p, i, n.node, f);
    count_broken(p, broken);
}

template <int D>
__device__ __forceinline__ void pmb_node_table(const BondParams& p, u32 i, const SlotSource& t) {
    if (p.linearized != 0) pmb_node_table_law<D, true>(p, i, t);
    else pmb_node_table_law<D, false>(p, i, t);
}

// The slot table of a block whose first node is `first` (its length that node's): copied
// into shared memory where PD_TABLE_SHARED_ON (every thread of the block takes part, before
// any returns), else read from the device.
#define PD_SLOT_SOURCE(table, first)                                                      \
    __shared__ __align__(16) SlotGeometry slot_sh[PD_TABLE_SHARED_ON ? PD_TABLE_SHARED_MAX : 1]; \
    __shared__ int slot_off[PD_TABLE_SHARED_ON ? PD_TABLE_SHARED_MAX : 1];                \
    SlotSource table;                                                                     \
    table.geo = reinterpret_cast<const SlotGeometry*>(p.slot_geometry);                   \
    table.sh = slot_sh;                                                                   \
    table.off = slot_off;                                                                 \
    table.cached = 0u;                                                                    \
    if (PD_TABLE_SHARED_ON) {                                                             \
        table.cached = (first) < p.n ? ld(p.lengths + (first)) : 0u;                      \
        if (table.cached > PD_TABLE_SHARED_MAX) table.cached = PD_TABLE_SHARED_MAX;      \
        for (u32 k = threadIdx.x; k < table.cached; k += blockDim.x) {                    \
            const SlotGeometry g = load_slot(table.geo + k);                              \
            slot_sh[k] = g;                                                               \
            slot_off[k] = slot_offset(g);                                                 \
        }                                                                                 \
        __syncthreads();                                                                  \
    }

PD_BOND_KERNEL(pmb_force_lattice_table)(const BondParams p) {
    const u32 i = p.first + blockIdx.x * blockDim.x + threadIdx.x;
    PD_SLOT_SOURCE(table, p.first + blockIdx.x * blockDim.x)
    if (i >= p.n) return;
    if (p.dim == 3) pmb_node_table<3>(p, i, table);
    else pmb_node_table<2>(p, i, table);
}

// A softening damage law (p.bond_damage set, docs/materials.md): every bond not broken
// carries (1 - d) w s along its direction, d its damage (slot b of the sliced order, the
// slot of its status bit), which the failure pass (failure.cu: soften_bonds) updates before
// or after this kernel as break_timing says; no bond breaks here. The general weight
// (partial volumes, surface correction), one material.
template <int D, bool LINEARIZED>
__device__ __forceinline__ void pmb_node_softening_law(const BondParams& p, u32 i) {
    const Node<D> node = load_node<D>(p, i);
    const BondRange r = bond_range(p, i);
    real f[3] = {(real)0, (real)0, (real)0};
#pragma unroll 1
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (!bond_intact(p, b)) continue;
        const u32 j = neighbor_at(p, i, r.begin, b);
        const Bond bd = load_bond<D>(p, node, j);
        real scale, dir[3];
        pmb_bond<D, LINEARIZED>(bd, &scale, dir);
        const real kept = (real)1 - p.bond_damage[b];
        scale *= kept * bond_weight<PD_LAW_PMB>(p, bd, i, j);
        for (int k = 0; k < D; ++k) f[k] += scale * dir[k];
    }
    store_force<D>(p, i, node, f);
}

template <int D>
__device__ __forceinline__ void pmb_node_softening(const BondParams& p, u32 i) {
    if (p.linearized != 0) pmb_node_softening_law<D, true>(p, i);
    else pmb_node_softening_law<D, false>(p, i);
}

// Any PMB model; and the models with neither partial volumes nor the surface correction
// (the weight is c V_j: no per-bond tests). Separate entry points, so that each gets its own
// register allocation (in one kernel the two loops made each other spill).
PD_BOND_ENTRY(pmb_force, pmb_node_any)
// (without the register cap: the table lookups would spill under it; one launch a step)
PD_BOND_ENTRY_UNCAPPED(pmb_force_materials, pmb_node_materials)
PD_BOND_ENTRY(pmb_force_plain, pmb_node_plain)
PD_BOND_ENTRY(pmb_force_plain_lattice, pmb_node_plain_lattice)
PD_BOND_ENTRY_UNCAPPED(pmb_force_softening, pmb_node_softening)
