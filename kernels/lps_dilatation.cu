// LPS dilatation (theory.md section 3), one thread per node:
// theta_i = (d / m_i) sum_j mu omega x e beta V_j, with e = n . eta. With check_bonds, bonds
// whose stretch e / x exceeds s0 are broken first (the damage check of the step is fused
// here because the dilatation is the first pass of an LPS force evaluation).

PD_KERNEL(lps_dilatation)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const bool can_break = p.check_bonds != 0 && p.no_fail[i] == 0;
    real s = (real)0;
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
        const real e = bond_extension(xi, eta, x);
        s += p.weight[b] * x * e;
    }
    p.theta[i] = p.d_over_m[i] * s;
    count_broken(p, broken);
}
