// The bond loops: their parameters (BondParams), the walk over a node's family in the sliced
// order, node records, bond weights and the fused explicit update of the force store. Follows
// common.cuh and the laws' headers in every kernel program (src/gpu/kernels.rs).
//
// Units: positions m, displacement m, force density N/m^3, volumes m^3 (theory.md).

// Everything the bond loops (force, dilatation, bond breaking, damage, energy) read or write,
// and the explicit update a force kernel can fuse into its store (`update`).
// One thread per node walks the node's family. Per-bond arrays are in sliced order
// (src/gpu/layout.rs): slices of 32 nodes, slot k of the slice's node l at
// slice_start + 32 k + l, so a warp reads 32 consecutive entries per slot.
// No per-bond weight is stored: w_ij is recomputed from the bond length and the node record
// (`bond_weight`), so a bond costs its 4-byte neighbour index and one status bit.
// Bond status is one bit per slot of the sliced order: bit s % 32 of word s / 32. A slice
// starts at a multiple of 32 slots, so slot 32 k + l of a slice (bond k of its node l) is bit
// l of the slice's word k: a warp reads one word per bond (a broadcast, 4 bytes where the
// byte per slot took 32) and each lane changes only its own bit (atomicAnd when it breaks).
struct BondParams {
    const u64* slice_start;        // n / 32 + 1, start of each slice
    const u32* lengths;            // n, family size of each node
    const u32* neighbors;          // per bond (sliced), neighbour
    const double* nodes;           // 4 n: reference position x, y, z (m), volume V (m^3);
                                   // with volumes_only, n: the volume V (m^3) alone
    const float* nodes_f32;        // 4 n, f32 kernels: x, y, z less the body's centre (m), V
    const double* horizon_volume;  // n, sum_j beta V_j (damage, surface correction)
    u32* mu;                       // bond status bits (slot s: bit s % 32 of word s / 32):
                                   // 1 intact, 0 broken (0 in padding)
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
    real* v;                       // d n, velocity (update >= 1)
    real* a;                       // d n, acceleration (update >= 1)
    const real* b;                 // d n, body force density (update >= 1)
    real* vhalf;                   // d n, half-step velocity (damping; null without)
    real* u_next;                  // d n, next step's displacement (update 2)
    real* lps_pair;                // 2 n, LPS (alpha_i, p_i theta_i), written with theta
    double critical_stretch;       // s0 (ignored unless check_bonds)
    double delta;                  // horizon, m
    double dx;                     // lattice spacing, m
    double full_volume;            // largest horizon volume (surface correction), m^3
    double dt;                     // s (update)
    double half;                   // dt / 2 (update)
    double inv_density;            // 1 / rho (update)
    double damping;                // eta_d, N s/m^4 (update)
    struct {
        PmbParams pmb;             // law_pmb.cuh (zero for LPS)
        LpsParams lps;             // law_lps.cuh (zero for PMB)
        SofteningParams softening; // law_softening.cuh (zero for the brittle law)
    } law;
    u32 n;                         // nodes
    int dim;                       // 2 or 3
    int linearized;                // 1: linearized stretch n . eta / x (linearized PMB, LPS)
    int check_bonds;               // 1: break bonds whose stretch exceeds s0 first
    int partial_volume;            // 0 none, 1 linear (beta from the bond length)
    int lps;                       // 1 for LPS (energy: the dilatation term)
    int update;                    // force kernels: 0 store f; 1 also a, v (accelerate,
                                   // kick); 2 also kick and drift into u_next, not f and a
    int volumes_only;              // 1: `nodes` holds only the volumes (f32 kernels without
                                   // partial volumes: nothing reads an f64 position)
    double pv_full;                // delta - dx / 2: bonds up to this length have beta 1
    double pv_edge;                // delta + dx / 2
    // The loop constants rounded to f32 on the host, so the f32 bond loops convert nothing.
    float critical_stretch_f, delta_f, dx_f, pv_full_f, pv_edge_f, pad_f;
    // A body that is a full box lattice (nodes x fastest) may run without a neighbour list:
    // every node has the same slots, slot k (k = 32 m) holding the neighbour i + stencil[k]
    // (entries between multiples of 32 unused, so the list's slot offsets index it as they
    // index `neighbors`); a slot outside the body is a bond whose status bit is 0. Null: the
    // list (`neighbors`).
    const int* stencil;
    // On such a lattice with every node of one volume: the bond geometry of each slot m
    // (SlotGeometry, the same for every node), and the weight c V of every bond (N/m^3).
    // Null: positions are read per bond.
    const real* slot_geometry;
    double lattice_weight;
    // Several materials (docs/materials.md): each node's material index (n bytes), and the
    // pair table in double: n_materials^2 micromoduli c (N/m^6), then n_materials^2 critical
    // stretches (+inf: never breaks), then each material's K_d (Pa); a bond i -> j reads the
    // entry material[i] * n_materials + material[j]. Null: one material (the law's own).
    const u8* material;
    const double* pair_table;
    u32 n_materials;
    // The first node of the launch: threads run nodes first .. n - 1 (0: every node; a
    // distributed run launches its interior and boundary nodes apart, src/distributed/gpu/).
    u32 first;
    // A softening damage law (law.softening, docs/materials.md): the damage of every slot of
    // the sliced order, in [0, 1] (0 in padding; the bond's status bit turns 0 when it
    // reaches 1). Null: the brittle law.
    real* bond_damage;
    // With critical_stretch_alpha or break_timing = "after-force": each node's critical
    // stretch s00 - alpha s_min from the previous breaking evaluation (read) and the one this
    // evaluation leaves (written; the host swaps the two). Null otherwise.
    const real* node_s0;
    real* node_s0_next;
    double s0_alpha;               // critical_stretch_alpha
    float s0_alpha_f;
    float pad_a;
    // Several materials of different densities: each node's 1 / rho, read by the update
    // instead of inv_density. Null otherwise.
    const real* inv_density_node;
};
static_assert(sizeof(BondParams) == 480, "BondParams: see src/gpu/params.rs");

