//! The softening damage laws on the CPU loop (`material/laws/softening.rs`,
//! `docs/materials.md`): a damage value per bond beside the status byte, updated from each
//! bond's stretch (`d = max(d, D(s))`, irreversible), and the PMB force of a bond scaled by
//! `1 - d` (secant unloading). A bond whose stretch reaches the final stretch has `d = 1` and
//! is marked `BROKEN`; `KEPT` bonds (no-fail zones) never damage.
//!
//! Each node walks its own bonds in CSR order, so results are bitwise the same at any thread
//! count; a bond's two directions see the same stretch (negating `xi` and `eta` is exact),
//! so both ends agree on its damage.
//!
//! Units: displacement m, force density N/m^3, energy J.

use super::blocks::par_node_blocks_pair;
use super::pmb_kernel::{BROKEN, INTACT};
use crate::material::laws::{dot, pmb, stretch, Softening, Vec3};
use crate::Real;
use rayon::prelude::*;

/// What the softening loops read of the bonds and the body.
pub struct SofteningBonds<'a, T> {
    pub offsets: &'a [usize],
    pub neighbors: &'a [u32],
    pub positions: &'a [[f64; 3]],
    /// Reference bond length per bond, rounded to `T`.
    pub length: &'a [T],
    /// Per-bond weight `c lambda beta V_j`, N/m^3 per unit stretch.
    pub weight: &'a [T],
    pub dim: usize,
    /// Linearized PMB (`s = n . eta / x`, force along `xi`).
    pub linearized: bool,
    pub law: Softening,
}

impl<T: Real> SofteningBonds<'_, T> {
    /// `xi` of bond `i -> j` (f64 then rounded), `eta` at `u`.
    #[inline(always)]
    fn vectors(&self, u: &[T], i: usize, j: usize) -> (Vec3<T>, Vec3<T>) {
        let (p, d) = (self.positions, self.dim);
        let (mut xi, mut eta) = ([T::zero(); 3], [T::zero(); 3]);
        for k in 0..d {
            xi[k] = T::of(p[j][k] - p[i][k]);
            eta[k] = u[d * j + k] - u[d * i + k];
        }
        (xi, eta)
    }

    /// The criterion stretch of bond `b = i -> j` at `u`.
    #[inline(always)]
    fn stretch(&self, u: &[T], i: usize, b: usize) -> T {
        let j = self.neighbors[b] as usize;
        let (xi, eta) = self.vectors(u, i, j);
        pmb::criterion_stretch(self.linearized, &xi, &eta, self.length[b])
    }

    /// Update every bond's damage at `u` (`d = max(d, D(s))`) and mark the bonds reaching
    /// `d = 1` `BROKEN`. Returns the bonds broken by this call.
    pub fn soften(&self, u: &[T], status: &mut [u8], damage: &mut [T]) -> usize {
        par_node_blocks_pair(self.offsets, status, damage, |nodes, st, dm| {
            let base = self.offsets[nodes.start];
            let mut broken = 0;
            for i in nodes {
                for b in self.offsets[i]..self.offsets[i + 1] {
                    if st[b - base] != INTACT {
                        continue;
                    }
                    let s = self.stretch(u, i, b);
                    let d = self.law.damage(s);
                    let slot = &mut dm[b - base];
                    if d > *slot {
                        *slot = d;
                    }
                    if *slot >= T::one() {
                        st[b - base] = BROKEN;
                        broken += 1;
                    }
                }
            }
            broken
        })
    }

    /// Force density of every node at `u` into `force` (`dim` per node): each unbroken bond
    /// `(1 - d) w s` along the deformed bond (linearized: along `xi`).
    pub fn forces(&self, u: &[T], status: &[u8], damage: &[T], force: &mut [T]) {
        let d = self.dim;
        force.par_chunks_mut(d).enumerate().for_each(|(i, out)| {
            let mut f = [T::zero(); 3];
            for b in self.offsets[i]..self.offsets[i + 1] {
                if status[b] == BROKEN {
                    continue;
                }
                let j = self.neighbors[b] as usize;
                let (xi, eta) = self.vectors(u, i, j);
                let (x, w) = (self.length[b], self.weight[b]);
                let kept = T::one() - damage[b];
                let (scale, dir) = match self.linearized {
                    true => {
                        let s = dot(&xi, &eta) / x / x;
                        (kept * w * s / x, xi)
                    }
                    false => {
                        let (s, ly) = stretch(&xi, &eta, x);
                        let y = [xi[0] + eta[0], xi[1] + eta[1], xi[2] + eta[2]];
                        (kept * w * s / ly, y)
                    }
                };
                for k in 0..3 {
                    f[k] += scale * dir[k];
                }
            }
            out.copy_from_slice(&f[..d]);
        });
    }

    /// Per node, the recoverable strain energy density of its unbroken bonds at `u`,
    /// `(1 - d) w s^2 x / 4` each (J/m^3), and the density of the work its bonds have
    /// dissipated, `w x W_d(d) / 2` each (`Softening::dissipated`; a broken bond's whole
    /// work to failure). Returns `(strain, dissipated)` per node.
    pub fn energy_densities(&self, u: &[T], status: &[u8], damage: &[T]) -> Vec<(f64, f64)> {
        (0..self.offsets.len() - 1)
            .into_par_iter()
            .map(|i| {
                let (mut strain, mut lost) = (0.0, 0.0);
                for b in self.offsets[i]..self.offsets[i + 1] {
                    let (x, w, d) = (self.length[b].f64(), self.weight[b].f64(), damage[b].f64());
                    lost += 0.5 * w * x * self.law.dissipated(d);
                    if status[b] != BROKEN {
                        let s = self.stretch(u, i, b).f64();
                        strain += pmb::energy_density((1.0 - d) * w, s, x);
                    }
                }
                (strain, lost)
            })
            .collect()
    }
}
