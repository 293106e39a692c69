//! Sums of f64 values that do not depend on the order of the additions: every value is
//! added exactly into a long fixed-point accumulator, and the total is rounded once, to
//! nearest (ties to even), when read. Two accumulators of parts of the values merge into the
//! accumulator of all of them, so a sum taken over the nodes of one process and the same sum
//! taken in parts on P ranks and merged (`distributed::collect`) give the same f64 bit for
//! bit, for any P and any partition. ADR's global sums (`adr.rs`: the residual's norms, the
//! damping coefficient's Rayleigh quotient) are taken this way.
//!
//! The accumulator holds the exact sum as digits of 32 bits (`DIGITS` signed 64-bit words,
//! the lowest of weight 2^-1074, the smallest subnormal), so an addition adds a value's
//! 53-bit significand, shifted, into three words without a carry; the carries are
//! propagated every 2^30 additions and when the sum is read. Infinities and NaN are summed
//! apart (their sum is the same in any order: NaN, or an infinity of one sign).
//!
//! Units: those of the values.

/// Words of 32 bits from 2^-1074 up: 2^64 values below 2^1024 sum to below 2^1088, 2162
/// bits above 2^-1074; 68 words hold 2176.
const DIGITS: usize = 68;
/// Additions between carry propagations: each adds less than 2^32 to a word, so a word
/// stays below 2^62 in magnitude.
const CARRY_EVERY: u32 = 1 << 30;

/// An exact sum of f64 values, rounded once when read ([`ExactSum::value`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ExactSum {
    digits: [i64; DIGITS],
    /// Additions since the last carry propagation.
    adds: u32,
    /// The sum of the non-finite values added (0 where none was).
    special: f64,
}

impl Default for ExactSum {
    fn default() -> Self {
        ExactSum {
            digits: [0; DIGITS],
            adds: 0,
            special: 0.0,
        }
    }
}

/// Bytes of one accumulator in [`ExactSum::to_bytes`].
pub const EXACT_SUM_BYTES: usize = 8 * (DIGITS + 1);

impl ExactSum {
    /// Add `x` exactly.
    #[inline]
    pub fn add(&mut self, x: f64) {
        if x == 0.0 {
            return;
        }
        if !x.is_finite() {
            self.special += x;
            return;
        }
        let bits = x.to_bits();
        let biased = ((bits >> 52) & 0x7ff) as usize;
        let fraction = bits & ((1 << 52) - 1);
        // x = m 2^(s - 1074), s in 0..=2045
        let (m, s) = match biased {
            0 => (fraction, 0),
            e => (fraction | (1 << 52), e - 1),
        };
        let v = u128::from(m) << (s % 32);
        let word = s / 32;
        let pieces = [v as u32, (v >> 32) as u32, (v >> 64) as u32].map(i64::from);
        let sign = if bits >> 63 == 1 { -1 } else { 1 };
        for (k, p) in pieces.into_iter().enumerate() {
            self.digits[word + k] += sign * p;
        }
        self.adds += 1;
        if self.adds == CARRY_EVERY {
            self.carry();
        }
    }

    /// The accumulator of this sum's values and `other`'s.
    pub fn merge(&mut self, other: &ExactSum) {
        self.carry();
        let mut o = other.clone();
        o.carry();
        for (d, e) in self.digits.iter_mut().zip(&o.digits) {
            *d += e;
        }
        self.special += o.special;
        self.carry();
    }

    /// Propagate the carries: every word but the top one in `0..2^32`.
    fn carry(&mut self) {
        for i in 0..DIGITS - 1 {
            let c = self.digits[i] >> 32;
            self.digits[i] -= c << 32;
            self.digits[i + 1] += c;
        }
        self.adds = 0;
    }

    /// The sum rounded to the nearest f64 (ties to even; infinite beyond f64's range).
    pub fn value(&self) -> f64 {
        if self.special != 0.0 || self.special.is_nan() {
            return self.special;
        }
        let mut s = self.clone();
        s.carry();
        let negative = s.digits[DIGITS - 1] < 0;
        if negative {
            s.digits.iter_mut().for_each(|d| *d = -*d);
            s.carry();
        }
        let Some(top) = s.digits.iter().rposition(|&d| d != 0) else {
            return 0.0;
        };
        // the top four words (at least 97 significant bits), the rest as a sticky bit far
        // below the rounding position, so one conversion rounds the whole sum correctly
        let low = top.saturating_sub(3);
        let mut v = (low..=top)
            .rev()
            .fold(0u128, |v, k| (v << 32) | s.digits[k] as u128);
        if s.digits[..low].iter().any(|&d| d != 0) {
            v |= 1;
        }
        // (where low = 0, `v` below 2^53 is exact and scaled exactly into the subnormals;
        // otherwise the scaled value is normal and the scaling exact)
        let magnitude = scale(v as f64, 32 * low as i32 - 1074);
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }

    /// The accumulator as bytes (little-endian words, then the non-finite part), carries
    /// propagated: what ranks exchange to merge their parts ([`ExactSum::from_bytes`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut s = self.clone();
        s.carry();
        let mut out = Vec::with_capacity(EXACT_SUM_BYTES);
        for d in s.digits {
            out.extend_from_slice(&d.to_le_bytes());
        }
        out.extend_from_slice(&s.special.to_le_bytes());
        out
    }

    /// The accumulator of [`ExactSum::to_bytes`]; `bytes` must be [`EXACT_SUM_BYTES`] long.
    pub fn from_bytes(bytes: &[u8]) -> ExactSum {
        assert_eq!(bytes.len(), EXACT_SUM_BYTES, "an exact sum's bytes");
        let word = |k: usize| <[u8; 8]>::try_from(&bytes[8 * k..8 * k + 8]).expect("8 bytes");
        let mut s = ExactSum::default();
        for (k, d) in s.digits.iter_mut().enumerate() {
            *d = i64::from_le_bytes(word(k));
        }
        s.special = f64::from_le_bytes(word(DIGITS));
        s
    }
}

/// `x 2^k`, in steps that keep every intermediate product exact where the result is.
fn scale(mut x: f64, mut k: i32) -> f64 {
    let pow2 = |k: i32| f64::from_bits(((1023 + k) as u64) << 52);
    while k > 1000 {
        x *= pow2(1000);
        k -= 1000;
    }
    while k < -1000 {
        x *= pow2(-1000);
        k += 1000;
    }
    x * pow2(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(values: &[f64]) -> f64 {
        let mut s = ExactSum::default();
        values.iter().for_each(|&x| s.add(x));
        s.value()
    }

    #[test]
    fn cancellations_and_small_terms_survive() {
        // a plain left-to-right sum loses the 1 (1e100 + 1 = 1e100); the exact sum keeps it
        assert_eq!(sum(&[1e100, 1.0, -1e100]), 1.0);
        assert_eq!(sum(&[1.0, 1e-300, -1.0]), 1e-300);
        // 2^53 + 1 + 1: one rounding of the exact 2^53 + 2 (representable)
        let big = 2f64.powi(53);
        assert_eq!(sum(&[big, 1.0, 1.0]), big + 2.0);
        // a tie broken by a lower term: 2^53 + 1 + 2^-60 rounds up, not to even
        assert_eq!(sum(&[big, 1.0, 2f64.powi(-60)]), big + 2.0);
        assert_eq!(sum(&[big, 1.0]), big);
        // subnormals exactly, and a negative total
        let tiny = f64::from_bits(1);
        assert_eq!(sum(&[tiny, tiny, tiny]), f64::from_bits(3));
        assert_eq!(sum(&[-3.5, 1.25, -0.0]), -2.25);
        assert_eq!(sum(&[]), 0.0);
        assert!(sum(&[1.0, f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert_eq!(sum(&[f64::MAX, f64::MAX]), f64::INFINITY);
    }

    #[test]
    fn sums_in_any_order_or_in_parts_are_bitwise_equal() {
        // values over 40 decades of both signs: plain sums in different orders differ
        let mut x = 0x9e3779b97f4a7c15u64;
        let values: Vec<f64> = (0..5000)
            .map(|k| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let unit = (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                unit * 10f64.powi((k % 41) - 20)
            })
            .collect();
        let whole = sum(&values);
        let mut reversed = values.clone();
        reversed.reverse();
        assert_eq!(sum(&reversed).to_bits(), whole.to_bits());
        // in 7 interleaved parts, each through its bytes, merged in any order
        let mut parts: Vec<ExactSum> = (0..7).map(|_| ExactSum::default()).collect();
        for (k, &v) in values.iter().enumerate() {
            parts[(k * 31) % 7].add(v);
        }
        let mut merged = ExactSum::default();
        for p in parts.iter().rev() {
            merged.merge(&ExactSum::from_bytes(&p.to_bytes()));
        }
        assert_eq!(merged.value().to_bits(), whole.to_bits());
        // the exact sum is within one rounding of a compensated (Kahan-Babuska) sum
        let (mut s, mut c) = (0.0f64, 0.0f64);
        for &v in &values {
            let t = s + v;
            c += if s.abs() >= v.abs() {
                (s - t) + v
            } else {
                (v - t) + s
            };
            s = t;
        }
        assert!((whole - (s + c)).abs() <= 2.0 * f64::EPSILON * whole.abs());
    }
}
