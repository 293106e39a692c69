// LPS dilatation (theory.md section 3), one thread per node:
// theta_i = (d / m_i) sum_j mu omega x e beta V_j, with e = n . eta. With check_bonds, bonds
// whose stretch e / x exceeds s0 are broken first (the damage check of the step is fused
// here because the dilatation is the first pass of an LPS force evaluation).

template <int D>
__device__ __forceinline__ void lps_dilatation_node(const BondParams& p, u32 i) {
    const Node<D> node = load_node<D>(p, i);
    const bool can_break = p.check_bonds != 0 && ld(p.no_fail + i) == 0;
    const BondRange r = bond_range(p, i);
    real s = (real)0;
    u32 broken = 0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (p.mu[b] == 0) continue;
        const u32 j = ld(p.neighbors + b);
        const Bond bd = load_bond<D>(p, node, j);
        const real e = bond_extension<D>(bd);
        if (can_break && breaks(p, j, e * bd.rx)) {
            p.mu[b] = 0;
            ++broken;
            continue;
        }
        s += bond_weight(p, bd, i, j) * bd.x * e;
    }
    p.theta[i] = ld(p.d_over_m + i) * s;
    count_broken(p, broken);
}

PD_BOND_ENTRY(lps_dilatation, lps_dilatation_node)
