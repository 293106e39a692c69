//! Memory sizes in model files and options: a number of bytes (`1.5e9`, `4096`) or a number
//! with a unit (`2GiB`, `512MiB`, `64KiB`, `2GB`, `500MB`, `1024B`); a GPU memory budget may
//! also be a share of the model's in-core footprint (`15%`).

use serde::{Deserialize, Serialize};

/// A memory size as written: a number of bytes or text with a unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ByteSize {
    Number(f64),
    Text(String),
}

impl ByteSize {
    /// The size in bytes, `None` when it is not a size of at least one byte.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            ByteSize::Number(v) => whole_bytes(*v),
            ByteSize::Text(t) => parse_byte_size(t),
        }
    }

    /// As written, without quotes (`2GiB`, `1500000000`, `15%`): what an option would take.
    pub fn raw(&self) -> String {
        match self {
            ByteSize::Number(v) => format!("{v}"),
            ByteSize::Text(t) => t.clone(),
        }
    }

    /// The share in percent of a text `P%` with `0 < P <= 100`.
    pub fn percent(&self) -> Option<f64> {
        match self {
            ByteSize::Number(_) => None,
            ByteSize::Text(t) => parse_percent(t),
        }
    }
}

/// `P` of a text `P%` with `0 < P <= 100`.
pub fn parse_percent(text: &str) -> Option<f64> {
    let p: f64 = text.trim().strip_suffix('%')?.trim().parse().ok()?;
    (p > 0.0 && p <= 100.0).then_some(p)
}

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ByteSize::Number(v) => write!(f, "{v}"),
            ByteSize::Text(t) => write!(f, "\"{t}\""),
        }
    }
}

/// `v` rounded to whole bytes, if it is at least one byte and fits in a `u64`.
fn whole_bytes(v: f64) -> Option<u64> {
    (v.is_finite() && (1.0..1.8e19).contains(&v)).then(|| v.round() as u64)
}

/// Parse a memory size: a number with an optional unit (binary `KiB`, `MiB`, `GiB`, `TiB`;
/// decimal `kB`, `MB`, `GB`, `TB`; `B`). `None` unless it is at least one byte.
pub fn parse_byte_size(text: &str) -> Option<u64> {
    const UNITS: [(&str, f64); 9] = [
        ("GiB", (1u64 << 30) as f64),
        ("MiB", (1u64 << 20) as f64),
        ("KiB", 1024.0),
        ("TiB", (1u64 << 40) as f64),
        ("GB", 1e9),
        ("MB", 1e6),
        ("kB", 1e3),
        ("TB", 1e12),
        ("B", 1.0),
    ];
    let t = text.trim();
    let (number, factor) = UNITS
        .iter()
        .find_map(|&(u, f)| t.strip_suffix(u).map(|rest| (rest.trim(), f)))
        .unwrap_or((t, 1.0));
    let v: f64 = number.parse().ok()?;
    whole_bytes(v * factor)
}
