// Bond breaking and local damage (theory.md sections 1 and 2), one thread per node.

// Break every intact bond of node i whose stretch exceeds s0 (nonlinear PMB and LPS: s;
// otherwise e / x), unless an end node is in a no-fail zone; broken bonds stay broken. Adds the count
// to p.broken.
template <int D>
__device__ __forceinline__ void break_bonds_node(const BondParams& p, u32 i) {
    if (ld(p.no_fail + i) != 0) return;
    const Node<D> node = load_node<D>(p, i);
    const BondRange r = bond_range(p, i);
    u32 broken = 0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (!bond_intact(p, b)) continue;
        const u32 j = neighbor_at(p, i, r.begin, b);
        const Bond bd = load_bond<D>(p, node, j);
        const real s = criterion_stretch<D>(p.linearized != 0, bd);
        if (breaks(p, i, j, s)) {
            cut_bond(p, b);
            ++broken;
        }
    }
    count_broken(p, broken);
}

PD_BOND_ENTRY_UNCAPPED(break_bonds, break_bonds_node)

// Local damage phi_i = 1 - sum_j mu (1 - d_ij) beta V_j / sum_j beta V_j (d the damage of a
// softening law, else 0), in double (beta from the
// bond length exactly as the host computes it, the denominator from the host's horizon
// volumes), rounded to the precision.
template <int D>
__device__ __forceinline__ void damage_node(const BondParams& p, u32 i) {
    // (without partial volumes beta is 1 and only the volumes are read)
    const bool lengths = p.partial_volume != 0;
    const Record node = lengths ? load_record<D>(p, i) : Record{};
    const BondRange r = bond_range(p, i);
    double intact = 0.0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (!bond_intact(p, b)) continue;
        const u32 j = neighbor_at(p, i, r.begin, b);
        double bv;
        if (lengths) {
            const Record rec = load_record<D>(p, j);
            bv = partial_volume_exact(p, exact_length<D>(node, rec)) * rec.vol;
        } else {
            bv = node_volume(p, j);
        }
        // (a softening bond counts by what it keeps, 1 - d, as on the host)
        if (p.bond_damage != 0) bv *= 1.0 - (double)p.bond_damage[b];
        intact += bv;
    }
    const double total = ld(p.horizon_volume + i);
    p.phi[i] = (real)(total > 0.0 ? 1.0 - intact / total : 0.0);
}

PD_BOND_ENTRY_UNCAPPED(damage, damage_node)

// The nodes whose damage (`damage`'s output) is at or above `threshold`, compared in double
// as the host compares, compacted into `out`: what a crack-tip sample reads instead of the
// whole field (src/backend/gpu/bond_loop/crack_nodes.rs). One thread per node and one atomic
// add per warp, so the order is the atomics'; the host sorts.
struct OverParams {
    const real* phi;
    u32* out;                   // capacity n
    unsigned long long* count;  // zeroed by the host
    u64 n;
    double threshold;
};

PD_KERNEL(damage_over)(const OverParams p) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    const bool hit = i < p.n && (double)p.phi[i] >= p.threshold;
    const unsigned mask = __ballot_sync(0xffffffffu, hit);
    if (mask == 0) return;
    const int lane = threadIdx.x & 31;
    const int leader = __ffs(mask) - 1;
    unsigned long long base = 0;
    if (lane == leader) base = atomicAdd(p.count, (unsigned long long)__popc(mask));
    base = __shfl_sync(0xffffffffu, base, leader);
    if (hit) p.out[base + __popc(mask & ((1u << lane) - 1u))] = (u32)i;
}

// Strain energy of each node, J: the energy density (PMB sum w s^2 x / 4, a softening law's
// bonds (1 - d) w s^2 x / 4; LPS
// K_d theta^2 / 2 + alpha / 2 sum w (e - theta x / d)^2) times V_i, in double from
// precision-T bond quantities. LPS needs theta up to date. The host sums the nodes.
template <int D>
__device__ __forceinline__ void strain_energy_node(const BondParams& p, u32 i) {
    const bool lps = p.lps != 0;
    const Node<D> node = load_node<D>(p, i);
    const double d = (double)D;
    const double theta_i = lps ? (double)ld(p.theta + i) : 0.0;
    const double alpha_i = lps ? (double)ld(p.alpha + i) : 0.0;
    const BondRange r = bond_range(p, i);
    double w = 0.0;
    for (u64 b = r.begin; b < r.end; b += 32) {
        if (!bond_intact(p, b)) continue;
        const u32 j = neighbor_at(p, i, r.begin, b);
        const Bond bd = load_bond<D>(p, node, j);
        const double x = (double)bd.x;
        double wb = lps ? (double)bond_weight<PD_LAW_LPS>(p, bd, i, j)
                        : (double)bond_weight<PD_LAW_PMB, false, true>(p, bd, i, j);
        // (a softening law: what the bond keeps, (1 - d) w, as the host's energy)
        if (p.bond_damage != 0) wb = (1.0 - (double)p.bond_damage[b]) * wb;
        if (lps) {
            const double e = (double)lps_extension<D>(p.linearized != 0, bd);
            w += lps_bond_energy_density(alpha_i, wb, e, theta_i, x, d);
        } else {
            const double s = (double)criterion_stretch<D>(p.linearized != 0, bd);
            w += pmb_energy_density(wb, s, x);
        }
    }
    if (lps) {
        // (several materials: node i's own K_d, after the pair table's two n x n blocks)
        LpsParams m = p.law.lps;
        if (p.material != 0) {
            const u32 n = p.n_materials;
            m.kd = ld(p.pair_table + 2 * n * n + (u32)ld(p.material + i));
        }
        w += lps_dilatation_energy_density(m, theta_i);
    }
    p.energy[i] = w * node_volume(p, i);
}

PD_BOND_ENTRY_UNCAPPED(strain_energy, strain_energy_node)