// The bond of stencil slot m on a full box lattice, as every node sees it: xi = the slot's
// lattice step times dx (m), its length x and 1 / x, rounded once on the host to the
// kernel's precision. 8 reals a slot (32 or 64 bytes: one or two aligned vector loads).
struct SlotGeometry {
    real xi[3];
    real x;
    real rx;
    real pad[3];  // pad[0]: the bits of the slot's node offset (an int in f32, a long long
                  // in f64; below 2^24 in magnitude)
};

// A slot's entry in aligned vector loads (two in f32, three in f64; pad[1..] not read).
__device__ __forceinline__ SlotGeometry load_slot(const SlotGeometry* e) {
    typedef typename Pair<real>::type pair;
    const pair* v = reinterpret_cast<const pair*>(e);
    const pair a = ld(v), b = ld(v + 1), c = ld(v + 2);
    SlotGeometry g;
    g.xi[0] = a.x;
    g.xi[1] = a.y;
    g.xi[2] = b.x;
    g.x = b.y;
    g.rx = c.x;
    g.pad[0] = c.y;
    return g;
}

// The node offset a slot entry carries in pad[0]'s bits (no conversion instruction).
__device__ __forceinline__ int offset_of_bits(float v) { return __float_as_int(v); }
__device__ __forceinline__ int offset_of_bits(double v) { return (int)__double_as_longlong(v); }
__device__ __forceinline__ int slot_offset(const SlotGeometry& g) { return offset_of_bits(g.pad[0]); }



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

// Status of slot s, and marking it broken (only the slot's own thread writes its bit; the
// other lanes of the word may write theirs at the same time, hence the atomic).
__device__ __forceinline__ bool bond_intact(const BondParams& p, u64 s) {
    return ((p.mu[s >> 5] >> (s & 31)) & 1u) != 0;
}
__device__ __forceinline__ void cut_bond(const BondParams& p, u64 s) {
    atomicAnd(p.mu + (s >> 5), ~(1u << (s & 31)));
}

