// The ordinary state-based bond law (LPS, theory.md section 3; host twin:
// src/material/laws/lps.rs): its parameters, the #[repr(C)] LpsParams field for field (both
// sides assert the size), and its bond formulas: the kinematics of a bond (linearized, model
// lps, or nonlinear, lps-nonlinear: docs/materials.md), the influence function, the
// dilatation term, the force term t_ij + t_ji with t_ij = alpha_i e + p_i theta_i x, and the
// strain energy.
//
// Units: K_d Pa, extension e m, weight w = omega beta V_j m^3, force state N/m^6.

struct LpsParams {
    double kd;                // K_d, Pa
    int omega_delta_over_x;   // influence function: 1 delta / x, 0 one
    int pad;
};
static_assert(sizeof(LpsParams) == 16, "LpsParams: see src/material/laws/lps.rs");

// The influence function omega(x) of a bond of length x, horizon delta.
__device__ __forceinline__ real lps_omega(const LpsParams& m, real delta, real x) {
    return m.omega_delta_over_x != 0 ? delta / x : (real)1;
}

// The kinematics of one bond (host twin: lps::kinematics): returns the extension e and
// writes the stretch the failure criterion compares with s0 (e / x), the force direction dir
// and 1 / its length (rlen). Linearized: e = n . eta along xi; nonlinear: e = s x with the
// stretch s = (|y| - x) / x of bond_stretch, along y = xi + eta.
template <int D, bool LINEARIZED>
__device__ __forceinline__ real lps_kinematics(const Bond& bd, real* stretch, real* rlen,
                                               real dir[3]) {
    if (LINEARIZED) {
        const real e = bond_extension<D>(bd);
        *stretch = e * bd.rx;
        *rlen = bd.rx;
        for (int k = 0; k < 3; ++k) dir[k] = bd.xi[k];
        return e;
    }
    *stretch = bond_stretch<D>(bd, rlen);
    for (int k = 0; k < 3; ++k) dir[k] = bd.xi[k] + bd.eta[k];
    return *stretch * bd.x;
}

// The extension alone (energy kernels), linearized or not as the parameters say.
template <int D>
__device__ __forceinline__ real lps_extension(bool linearized, const Bond& bd) {
    real s, rlen, dir[3];
    return linearized ? lps_kinematics<D, true>(bd, &s, &rlen, dir)
                      : lps_kinematics<D, false>(bd, &s, &rlen, dir);
}

// The dilatation term of one intact bond of weight w, length x and extension e: w x e
// (summed over the family and scaled by d / m_i).
__device__ __forceinline__ real lps_dilatation_term(real w, real x, real e) {
    return w * x * e;
}

// The force state t_ij = alpha_i e + (p_i theta_i) x of a bond of extension e and length x.
__device__ __forceinline__ real lps_force_state(real alpha, real ptheta, real e, real x) {
    return alpha * e + ptheta * x;
}

// The force scale of bond i -> j along its direction dir (lps_kinematics),
// w (t_ij + t_ji) / |dir|, from the sum of its two force states and 1 / |dir|.
__device__ __forceinline__ real lps_force_scale(real w, real t_sum, real rlen) {
    return w * t_sum * rlen;
}

// Strain energy density at node i of one intact bond, J/m^3: alpha_i w (e - theta_i x / d)^2 / 2.
__device__ __forceinline__ double lps_bond_energy_density(double alpha, double w, double e,
                                                          double theta, double x, double d) {
    const double ed = e - theta * x / d;
    return 0.5 * alpha * w * ed * ed;
}

// Strain energy density of node i's dilatation, J/m^3: K_d theta^2 / 2.
__device__ __forceinline__ double lps_dilatation_energy_density(const LpsParams& m, double theta) {
    return 0.5 * m.kd * theta * theta;
}
