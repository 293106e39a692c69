// PMB force density (theory.md section 2), one thread per node over its family:
// L_i = sum_j w_ij s_ij mu_ij y/|y| (nonlinear) or w_ij (n . eta / x) mu_ij n (linearized),
// with w = c lambda beta V_j. With check_bonds, a bond whose stretch exceeds s0 is broken
// before it contributes (the damage check fused into the force pass; the reverse bond has
// the same stretch and is broken by its own node's thread, so the result equals a separate
// breaking pass).

PD_KERNEL(pmb_force)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const Node node = load_node(p, i);
    const bool can_break = p.check_bonds != 0 && ld(p.no_fail + i) == 0;
    const bool linearized = p.linearized != 0;
    const BondRange r = bond_range(p, i);
    real f[3] = {(real)0, (real)0, (real)0};
    u32 broken = 0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (p.mu[b] == 0) continue;
        const u32 j = ld(p.neighbors + b);
        const Bond bd = load_bond(p, node, j);
        real s, scale, dir[3];
        if (linearized) {
            s = bond_extension(bd) * bd.rx;
            scale = s * bd.rx;
            for (int k = 0; k < 3; ++k) dir[k] = bd.xi[k];
        } else {
            real ry;
            s = bond_stretch(bd, &ry);
            scale = s * ry;
            for (int k = 0; k < 3; ++k) dir[k] = bd.xi[k] + bd.eta[k];
        }
        if (can_break && breaks(p, j, s)) {
            p.mu[b] = 0;
            ++broken;
            continue;
        }
        scale *= ld(p.weight + b);
        for (int k = 0; k < 3; ++k) f[k] += scale * dir[k];
    }
    store_force(p, i, f);
    count_broken(p, broken);
}
