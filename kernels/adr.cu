// Adaptive dynamic relaxation (theory.md section 5; src/dynamics/adr.rs is the host reference)
// on device-resident state. One iteration, after the force pass and the body force:
//
//   adr_residual   per dof: F = 0 on constrained dofs, else f + b; per-block partial sums
//                  of |F|^2, |f|^2, |b|^2, u.u and u.K1.u (the Rayleigh quotient's terms)
//   adr_finalize   one block: the five global sums in a fixed order (deterministic), the
//                  relative residual and the damping coefficient c
//   adr_velocity   per dof: v = F / (2 lambda) on the first iteration, else
//                  ((2 - c) v + 2 F / lambda) / (2 + c)
//   (conditions: step velocity)
//   adr_drift      per dof: u += v (free dofs; the fictitious step is 1) or h v (constrained)
//   (conditions: impose)
//
// The per-dof arithmetic is that of the host in the same precision and order; the sums are
// taken in f64 as on the host, in a different (tree) order.

#define ADR_THREADS 256

// Quantities summed per iteration, in the order of the partial-sum array.
#define ADR_F2 0    // |F|^2, free force
#define ADR_L2 1    // |L|^2, internal force
#define ADR_B2 2    // |b|^2, body force
#define ADR_UU 3    // u.u
#define ADR_UKU 4   // u.K1.u (terms with v != 0)
#define ADR_SUMS 5

// The iteration's results, read by the host after each iteration (doubles).
#define ADR_STARTED 0   // 1 once the first iteration has run
#define ADR_FIRST 1     // 1 during the first iteration (velocity start rule)
#define ADR_C 2         // damping coefficient of this iteration
#define ADR_RESIDUAL 3  // |F| / max(|L|, |b|), 0 when nothing is loaded
#define ADR_STATUS 4

struct AdrParams {
    real* u;                 // displacement, m
    real* v;                 // fictitious velocity, m per iteration
    const real* f;           // internal force density L, N/m^3
    const real* b;           // body force density, N/m^3
    const real* lambda;      // fictitious density per dof, N/m^4
    real* force;             // F of this iteration (out)
    const real* force_prev;  // F of the previous iteration
    const u8* constrained;   // per dof, 1 where a kinematic condition sets the dof
    double* partials;        // ADR_SUMS x blocks
    double* status;          // ADR_STATUS doubles
    double h;                // load step of this iteration (t1 - t0)
    u64 ndof;
    u32 blocks;              // blocks of adr_residual (grid size)
    int pad;
};

// Sum `x` over the block into s[0] (tree order: deterministic). `s` has ADR_THREADS entries.
__device__ __forceinline__ double block_sum(double* s, double x) {
    s[threadIdx.x] = x;
    __syncthreads();
    for (unsigned w = ADR_THREADS / 2; w > 0; w >>= 1) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    const double total = s[0];
    __syncthreads();
    return total;
}

// Launched with exactly p.blocks blocks of ADR_THREADS threads (grid-stride over dofs).
PD_KERNEL(adr_residual)(const AdrParams p) {
    __shared__ double s[ADR_THREADS];
    double acc[ADR_SUMS] = {0.0, 0.0, 0.0, 0.0, 0.0};
    for (u64 k = (u64)blockIdx.x * ADR_THREADS + threadIdx.x; k < p.ndof;
         k += (u64)p.blocks * ADR_THREADS) {
        const real fk = p.f[k];
        const real bk = p.b[k];
        const real F = p.constrained[k] ? (real)0 : fk + bk;
        p.force[k] = F;
        const double u = (double)p.u[k];
        const double v = (double)p.v[k];
        acc[ADR_F2] += (double)F * (double)F;
        acc[ADR_L2] += (double)fk * (double)fk;
        acc[ADR_B2] += (double)bk * (double)bk;
        acc[ADR_UU] += u * u;
        if (v != 0.0) {
            const double l = (double)p.lambda[k];
            const double k1 = -((double)F / l - (double)p.force_prev[k] / l) / v;
            acc[ADR_UKU] += u * u * k1;
        }
    }
    for (int q = 0; q < ADR_SUMS; ++q) {
        const double total = block_sum(s, acc[q]);
        if (threadIdx.x == 0) p.partials[(u64)q * p.blocks + blockIdx.x] = total;
    }
}

// One block of ADR_THREADS threads.
PD_KERNEL(adr_finalize)(const AdrParams p) {
    __shared__ double s[ADR_THREADS];
    double sum[ADR_SUMS];
    for (int q = 0; q < ADR_SUMS; ++q) {
        double x = 0.0;
        for (u32 j = threadIdx.x; j < p.blocks; j += ADR_THREADS) {
            x += p.partials[(u64)q * p.blocks + j];
        }
        sum[q] = block_sum(s, x);
    }
    if (threadIdx.x != 0) return;
    const double scale = fmax(sqrt(sum[ADR_L2]), sqrt(sum[ADR_B2]));
    p.status[ADR_RESIDUAL] = scale > 0.0 ? sqrt(sum[ADR_F2]) / scale : 0.0;
    const bool first = p.status[ADR_STARTED] == 0.0;
    p.status[ADR_FIRST] = first ? 1.0 : 0.0;
    p.status[ADR_STARTED] = 1.0;
    double c = 0.0;
    if (!first && sum[ADR_UU] > 0.0 && sum[ADR_UKU] > 0.0) {
        c = fmin(2.0 * sqrt(sum[ADR_UKU] / sum[ADR_UU]), 1.99);
    }
    p.status[ADR_C] = c;
}

PD_KERNEL(adr_velocity)(const AdrParams p) {
    const u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.ndof) return;
    const real two = (real)2;
    const real F = p.force[k];
    const real l = p.lambda[k];
    if (p.status[ADR_FIRST] != 0.0) {
        p.v[k] = F / (two * l);
    } else {
        const real c = (real)p.status[ADR_C];
        p.v[k] = ((two - c) * p.v[k] + two * F / l) / (two + c);
    }
}

PD_KERNEL(adr_drift)(const AdrParams p) {
    const u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.ndof) return;
    const real v = p.v[k];
    p.u[k] += p.constrained[k] ? (real)p.h * v : v;
}
