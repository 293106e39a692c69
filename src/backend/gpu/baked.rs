//! `gpu-loop`'s plain PMB loop with the model's stencil compiled in
//! (`kernels/pmb_force_baked.cu`): where the slot-table loop (`pmb_force_lattice_table`)
//! runs, the same bonds with every slot's node offset and bond geometry written into the
//! kernel's source as literals, one line a slot, so the machine code reads no table, keeps
//! no loop counter and addresses each neighbour at a constant offset from the node.
//!
//! The literals are the slot table's values ([`Stencil::slot_bonds`]), printed as the
//! shortest decimal that reads back to the same value of the kernel's precision, so both
//! loops compute with the same numbers. A program of its own per stencil, precision and law
//! (`Gpu::baked_function`), kept in the on-disk kernel cache like the program of all kernels.
//!
//! Units: m (bond vectors, lengths), 1/m (inverse lengths).

use crate::neighbors::Stencil;
use crate::Real;
use std::fmt::Write;

/// The defines of the baked loop for `stencil` on a lattice of step `dx` (m) in dimension
/// `dim`, with the linearized or the nonlinear bond (`linearized`), in the precision `T`:
/// `PD_BAKED_DIM`, `PD_BAKED_LINEARIZED` and `PD_BAKED_SLOTS`, one
/// `S(m, offset, nonzero, xi_x, xi_y, xi_z, x, 1 / x)` a slot.
pub fn baked_defines<T: Real>(stencil: &Stencil, dx: f64, dim: usize, linearized: bool) -> String {
    let mut text = format!(
        "#define PD_BAKED_DIM {dim}\n#define PD_BAKED_LINEARIZED {}\n#define PD_BAKED_SLOTS(S)",
        u8::from(linearized)
    );
    for (m, slot) in stencil.slot_bonds::<T>(dx).enumerate() {
        let nonzero = (0..3)
            .filter(|&k| slot.xi[k].f64() != 0.0)
            .fold(0u8, |bits, k| bits | 1 << k);
        let [a, b, c] = slot.xi.map(literal);
        let _ = write!(
            text,
            " \\\n    S({m}, {}, {nonzero}, {a}, {b}, {c}, {}, {})",
            slot.offset,
            literal(slot.x),
            literal(slot.rx)
        );
    }
    text.push('\n');
    text
}

/// `v` as a C++ literal of its own precision that reads back to exactly `v`: the shortest
/// round-trip decimal, with the `f` suffix in f32 (so that no double rounding intervenes).
fn literal<T: Real>(v: T) -> String {
    match std::mem::size_of::<T>() {
        4 => format!("{:e}f", v.f64() as f32),
        _ => format!("{:e}", v.f64()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_reads_back_to_the_same_value() {
        // (the f32 and f64 values of one-third steps and inverse lengths: not exact in
        // decimal, so the shortest round-trip form is what keeps them)
        for x in [
            1.0 / 3.0,
            2.0f64.sqrt() * 1e-3,
            1.0 / (5.0f64.sqrt() * 2.5e-4),
            -7.5e-4,
        ] {
            let f = literal(x as f32);
            let back: f32 = f.trim_end_matches('f').parse().unwrap();
            assert_eq!(back.to_bits(), (x as f32).to_bits(), "{f}");
            let d = literal(x);
            assert_eq!(d.parse::<f64>().unwrap().to_bits(), x.to_bits(), "{d}");
        }
        assert_eq!(literal(0.0f32), "0e0f");
    }
}