// A walk over node i's bonds that loads the neighbour index and status of the next bond one
// step ahead, so their latency overlaps the current bond's loads and arithmetic instead of
// adding to them (the bond loops are latency-bound: docs/results.md). PD_PREFETCH=0 (a
// define the host can add, `src/gpu/kernels.rs`) walks without the look-ahead.
//     BondWalk<true> w(p, i); Step t;
//     while (w.next(p, t)) { if (!t.intact) continue; ... w.cut(p, t); ... }
// (AHEAD false: no look-ahead, for a kernel whose registers it would spill). The walk keeps
// the addresses of the node's first slot and a 32-bit slot offset (32 per bond), so a bond
// costs one address computation per array instead of 64-bit index arithmetic.
struct Step {
    u32 k;        // slot offset of the bond from the node's first slot (look-ahead walk)
    u64 b;        // device index of the bond (walk without look-ahead)
    u32 j;        // neighbour
    bool intact;  // status
};


#ifndef PD_PREFETCH
#define PD_PREFETCH 1
#endif

#define PD_AHEAD (PD_PREFETCH != 0)

// Where a walk's neighbours come from: the list, the lattice's stencil, or whichever
// p.stencil says (a run-time test; the per-step PMB loops have an entry point for each).
#define PD_NB_ANY 0
#define PD_NB_LIST 1
#define PD_NB_LATTICE 2

template <bool AHEAD, int NB = PD_NB_ANY>
struct BondWalk {
    const u32* nb;  // the node's first slot in the neighbour array (lattice: the stencil)
    u32* st;        // its slice's first status word (word k: bond k of the slice's nodes)
    u32 bit;        // the node's bit in each word (1 << lane)
    u32 base;       // added to what `nb` gives: 0 for the list, i on a lattice
    u32 k, end;     // next slot offset; 32 x family size
    u32 j;          // the next bond's neighbour and status word
    u32 word;
    __device__ __forceinline__ BondWalk(const BondParams& p, u32 i) {
        const u64 slice = ld(p.slice_start + i / 32);
        const bool lattice = NB == PD_NB_LATTICE || (NB == PD_NB_ANY && p.stencil != 0);
        nb = lattice ? reinterpret_cast<const u32*>(p.stencil) : p.neighbors + slice + (i % 32);
        base = lattice ? i : 0u;
        st = p.mu + (slice >> 5);
        bit = 1u << (i % 32);
        k = 0;
        end = 32 * ld(p.lengths + i);
        j = 0;
        word = 0;
        if (end != 0) {
            j = ld(nb) + base;
            word = st[0];
        }
    }
    __device__ __forceinline__ bool next(const BondParams&, Step& t) {
        if (k >= end) return false;
        t.k = k;
        t.j = j;
        t.intact = (word & bit) != 0;
        k += 32;
        if (k < end) {
            j = ld(nb + k) + base;
            word = st[k >> 5];
        }
        return true;
    }
    // Mark the bond of step t broken.
    __device__ __forceinline__ void cut(const BondParams&, const Step& t) {
        atomicAnd(st + (t.k >> 5), ~bit);
    }
};

// The neighbour in device slot b of node i, whose first slot is `begin`: from the list, or
// on a lattice i + stencil[b - begin].
__device__ __forceinline__ u32 neighbor_at(const BondParams& p, u32 i, u64 begin, u64 b) {
    return p.stencil != 0 ? i + (u32)ld(p.stencil + (b - begin)) : ld(p.neighbors + b);
}

// Without the look-ahead: one 64-bit slot index (fewer live registers than two addresses).
template <int NB>
struct BondWalk<false, NB> {
    u64 b, begin, end;
    u32 i;
    __device__ __forceinline__ BondWalk(const BondParams& p, u32 node) {
        const BondRange r = bond_range(p, node);
        b = r.begin;
        begin = r.begin;
        end = r.end;
        i = node;
    }
    __device__ __forceinline__ bool next(const BondParams& p, Step& t) {
        if (b >= end) return false;
        t.b = b;
        t.intact = bond_intact(p, b);
        t.j = t.intact ? neighbor_at(p, i, begin, b) : 0;
        b += 32;
        return true;
    }
    __device__ __forceinline__ void cut(const BondParams& p, const Step& t) { cut_bond(p, t.b); }
};

// Two reals as one aligned vector load.

// A node record: reference position and volume, two aligned 16-byte loads of one 32-byte
// sector (z is not read in 2D).
struct Record {
    double x[3];
    double vol;
};

// Volume of node j in f64, m^3 (from the record, or the volumes alone).
__device__ __forceinline__ double node_volume(const BondParams& p, u32 j) {
    return ld(p.nodes + (p.volumes_only != 0 ? (u64)j : 4 * (u64)j + 3));
}

