// Shared definitions of every peridot kernel: types, entry-point macros, read-only loads and
// the geometry of one bond (its vectors, length, stretch and extension). NVRTC resolves no
// #include of our own files, so the host prepends a precision prelude, this header, the laws'
// headers (law_pmb.cuh, law_lps.cuh) and bonds.cuh to each stage's source:
//
//     #define PD_REAL float            (or double)
//     #define PD_SUFFIX _f32           (or _f64)
//     #define PD_MIN_BLOCKS 5          (or 4: resident blocks of 256 threads per SM that the
//                                       bond kernels' register budget must allow)
//
// preceded by any defines of PERIDOT_KERNEL_DEFINES (src/gpu/kernels.rs: for measuring
// variants such as PD_PREFETCH=0 or PD_MIN_BLOCKS=3 without rebuilding).
//
// Entry points are named `stage_f32` / `stage_f64` through PD_KERNEL. The parameter structs
// (bonds.cuh, law_*.cuh) mirror the #[repr(C)] structs of `src/gpu/params.rs` and
// `src/material/laws/` field by field: change both.
//
// Units: positions m, displacement m, force density N/m^3, volumes m^3 (theory.md).

typedef PD_REAL real;

#define PD_CAT2(a, b) a##b
#define PD_CAT(a, b) PD_CAT2(a, b)
#define PD_KERNEL(name) extern "C" __global__ void PD_CAT(name, PD_SUFFIX)
// A bond loop: 256 threads per block (src/gpu/device.rs), registers capped so that
// PD_MIN_BLOCKS blocks fit on an SM (64 registers in f64, 48 in f32; gpu.md).
#define PD_BOND_KERNEL(name) \
    extern "C" __global__ void __launch_bounds__(256, PD_MIN_BLOCKS) PD_CAT(name, PD_SUFFIX)

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

// A constant of a parameter struct in the kernel's precision: the f32 copy (`name_f`) or
// the double.
#define PD_CONST(p, name) (sizeof(real) == 4 ? (real)(p).PD_CAT(name, _f) : (real)(p).name)

// Read-only loads through the non-coherent cache (the arrays do not change during a launch).
template <typename V>
__device__ __forceinline__ V ld(const V* p) { return __ldg(p); }

template <typename R> struct Pair;
template <> struct Pair<float> { typedef float2 type; };
template <> struct Pair<double> { typedef double2 type; };

// One bond i -> j seen from node i: xi (the difference of the positions, rounded to the
// precision; f32 kernels: of the f32 positions),
// its length x and 1 / x, eta = u_j - u_i, and V_j (components beyond D are zero).
struct Bond {
    real xi[3];
    real eta[3];
    real x;
    real rx;
    real vol;
};

template <int D>
__device__ __forceinline__ real dot(const real a[3], const real b[3]) {
    real s = a[0] * b[0];
    for (int k = 1; k < D; ++k) s += a[k] * b[k];
    return s;
}

// 1 / sqrt(a): in f32 the hardware approximation (about 2 ulp, --use_fast_math); in f64
// CUDA's rsqrt (the hardware estimate refined by one third-order step: within 1 ulp).
__device__ __forceinline__ float inv_sqrt(float a) { return rsqrtf(a); }
__device__ __forceinline__ double inv_sqrt(double a) { return rsqrt(a); }

#ifndef PD_DIRECT_STRETCH
#define PD_DIRECT_STRETCH 1
#endif

// Nonlinear stretch (|y| - x) / x, in f32 in the form that keeps its digits:
// eta.(2 xi + eta) / (x (|y| + x)). Writes 1 / |y|.
template <int D>
__device__ __forceinline__ real bond_stretch(const Bond& b, real* ry) {
    real y[3], w[3];
    for (int k = 0; k < 3; ++k) {
        y[k] = b.xi[k] + b.eta[k];
        w[k] = (real)2 * b.xi[k] + b.eta[k];
    }
    const real y2 = dot<D>(y, y);
    *ry = inv_sqrt(y2);
#if PD_DIRECT_STRETCH
    // f64: (|y| - x) / x directly, no division (its absolute error, about 1e-16, is that of
    // the rounded lengths; measured 33% faster, docs/results.md; PD_DIRECT_STRETCH=0 keeps
    // the division in f64 too).
    if (sizeof(real) == 8) return (y2 * *ry - b.x) * b.rx;
#endif
    return dot<D>(b.eta, w) * b.rx / (y2 * *ry + b.x);
}

// Linearized extension e = n . eta.
template <int D>
__device__ __forceinline__ real bond_extension(const Bond& b) {
    return dot<D>(b.xi, b.eta) * b.rx;
}
