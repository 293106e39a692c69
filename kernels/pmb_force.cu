// PMB force density (theory.md section 2), one thread per node over its CSR family:
// L_i = sum_j w_ij s_ij mu_ij y/|y| (nonlinear) or w_ij (n . eta / x) mu_ij n (linearized),
// with w = c lambda beta V_j. With check_bonds, bonds whose stretch exceeds s0 are broken
// first (fused damage check; the reverse bond has the same stretch and is broken by its own
// node's thread, so the result equals a separate breaking pass).

PD_KERNEL(pmb_force)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const bool can_break = p.check_bonds != 0 && p.no_fail[i] == 0;
    real f[3] = {(real)0, (real)0, (real)0};
    u32 broken = 0;
    for (u64 b = p.offsets[i]; b < p.offsets[i + 1]; ++b) {
        if (p.mu[b] == 0) continue;
        const u32 j = p.neighbors[b];
        real xi[3], eta[3], x;
        double xd;
        bond_geometry(p, i, j, xi, &x, &xd);
        bond_eta(p, i, j, eta);
        if (can_break && try_break(p, b, j, xi, eta, x)) {
            ++broken;
            continue;
        }
        if (p.linearized != 0) {
            const real s = bond_extension(xi, eta, x) / x;
            const real scale = p.weight[b] * s / x;
            f[0] += scale * xi[0];
            f[1] += scale * xi[1];
            f[2] += scale * xi[2];
        } else {
            real ly;
            const real s = bond_stretch(xi, eta, x, &ly);
            const real scale = p.weight[b] * s / ly;
            f[0] += scale * (xi[0] + eta[0]);
            f[1] += scale * (xi[1] + eta[1]);
            f[2] += scale * (xi[2] + eta[2]);
        }
    }
    const int d = p.dim;
    for (int k = 0; k < d; ++k) p.force[d * i + k] = f[k];
    count_broken(p, broken);
}
