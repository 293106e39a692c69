// The plain PMB loop on a full box lattice of one node volume with the model's stencil
// compiled in (the slot-table loop of pmb_force.cu, `pmb_force_lattice_table`, without its
// table): the host writes one line per stencil slot into PD_BAKED_SLOTS
// (src/backend/gpu/baked.rs), so every slot's node offset, bond vector, length and
// 1 / length are literals of the machine code. A bond then costs its status bit and the
// neighbour's displacement, both at a constant offset from the node's own (no index, no
// table load, no loop counter), and a bond-vector component that is 0 costs nothing.
// The same arithmetic as `table_bond`, term for term.
//
// The host also defines PD_BAKED_DIM (2 or 3) and PD_BAKED_LINEARIZED (0 or 1). Without
// them (the kernel-compile test of this file alone) a one-slot 3D stencil stands in.
//
// Units: as bonds.cuh (m, N/m^3).

#ifndef PD_BAKED_SLOTS
#define PD_BAKED_DIM 3
#define PD_BAKED_LINEARIZED 0
#define PD_BAKED_SLOTS(S) S(0, 1, 1, 1e-3, 0, 0, 1e-3, 1e3)
#endif

// a + b where a (a literal of the stencil) is nonzero; b alone where NZ says it is 0.
template <bool NZ>
__device__ __forceinline__ real baked_plus(real a, real b) { return NZ ? a + b : b; }

// a . b over the components NZ (bit k: component k of a is nonzero) marks, the first
// product a multiplication and the others fused, in component order.
template <int D, int NZ>
__device__ __forceinline__ real baked_dot(const real a[3], const real b[3]) {
    real s = (real)0;
    bool first = true;
#pragma unroll
    for (int k = 0; k < D; ++k) {
        if (!((NZ >> k) & 1)) continue;
        s = first ? a[k] * b[k] : s + a[k] * b[k];
        first = false;
    }
    return s;
}

// One slot's bond of node i (displacement ui): `word` its status word, `uj` the neighbour
// j's displacement, xi, x and rx the slot's bond vector (m), length (m) and 1 / length. As
// `table_bond`: broken where it stretches past s_break and j can fail, else w s dir added.
template <int D, bool LINEARIZED, int NZ>
__device__ __forceinline__ void baked_bond(const BondParams& p, u32* word, const real* uj_at,
                                           u32 j, real x0, real x1, real x2, real x, real rx,
                                           const real ui[3], real s_break, real w, u32 bit,
                                           real f[3], u32& broken) {
    if ((*word & bit) == 0) return;
    real uj[3];
    if constexpr (D == 2) {
        typedef typename Pair<real>::type pair;
        const pair v = ld(reinterpret_cast<const pair*>(uj_at));
        uj[0] = v.x;
        uj[1] = v.y;
        uj[2] = (real)0;
    } else {
        for (int k = 0; k < 3; ++k) uj[k] = ld(uj_at + k);
    }
    const real xi[3] = {x0, x1, x2};
    real eta[3];
    for (int k = 0; k < 3; ++k) eta[k] = k < D ? uj[k] - ui[k] : (real)0;
    real s, scale, dir[3];
    if (LINEARIZED) {
        // bond_extension, then pmb_bond's linearized branch
        s = baked_dot<D, NZ>(xi, eta) * rx * rx;
        scale = s * rx;
        for (int k = 0; k < 3; ++k) dir[k] = xi[k];
    } else {
        // bond_stretch: y = xi + eta, w = 2 xi + eta (a zero component: eta itself)
        real y[3], v[3];
        y[0] = baked_plus<(NZ & 1) != 0>(xi[0], eta[0]);
        y[1] = baked_plus<(NZ & 2) != 0>(xi[1], eta[1]);
        y[2] = baked_plus<(NZ & 4) != 0>(xi[2], eta[2]);
        v[0] = baked_plus<(NZ & 1) != 0>((real)2 * xi[0], eta[0]);
        v[1] = baked_plus<(NZ & 2) != 0>((real)2 * xi[1], eta[1]);
        v[2] = baked_plus<(NZ & 4) != 0>((real)2 * xi[2], eta[2]);
        const real y2 = dot<D>(y, y);
        const real ry = inv_sqrt(y2);
#if PD_DIRECT_STRETCH
        if (sizeof(real) == 8) s = (y2 * ry - x) * rx;
        else s = dot<D>(eta, v) * rx / (y2 * ry + x);
#else
        s = dot<D>(eta, v) * rx / (y2 * ry + x);
#endif
        scale = s * ry;
        for (int k = 0; k < 3; ++k) dir[k] = y[k];
    }
    lattice_bond_end<D>(p, j, s, scale, dir, s_break, w, word, bit, f, broken);
}

// Node i over every slot of the baked stencil (in slot order, as the table loop), then the
// store with the fused update (`store_force`) and the count of its broken bonds.
template <int D, bool LINEARIZED>
__device__ __forceinline__ void pmb_node_baked(const BondParams& p, u32 i) {
    const LatticeNode<D> n = lattice_node<D>(p, i);
    const real* ub = p.u + (u64)D * i;
    real f[3] = {(real)0, (real)0, (real)0};
    u32 broken = 0;
    // slot m: node offset `off`, nonzero components `nz` of its bond vector (x0, x1, x2),
    // length `len`, 1 / length `rlen`
#define PD_BAKED_SLOT(m, off, nz, x0, x1, x2, len, rlen)                                   \
    baked_bond<D, LINEARIZED, nz>(p, n.st + (m), ub + (long long)D * (off), i + (u32)(off), \
                                  (real)(x0), (real)(x1), (real)(x2), (real)(len),          \
                                  (real)(rlen), n.node.u, n.s_break, n.w, n.bit, f, broken);
    PD_BAKED_SLOTS(PD_BAKED_SLOT)
#undef PD_BAKED_SLOT
    store_force<D>(p, i, n.node, f);
    count_broken(p, broken);
}

PD_BOND_KERNEL(pmb_force_baked)(const BondParams p) {
    const u32 i = p.first + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    pmb_node_baked<PD_BAKED_DIM, PD_BAKED_LINEARIZED != 0>(p, i);
}
