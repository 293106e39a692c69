// LPS force density (theory.md section 3), one thread per node, with theta up to date:
// t_ij = alpha_i e + (d K_d / m_i - alpha_i / d) x theta_i, and
// L_i = sum_j mu (t_ij + t_ji) n omega beta V_j.

PD_KERNEL(lps_force)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const Node node = load_node(p, i);
    const real alpha_i = ld(p.alpha + i);
    const real ptheta_i = ld(p.pcoef + i) * ld(p.theta + i);
    const BondRange r = bond_range(p, i);
    real f[3] = {(real)0, (real)0, (real)0};
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (p.mu[b] == 0) continue;
        const u32 j = ld(p.neighbors + b);
        const Bond bd = load_bond(p, node, j);
        const real e = bond_extension(bd);
        const real t_ij = alpha_i * e + ptheta_i * bd.x;
        const real t_ji = ld(p.alpha + j) * e + ld(p.pcoef + j) * ld(p.theta + j) * bd.x;
        const real scale = ld(p.weight + b) * (t_ij + t_ji) * bd.rx;
        for (int k = 0; k < 3; ++k) f[k] += scale * bd.xi[k];
    }
    store_force(p, i, f);
}
