// A measurement, not an engine kernel (examples/half_stencil.rs): the PMB force of a full box
// lattice in 3D f32, computed once per bond (Newton's third law) instead of once per end.
//
// `half_tile`: a block owns a tile of TX x TY x TZ nodes (x fastest; a warp is one row of 32,
// so one status slice). It stages the displacement of its region, the tile grown by R on both
// sides in x and y and on the forward side in z, in shared memory. Each node walks the
// forward half of the stencil (c > 0, or c = 0 and b > 0, or c = b = 0 and a > 0): the bond's
// force goes to the node's registers and, negated, to the neighbour's cell of a shared
// accumulator. Within one slot every thread writes a different cell, and a barrier separates
// slots, so no atomic is needed and the sums' order is fixed. The tile's own sums go to
// `partial`; the region's accumulator to the block's part of `halo`.
// `half_gather`: each node adds to its partial the cells of the neighbouring tiles' halos
// that hold it, in a fixed order of tiles (deterministic), times the weight.
// `full_ref`: one thread per node over the whole stencil (the engine's current form without
// its table loads), the reference the two are checked against.
//
// Bond status: one bit per forward slot per node, in words per (slice of 32 nodes, slot).

#ifndef TX
#define TX 32
#endif
#ifndef TY
#define TY 4
#endif
#ifndef TZ
#define TZ 4
#endif
#define R 3
#define RX (TX + 2 * R)
#define RY (TY + 2 * R)
#define RZ (TZ + R)
#define RN (RX * RY * RZ)
#define SHARED_BYTES (6 * RN * 4)
#define HALF_MAX 64
#define FULL_MAX 128

typedef unsigned int u32;

struct HalfSlots {
    float xi[3][HALF_MAX];  // component-major, so a uniform slot index reads each by ULDC
    float x[HALF_MAX];
    float rx[HALF_MAX];
    int so[HALF_MAX];  // a + RX (b + RY c): the neighbour's region cell offset
    int k;
};

struct FullSlots {
    int step[FULL_MAX][3];
    float xi[FULL_MAX][3];
    float x[FULL_MAX];
    float rx[FULL_MAX];
    int k;
};

__device__ __forceinline__ float stretch(const float xi[3], const float eta[3], float x, float rx,
                                         float* ry, float y[3]) {
    float w[3];
    for (int k = 0; k < 3; ++k) {
        y[k] = xi[k] + eta[k];
        w[k] = 2.0f * xi[k] + eta[k];
    }
    const float y2 = y[0] * y[0] + y[1] * y[1] + y[2] * y[2];
    *ry = rsqrtf(y2);
    return (eta[0] * w[0] + eta[1] * w[1] + eta[2] * w[2]) * rx / (y2 * *ry + x);
}

extern "C" __global__ void __launch_bounds__(TX * TY * TZ) half_tile(
    const float* __restrict__ u, const u32* __restrict__ status, float* __restrict__ partial,
    float* __restrict__ halo, int nx, int ny, int nz, float s_break, const HalfSlots t) {
    extern __shared__ float smem[];  // su[3][RN], then sacc[3][RN]
    float(*su)[RN] = reinterpret_cast<float(*)[RN]>(smem);
    float(*sacc)[RN] = reinterpret_cast<float(*)[RN]>(smem + 3 * RN);
    const int bx = blockIdx.x, by = blockIdx.y, bz = blockIdx.z;
    const int x0 = bx * TX - R, y0 = by * TY - R, z0 = bz * TZ;
    for (int q = threadIdx.x; q < RN; q += blockDim.x) {
        const int qx = q % RX, qy = (q / RX) % RY, qz = q / (RX * RY);
        const int gx = x0 + qx, gy = y0 + qy, gz = z0 + qz;
        const bool in = gx >= 0 && gx < nx && gy >= 0 && gy < ny && gz < nz;
        const long long g = in ? gx + (long long)nx * (gy + (long long)ny * gz) : 0;
        for (int k = 0; k < 3; ++k) {
            su[k][q] = in ? u[3 * g + k] : 0.0f;
            sacc[k][q] = 0.0f;
        }
    }
    __syncthreads();
    const int lx = threadIdx.x % TX, ly = (threadIdx.x / TX) % TY, lz = threadIdx.x / (TX * TY);
    const int gx = bx * TX + lx, gy = by * TY + ly, gz = bz * TZ + lz;
    const bool valid = gx < nx && gy < ny && gz < nz;
    const long long i = gx + (long long)nx * (gy + (long long)ny * gz);
    const int qi = (lx + R) + RX * ((ly + R) + RY * lz);
    const float ui[3] = {su[0][qi], su[1][qi], su[2][qi]};
    const u32* st = status + (valid ? (i / 32) * t.k : 0);
    const u32 bit = 1u << (lx % 32);
    float f[3] = {0.0f, 0.0f, 0.0f};
    u32 broken = 0;
    const int slots = t.k;
#pragma unroll 1
    for (int m = 0; m < slots; ++m) {
        const int qj = qi + t.so[m];
        const bool intact = valid && (st[m] & bit) != 0;
        float eta[3], y[3], ry;
        for (int k = 0; k < 3; ++k) eta[k] = su[k][qj] - ui[k];
        const float xi[3] = {t.xi[0][m], t.xi[1][m], t.xi[2][m]};
        const float s = stretch(xi, eta, t.x[m], t.rx[m], &ry, y);
        float scale = intact ? s * ry : 0.0f;
        if (intact && s > s_break) {
            ++broken;
            scale = 0.0f;
        }
        for (int k = 0; k < 3; ++k) {
            const float c = scale * y[k];
            f[k] += c;
            sacc[k][qj] -= c;
        }
        __syncthreads();
    }
    if (valid) {
        for (int k = 0; k < 3; ++k) partial[3 * i + k] = f[k] + sacc[k][qi];
    }
    const long long block = bx + (long long)gridDim.x * (by + (long long)gridDim.y * bz);
    float* h = halo + block * 3 * RN;
    for (int q = threadIdx.x; q < RN; q += blockDim.x) {
        for (int k = 0; k < 3; ++k) h[k * RN + q] = sacc[k][q];
    }
    if (broken != 0) atomicAdd((u32*)&halo[0], 0u);  // (keeps the count live; never taken here)
}

