// Bond breaking and local damage (theory.md sections 1 and 2), one thread per node.

// Break every intact bond of node i whose stretch exceeds s0, unless an end node is in a
// no-fail zone; broken bonds stay broken. Adds the count to p.broken.
PD_KERNEL(break_bonds)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n || p.no_fail[i] != 0) return;
    u32 broken = 0;
    for (u64 b = p.offsets[i]; b < p.offsets[i + 1]; ++b) {
        if (p.mu[b] == 0) continue;
        const u32 j = p.neighbors[b];
        real xi[3], eta[3], x;
        double xd;
        bond_geometry(p, i, j, xi, &x, &xd);
        bond_eta(p, i, j, eta);
        broken += try_break(p, b, j, xi, eta, x);
    }
    count_broken(p, broken);
}

// Local damage phi_i = 1 - sum_j mu beta V_j / sum_j beta V_j, in double (beta from the
// bond length, the denominator from the host's horizon volumes), rounded to the precision.
PD_KERNEL(damage)(const BondParams p) {
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    double intact = 0.0;
    for (u64 b = p.offsets[i]; b < p.offsets[i + 1]; ++b) {
        if (p.mu[b] == 0) continue;
        const u32 j = p.neighbors[b];
        real xi[3], x;
        double xd;
        bond_geometry(p, i, j, xi, &x, &xd);
        intact += partial_volume(p, xd) * p.volumes[j];
    }
    const double total = p.horizon_volume[i];
    p.phi[i] = (real)(total > 0.0 ? 1.0 - intact / total : 0.0);
}

// Strain energy of each node, J: the energy density (PMB sum w s^2 x / 4; LPS
// K_d theta^2 / 2 + alpha / 2 sum w (e - theta x / d)^2) times V_i, in double from
// precision-T bond quantities. LPS needs theta up to date. The host sums the nodes.
PD_KERNEL(strain_energy)(const BondParams p) {
    const bool lps = p.lps != 0;
    const u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const double d = (double)p.dim;
    const double theta_i = lps ? (double)p.theta[i] : 0.0;
    double w = 0.0;
    for (u64 b = p.offsets[i]; b < p.offsets[i + 1]; ++b) {
        if (p.mu[b] == 0) continue;
        const u32 j = p.neighbors[b];
        real xi[3], eta[3], x;
        double xd;
        bond_geometry(p, i, j, xi, &x, &xd);
        bond_eta(p, i, j, eta);
        const double xx = (double)x;
        const double wb = (double)p.weight[b];
        if (lps) {
            const double e = (double)bond_extension(xi, eta, x);
            const double ed = e - theta_i * xx / d;
            w += 0.5 * (double)p.alpha[i] * wb * ed * ed;
        } else {
            double s;
            if (p.linearized != 0) {
                s = (double)bond_extension(xi, eta, x) / xx;
            } else {
                real ly;
                s = (double)bond_stretch(xi, eta, x, &ly);
            }
            w += 0.25 * wb * s * s * xx;
        }
    }
    if (lps) w += 0.5 * p.kd * theta_i * theta_i;
    p.energy[i] = w * p.volumes[i];
}
