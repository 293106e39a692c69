//! The lane kernel of the slot table (`pmb_slots.rs`) in AVX-512: eight nodes at a time, one
//! per lane (f64 in 512-bit registers, f32 in 256-bit ones), the bond vectors and weights in
//! f64 as the per-node loop has them, then rounded to the working precision, the reference
//! lengths gathered from the stored ones, and the PMB bond arithmetic of
//! `pmb_kernel::terms` operation for operation (IEEE, no fused multiply-add; one square root
//! and one division per bond), so every lane gives its node the per-node loop's bits.
//!
//! Units: as `pmb_slots.rs`.

#[cfg(target_arch = "x86_64")]
use super::SlotTable;
#[cfg(target_arch = "x86_64")]
use crate::backend::cpu::status::{BROKEN, INTACT};
#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// Lanes per call (the slot table's `LANES`).
#[cfg(target_arch = "x86_64")]
const W: usize = super::LANES;

/// One working precision's vector (`v`-prefixed operations, apart from `Real`'s) of [`W`] lanes and the operations the kernel takes.
#[cfg(target_arch = "x86_64")]
pub(super) trait Lanes: Copy {
    type V: Copy;
    unsafe fn vload(a: &[Self], i: usize) -> Self::V;
    /// Round f64 lanes to the working precision (to nearest, as `Real::of`).
    unsafe fn vof_f64(v: __m512d) -> Self::V;
    unsafe fn vsplat(x: Self) -> Self::V;
    unsafe fn vadd(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn vsub(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn vmul(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn vdiv(a: Self::V, b: Self::V) -> Self::V;
    unsafe fn vsqrt(a: Self::V) -> Self::V;
    /// `a[base + idx[w]]` in the lanes `w` of `m`, one elsewhere (masked lanes read nothing).
    unsafe fn vgather(m: u8, idx: __m256i, a: &[Self]) -> Self::V;
    /// Widen to f64 lanes (exact).
    unsafe fn vto_f64(v: Self::V) -> __m512d;
    /// Lanes where `a > b`, as bits.
    unsafe fn vgt(a: Self::V, b: Self::V) -> u8;
    /// Lanes where `a >= b`, as bits.
    unsafe fn vge(a: Self::V, b: Self::V) -> u8;
    /// `f + t` in the lanes of `m`, `f` elsewhere.
    unsafe fn vadd_where(m: u8, f: Self::V, t: Self::V) -> Self::V;
    unsafe fn vstore(v: Self::V, out: &mut [Self; W]);
}

#[cfg(target_arch = "x86_64")]
impl Lanes for f64 {
    type V = __m512d;
    #[inline(always)]
    unsafe fn vload(a: &[f64], i: usize) -> __m512d {
        _mm512_loadu_pd(a[i..i + W].as_ptr())
    }
    #[inline(always)]
    unsafe fn vof_f64(v: __m512d) -> __m512d {
        v
    }
    #[inline(always)]
    unsafe fn vsplat(x: f64) -> __m512d {
        _mm512_set1_pd(x)
    }
    #[inline(always)]
    unsafe fn vadd(a: __m512d, b: __m512d) -> __m512d {
        _mm512_add_pd(a, b)
    }
    #[inline(always)]
    unsafe fn vsub(a: __m512d, b: __m512d) -> __m512d {
        _mm512_sub_pd(a, b)
    }
    #[inline(always)]
    unsafe fn vmul(a: __m512d, b: __m512d) -> __m512d {
        _mm512_mul_pd(a, b)
    }
    #[inline(always)]
    unsafe fn vdiv(a: __m512d, b: __m512d) -> __m512d {
        _mm512_div_pd(a, b)
    }
    #[inline(always)]
    unsafe fn vsqrt(a: __m512d) -> __m512d {
        _mm512_sqrt_pd(a)
    }
    #[inline(always)]
    unsafe fn vgather(m: u8, idx: __m256i, a: &[f64]) -> __m512d {
        _mm512_mask_i32gather_pd::<8>(_mm512_set1_pd(1.0), m, idx, a.as_ptr().cast())
    }
    #[inline(always)]
    unsafe fn vto_f64(v: __m512d) -> __m512d {
        v
    }
    #[inline(always)]
    unsafe fn vgt(a: __m512d, b: __m512d) -> u8 {
        _mm512_cmp_pd_mask::<_CMP_GT_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn vge(a: __m512d, b: __m512d) -> u8 {
        _mm512_cmp_pd_mask::<_CMP_GE_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn vadd_where(m: u8, f: __m512d, t: __m512d) -> __m512d {
        _mm512_mask_add_pd(f, m, f, t)
    }
    #[inline(always)]
    unsafe fn vstore(v: __m512d, out: &mut [f64; W]) {
        _mm512_storeu_pd(out.as_mut_ptr(), v)
    }
}

#[cfg(target_arch = "x86_64")]
impl Lanes for f32 {
    type V = __m256;
    #[inline(always)]
    unsafe fn vload(a: &[f32], i: usize) -> __m256 {
        _mm256_loadu_ps(a[i..i + W].as_ptr())
    }
    #[inline(always)]
    unsafe fn vof_f64(v: __m512d) -> __m256 {
        _mm512_cvtpd_ps(v)
    }
    #[inline(always)]
    unsafe fn vsplat(x: f32) -> __m256 {
        _mm256_set1_ps(x)
    }
    #[inline(always)]
    unsafe fn vadd(a: __m256, b: __m256) -> __m256 {
        _mm256_add_ps(a, b)
    }
    #[inline(always)]
    unsafe fn vsub(a: __m256, b: __m256) -> __m256 {
        _mm256_sub_ps(a, b)
    }
    #[inline(always)]
    unsafe fn vmul(a: __m256, b: __m256) -> __m256 {
        _mm256_mul_ps(a, b)
    }
    #[inline(always)]
    unsafe fn vdiv(a: __m256, b: __m256) -> __m256 {
        _mm256_div_ps(a, b)
    }
    #[inline(always)]
    unsafe fn vsqrt(a: __m256) -> __m256 {
        _mm256_sqrt_ps(a)
    }
    #[inline(always)]
    unsafe fn vgather(m: u8, idx: __m256i, a: &[f32]) -> __m256 {
        _mm256_mmask_i32gather_ps::<4>(_mm256_set1_ps(1.0), m, idx, a.as_ptr().cast())
    }
    #[inline(always)]
    unsafe fn vto_f64(v: __m256) -> __m512d {
        _mm512_cvtps_pd(v)
    }
    #[inline(always)]
    unsafe fn vgt(a: __m256, b: __m256) -> u8 {
        _mm256_cmp_ps_mask::<_CMP_GT_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn vge(a: __m256, b: __m256) -> u8 {
        _mm256_cmp_ps_mask::<_CMP_GE_OQ>(a, b)
    }
    #[inline(always)]
    unsafe fn vadd_where(m: u8, f: __m256, t: __m256) -> __m256 {
        _mm256_mask_add_ps(f, m, f, t)
    }
    #[inline(always)]
    unsafe fn vstore(v: __m256, out: &mut [f32; W]) {
        _mm256_storeu_ps(out.as_mut_ptr(), v)
    }
}

/// [`SlotTable::lanes`] in precision `T`: nodes `i0..i0 + count` (`count <= W`; the lanes
/// past them read the table's padding and add nothing), node `i0 + w`'s bonds at
/// `rows[w]..rows[w + 1]` of `status` and `length` (their stored reference lengths).
///
/// # Safety
/// The CPU has AVX-512 F, VL, DQ and BW.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw,avx2")]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn kernel<T: Lanes + crate::Real, const D: usize, const LIN: bool>(
    t: &SlotTable<T>,
    i0: usize,
    count: usize,
    rows: &[usize; W + 1],
    s0: T,
    status: &mut [u8],
    length: &[T],
    force: &mut [T],
) -> usize {
    let slots = &t.stencil;
    let status = &mut status[..rows[W]];
    let length = &length[..rows[W]];
    let pos = &t.position;
    let disp = &t.displacement;
    let p0 = t.pad + i0;
    let pi: [__m512d; 3] = std::array::from_fn(|k| f64::vload(&pos[k], p0));
    let ui: [T::V; D] = std::array::from_fn(|k| T::vload(&disp[k], p0));
    let zero = T::vsplat(T::zero());
    let band = crate::material::laws::pmb::Band::around(s0);
    let (lo, hi) = (T::vsplat(band.lo), T::vsplat(band.hi));
    let (two, s0) = (T::vsplat(T::one() + T::one()), T::vsplat(s0));
    let (c, full) = (_mm512_set1_pd(t.c), _mm512_set1_pd(t.full_up_to));
    // (partial volumes: `beta` near the horizon needs the f64 length, which an f32 run
    // recomputes; else every run reads the stored length)
    let partial = t.full_up_to.is_finite();
    let stored = t.reads_length();
    // Per slot, the lanes whose family has it and whose bond is not broken, those whose
    // bond may break, and those whose family has it, as bits.
    let mut m = Masks {
        keep: [0; MAX],
        intact: [0; MAX],
        has: [0; MAX],
    };
    let r = Rows {
        i0,
        count,
        rows,
        status,
    };
    match t.vbmi2 {
        true => masks_vbmi2(t, r, &mut m),
        false => masks_bw(t, r, &mut m),
    }
    // Each lane's bond at the current slot: its row start plus the slots of its family
    // before this one.
    let first: [i32; W] = std::array::from_fn(|w| rows[w] as i32);
    let first = _mm256_loadu_si256(first.as_ptr().cast());
    let (mut rank, one) = (_mm256_setzero_si256(), _mm256_set1_epi32(1));
    let mut f = [zero; D];
    let mut broken = 0;
    for (l, &off) in slots.iter().enumerate() {
        let (keep, may_break, has) = (m.keep[l], m.intact[l], m.has[l]);
        let bond = _mm256_add_epi32(first, rank);
        rank = _mm256_mask_add_epi32(rank, has, rank, one);
        if keep == 0 {
            continue;
        }
        let j0 = (p0 as u32).wrapping_add(off) as usize;
        // the bond vector in f64, the length as stored (or recomputed as `bond_length`), the
        // weight as `bond_weight`
        let d: [__m512d; 3] =
            std::array::from_fn(|k| _mm512_sub_pd(f64::vload(&pos[k], j0), pi[k]));
        let (x, x64) = if stored {
            let x = T::vgather(keep, bond, length);
            (x, T::vto_f64(x))
        } else {
            let sq = |v: __m512d| _mm512_mul_pd(v, v);
            let x64 = _mm512_sqrt_pd(_mm512_add_pd(_mm512_add_pd(sq(d[0]), sq(d[1])), sq(d[2])));
            (T::vof_f64(x64), x64)
        };
        let vj = f64::vload(&t.volume, j0);
        // (`beta = 1` but near the horizon: there each lane by `partial_volume`'s formula)
        let near = match partial {
            true => _mm512_cmp_pd_mask::<_CMP_GT_OQ>(x64, full) & keep,
            false => 0,
        };
        let bv = match near {
            0 => vj,
            _ => {
                let (mut xs, mut vs) = ([0.0; W], [0.0; W]);
                f64::vstore(x64, &mut xs);
                f64::vstore(vj, &mut vs);
                let b: [f64; W] = std::array::from_fn(|w| t.beta(xs[w]) * vs[w]);
                f64::vload(&b, 0)
            }
        };
        let wt = T::vof_f64(_mm512_mul_pd(c, bv));
        let xi: [T::V; D] = std::array::from_fn(|k| T::vof_f64(d[k]));
        let eta: [T::V; D] = std::array::from_fn(|k| T::vsub(T::vload(&disp[k], j0), ui[k]));
        // (and what the criterion's own stretch divides: `dot / x / x`, `num / (x (|y| + x))`)
        let (s, scale, dir, top, bottom) = if LIN {
            // s = (n . eta) / x, force along xi (`pmb::linearized_term`: q = dot / x^3,
            // s = q x, scale w q)
            let mut dot = T::vmul(xi[0], eta[0]);
            for k in 1..D {
                dot = T::vadd(dot, T::vmul(xi[k], eta[k]));
            }
            let q = T::vdiv(dot, T::vmul(T::vmul(x, x), x));
            (T::vmul(q, x), T::vmul(wt, q), xi, dot, x)
        } else {
            // y = xi + eta; s = eta . (2 xi + eta) / (x (|y| + x)); force along y
            // (`pmb::nonlinear_term`: q = s / |y| by one division, s = q |y|, scale w q)
            let y: [T::V; D] = std::array::from_fn(|k| T::vadd(xi[k], eta[k]));
            let mut y2 = T::vmul(y[0], y[0]);
            let mut num = T::vmul(eta[0], T::vadd(T::vmul(two, xi[0]), eta[0]));
            for k in 1..D {
                y2 = T::vadd(y2, T::vmul(y[k], y[k]));
                num = T::vadd(num, T::vmul(eta[k], T::vadd(T::vmul(two, xi[k]), eta[k])));
            }
            let ly = T::vsqrt(y2);
            let den = T::vmul(x, T::vadd(ly, x));
            let q = T::vdiv(num, T::vmul(den, ly));
            (T::vmul(q, ly), T::vmul(wt, q), y, num, den)
        };
        // (a stretch within `pmb::Band` of s0: the criterion's own decides)
        let near = may_break & T::vge(s, lo) & T::vge(hi, s);
        let cut = match near {
            0 => may_break & T::vgt(s, s0),
            _ => {
                let own = match LIN {
                    true => T::vdiv(T::vdiv(top, x), x),
                    false => T::vdiv(top, bottom),
                };
                may_break & ((T::vgt(s, s0) & !near) | (T::vgt(own, s0) & near))
            }
        };
        let add = keep & !cut;
        for k in 0..D {
            f[k] = T::vadd_where(add, f[k], T::vmul(scale, dir[k]));
        }
        if cut != 0 {
            let mut at = [0i32; W];
            _mm256_storeu_si256(at.as_mut_ptr().cast(), bond);
            for w in (0..W).filter(|w| (cut >> w) & 1 != 0) {
                status[at[w] as usize] = BROKEN;
                broken += 1;
            }
        }
    }
    let mut out = [[T::zero(); W]; D];
    for k in 0..D {
        T::vstore(f[k], &mut out[k]);
    }
    for w in 0..count {
        for k in 0..D {
            force[D * w + k] = out[k][w];
        }
    }
    broken
}

/// Slots a stencil may have ([`super::MAX_SLOTS`]): 16 blocks of 64.
#[cfg(target_arch = "x86_64")]
const MAX: usize = super::MAX_SLOTS;

/// Per stencil slot, bit `w` for lane `w`: its bond is not broken (`keep`), may break
/// (`intact`), exists (`has`: the lane's family has the slot).
#[cfg(target_arch = "x86_64")]
struct Masks {
    keep: [u8; MAX],
    intact: [u8; MAX],
    has: [u8; MAX],
}

/// The status rows of one call: nodes `i0..i0 + count`, node `i0 + w`'s bonds at
/// `rows[w]..rows[w + 1]` of `status`, one byte per slot its family has, in slot order.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Rows<'a> {
    i0: usize,
    count: usize,
    rows: &'a [usize; W + 1],
    status: &'a [u8],
}

/// [`masks`] with AVX-512 VBMI2 (each row expanded to its slots by one load).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512vbmi2")]
unsafe fn masks_vbmi2<T>(t: &SlotTable<T>, r: Rows, m: &mut Masks) {
    masks::<T, true>(t, r, m)
}

/// [`masks`] with AVX-512 BW (a row with absent slots expanded byte by byte).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512bw")]
unsafe fn masks_bw<T>(t: &SlotTable<T>, r: Rows, m: &mut Masks) {
    masks::<T, false>(t, r, m)
}

/// The lane bits of every slot from the status rows `r`, 64 slots at a time: each row's bytes expanded to the slots of its presence bits, compared
/// with `BROKEN` and `INTACT`, and added as bit `w` into the block's bytes.
///
/// # Safety
/// The CPU has AVX-512 F, VL and BW, and VBMI2 where `VBMI2`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn masks<T, const VBMI2: bool>(t: &SlotTable<T>, r: Rows, m: &mut Masks) {
    let Rows {
        i0,
        count,
        rows,
        status,
    } = r;
    let len = t.stencil.len();
    let (broken, intact) = (
        _mm512_set1_epi8(BROKEN as i8),
        _mm512_set1_epi8(INTACT as i8),
    );
    // each lane's next unread status byte
    let mut at: [usize; W] = std::array::from_fn(|w| rows[w]);
    for b in 0..len.div_ceil(64) {
        let (mut keep, mut int, mut has) = (
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
            _mm512_setzero_si512(),
        );
        for w in 0..count {
            let bits = t.present[(i0 + w) * t.words + b];
            let n = bits.count_ones() as usize;
            let row = &status[at[w]..at[w] + n];
            at[w] += n;
            let v = if VBMI2 {
                _mm512_maskz_expandloadu_epi8(bits, row.as_ptr().cast())
            } else if n == 64 || bits == (1u64 << n) - 1 {
                // (the first n slots: a plain masked load)
                _mm512_maskz_loadu_epi8(bits, row.as_ptr().cast())
            } else {
                let mut v = [0u8; 64];
                let mut rest = bits;
                for &s in row {
                    v[rest.trailing_zeros() as usize] = s;
                    rest &= rest - 1;
                }
                _mm512_loadu_si512(v.as_ptr().cast())
            };
            let bit = _mm512_set1_epi8((1u8 << w) as i8);
            let (k, i) = (
                _mm512_mask_cmpneq_epi8_mask(bits, v, broken),
                _mm512_mask_cmpeq_epi8_mask(bits, v, intact),
            );
            keep = _mm512_mask_add_epi8(keep, k, keep, bit);
            int = _mm512_mask_add_epi8(int, i, int, bit);
            has = _mm512_mask_add_epi8(has, bits, has, bit);
        }
        let slots = 64 * b..64 * b + 64;
        _mm512_storeu_si512(m.keep[slots.clone()].as_mut_ptr().cast(), keep);
        _mm512_storeu_si512(m.intact[slots.clone()].as_mut_ptr().cast(), int);
        _mm512_storeu_si512(m.has[slots].as_mut_ptr().cast(), has);
    }
}