extern "C" __global__ void half_gather(const float* __restrict__ partial,
                                       const float* __restrict__ halo, float* __restrict__ force,
                                       int nx, int ny, int nz, float weight) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)nx * ny * nz) return;
    const int gx = i % nx, gy = (i / nx) % ny, gz = i / ((long long)nx * ny);
    const int tx = gx / TX, ty = gy / TY, tz = gz / TZ;
    const int gtx = (nx + TX - 1) / TX, gty = (ny + TY - 1) / TY;
    float f[3] = {partial[3 * i], partial[3 * i + 1], partial[3 * i + 2]};
    for (int dz = -1; dz <= 0; ++dz) {
        for (int dy = -1; dy <= 1; ++dy) {
            for (int dx = -1; dx <= 1; ++dx) {
                const int ax = tx + dx, ay = ty + dy, az = tz + dz;
                if ((dx | dy | dz) == 0 || ax < 0 || ay < 0 || az < 0 || ax >= gtx || ay >= gty) {
                    continue;
                }
                const int qx = gx - (ax * TX - R), qy = gy - (ay * TY - R), qz = gz - az * TZ;
                if (qx < 0 || qx >= RX || qy < 0 || qy >= RY || qz >= RZ) continue;
                const int q = qx + RX * (qy + RY * qz);
                const float* h = halo + (ax + (long long)gtx * (ay + (long long)gty * az)) * 3 * RN;
                for (int k = 0; k < 3; ++k) f[k] += h[k * RN + q];
            }
        }
    }
    for (int k = 0; k < 3; ++k) force[3 * i + k] = weight * f[k];
}

extern "C" __global__ void __launch_bounds__(256) full_ref(const float* __restrict__ u,
                                                           float* __restrict__ force, int nx,
                                                           int ny, int nz, float s_break,
                                                           float weight, const FullSlots t) {
    const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= (long long)nx * ny * nz) return;
    const int gx = i % nx, gy = (i / nx) % ny, gz = i / ((long long)nx * ny);
    const float ui[3] = {u[3 * i], u[3 * i + 1], u[3 * i + 2]};
    float f[3] = {0.0f, 0.0f, 0.0f};
#pragma unroll 1
    for (int m = 0; m < t.k; ++m) {
        const int ax = gx + t.step[m][0], ay = gy + t.step[m][1], az = gz + t.step[m][2];
        if (ax < 0 || ay < 0 || az < 0 || ax >= nx || ay >= ny || az >= nz) continue;
        const long long j = ax + (long long)nx * (ay + (long long)ny * az);
        float eta[3], y[3], ry;
        for (int k = 0; k < 3; ++k) eta[k] = u[3 * j + k] - ui[k];
        const float s = stretch(t.xi[m], eta, t.x[m], t.rx[m], &ry, y);
        if (s > s_break) continue;
        for (int k = 0; k < 3; ++k) f[k] += s * ry * y[k];
    }
    for (int k = 0; k < 3; ++k) force[3 * i + k] = weight * f[k];
}
