// LPS force density (theory.md section 3), one thread per node, with theta up to date:
// t_ij = alpha_i e + (d K_d / m_i - alpha_i / d) x theta_i, and
// L_i = sum_j mu (t_ij + t_ji) n omega beta V_j. With p.update the explicit update of the
// node's dofs is fused into the store (`store_force`).

template <int D>
__device__ __forceinline__ void lps_force_node(const BondParams& p, u32 i) {
    const Node<D> node = load_node<D>(p, i);
    const real alpha_i = ld(p.alpha + i);
    const real ptheta_i = ld(p.pcoef + i) * ld(p.theta + i);
    const BondRange r = bond_range(p, i);
    real f[3] = {(real)0, (real)0, (real)0};
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (p.mu[b] == 0) continue;
        const u32 j = ld(p.neighbors + b);
        const Bond bd = load_bond<D>(p, node, j);
        const real e = bond_extension<D>(bd);
        const real t_ij = alpha_i * e + ptheta_i * bd.x;
        const real t_ji = ld(p.alpha + j) * e + ld(p.pcoef + j) * ld(p.theta + j) * bd.x;
        const real scale = bond_weight(p, bd, i, j) * (t_ij + t_ji) * bd.rx;
        for (int k = 0; k < D; ++k) f[k] += scale * bd.xi[k];
    }
    store_force<D>(p, i, node, f);
}

PD_BOND_ENTRY(lps_force, lps_force_node)