template <int D>
__device__ __forceinline__ Record load_record(const BondParams& p, u32 j) {
    const double2* r = reinterpret_cast<const double2*>(p.nodes) + 2 * (u64)j;
    const double2 a = ld(r);
    const double2 b = ld(r + 1);
    Record rec;
    rec.x[0] = a.x;
    rec.x[1] = a.y;
    rec.x[2] = D == 3 ? b.x : 0.0;
    rec.vol = b.y;
    return rec;
}

// What the bond loops read of a node: position and volume. The f64 kernels read the f64
// record; the f32 kernels read the f32 record (one 16-byte load; positions relative to the
// body's centre, so a bond vector is a difference of two f32 values, no conversion), unless
// PD_F32_RECORDS=0 (the f64 record, converted per bond as before).
#ifndef PD_F32_RECORDS
#define PD_F32_RECORDS 1
#endif
#define PD_REAL_RECORDS (sizeof(real) == 4 && PD_F32_RECORDS != 0)

template <bool F32> struct PosType { typedef double type; };
template <> struct PosType<true> { typedef float type; };
typedef PosType<PD_REAL_RECORDS>::type pos_t;

struct Site {
    pos_t x[3];
    pos_t vol;
};

template <int D>
__device__ __forceinline__ Site load_site(const BondParams& p, u32 j) {
    Site s;
    if constexpr (PD_REAL_RECORDS) {
        const float4 r = ld(reinterpret_cast<const float4*>(p.nodes_f32) + j);
        s.x[0] = r.x;
        s.x[1] = r.y;
        s.x[2] = D == 3 ? r.z : 0.0f;
        s.vol = r.w;
    } else {
        const Record rec = load_record<D>(p, j);
        for (int k = 0; k < 3; ++k) s.x[k] = rec.x[k];
        s.vol = rec.vol;
    }
    return s;
}

// Displacement of node j (components beyond D zero). In 2D the two components are one
// aligned vector load (PD_VEC_U=0: two scalar loads); the arrays start 256-byte aligned.
#ifndef PD_VEC_U
#define PD_VEC_U 1
#endif
template <int D>
__device__ __forceinline__ void load_u(const real* u, u32 j, real out[3]) {
    if constexpr (D == 2 && PD_VEC_U != 0) {
        typedef typename Pair<real>::type pair;
        const pair v = ld(reinterpret_cast<const pair*>(u) + j);
        out[0] = v.x;
        out[1] = v.y;
        out[2] = (real)0;
    } else {
        for (int k = 0; k < 3; ++k) out[k] = k < D ? ld(u + (u64)D * j + k) : (real)0;
    }
}

// The thread's own node: reference position and displacement, loaded once (components
// beyond D are zero and never used).
template <int D>
struct Node {
    pos_t pos[3];
    real u[3];
};

template <int D>
__device__ __forceinline__ Node<D> load_node(const BondParams& p, u32 i) {
    Node<D> n;
    const Site s = load_site<D>(p, i);
    for (int k = 0; k < 3; ++k) n.pos[k] = s.x[k];
    load_u<D>(p.u, i, n.u);
    return n;
}




// What a bond reads of its neighbour j: record and displacement.
template <int D>
struct Gather {
    Site s;
    real u[3];
};

template <int D>
__device__ __forceinline__ Gather<D> gather(const BondParams& p, u32 j) {
    Gather<D> g;
    g.s = load_site<D>(p, j);
    load_u<D>(p.u, j, g.u);
    return g;
}

template <int D>
__device__ __forceinline__ Bond make_bond(const Node<D>& n, const Gather<D>& g) {
    Bond b;
    for (int k = 0; k < 3; ++k) {
        b.xi[k] = k < D ? (real)(g.s.x[k] - n.pos[k]) : (real)0;
        b.eta[k] = k < D ? g.u[k] - n.u[k] : (real)0;
    }
    b.vol = (real)g.s.vol;
    const real x2 = dot<D>(b.xi, b.xi);
    b.rx = inv_sqrt(x2);
    b.x = x2 * b.rx;
    return b;
}

