// Explicit leapfrog in velocity-Verlet form (theory.md section 5) on device-resident state,
// one thread per degree of freedom, in the order of `src/dynamics/explicit.rs`:
// kick (v += dt/2 a), conditions (step velocity), drift (u += dt v), conditions (impose),
// forces, accelerate and kick (a = (f + b - eta_d v_half) / rho; v += dt/2 a), conditions.
// The device loop (`src/backend/gpu/time_loop.rs`) runs kick and drift here once per call; the
// force kernels fuse accelerate and kick, and the next step's kick and drift, into their
// store (`store_force` in common.cuh), and `apply_conditions` mode 3 fixes the dofs of
// kinematic conditions between steps.

struct StepParams {
    real* u;             // displacement, m
    real* v;             // velocity, m/s
    real* a;             // acceleration, m/s^2
    const real* f;       // internal force density, N/m^3
    const real* b;       // body force density, N/m^3
    real* vhalf;         // half-step velocity for damping (null without damping)
    double dt;           // s
    double half;         // dt / 2
    double inv_density;  // 1 / rho
    double damping;      // eta_d, N s/m^4
    u64 ndof;
    const real* inv_density_node;  // each node's 1 / rho (several densities), or null
    u64 dim;                       // dofs per node, with inv_density_node
};

PD_KERNEL(kick)(const StepParams p) {
    const u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.ndof) return;
    p.v[k] += (real)p.half * p.a[k];
}

PD_KERNEL(drift)(const StepParams p) {
    const u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.ndof) return;
    const real v = p.v[k];
    p.u[k] += (real)p.dt * v;
    if (p.vhalf != 0) p.vhalf[k] = v;
}

// The unfused update after a force pass (the device loop of backends whose force kernels do
// not update, `gpu-matrix`): a = (f + b - eta_d v_half) / rho; v += dt/2 a.
PD_KERNEL(accelerate_kick)(const StepParams p) {
    const u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= p.ndof) return;
    const real drag = p.vhalf != 0 ? (real)p.damping * p.vhalf[k] : (real)0;
    const real inv_rho =
        p.inv_density_node != 0 ? p.inv_density_node[k / p.dim] : (real)p.inv_density;
    const real a = (p.f[k] + p.b[k] - drag) * inv_rho;
    p.a[k] = a;
    p.v[k] += (real)p.half * a;
}

// Boundary conditions on the dofs they name, one thread per named dof, each applying its
// entries in the order of the model's conditions (as `src/dynamics/loads.rs` does).
// Mode 3 is what the conditions do to a kinematic dof between two fused force kernels:
// step velocity (from u), drift into u_next (and v_half), impose on u_next; the kick before
// the step velocity and the impose ending the previous step are overwritten by it (every
// dof of the kinematic list has a displacement, fixed or velocity entry).
struct ConditionParams {
    const u32* dofs;       // named dofs of this list
    const u32* starts;     // count + 1, entry range of each dof
    const u32* condition;  // entry -> condition index
    const double* value;   // entry -> value (m, m/s or N/m^3)
    const u8* kind;        // entry -> 0 displacement or fixed, 1 velocity, 2 body force
    const double* table;   // this step: [h, factor(t1) per condition, factor(mid) per condition]
    real* u;
    real* v;
    real* b;
    real* u_next;          // mode 3: the drifted displacement
    real* vhalf;           // mode 3: half-step velocity (null without damping)
    double dt;             // mode 3: s
    u32 count;             // named dofs
    u32 conditions;        // conditions in the table
    int mode;              // 0 step velocity, 1 impose, 2 body force, 3 step velocity,
                           // drift and impose
    int pad;
};

