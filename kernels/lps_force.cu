// LPS force density (theory.md section 3), one thread per node, with theta up to date:
// t_ij = alpha_i e + (d K_d / m_i - alpha_i / d) x theta_i, and
// L_i = sum_j mu (t_ij + t_ji) n omega beta V_j.

PD_KERNEL(lps_force)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const real alpha_i = p.alpha[i];
    const real pcoef_i = p.pcoef[i];
    const real theta_i = p.theta[i];
    real f[3] = {(real)0, (real)0, (real)0};
    for (u64 b = p.offsets[i]; b < p.offsets[i + 1]; ++b) {
        if (p.mu[b] == 0) continue;
        const u32 j = p.neighbors[b];
        real xi[3], eta[3], x;
        double xd;
        bond_geometry(p, i, j, xi, &x, &xd);
        bond_eta(p, i, j, eta);
        const real e = bond_extension(xi, eta, x);
        const real t_ij = alpha_i * e + pcoef_i * x * theta_i;
        const real t_ji = p.alpha[j] * e + p.pcoef[j] * x * p.theta[j];
        const real scale = p.weight[b] * (t_ij + t_ji) / x;
        f[0] += scale * xi[0];
        f[1] += scale * xi[1];
        f[2] += scale * xi[2];
    }
    const int d = p.dim;
    for (int k = 0; k < d; ++k) p.force[d * i + k] = f[k];
}
