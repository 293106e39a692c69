// Bond failure that remembers its history (docs/materials.md), each as a pass of its own
// that the host launches before or after the force kernels as break_timing says
// (src/backend/gpu/bond_loop/launch.rs), one thread per node over its family in the sliced
// order; the twins of cpu-loop's passes (src/backend/cpu/softening.rs `soften`,
// src/backend/cpu/bond_loop.rs `history_breaks`). A bond's two directions see the same
// stretch bit for bit (negating xi and eta is exact), so both ends agree.

// +inf in the kernel's precision.
__device__ __forceinline__ real real_infinity() { return (real)__int_as_float(0x7f800000); }

// a * b rounded, never contracted into an FMA with what follows (the host's order).
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }

// A softening damage law: every bond of node i that may fail (intact, neither end in a
// no-fail zone) takes d = max(d, D(s)) at its criterion stretch s; a bond reaching d = 1 is
// broken (its status bit cleared, counted in p.broken). Damage lives in slot b of the sliced
// order, the slot of the bond's status bit, and only node i's thread writes it.
template <int D>
__device__ __forceinline__ void soften_node(const BondParams& p, u32 i) {
    if (ld(p.no_fail + i) != 0) return;
    const Node<D> node = load_node<D>(p, i);
    const BondRange r = bond_range(p, i);
    const bool linearized = p.linearized != 0;
    u32 broken = 0;
#pragma unroll 1
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (!bond_intact(p, b)) continue;
        const u32 j = neighbor_at(p, i, r.begin, b);
        if (ld(p.no_fail + j) != 0) continue;
        const real s = criterion_stretch<D>(linearized, load_bond<D>(p, node, j));
        const real d = softening_damage(p.law.softening, s);
        real kept = p.bond_damage[b];
        if (d > kept) {
            kept = d;
            p.bond_damage[b] = d;
        }
        if (kept >= (real)1) {
            cut_bond(p, b);
            ++broken;
        }
    }
    count_broken(p, broken);
}

// Node i's critical stretch from the least criterion stretch s_min of its bonds not broken:
// s00 - alpha s_min (multiplied, then subtracted, as the host), +inf for a node without one.
__device__ __forceinline__ real node_critical(const BondParams& p, real s_min) {
    if (s_min == real_infinity()) return s_min;
    return PD_CONST(p, critical_stretch) - mul_rn(PD_CONST(p, s0_alpha), s_min);
}

// Breaking with each node's history (critical_stretch_alpha, break_timing = "after-force"):
// with BREAK, every bond of node i that may fail breaks where its criterion stretch exceeds
// min(s0_i, s0_j) of p.node_s0 (the previous evaluation's); either way node i's next critical
// stretch, from the least stretch of its bonds not broken before this pass, goes to
// p.node_s0_next. Without BREAK: the first breaking evaluation of a run, which takes its
// thresholds from the stretches at its own displacement (p.node_s0 not read).
template <int D, bool BREAK>
__device__ __forceinline__ void history_walk(const BondParams& p, u32 i) {
    const Node<D> node = load_node<D>(p, i);
    const BondRange r = bond_range(p, i);
    const bool linearized = p.linearized != 0;
    const bool can_break = BREAK && ld(p.no_fail + i) == 0;
    const real s0_i = BREAK ? ld(p.node_s0 + i) : (real)0;
    real s_min = real_infinity();
    u32 broken = 0;
#pragma unroll 1
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (!bond_intact(p, b)) continue;
        const u32 j = neighbor_at(p, i, r.begin, b);
        const real s = criterion_stretch<D>(linearized, load_bond<D>(p, node, j));
        if (s < s_min) s_min = s;
        if (!can_break || ld(p.no_fail + j) != 0) continue;
        const real s0_j = ld(p.node_s0 + j);
        if (s > (s0_j < s0_i ? s0_j : s0_i)) {
            cut_bond(p, b);
            ++broken;
        }
    }
    p.node_s0_next[i] = node_critical(p, s_min);
    count_broken(p, broken);
}

template <int D>
__device__ __forceinline__ void node_s0_node(const BondParams& p, u32 i) {
    history_walk<D, false>(p, i);
}

template <int D>
__device__ __forceinline__ void history_node(const BondParams& p, u32 i) {
    history_walk<D, true>(p, i);
}

PD_BOND_ENTRY_UNCAPPED(soften_bonds, soften_node)
PD_BOND_ENTRY_UNCAPPED(node_critical_stretch, node_s0_node)
PD_BOND_ENTRY_UNCAPPED(history_breaks, history_node)