PD_KERNEL(apply_conditions)(const ConditionParams p) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= p.count) return;
    const u32 dof = p.dofs[t];
    const double* f1 = p.table + 1;
    const double* fmid = p.table + 1 + p.conditions;
    if (p.mode == 3) {
        const real u = p.u[dof];
        real vel = p.v[dof];
        for (u32 e = p.starts[t]; e < p.starts[t + 1]; ++e) {
            const double val = p.value[e];
            const u32 c = p.condition[e];
            if (p.kind[e] == 0) vel = ((real)(val * f1[c]) - u) / (real)p.table[0];
            else if (p.kind[e] == 1) vel = (real)(val * fmid[c]);
        }
        real un = u + (real)p.dt * vel;
        if (p.vhalf != 0) p.vhalf[dof] = vel;
        for (u32 e = p.starts[t]; e < p.starts[t + 1]; ++e) {
            const double val = p.value[e];
            const u32 c = p.condition[e];
            if (p.kind[e] == 0) un = (real)(val * f1[c]);
            else if (p.kind[e] == 1) vel = (real)(val * f1[c]);
        }
        p.u_next[dof] = un;
        p.v[dof] = vel;
        return;
    }
    real sum = (real)0;
    for (u32 e = p.starts[t]; e < p.starts[t + 1]; ++e) {
        const u32 c = p.condition[e];
        const double val = p.value[e];
        const u8 kind = p.kind[e];
        if (p.mode == 0) {
            // an empty interval (ADR within a load step) leaves the dof where it is
            if (kind == 0) {
                p.v[dof] = p.table[0] == 0.0
                               ? (real)0
                               : ((real)(val * f1[c]) - p.u[dof]) / (real)p.table[0];
            }
            else if (kind == 1) p.v[dof] = (real)(val * fmid[c]);
        } else if (p.mode == 1) {
            if (kind == 0) p.u[dof] = (real)(val * f1[c]);
            else if (kind == 1) p.v[dof] = (real)(val * f1[c]);
        } else if (kind == 2) {
            sum += (real)(val * f1[c]);
        }
    }
    if (p.mode == 2) p.b[dof] = sum;
}

// Largest |u| over all dofs, for the host's stability check without copying u back: each
// block reduces its values and raises *out (the bits of a non-negative double, which order
// as integers) with atomicMax. A value that is not finite counts as +infinity.
// Launched with 256 threads per block.
struct ReduceParams {
    const real* u;
    u64 ndof;
    u64* out;  // zeroed by the host before the launch
};

PD_KERNEL(max_abs)(const ReduceParams p) {
    __shared__ double block_max[256];
    double m = 0.0;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < p.ndof;
         k += (u64)gridDim.x * blockDim.x) {
        const double x = fabs((double)p.u[k]);
        m = isfinite(x) ? fmax(m, x) : __longlong_as_double(0x7ff0000000000000LL);
    }
    block_max[threadIdx.x] = m;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            block_max[threadIdx.x] = fmax(block_max[threadIdx.x], block_max[threadIdx.x + s]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicMax(p.out, (u64)__double_as_longlong(block_max[0]));
}

// Probe sums of one region (`src/backend/gpu/probes.rs`): over the region's nodes, the sums
// of the displacement components and of force density times volume, in double. Each block
// writes its six partial sums (ux, uy, uz, fx, fy, fz; unused components zero) to
// `partial[6 * blockIdx.x + c]`; the host adds the blocks in order, so the result does not
// depend on scheduling.
struct ProbeParams {
    const real* u;         // displacement, m
    const real* f;         // internal force density, N/m^3
    const u32* nodes;      // the region's node indices
    const double* volume;  // their volumes, m^3
    double* partial;       // 6 per block
    u64 count;             // nodes in the region
    u64 dim;               // 1, 2 or 3
};
static_assert(sizeof(ProbeParams) == 56, "ProbeParams: see src/gpu/params.rs");

PD_KERNEL(probe_sums)(const ProbeParams p) {
    __shared__ double sums[6][256];
    double acc[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < p.count;
         k += (u64)gridDim.x * blockDim.x) {
        const u64 i = p.nodes[k];
        const double vol = p.volume[k];
        for (u64 c = 0; c < p.dim; ++c) {
            acc[c] += (double)p.u[p.dim * i + c];
            acc[3 + c] += (double)p.f[p.dim * i + c] * vol;
        }
    }
    for (int c = 0; c < 6; ++c) sums[c][threadIdx.x] = acc[c];
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            for (int c = 0; c < 6; ++c) sums[c][threadIdx.x] += sums[c][threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x < 6) p.partial[6 * blockIdx.x + threadIdx.x] = sums[threadIdx.x][0];
}
