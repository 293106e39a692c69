// LPS dilatation (theory.md section 3), one thread per node:
// theta_i = (d / m_i) sum_j mu omega x e beta V_j, with e = n . eta (lps) or |y| - x
// (lps-nonlinear: the entry point lps_dilatation_nonlinear). With check_bonds, bonds
// whose stretch e / x exceeds s0 are broken first (the damage check of the step is fused
// here because the dilatation is the first pass of an LPS force evaluation). Also writes the
// pair (alpha_i, p_i theta_i) that lps_force gathers per neighbour in one load.

template <int D, bool LINEARIZED>
__device__ __forceinline__ void lps_dilatation_node(const BondParams& p, u32 i) {
    const Node<D> node = load_node<D>(p, i);
    const bool can_break = p.check_bonds != 0 && ld(p.no_fail + i) == 0;
    const real s_break = break_threshold(p, can_break);
    BondWalk<PD_AHEAD> walk(p, i);
    Step t;
    real s = (real)0;
    u32 broken = 0;
    #pragma unroll 1
    while (walk.next(p, t)) {
        if (!t.intact) continue;
        const u32 j = t.j;
        const Bond bd = load_bond<D>(p, node, j);
        real stretch, rlen, dir[3];
        const real e = lps_kinematics<D, LINEARIZED>(bd, &stretch, &rlen, dir);
        if (stretch > bond_threshold(p, s_break, i, j) && ld(p.no_fail + j) == 0) {
            walk.cut(p, t);
            ++broken;
            continue;
        }
        s += lps_dilatation_term(bond_weight<PD_LAW_LPS>(p, bd, i, j), bd.x, e);
    }
    const real theta = ld(p.d_over_m + i) * s;
    p.theta[i] = theta;
    p.lps_pair[2 * (u64)i] = ld(p.alpha + i);
    p.lps_pair[2 * (u64)i + 1] = ld(p.pcoef + i) * theta;
    count_broken(p, broken);
}

template <int D>
__device__ __forceinline__ void lps_dilatation_linearized(const BondParams& p, u32 i) {
    lps_dilatation_node<D, true>(p, i);
}

template <int D>
__device__ __forceinline__ void lps_dilatation_nonlinear_node(const BondParams& p, u32 i) {
    lps_dilatation_node<D, false>(p, i);
}

// One entry point per kinematics (each its own register allocation).
PD_BOND_ENTRY(lps_dilatation, lps_dilatation_linearized)
PD_BOND_ENTRY(lps_dilatation_nonlinear, lps_dilatation_nonlinear_node)
