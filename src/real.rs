//! The floating-point type of a simulation: `f32` or `f64` through one generic code path.

use std::fmt::{Debug, Display};
use std::iter::Sum;

/// A floating-point scalar the engine computes in. Geometry is always built in `f64`; the
/// state (displacement, velocity, force) and the bond kernels run in `T`. It can be copied to
/// a GPU as is (`DeviceRepr`).
pub trait Real:
    num_traits::Float
    + num_traits::FromPrimitive
    + num_traits::NumAssign
    + Sum
    + Send
    + Sync
    + Copy
    + Default
    + Debug
    + Display
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + 'static
{
    /// `"f32"` or `"f64"`, as the CLI and `summary.json` name the precision.
    const NAME: &'static str;
    /// The same precision as a value.
    const PRECISION: Precision;
    /// Convert from `f64` (rounding to nearest for `f32`).
    fn of(x: f64) -> Self;
    /// Widen to `f64`.
    fn f64(self) -> f64;
}

impl Real for f32 {
    const NAME: &'static str = "f32";
    const PRECISION: Precision = Precision::F32;
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self as f64
    }
}

impl Real for f64 {
    const NAME: &'static str = "f64";
    const PRECISION: Precision = Precision::F64;
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self
    }
}

/// The precision a run computes in (`--precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Precision {
    /// Single precision (32-bit floats).
    F32,
    /// Double precision (64-bit floats).
    #[default]
    F64,
}

impl Precision {
    /// `"f32"` or `"f64"`.
    pub fn name(self) -> &'static str {
        match self {
            Precision::F32 => "f32",
            Precision::F64 => "f64",
        }
    }
}
