// Bond breaking and local damage (theory.md sections 1 and 2), one thread per node.

// Break every intact bond of node i whose stretch exceeds s0 (nonlinear PMB: s; otherwise
// e / x), unless an end node is in a no-fail zone; broken bonds stay broken. Adds the count
// to p.broken.
PD_KERNEL(break_bonds)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n || ld(p.no_fail + i) != 0) return;
    const Node node = load_node(p, i);
    const BondRange r = bond_range(p, i);
    u32 broken = 0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (p.mu[b] == 0) continue;
        const u32 j = ld(p.neighbors + b);
        const Bond bd = load_bond(p, node, j);
        real ry;
        const real s = p.linearized != 0 ? bond_extension(bd) * bd.rx : bond_stretch(bd, &ry);
        if (breaks(p, j, s)) {
            p.mu[b] = 0;
            ++broken;
        }
    }
    count_broken(p, broken);
}

// Local damage phi_i = 1 - sum_j mu beta V_j / sum_j beta V_j, in double (beta from the
// bond length exactly as the host computes it, the denominator from the host's horizon
// volumes), rounded to the precision.
PD_KERNEL(damage)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const Node node = load_node(p, i);
    const BondRange r = bond_range(p, i);
    double intact = 0.0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (p.mu[b] == 0) continue;
        const u32 j = ld(p.neighbors + b);
        intact += partial_volume(p, exact_length(p, node, j)) * ld(p.volumes + j);
    }
    const double total = ld(p.horizon_volume + i);
    p.phi[i] = (real)(total > 0.0 ? 1.0 - intact / total : 0.0);
}

// Strain energy of each node, J: the energy density (PMB sum w s^2 x / 4; LPS
// K_d theta^2 / 2 + alpha / 2 sum w (e - theta x / d)^2) times V_i, in double from
// precision-T bond quantities. LPS needs theta up to date. The host sums the nodes.
PD_KERNEL(strain_energy)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const bool lps = p.lps != 0;
    const Node node = load_node(p, i);
    const double d = (double)p.dim;
    const double theta_i = lps ? (double)ld(p.theta + i) : 0.0;
    const double alpha_i = lps ? (double)ld(p.alpha + i) : 0.0;
    const BondRange r = bond_range(p, i);
    double w = 0.0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (p.mu[b] == 0) continue;
        const u32 j = ld(p.neighbors + b);
        const Bond bd = load_bond(p, node, j);
        const double x = (double)bd.x;
        const double wb = (double)ld(p.weight + b);
        if (lps) {
            const double ed = (double)bond_extension(bd) - theta_i * x / d;
            w += 0.5 * alpha_i * wb * ed * ed;
        } else {
            real ry;
            const double s = p.linearized != 0 ? (double)(bond_extension(bd) * bd.rx)
                                               : (double)bond_stretch(bd, &ry);
            w += 0.25 * wb * s * s * x;
        }
    }
    if (lps) w += 0.5 * p.kd * theta_i * theta_i;
    p.energy[i] = w * ld(p.volumes + i);
}