template <int D>
__device__ __forceinline__ Bond load_bond(const BondParams& p, const Node<D>& n, u32 j) {
    return make_bond<D>(n, gather<D>(p, j));
}

// Node i's intact bonds, `body(j, bond)` for each, with the look-ahead walk (BondWalk): the
// neighbour index and status one bond ahead. `body` returns true where the bond breaks
// (it is then marked broken).
template <int D, int NB = PD_NB_ANY, typename F>
__device__ __forceinline__ void walk_bonds(const BondParams& p, u32 i, const Node<D>& node,
                                           F&& body) {
    BondWalk<PD_AHEAD, NB> walk(p, i);
    Step t;
#pragma unroll 1
    while (walk.next(p, t)) {
        if (!t.intact) continue;
        if (body(t.j, load_bond<D>(p, node, t.j))) walk.cut(p, t);
    }
}

// The same walk one step deeper (PD_PREFETCH=2): while bond k is computed, the record and
// displacement of bond k + 1 and the index and status of bond k + 2 are loaded, so a thread
// keeps two dependent gathers in flight instead of one. The gathered values alternate
// between two buffers (no copies); about 8 more registers, so it is used only where they fit
// (the f32 plain PMB loop).
template <int D, typename F>
__device__ __forceinline__ void walk_bonds_deep(const BondParams& p, u32 i, const Node<D>& node,
                                                F&& body) {
    const u64 slice = ld(p.slice_start + i / 32);
    const bool lattice = p.stencil != 0;
    const u32* nb =
        lattice ? reinterpret_cast<const u32*>(p.stencil) : p.neighbors + slice + (i % 32);
    const u32 base = lattice ? i : 0u;
    u32* st = p.mu + (slice >> 5);
    const u32 bit = 1u << (i % 32);
    const u32 end = 32 * ld(p.lengths + i);
    u32 jc = 0, jn = 0;  // neighbours of the current and the next bond
    bool mc = false, mn = false;  // their status
    if (end != 0) {
        jc = ld(nb) + base;
        mc = (st[0] & bit) != 0;
    }
    if (32 < end) {
        jn = ld(nb + 32) + base;
        mn = (st[1] & bit) != 0;
    }
    Gather<D> a = Gather<D>{}, b = Gather<D>{};
    if (mc) a = gather<D>(p, jc);
    u32 k = 0;
    // One bond: gather the next into `nxt`, load the index after it, compute the current.
    auto step = [&](const Gather<D>& cur, Gather<D>& nxt) {
        if (mn) nxt = gather<D>(p, jn);
        u32 jq = 0;
        bool mq = false;
        if (k + 64 < end) {
            jq = ld(nb + k + 64) + base;
            mq = (st[(k + 64) >> 5] & bit) != 0;
        }
        if (mc && body(jc, make_bond<D>(node, cur))) atomicAnd(st + (k >> 5), ~bit);
        k += 32;
        jc = jn;
        mc = mn;
        jn = jq;
        mn = mq;
        return k < end;
    };
#pragma unroll 1
    while (k < end) {
        if (!step(a, b)) break;
        if (!step(b, a)) break;
    }
}

// Bond length exactly as the host's `bond_length` (f64, no contraction into FMA), for
// quantities that must match it to the last bit (the partial-volume factor of damage).
// In 2D the z coordinates are zero, so the host's third term adds nothing.
template <int D>
__device__ __forceinline__ double exact_length(const Record& n, const Record& r) {
    const double a0 = __dsub_rn(r.x[0], n.x[0]);
    const double a1 = __dsub_rn(r.x[1], n.x[1]);
    double s = __dadd_rn(__dmul_rn(a0, a0), __dmul_rn(a1, a1));
    if (D == 3) {
        const double a2 = __dsub_rn(r.x[2], n.x[2]);
        s = __dadd_rn(s, __dmul_rn(a2, a2));
    }
    return sqrt(s);
}



// Several materials: the pair table's index of bond i -> j.
__device__ __forceinline__ u32 material_pair(const BondParams& p, u32 i, u32 j) {
    return (u32)ld(p.material + i) * p.n_materials + (u32)ld(p.material + j);
}

