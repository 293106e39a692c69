// Bond kernels of the matrix formulation in its incidence form (gpu-matrix; theory.md
// section 4, docs/matrix-formulation.md): one thread per bond row r joining nodes
// i = first[r] and j = second[r]. Each row forms its bond difference eta = u_j - u_i from
// its two ends (the incidence A with implicit +-1 values: no matrix read), and writes its
// force vector Z_r (d per row); matrix_force then sums f = -diag(1/V) A^T Z over each node's
// rows. What backend/cpu/matrix.rs's bond kernels do, for PMB linearized and nonlinear and
// LPS:
//
//   PMB linearized  Z = w a e n,               e = xi . eta / x, n = xi / x
//   PMB nonlinear   Z = w a s x / |y| (xi + eta), s = eta.(2 xi + eta) / (x (|y| + x))
//   LPS             pass 1: ze = mu e (then theta = Theta ze), pass 2: Z = w (a ze + g theta_i [+ g2 theta_j]) n
//
// and, with check_bonds, bond breaking fused in front (an intact row whose stretch exceeds
// s0, with several materials its pair's, is broken, unless an end node is in a no-fail zone;
// broken rows give z = 0).
//
// Every operation of the stretch and of the force scalar is rounded as the CPU rounds it:
// the _rn intrinsics contract nothing into fused multiply-adds and keep IEEE division and
// square root under --use_fast_math. With eta = A u exact (a two-term row sums to u_j - u_i
// exactly), the failure criterion and z equal cpu-matrix's bit for bit in both precisions.

struct MatrixParams {
    const real* u;              // d per node, the displacement the rows difference
    const real* xi;             // d per row, reference bond vector, m
    const real* length;         // per row, reference length x, m
    const real* a;              // per row (half storage: a_ij + a_ji), N/m^7
    const real* g;              // per row, LPS g_ij, N/m^6
    const real* g_second;       // per row, LPS half storage g_ji
    const real* a_first;        // per row, LPS half storage a_ij (energy)
    const real* w;              // per row, beta V_i V_j, m^6
    u8* mu;                     // per row, status: 1 intact, 0 broken
    const u32* first;           // per row, node i
    const u32* second;          // per row, node j
    const u8* no_fail;          // n, 1 where bonds never break
    real* z;                    // d per row, the rows' force vectors Z, out
    real* ze;                   // per row, LPS pass 1: mu e (Theta's input)
    const real* theta;          // n, LPS dilatation
    real* out;                  // per row, 1 - mu (damage), out
    double* partial;            // per block, strain energy sums, J (out)
    u64* broken;                // 1, running count of rows broken on the device
    const double* volumes;      // n, m^3 (LPS energy)
    double critical_stretch;    // s0 (ignored unless check_bonds)
    double kd;                  // LPS K_d, Pa
    u64 rows;                   // bond rows
    u32 n;                      // nodes
    int dim;                    // 2 or 3
    int law;                    // 0 PMB linearized, 1 PMB nonlinear, 2 LPS
    int check_bonds;            // 1: break rows whose stretch exceeds s0 first
    int half;                   // 1: half storage (g_second, a_first present)
    int pad;
    // Several materials (docs/materials.md): each node's material index (n bytes) and the
    // pair table of BondParams (n_materials^2 micromoduli, n_materials^2 critical stretches,
    // then each material's K_d), f64; a row i - j reads the entry material[i] * n_materials +
    // material[j] (the table is symmetric, so a half-storage row reads its pair either way).
    // The micromoduli are already in the rows' a (the assembly's per-bond coefficients); the
    // kernels read the critical stretches and K_d. Null: one material.
    const u8* material;
    const double* pair_table;
    u32 n_materials;
    u32 pad_m;
    // A^T (n x rows) with implicit values: node k's rows at at_col[at_ptr[k]..at_ptr[k + 1]],
    // each a row index with bit 31 set where k is the row's first node (entry -1), clear
    // where it is its second (+1).
    const u32* at_ptr;
    const u32* at_col;
    real* force;                // d per node, matrix_force's output, N/m^3
    // The bond kernels' first row (their rows are row_start..rows): a rank's part runs the
    // rows that read no ghost while the ghosts' values travel, then the rest.
    u64 row_start;
};

