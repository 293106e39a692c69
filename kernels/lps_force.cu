// LPS force density (theory.md section 3), one thread per node, with theta up to date:
// t_ij = alpha_i e + (d K_d / m_i - alpha_i / d) x theta_i, and
// L_i = sum_j mu (t_ij + t_ji) M omega beta V_j, with e = n . eta and M = n (lps), or
// e = |y| - x and M = y / |y| (lps-nonlinear: the entry point lps_force_nonlinear). Node j's (alpha_j, p_j theta_j) is one
// aligned load from the pair array the dilatation kernel wrote. With p.update the explicit update of the
// node's dofs is fused into the store (`store_force`).

template <int D, bool LINEARIZED>
__device__ __forceinline__ void lps_force_node(const BondParams& p, u32 i) {
    const Node<D> node = load_node<D>(p, i);
    const real alpha_i = ld(p.alpha + i);
    const real ptheta_i = ld(p.pcoef + i) * ld(p.theta + i);
    typedef typename Pair<real>::type pair;
    const pair* pairs = reinterpret_cast<const pair*>(p.lps_pair);
    // (in f64 the look-ahead and the law-specific weight would spill registers under the
    // 64-register cap)
    constexpr bool f32 = sizeof(real) == 4;
    BondWalk<PD_AHEAD && f32> walk(p, i);
    Step t;
    real f[3] = {(real)0, (real)0, (real)0};
    #pragma unroll 1
    while (walk.next(p, t)) {
        if (!t.intact) continue;
        const u32 j = t.j;
        const Bond bd = load_bond<D>(p, node, j);
        real stretch, rlen, dir[3];
        const real e = lps_kinematics<D, LINEARIZED>(bd, &stretch, &rlen, dir);
        const real t_ij = lps_force_state(alpha_i, ptheta_i, e, bd.x);
        const pair q = ld(pairs + j);  // (alpha_j, p_j theta_j)
        const real t_ji = lps_force_state(q.x, q.y, e, bd.x);
        const real w = bond_weight<f32 ? PD_LAW_LPS : PD_LAW_ANY>(p, bd, i, j);
        const real scale = lps_force_scale(w, t_ij + t_ji, rlen);
        for (int k = 0; k < D; ++k) f[k] += scale * dir[k];
    }
    store_force<D>(p, i, node, f);
}

template <int D>
__device__ __forceinline__ void lps_force_linearized(const BondParams& p, u32 i) {
    lps_force_node<D, true>(p, i);
}

template <int D>
__device__ __forceinline__ void lps_force_nonlinear_node(const BondParams& p, u32 i) {
    lps_force_node<D, false>(p, i);
}

// One entry point per kinematics (each its own register allocation).
PD_BOND_ENTRY(lps_force, lps_force_linearized)
PD_BOND_ENTRY(lps_force_nonlinear, lps_force_nonlinear_node)
