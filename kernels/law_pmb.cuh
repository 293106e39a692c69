// The PMB bond law (theory.md section 2; host twin: src/material/laws/pmb.rs): its
// parameters, the #[repr(C)] PmbParams field for field (both sides assert the size), and its
// bond formulas. The force density of an intact bond on node i is w * scale * dir with the
// weight w = c lambda beta V_j (bonds.cuh, `bond_weight`).
//
// Units: micromodulus c N/m^6, lengths m, stretch dimensionless.

struct PmbParams {
    double micromodulus;      // c, N/m^6
    float micromodulus_f;     // c rounded to f32 on the host
    int surface_correction;   // 1: the weight carries 2 V_full / (V_h,i + V_h,j)
};
static_assert(sizeof(PmbParams) == 16, "PmbParams: see src/material/laws/pmb.rs");

// The stretch s of a bond, its force direction dir and the factor scale of w * scale * dir:
// linearized s = n . eta / x along xi (scale s / x); nonlinear s = (|y| - x) / x along
// y = xi + eta (scale s / |y|).
template <int D, bool LINEARIZED>
__device__ __forceinline__ real pmb_bond(const Bond& bd, real* scale, real dir[3]) {
    real s;
    if (LINEARIZED) {
        s = bond_extension<D>(bd) * bd.rx;
        *scale = s * bd.rx;
        for (int k = 0; k < 3; ++k) dir[k] = bd.xi[k];
    } else {
        real ry;
        s = bond_stretch<D>(bd, &ry);
        *scale = s * ry;
        for (int k = 0; k < 3; ++k) dir[k] = bd.xi[k] + bd.eta[k];
    }
    return s;
}

// The stretch the failure criterion reads: n . eta / x where the bonds are linearized
// (linearized PMB, and LPS), else the nonlinear stretch.
template <int D>
__device__ __forceinline__ real criterion_stretch(bool linearized, const Bond& bd) {
    real ry;
    return linearized ? bond_extension<D>(bd) * bd.rx : bond_stretch<D>(bd, &ry);
}

// The micromodulus in the kernel's precision.
__device__ __forceinline__ real pmb_micromodulus(const PmbParams& m) {
    return PD_CONST(m, micromodulus);
}

// Strain energy density at node i of one intact bond of weight w, stretch s and length x,
// J/m^3: half of the pair's micropotential w s^2 x / 2.
__device__ __forceinline__ double pmb_energy_density(double w, double s, double x) {
    return 0.25 * w * s * s * x;
}