#define MX_NONLINEAR 1
#define MX_LPS 2

__device__ __forceinline__ float mx_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double mx_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float mx_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mx_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float mx_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double mx_sub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float mx_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double mx_div(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ float mx_sqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double mx_sqrt(double a) { return __dsqrt_rn(a); }

__device__ __forceinline__ u64 mx_row() { return (u64)blockIdx.x * blockDim.x + threadIdx.x; }

// laws.rs `dot`: ((a0 b0 + a1 b1) + a2 b2), 2D with zero third components as on the CPU.
__device__ __forceinline__ real mx_dot(const real a[3], const real b[3]) {
    return mx_add(mx_add(mx_mul(a[0], b[0]), mx_mul(a[1], b[1])), mx_mul(a[2], b[2]));
}

// Row r's reference vector, bond difference (zero-padded to 3) and length.
struct MxBond {
    real xi[3];
    real eta[3];
    real x;
};

__device__ __forceinline__ MxBond mx_bond(const MatrixParams& p, u64 r) {
    MxBond b;
    const int d = p.dim;
    const u64 i = p.first[r], j = p.second[r];
    for (int k = 0; k < 3; ++k) {
        b.xi[k] = k < d ? p.xi[d * r + k] : (real)0;
        b.eta[k] = k < d ? mx_sub(p.u[d * j + k], p.u[d * i + k]) : (real)0;
    }
    b.x = p.length[r];
    return b;
}

// laws.rs `extension`: e = xi . eta / x.
__device__ __forceinline__ real mx_extension(const MxBond& b) {
    return mx_div(mx_dot(b.xi, b.eta), b.x);
}

// laws.rs `stretch`: s = eta.(2 xi + eta) / (x (|y| + x)); writes |y|.
__device__ __forceinline__ real mx_stretch(const MxBond& b, real* ly) {
    const real two = (real)2;
    real y[3], w[3];
    for (int k = 0; k < 3; ++k) {
        y[k] = mx_add(b.xi[k], b.eta[k]);
        w[k] = mx_add(mx_mul(two, b.xi[k]), b.eta[k]);
    }
    *ly = mx_sqrt(mx_dot(y, y));
    return mx_div(mx_dot(b.eta, w), mx_mul(b.x, mx_add(*ly, b.x)));
}

// The stretch of the failure criterion: s (nonlinear PMB), else e / x.
__device__ __forceinline__ real mx_criterion(const MatrixParams& p, const MxBond& b) {
    if (p.law == MX_NONLINEAR) {
        real ly;
        return mx_stretch(b, &ly);
    }
    return mx_div(mx_extension(b), b.x);
}

// The critical stretch of row r: s0, or with several materials its pair's (as cpu-matrix's
// `break_bonds`, the f64 table entry rounded to the precision).
__device__ __forceinline__ real mx_critical(const MatrixParams& p, u64 r) {
    if (p.material == 0) return (real)p.critical_stretch;
    const u32 n = p.n_materials;
    const u32 pair = (u32)p.material[p.first[r]] * n + (u32)p.material[p.second[r]];
    return (real)p.pair_table[n * n + pair];
}

// Whether intact row r breaks at stretch s: above its critical stretch and neither end in a
// no-fail zone.
__device__ __forceinline__ bool mx_breaks(const MatrixParams& p, u64 r, real s) {
    return s > mx_critical(p, r) && p.no_fail[p.first[r]] == 0 &&
           p.no_fail[p.second[r]] == 0;
}

// Z = t n, the bond scalar t along the unit reference vector n = xi / x (the linear laws).
__device__ __forceinline__ void mx_along_bond(real* z, int d, real t, const MxBond& b) {
    for (int q = 0; q < 3; ++q)
        if (q < d) z[q] = mx_mul(t, mx_div(b.xi[q], b.x));
}

// PMB force vectors Z (with check_bonds, rows broken first).
PD_KERNEL(matrix_pmb)(const MatrixParams p) {
    const u64 r = p.row_start + mx_row();
    if (r >= p.rows) return;
    const int d = p.dim;
    const bool nonlinear = p.law == MX_NONLINEAR;
    real* z = p.z + d * r;
    if (p.mu[r] != 0) {
        const MxBond b = mx_bond(p, r);
        real ly = (real)1, e = (real)0, s;
        if (nonlinear) {
            s = mx_stretch(b, &ly);
        } else {
            e = mx_extension(b);
            s = mx_div(e, b.x);
        }
        if (p.check_bonds != 0 && mx_breaks(p, r, s)) {
            p.mu[r] = 0;
            atomicAdd(p.broken, 1ull);
        } else if (!nonlinear) {
            mx_along_bond(z, d, mx_mul(p.w[r], mx_mul(p.a[r], e)), b);
            return;
        } else {
            const real scale = mx_div(mx_mul(p.w[r], mx_mul(p.a[r], mx_mul(s, b.x))), ly);
            // constant bounds keep xi and eta in registers
            for (int q = 0; q < 3; ++q)
                if (q < d) z[q] = mx_mul(scale, mx_add(b.xi[q], b.eta[q]));
            return;
        }
    }
    for (int q = 0; q < 3; ++q)
        if (q < d) z[q] = (real)0;
}

// LPS pass 1: ze = mu e (with check_bonds, rows broken first at e / x).
PD_KERNEL(matrix_lps_extension)(const MatrixParams p) {
    const u64 r = p.row_start + mx_row();
    if (r >= p.rows) return;
    real z = (real)0;
    if (p.mu[r] != 0) {
        const MxBond b = mx_bond(p, r);
        const real e = mx_extension(b);
        if (p.check_bonds != 0 && mx_breaks(p, r, mx_div(e, b.x))) {
            p.mu[r] = 0;
            atomicAdd(p.broken, 1ull);
        } else {
            z = e;
        }
    }
    p.ze[r] = z;
}

// LPS pass 2: Z = w (a ze + g theta_i [+ g2 theta_j]) n on intact rows, 0 on broken.
PD_KERNEL(matrix_lps_force)(const MatrixParams p) {
    const u64 r = p.row_start + mx_row();
    if (r >= p.rows) return;
    const int d = p.dim;
    real* z = p.z + d * r;
    if (p.mu[r] == 0) {
        for (int q = 0; q < 3; ++q)
            if (q < d) z[q] = (real)0;
        return;
    }
    real t = mx_add(mx_mul(p.a[r], p.ze[r]), mx_mul(p.g[r], p.theta[p.first[r]]));
    if (p.half != 0) t = mx_add(t, mx_mul(p.g_second[r], p.theta[p.second[r]]));
    MxBond b;
    for (int k = 0; k < 3; ++k) b.xi[k] = k < d ? p.xi[d * r + k] : (real)0;
    b.x = p.length[r];
    mx_along_bond(z, d, mx_mul(p.w[r], t), b);
}

// f = -diag(1/V) A^T Z, MX_FORCE_LANES threads per node k (a group of consecutive lanes of
// one warp): lane l sums the entries l, l + G, l + 2G, ... of k's row of A^T (ascending bond
// rows), each row's force vector with the sign of k's end, so the group reads the row's
// indices, and the force vectors of the rows where k is the first end (consecutive rows in
// half storage), together; the group's sums are then added by a fixed butterfly and scaled
// by -1/V_k (rounded to the precision from f64, as the host rounded the operator's values).
// Launched over G n threads (every lane of a warp takes part in the shuffles).
#define MX_FORCE_LANES 8
PD_KERNEL(matrix_force)(const MatrixParams p) {
    const u64 t = mx_row();
    const u64 k = t / MX_FORCE_LANES;
    const u32 lane = threadIdx.x % MX_FORCE_LANES;
    const int d = p.dim;
    real f[3] = {(real)0, (real)0, (real)0};
    if (k < p.n) {
        const u32 end = p.at_ptr[k + 1];
        for (u32 e = p.at_ptr[k] + lane; e < end; e += MX_FORCE_LANES) {
            const u32 c = p.at_col[e];
            const real* z = p.z + (u64)d * (c & 0x7fffffffu);
            const bool first = (c >> 31) != 0;
            for (int q = 0; q < 3; ++q)
                if (q < d) f[q] = first ? mx_sub(f[q], z[q]) : mx_add(f[q], z[q]);
        }
    }
    for (int off = MX_FORCE_LANES / 2; off > 0; off /= 2)
        for (int q = 0; q < 3; ++q)
            f[q] = mx_add(f[q], __shfl_xor_sync(0xffffffffu, f[q], off, MX_FORCE_LANES));
    if (k < p.n && lane == 0) {
        const real scale = (real)(-1.0 / p.volumes[k]);
        for (int q = 0; q < 3; ++q)
            if (q < d) p.force[(u64)d * k + q] = mx_mul(f[q], scale);
    }
}

// Bond breaking alone (the trait's break_bonds): eta up to date.
PD_KERNEL(matrix_break)(const MatrixParams p) {
    const u64 r = mx_row();
    if (r >= p.rows || p.mu[r] == 0) return;
    const MxBond b = mx_bond(p, r);
    if (mx_breaks(p, r, mx_criterion(p, b))) {
        p.mu[r] = 0;
        atomicAdd(p.broken, 1ull);
    }
}

// out = 1 - mu, for the damage phi = Phi (1 - mu).
PD_KERNEL(matrix_broken)(const MatrixParams p) {
    const u64 r = mx_row();
    if (r >= p.rows) return;
    p.out[r] = p.mu[r] != 0 ? (real)0 : (real)1;
}

// Strain energy, J, summed per block of 256 threads in a fixed order (deterministic): thread
// t adds row t's energy (PMB w a e^2 / 2; LPS w (a_ij ed_i^2 + a_ji ed_j^2) / 2 with
// ed_k = e - theta_k x / d) and, for LPS, node t's K_d theta^2 V / 2. Launched over
// max(rows, n) threads; eta (and for LPS theta) up to date. The host sums the blocks.
PD_KERNEL(matrix_energy)(const MatrixParams p) {
    __shared__ double sum[256];  // the block size of every launch (src/gpu/device.rs)
    const u64 t = mx_row();
    double energy = 0.0;
    if (t < p.rows && p.mu[t] != 0) {
        const MxBond b = mx_bond(p, t);
        real e;
        if (p.law == MX_NONLINEAR) {
            real ly;
            e = mx_mul(mx_stretch(b, &ly), b.x);
        } else {
            e = mx_extension(b);
        }
        const double ed = (double)e, w = (double)p.w[t], a = (double)p.a[t];
        // half storage: a row whose second node is past the first n counts its first
        // node's direction only (a rank's cut bond, whose other direction the ghost's
        // owner counts; PMB: half the row, a_ij = a_ji)
        const bool both = p.half == 0 || p.second[t] < p.n;
        if (p.law != MX_LPS) {
            energy = (both ? 0.5 : 0.25) * w * a * ed * ed;
        } else {
            const double x = (double)b.x, d = (double)p.dim;
            const double ei = ed - (double)p.theta[p.first[t]] * x / d;
            if (p.half == 0) {
                energy = 0.5 * w * a * ei * ei;
            } else if (!both) {
                energy = 0.5 * w * (double)p.a_first[t] * ei * ei;
            } else {
                const double ej = ed - (double)p.theta[p.second[t]] * x / d;
                const double aij = (double)p.a_first[t];
                energy = 0.5 * w * (aij * ei * ei + (a - aij) * ej * ej);
            }
        }
    }
    if (p.law == MX_LPS && t < p.n) {
        const double th = (double)p.theta[t];
        // (several materials: node t's own K_d, after the pair table's two n x n blocks)
        const u32 n = p.n_materials;
        const double kd = p.material != 0 ? p.pair_table[2 * n * n + (u32)p.material[t]] : p.kd;
        energy += 0.5 * kd * p.volumes[t] * th * th;
    }
    sum[threadIdx.x] = energy;
    __syncthreads();
    for (unsigned h = blockDim.x / 2; h > 0; h >>= 1) {
        if (threadIdx.x < h) sum[threadIdx.x] += sum[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) p.partial[blockIdx.x] = sum[0];
}