// The stretch above which node i's bonds break: s0 where they can (`can_break`: bonds are
// checked and i is not in a no-fail zone), else +inf; then a bond i -> j breaks where
// s > bond_threshold(threshold, i, j) and j is not in a no-fail zone, one compare per bond
// in the loop. With several materials a node that can break gets 0: each bond then reads
// its pair's critical stretch (`bond_threshold`).
__device__ __forceinline__ real break_threshold(const BondParams& p, bool can_break) {
    if (!can_break) return (real)__int_as_float(0x7f800000);
    return p.material != 0 ? (real)0 : PD_CONST(p, critical_stretch);
}

// The critical stretch of bond i -> j from node i's `break_threshold` t: t itself with one
// material (or where i's bonds cannot break), else the pair's.
__device__ __forceinline__ real bond_threshold(const BondParams& p, real t, u32 i, u32 j) {
    if (p.material == 0 || t != (real)0) return t;
    const u32 n = p.n_materials;
    return (real)ld(p.pair_table + n * n + material_pair(p, i, j));
}

// Whether bond i -> j (i not in a no-fail zone) breaks at stretch s: j not in a no-fail zone
// and s above the bond's critical stretch (theory.md 2; LPS uses s = e / x).
__device__ __forceinline__ bool breaks(const BondParams& p, u32 i, u32 j, real s) {
    return s > bond_threshold(p, break_threshold(p, true), i, j) && ld(p.no_fail + j) == 0;
}

// Partial-volume factor beta of a bond of length x (theory.md section 1), as the host's
// `partial_volume` in the kernel's precision.
__device__ __forceinline__ real partial_volume(const BondParams& p, real x) {
    if (p.partial_volume == 0 || x <= PD_CONST(p, pv_full)) return (real)1;
    const real b = (PD_CONST(p, pv_edge) - x) / PD_CONST(p, dx);
    return fmin(fmax(b, (real)0), (real)1);
}

// The same in double from the exact length (damage matches the host to the last bit).
__device__ __forceinline__ double partial_volume_exact(const BondParams& p, double x) {
    if (p.partial_volume == 0 || x <= p.delta - 0.5 * p.dx) return 1.0;
    const double b = (p.delta + 0.5 * p.dx - x) / p.dx;
    return fmin(fmax(b, 0.0), 1.0);
}

// The bond weight of `src/backend/coefficients.rs`, recomputed per bond instead of stored:
// PMB c lambda beta V_j (lambda = 2 V_full / (V_h,i + V_h,j) with surface correction, else 1),
// LPS omega(x) beta V_j. The horizon volumes of i and j are read only with the correction.
// LAW: PD_LAW_PMB or PD_LAW_LPS where the kernel knows its law at compile time (the other
// law's code leaves the loop), PD_LAW_ANY to test p.lps; MATS: the PMB weight of several
// materials (p.material set) reads the pair's micromodulus; PLAIN (PMB): the kernel has checked
// that the model has neither partial volumes nor the surface correction. The weight is the
// same number either way (beta V_j = 1 x V_j exactly).
#define PD_LAW_ANY 0
#define PD_LAW_PMB 1
#define PD_LAW_LPS 2
template <int LAW, bool PLAIN = false, bool MATS = false>
__device__ __forceinline__ real bond_weight(const BondParams& p, const Bond& b, u32 i, u32 j) {
    // (PLAIN: no partial volumes and no surface correction, beta = lambda = 1)
    if (PLAIN && LAW == PD_LAW_PMB) return pmb_micromodulus(p.law.pmb) * b.vol;
    const real bv = partial_volume(p, b.x) * b.vol;
    if (LAW == PD_LAW_LPS || (LAW == PD_LAW_ANY && p.lps != 0)) {
        return lps_omega(p.law.lps, PD_CONST(p, delta), b.x) * bv;
    }
    // (MATS, several materials: the pair's micromodulus, f64 on the host, rounded here; the
    // one-material loops carry no table lookup)
    const real c = (MATS && p.material != 0) ? (real)ld(p.pair_table + material_pair(p, i, j))
                                             : pmb_micromodulus(p.law.pmb);
    if (p.law.pmb.surface_correction == 0) return c * bv;
    const double vh = ld(p.horizon_volume + i) + ld(p.horizon_volume + j);
    const real lambda = (real)(2.0 * p.full_volume / vh);
    return c * lambda * bv;
}

