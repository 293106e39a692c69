// Shared definitions of every peridot kernel. NVRTC resolves no #include of our own files, so
// the host prepends a precision prelude and this header to each stage's source:
//
//     #define PD_REAL float            (or double)
//     #define PD_SUFFIX _f32           (or _f64)
//
// Entry points are named `stage_f32` / `stage_f64` through PD_KERNEL. The parameter structs
// below mirror the #[repr(C)] structs of `src/gpu/params.rs` field by field: change both.
//
// Units: positions m, displacement m, force density N/m^3, volumes m^3 (theory.md).

typedef PD_REAL real;

#define PD_CAT2(a, b) a##b
#define PD_CAT(a, b) PD_CAT2(a, b)
#define PD_KERNEL(name) extern "C" __global__ void PD_CAT(name, PD_SUFFIX)

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

// Everything the bond loops (force, dilatation, bond breaking, damage, energy) read or write.
// One thread per node walks the node's CSR family.
struct BondParams {
    const u64* offsets;            // n + 1, bond range of each node
    const u32* neighbors;          // nb, neighbour of each directed bond
    const double* positions;       // 3 n, reference positions
    const double* volumes;         // n
    const double* horizon_volume;  // n, sum_j beta V_j (damage)
    const real* weight;            // nb: PMB c lambda beta V_j; LPS omega beta V_j
    u8* mu;                        // nb, bond status: 1 intact, 0 broken
    const u8* no_fail;             // n, 1 where bonds never break
    const real* u;                 // d n, displacement
    real* force;                   // d n, internal force density (out)
    real* theta;                   // n, LPS dilatation
    const real* alpha;             // n, LPS alpha_i
    const real* pcoef;             // n, LPS d K_d / m_i - alpha_i / d
    const real* d_over_m;          // n, LPS d / m_i
    real* phi;                     // n, local damage (out)
    double* energy;                // n, strain energy of each node, J (out)
    u64* broken;                   // 1, running count of bonds broken on the device
    double critical_stretch;       // s0 (ignored unless check_bonds)
    double kd;                     // LPS K_d, Pa
    double delta;                  // horizon, m
    double dx;                     // lattice spacing, m
    u32 n;                         // nodes
    int dim;                       // 2 or 3
    int linearized;                // PMB: 1 linearized, 0 nonlinear
    int check_bonds;               // 1: break bonds whose stretch exceeds s0 first
    int partial_volume;            // 0 none, 1 linear (beta from the bond length)
    int lps;                       // 1 for LPS (energy: the dilatation term)
};

// Bond vector and length in double, then rounded, as the CPU reference does. The _rn
// intrinsics keep the compiler from contracting into FMA, so the length is bitwise the
// host's `bond_length`.
__device__ __forceinline__ void bond_geometry(const BondParams& p, u32 i, u32 j, real xi[3],
                                              real* x, double* xd) {
    const double a0 = __dsub_rn(p.positions[3 * j + 0], p.positions[3 * i + 0]);
    const double a1 = __dsub_rn(p.positions[3 * j + 1], p.positions[3 * i + 1]);
    const double a2 = __dsub_rn(p.positions[3 * j + 2], p.positions[3 * i + 2]);
    const double s = __dadd_rn(__dadd_rn(__dmul_rn(a0, a0), __dmul_rn(a1, a1)), __dmul_rn(a2, a2));
    const double len = sqrt(s);
    xi[0] = (real)a0;
    xi[1] = (real)a1;
    xi[2] = (real)a2;
    *x = (real)len;
    *xd = len;
}

// Relative displacement eta = u_j - u_i (components beyond dim are zero).
__device__ __forceinline__ void bond_eta(const BondParams& p, u32 i, u32 j, real eta[3]) {
    const int d = p.dim;
    eta[0] = p.u[d * j + 0] - p.u[d * i + 0];
    eta[1] = p.u[d * j + 1] - p.u[d * i + 1];
    eta[2] = d == 3 ? p.u[d * j + 2] - p.u[d * i + 2] : (real)0;
}

__device__ __forceinline__ real dot3(const real a[3], const real b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

// Nonlinear stretch (|y| - x) / x in the form that keeps its digits in f32:
// eta.(2 xi + eta) / (x (|y| + x)). Writes |y|.
__device__ __forceinline__ real bond_stretch(const real xi[3], const real eta[3], real x,
                                             real* ly) {
    const real y[3] = {xi[0] + eta[0], xi[1] + eta[1], xi[2] + eta[2]};
    *ly = sqrt(dot3(y, y));
    const real w[3] = {(real)2 * xi[0] + eta[0], (real)2 * xi[1] + eta[1],
                       (real)2 * xi[2] + eta[2]};
    return dot3(eta, w) / (x * (*ly + x));
}

// Linearized extension e = n . eta.
__device__ __forceinline__ real bond_extension(const real xi[3], const real eta[3], real x) {
    return dot3(xi, eta) / x;
}

// Stretch the failure criterion uses: nonlinear PMB s, otherwise e / x (theory.md 2, 3).
__device__ __forceinline__ real criterion_stretch(const BondParams& p, const real xi[3],
                                                  const real eta[3], real x) {
    if (p.linearized == 0) {
        real ly;
        return bond_stretch(xi, eta, x, &ly);
    }
    return bond_extension(xi, eta, x) / x;
}

// Break bond b of node i (i not in a no-fail zone) if its stretch exceeds s0. Returns 1
// when this call broke it.
__device__ __forceinline__ u32 try_break(const BondParams& p, u64 b, u32 j, const real xi[3],
                                         const real eta[3], real x) {
    if (p.no_fail[j] != 0) return 0;
    if (criterion_stretch(p, xi, eta, x) > (real)p.critical_stretch) {
        p.mu[b] = 0;
        return 1;
    }
    return 0;
}

// Add this thread's broken bonds to the device counter.
__device__ __forceinline__ void count_broken(const BondParams& p, u32 count) {
    if (count != 0) atomicAdd(p.broken, (u64)count);
}

// Partial-volume factor beta of a bond of length x (theory.md section 1).
__device__ __forceinline__ double partial_volume(const BondParams& p, double x) {
    if (p.partial_volume == 0 || x <= p.delta - 0.5 * p.dx) return 1.0;
    const double b = (p.delta + 0.5 * p.dx - x) / p.dx;
    return fmin(fmax(b, 0.0), 1.0);
}
