//! The bytes of a checkpoint file: little-endian integers, floats in the run's precision bit
//! for bit, length-prefixed strings and arrays, and a CRC-32 of everything before it at the
//! end. [`Encoder`] writes through a hasher; [`Decoder`] reads a checked buffer and reports a
//! short or malformed file as a message (the caller names the file).

use crate::{Precision, Real};
use std::io::Write;

/// Writes values to `out`, hashing every byte it writes.
pub(super) struct Encoder<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Encoder<W> {
    pub(super) fn new(out: W) -> Self {
        Encoder {
            out,
            crc: crc32fast::Hasher::new(),
        }
    }

    pub(super) fn bytes(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.crc.update(b);
        self.out.write_all(b)
    }

    pub(super) fn u8(&mut self, x: u8) -> std::io::Result<()> {
        self.bytes(&[x])
    }

    pub(super) fn u32(&mut self, x: u32) -> std::io::Result<()> {
        self.bytes(&x.to_le_bytes())
    }

    pub(super) fn u64(&mut self, x: u64) -> std::io::Result<()> {
        self.bytes(&x.to_le_bytes())
    }

    pub(super) fn usize(&mut self, x: usize) -> std::io::Result<()> {
        self.u64(x as u64)
    }

    pub(super) fn f64(&mut self, x: f64) -> std::io::Result<()> {
        self.bytes(&x.to_le_bytes())
    }

    /// A length, then the bytes.
    pub(super) fn blob(&mut self, b: &[u8]) -> std::io::Result<()> {
        self.usize(b.len())?;
        self.bytes(b)
    }

    /// A length, then the values in `T`'s own width (4 or 8 bytes each), bit for bit.
    pub(super) fn reals<T: Real>(&mut self, v: &[T]) -> std::io::Result<()> {
        self.usize(v.len())?;
        let mut buf = Vec::with_capacity(8 * v.len().min(1 << 16));
        for chunk in v.chunks(1 << 16) {
            buf.clear();
            for &x in chunk {
                match T::PRECISION {
                    // f32 -> f64 -> f32 is exact.
                    Precision::F32 => buf.extend_from_slice(&(x.f64() as f32).to_le_bytes()),
                    Precision::F64 => buf.extend_from_slice(&x.f64().to_le_bytes()),
                }
            }
            self.bytes(&buf)?;
        }
        Ok(())
    }

    /// The CRC-32 of everything written so far, then the writer.
    pub(super) fn finish(mut self) -> std::io::Result<W> {
        let crc = self.crc.clone().finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        Ok(self.out)
    }
}

/// CRC-32 of `bytes` (the body of a file, without its last four bytes).
pub(super) fn checksum(bytes: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(bytes);
    h.finalize()
}

/// Reads values from a buffer whose checksum has been verified.
pub(super) struct Decoder<'a> {
    bytes: &'a [u8],
    at: usize,
}

/// A short read or a malformed value.
pub(super) type Decoded<T> = std::result::Result<T, String>;

impl<'a> Decoder<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Decoder { bytes, at: 0 }
    }

    pub(super) fn take(&mut self, n: usize) -> Decoded<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| format!("ends early (at byte {})", self.at))?;
        let b = &self.bytes[self.at..end];
        self.at = end;
        Ok(b)
    }

    fn array<const N: usize>(&mut self) -> Decoded<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("N bytes taken"))
    }

    pub(super) fn u8(&mut self) -> Decoded<u8> {
        Ok(self.take(1)?[0])
    }

    pub(super) fn u32(&mut self) -> Decoded<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub(super) fn u64(&mut self) -> Decoded<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    pub(super) fn usize(&mut self) -> Decoded<usize> {
        let x = self.u64()?;
        usize::try_from(x).map_err(|_| format!("a length of {x} does not fit this machine"))
    }

    pub(super) fn f64(&mut self) -> Decoded<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    pub(super) fn blob(&mut self) -> Decoded<&'a [u8]> {
        let n = self.usize()?;
        self.take(n)
    }

    pub(super) fn string(&mut self) -> Decoded<String> {
        let b = self.blob()?;
        String::from_utf8(b.to_vec()).map_err(|_| "a text field is not UTF-8".to_string())
    }

    /// `expected` values of `T`, stored by [`Encoder::reals`].
    pub(super) fn reals<T: Real>(&mut self, expected: usize, what: &str) -> Decoded<Vec<T>> {
        let n = self.usize()?;
        if n != expected {
            return Err(format!("{what} has {n} values, expected {expected}"));
        }
        let width = match T::PRECISION {
            Precision::F32 => 4,
            Precision::F64 => 8,
        };
        let raw = self.take(n.checked_mul(width).ok_or("a length overflows")?)?;
        Ok(raw
            .chunks_exact(width)
            .map(|c| match T::PRECISION {
                Precision::F32 => T::of(f32::from_le_bytes(c.try_into().expect("4")) as f64),
                Precision::F64 => T::of(f64::from_le_bytes(c.try_into().expect("8"))),
            })
            .collect())
    }

    /// The bytes not read yet.
    pub(super) fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// Whether every byte has been read.
    pub(super) fn done(&self) -> bool {
        self.at == self.bytes.len()
    }
}