// Store node i's force density and, with p.update, the explicit update of its dofs in the
// order of `src/dynamics/explicit.rs`: a = (f + b - eta_d v_half) / rho, v += dt/2 a (the
// end of this step; update 1 stores f, a and v), and with update 2 also the next step's
// kick and drift, v += dt/2 a, u_next = u + dt v, v_half = v (then f and a are not stored:
// the next step overwrites them before anything reads them). The dofs of kinematic
// conditions are set afterwards by `apply_conditions` (mode 3 or 1).
template <int D>
__device__ __forceinline__ void store_force(const BondParams& p, u32 i, const Node<D>& node,
                                            const real f[3]) {
    // (each node's own 1 / rho where several materials differ in density)
    const real inv_rho =
        p.inv_density_node != 0 ? ld(p.inv_density_node + i) : (real)p.inv_density;
    for (int k = 0; k < D; ++k) {
        const u64 q = (u64)D * i + k;
        if (p.update != 2) p.force[q] = f[k];
        if (p.update == 0) continue;
        const real drag = p.vhalf != 0 ? (real)p.damping * p.vhalf[q] : (real)0;
        const real acc = (f[k] + p.b[q] - drag) * inv_rho;
        real vel = p.v[q] + (real)p.half * acc;
        if (p.update == 2) {
            vel += (real)p.half * acc;
            p.u_next[q] = node.u[k] + (real)p.dt * vel;
            if (p.vhalf != 0) p.vhalf[q] = vel;
        } else {
            p.a[q] = acc;
        }
        p.v[q] = vel;
    }
}

// Add this thread's broken bonds to the device counter.
__device__ __forceinline__ void count_broken(const BondParams& p, u32 count) {
    if (count != 0) atomicAdd(p.broken, (u64)count);
}

// What a node of the plain PMB loop on a full box lattice of one node volume (the slot
// table's and the baked stencil's) holds over its slots: its displacement, breaking
// threshold, the lattice weight, its slice's status words and its bit in them.
template <int D>
struct LatticeNode {
    Node<D> node;
    real s_break;
    real w;
    u32* st;
    u32 bit;
};

template <int D>
__device__ __forceinline__ LatticeNode<D> lattice_node(const BondParams& p, u32 i) {
    LatticeNode<D> n;
    n.node = Node<D>{};
    load_u<D>(p.u, i, n.node.u);
    const bool can_break = p.check_bonds != 0 && ld(p.no_fail + i) == 0;
    n.s_break = break_threshold(p, can_break);
    n.w = (real)p.lattice_weight;
    n.st = p.mu + (ld(p.slice_start + i / 32) >> 5);
    n.bit = 1u << (i % 32);
    return n;
}

// The end of one lattice bond to neighbour j of stretch s, force scale `scale` and
// direction `dir`: broken where it stretches past s_break and j can fail (the node's bit
// cleared in `word`, counted in `broken`), else w scale dir added to f.
template <int D>
__device__ __forceinline__ void lattice_bond_end(const BondParams& p, u32 j, real s,
                                                 real scale, const real dir[3], real s_break,
                                                 real w, u32* word, u32 bit, real f[3],
                                                 u32& broken) {
    if (s > s_break && ld(p.no_fail + j) == 0) {
        ++broken;
        atomicAnd(word, ~bit);
        return;
    }
    scale *= w;
    for (int k = 0; k < D; ++k) f[k] += scale * dir[k];
}

// The entry point of a bond loop: one thread per node, `body<D>(p, i)` with the dimension
// a compile-time constant (loops unroll; the 2D path touches no third component).
#define PD_BOND_ENTRY(name, body)                         \
    PD_BOND_KERNEL(name)(const BondParams p) {            \
        PD_BOND_BODY(body)                                \
    }
// The same without the register cap (the kernels that run once per output, not per step).
#define PD_BOND_ENTRY_UNCAPPED(name, body)                \
    PD_KERNEL(name)(const BondParams p) { PD_BOND_BODY(body) }
#define PD_BOND_BODY(body)                                \
        const u32 i = p.first + blockIdx.x * blockDim.x + threadIdx.x; \
        if (i >= p.n) return;                             \
        if (p.dim == 3) body<3>(p, i);                    \
        else body<2>(p, i);
