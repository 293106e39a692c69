//! The bond status byte of the CPU loop: one per directed bond, in CSR order.

/// Bond status: broken.
pub const BROKEN: u8 = 0;
/// Bond status: intact, breaks past the critical stretch.
pub const INTACT: u8 = 1;
/// Bond status: intact and never breaks (an end node is in a no-fail zone).
pub const KEPT: u8 = 2;
