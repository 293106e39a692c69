// The n-linear softening damage laws of a PMB bond (docs/materials.md; host twin:
// src/material/laws/softening.rs): the law's points, the #[repr(C)] Softening field for field
// (both sides assert the size), and the law's damage D(s). A bond keeps the largest D of its
// history (irreversible) and carries (1 - d) c s, the envelope while it loads, the secant
// back to the origin when it unloads.
//
// Units: stretches dimensionless.

struct SofteningParams {
    double s0;             // critical stretch: the end of the elastic branch
    double kink_stretch;   // the kink's stretch (bilinear: the final stretch)
    double kink_ratio;     // the force at the kink over the peak force (bilinear: 0)
    double final_stretch;  // the force is zero from here on: the bond breaks
};
static_assert(sizeof(SofteningParams) == 32, "SofteningParams: see src/material/laws/softening.rs");

// The law's damage D(s) at stretch s, in the kernel's precision with the host's operations
// (`Softening::damage`): 0 up to s0, 1 from the final stretch on, 1 - f_env(s) / (c s) between.
__device__ __forceinline__ real softening_damage(const SofteningParams& m, real s) {
    const real s0 = (real)m.s0, sk = (real)m.kink_stretch;
    const real beta = (real)m.kink_ratio, sc = (real)m.final_stretch;
    if (s <= s0) return (real)0;
    if (s >= sc) return (real)1;
    const real f = s < sk ? (real)1 + (beta - (real)1) * (s - s0) / (sk - s0)
                          : beta * (sc - s) / (sc - sk);
    return (real)1 - s0 * f / s;
}
