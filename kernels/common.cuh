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
// One thread per node walks the node's family. Per-bond arrays are in sliced order
// (src/gpu/layout.rs): slices of 32 nodes, slot k of the slice's node l at
// slice_start + 32 k + l, so a warp reads 32 consecutive entries per slot.
struct BondParams {
    const u64* slice_start;        // n / 32 + 1, start of each slice
    const u32* lengths;            // n, family size of each node
    const u32* neighbors;          // per bond (sliced), neighbour
    const double* positions;       // 3 n, reference positions
    const double* volumes;         // n
    const double* horizon_volume;  // n, sum_j beta V_j (damage)
    const real* weight;            // per bond: PMB c lambda beta V_j; LPS omega beta V_j
    u8* mu;                        // per bond, status: 1 intact, 0 broken (0 in padding)
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

// Read-only loads through the non-coherent cache (the arrays do not change during a launch).
template <typename V>
__device__ __forceinline__ V ld(const V* p) { return __ldg(p); }

// The bonds of node i in the sliced order: b = begin, begin + 32, ... < end.
struct BondRange {
    u64 begin;
    u64 end;
};

__device__ __forceinline__ BondRange bond_range(const BondParams& p, u32 i) {
    BondRange r;
    r.begin = ld(p.slice_start + i / 32) + (i % 32);
    r.end = r.begin + 32 * (u64)ld(p.lengths + i);
    return r;
}

// The thread's own node: reference position and displacement, loaded once.
struct Node {
    double pos[3];
    real u[3];
};

__device__ __forceinline__ Node load_node(const BondParams& p, u32 i) {
    Node n;
    const int d = p.dim;
    for (int k = 0; k < 3; ++k) n.pos[k] = ld(p.positions + 3 * i + k);
    n.u[0] = ld(p.u + d * i);
    n.u[1] = ld(p.u + d * i + 1);
    n.u[2] = d == 3 ? ld(p.u + d * i + 2) : (real)0;
    return n;
}

// One bond i -> j seen from node i: xi (the difference of the f64 positions, then rounded),
// its length x and 1 / x, and eta = u_j - u_i (components beyond dim are zero).
struct Bond {
    real xi[3];
    real eta[3];
    real x;
    real rx;
};

__device__ __forceinline__ real dot3(const real a[3], const real b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

// 1 / sqrt(a). The hardware reciprocal square root is approximate: enough for f32 (about
// 2 ulp); f64 adds one Newton step, which brings it to about 1 ulp.
__device__ __forceinline__ float inv_sqrt(float a) { return rsqrtf(a); }
__device__ __forceinline__ double inv_sqrt(double a) {
    const double r = rsqrt(a);
    return r * fma(-0.5 * a * r, r, 1.5);
}

__device__ __forceinline__ Bond load_bond(const BondParams& p, const Node& n, u32 j) {
    Bond b;
    const int d = p.dim;
    for (int k = 0; k < 3; ++k) b.xi[k] = (real)(ld(p.positions + 3 * j + k) - n.pos[k]);
    b.eta[0] = ld(p.u + d * j) - n.u[0];
    b.eta[1] = ld(p.u + d * j + 1) - n.u[1];
    b.eta[2] = d == 3 ? ld(p.u + d * j + 2) - n.u[2] : (real)0;
    const real x2 = dot3(b.xi, b.xi);
    b.rx = inv_sqrt(x2);
    b.x = x2 * b.rx;
    return b;
}

// Bond length exactly as the host's `bond_length` (f64, no contraction into FMA), for
// quantities that must match it to the last bit (the partial-volume factor of damage).
__device__ __forceinline__ double exact_length(const BondParams& p, const Node& n, u32 j) {
    const double a0 = __dsub_rn(ld(p.positions + 3 * j + 0), n.pos[0]);
    const double a1 = __dsub_rn(ld(p.positions + 3 * j + 1), n.pos[1]);
    const double a2 = __dsub_rn(ld(p.positions + 3 * j + 2), n.pos[2]);
    return sqrt(__dadd_rn(__dadd_rn(__dmul_rn(a0, a0), __dmul_rn(a1, a1)), __dmul_rn(a2, a2)));
}

// Nonlinear stretch (|y| - x) / x in the form that keeps its digits in f32:
// eta.(2 xi + eta) / (x (|y| + x)). Writes 1 / |y|.
__device__ __forceinline__ real bond_stretch(const Bond& b, real* ry) {
    const real y[3] = {b.xi[0] + b.eta[0], b.xi[1] + b.eta[1], b.xi[2] + b.eta[2]};
    const real y2 = dot3(y, y);
    *ry = inv_sqrt(y2);
    const real w[3] = {(real)2 * b.xi[0] + b.eta[0], (real)2 * b.xi[1] + b.eta[1],
                       (real)2 * b.xi[2] + b.eta[2]};
    return dot3(b.eta, w) * b.rx / (y2 * *ry + b.x);
}

// Linearized extension e = n . eta.
__device__ __forceinline__ real bond_extension(const Bond& b) { return dot3(b.xi, b.eta) * b.rx; }

// Whether bond i -> j (i not in a no-fail zone) breaks at stretch s: j not in a no-fail zone
// and s above the critical stretch (theory.md 2; LPS uses s = e / x).
__device__ __forceinline__ bool breaks(const BondParams& p, u32 j, real s) {
    return s > (real)p.critical_stretch && ld(p.no_fail + j) == 0;
}

// Write node i's force density (constant indices keep f in registers).
__device__ __forceinline__ void store_force(const BondParams& p, u32 i, const real f[3]) {
    const int d = p.dim;
    p.force[d * i] = f[0];
    p.force[d * i + 1] = f[1];
    if (d == 3) p.force[d * i + 2] = f[2];
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
