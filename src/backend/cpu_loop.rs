//! The CPU loop backend: node-parallel loops over CSR families with rayon, the reference
//! implementation of every bond law (`theory.md` sections 2 and 3). Each node sums its own
//! bonds in family order, so results are bitwise the same at any thread count.

use super::blocks::par_node_blocks;
use super::Backend;
use crate::material::laws::{extension, stretch, Vec3};
use crate::material::stiffness_bound::lps_node_coefficients;
use crate::material::Law;
use crate::setup::Problem;
use crate::Real;
use rayon::prelude::*;
use std::sync::Arc;

/// Reference backend on the CPU.
pub struct CpuLoop<T: Real> {
    problem: Arc<Problem>,
    dim: usize,
    /// Bond status per directed bond (1 intact, 0 broken).
    mu: Vec<u8>,
    /// Per-bond weight: PMB `c lambda beta V_j`; LPS `omega beta V_j`.
    weight: Vec<T>,
    /// LPS per node: `alpha_i`, `p_i = d K_d / m_i - alpha_i / d`, `d / m_i`.
    alpha: Vec<T>,
    pcoef: Vec<T>,
    d_over_m: Vec<T>,
    /// LPS dilatation scratch.
    theta: Vec<T>,
}

impl<T: Real> CpuLoop<T> {
    /// Set up the backend for `problem` (bond status from its pre-cracks).
    pub fn new(problem: Arc<Problem>) -> Self {
        let p = &problem;
        let (fam, v, m) = (&p.families, &p.body.volumes, &p.material);
        let pos = &p.body.positions;
        let weight: Vec<T> = (0..p.body.len())
            .into_par_iter()
            .flat_map_iter(|i| {
                fam.range(i).map(move |b| {
                    let j = fam.neighbors[b] as usize;
                    let x = crate::material::bonds::bond_length(pos, i, j);
                    let bv = p.bonds.beta[b] * v[j];
                    T::of(match m.law {
                        Law::Pmb { c, .. } => c * p.bonds.correction(b) * bv,
                        Law::Lps { .. } => m.omega(x) * bv,
                    })
                })
            })
            .collect();
        let (alpha, pcoef) = lps_node_coefficients(m, &p.bonds.weighted_volume);
        let d = m.d() as f64;
        let d_over_m = p
            .bonds
            .weighted_volume
            .iter()
            .map(|&wv| T::of(if wv > 0.0 { d / wv } else { 0.0 }))
            .collect();
        CpuLoop {
            dim: p.dim(),
            mu: p.initial_mu.clone(),
            weight,
            alpha: alpha.into_iter().map(T::of).collect(),
            pcoef: pcoef.into_iter().map(T::of).collect(),
            d_over_m,
            theta: vec![T::zero(); p.body.len()],
            problem,
        }
    }

    /// Bond vector `xi`, in `f64` then rounded, and its length.
    #[inline(always)]
    fn xi(&self, i: usize, j: usize) -> (Vec3<T>, T) {
        let p = &self.problem.body.positions;
        let xi = [p[j][0] - p[i][0], p[j][1] - p[i][1], p[j][2] - p[i][2]];
        let x = (xi[0] * xi[0] + xi[1] * xi[1] + xi[2] * xi[2]).sqrt();
        ([T::of(xi[0]), T::of(xi[1]), T::of(xi[2])], T::of(x))
    }

    #[inline(always)]
    fn eta(&self, u: &[T], i: usize, j: usize) -> Vec3<T> {
        let d = self.dim;
        let mut e = [T::zero(); 3];
        for k in 0..d {
            e[k] = u[d * j + k] - u[d * i + k];
        }
        e
    }

    /// Bond stretch used by the failure criterion (`theory.md`: PMB `s`, LPS `e / x`).
    #[inline(always)]
    fn criterion_stretch(&self, u: &[T], i: usize, j: usize) -> T {
        let (xi, x) = self.xi(i, j);
        let eta = self.eta(u, i, j);
        match self.problem.material.law {
            Law::Pmb {
                linearized: false, ..
            } => stretch(&xi, &eta, x).0,
            _ => extension(&xi, &eta, x) / x,
        }
    }

    /// LPS dilatation of every node into `self.theta`.
    fn compute_dilatation(&mut self, u: &[T]) {
        let fam = &self.problem.families;
        let mut theta = std::mem::take(&mut self.theta);
        theta.par_iter_mut().enumerate().for_each(|(i, th)| {
            let mut s = T::zero();
            for b in fam.range(i) {
                let j = fam.neighbors[b] as usize;
                let (xi, x) = self.xi(i, j);
                let e = extension(&xi, &self.eta(u, i, j), x);
                s += T::of(self.mu[b] as f64) * self.weight[b] * x * e;
            }
            *th = self.d_over_m[i] * s;
        });
        self.theta = theta;
    }

    /// Force density on node `i` (PMB).
    #[inline(always)]
    fn pmb_node_force(&self, u: &[T], i: usize, linearized: bool) -> Vec3<T> {
        let fam = &self.problem.families;
        let mut f = [T::zero(); 3];
        for b in fam.range(i) {
            if self.mu[b] == 0 {
                continue;
            }
            let j = fam.neighbors[b] as usize;
            let (xi, x) = self.xi(i, j);
            let eta = self.eta(u, i, j);
            let (scale, dir) = if linearized {
                let s = extension(&xi, &eta, x) / x;
                (self.weight[b] * s / x, xi)
            } else {
                let (s, ly) = stretch(&xi, &eta, x);
                let y = [xi[0] + eta[0], xi[1] + eta[1], xi[2] + eta[2]];
                (self.weight[b] * s / ly, y)
            };
            for k in 0..3 {
                f[k] += scale * dir[k];
            }
        }
        f
    }

    /// Force density on node `i` (LPS), with `self.theta` up to date.
    #[inline(always)]
    fn lps_node_force(&self, u: &[T], i: usize) -> Vec3<T> {
        let fam = &self.problem.families;
        let mut f = [T::zero(); 3];
        for b in fam.range(i) {
            if self.mu[b] == 0 {
                continue;
            }
            let j = fam.neighbors[b] as usize;
            let (xi, x) = self.xi(i, j);
            let e = extension(&xi, &self.eta(u, i, j), x);
            let t_ij = self.alpha[i] * e + self.pcoef[i] * x * self.theta[i];
            let t_ji = self.alpha[j] * e + self.pcoef[j] * x * self.theta[j];
            let scale = self.weight[b] * (t_ij + t_ji) / x;
            for k in 0..3 {
                f[k] += scale * xi[k];
            }
        }
        f
    }
}

impl<T: Real> Backend<T> for CpuLoop<T> {
    fn name(&self) -> &'static str {
        "cpu-loop"
    }

    fn internal_force(&mut self, u: &[T], force: &mut [T]) {
        let d = self.dim;
        let law = self.problem.material.law;
        if let Law::Lps { .. } = law {
            self.compute_dilatation(u);
        }
        let this = &*self;
        force.par_chunks_mut(d).enumerate().for_each(|(i, out)| {
            let f = match law {
                Law::Pmb { linearized, .. } => this.pmb_node_force(u, i, linearized),
                Law::Lps { .. } => this.lps_node_force(u, i),
            };
            out.copy_from_slice(&f[..d]);
        });
    }

    fn break_bonds(&mut self, u: &[T]) -> usize {
        let Some(s0) = self.problem.material.critical_stretch else {
            return 0;
        };
        let s0 = T::of(s0);
        let mut mu = std::mem::take(&mut self.mu);
        let (fam, no_fail) = (&self.problem.families, &self.problem.no_fail);
        let this = &*self;
        let broken = par_node_blocks(&fam.offsets, &mut mu, |nodes, slice| {
            let base = fam.offsets[nodes.start];
            let mut count = 0;
            for i in nodes {
                if no_fail[i] {
                    continue;
                }
                for b in fam.range(i) {
                    let j = fam.neighbors[b] as usize;
                    if slice[b - base] == 1 && !no_fail[j] && this.criterion_stretch(u, i, j) > s0 {
                        slice[b - base] = 0;
                        count += 1;
                    }
                }
            }
            count
        });
        self.mu = mu;
        broken
    }

    fn damage(&self, phi: &mut [T]) {
        let p = &self.problem;
        let fam = &p.families;
        phi.par_iter_mut().enumerate().for_each(|(i, out)| {
            let (mut intact, mut total) = (0.0, 0.0);
            for b in fam.range(i) {
                let bv = p.bonds.beta[b] * p.body.volumes[fam.neighbors[b] as usize];
                total += bv;
                intact += self.mu[b] as f64 * bv;
            }
            *out = T::of(if total > 0.0 {
                1.0 - intact / total
            } else {
                0.0
            });
        });
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> bool {
        if !matches!(self.problem.material.law, Law::Lps { .. }) {
            return false;
        }
        self.compute_dilatation(u);
        theta.copy_from_slice(&self.theta);
        true
    }

    fn strain_energy(&mut self, u: &[T]) -> f64 {
        let law = self.problem.material.law;
        if let Law::Lps { .. } = law {
            self.compute_dilatation(u);
        }
        let p = &self.problem;
        let this = &*self;
        let per_node: Vec<f64> = (0..p.body.len())
            .into_par_iter()
            .map(|i| this.node_energy_density(u, i, law) * p.body.volumes[i])
            .collect();
        per_node.iter().sum()
    }

    fn broken_bonds(&self) -> usize {
        self.mu.iter().filter(|&&m| m == 0).count()
    }

    fn bond_status(&self) -> Vec<u8> {
        self.mu.clone()
    }

    fn memory_bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, nb) = (self.problem.body.len(), self.mu.len());
        // status and weight per bond; four LPS coefficients per node
        nb * (1 + t) + 4 * n * t
    }

    fn bytes_per_step(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, nb, d) = (self.problem.body.len(), self.mu.len(), self.dim);
        // per bond: neighbour index, status, weight; per node: positions (f64), offset,
        // displacement in, force out (LPS: theta written once and read once more)
        let lps = matches!(self.problem.material.law, Law::Lps { .. });
        let node = 3 * 8 + 8 + 2 * d * t + if lps { 2 * t + 3 * t } else { 0 };
        nb * (4 + 1 + t) + n * node
    }
}

impl<T: Real> CpuLoop<T> {
    /// Strain energy density of node `i`, J/m^3 (LPS needs `self.theta` up to date).
    fn node_energy_density(&self, u: &[T], i: usize, law: Law) -> f64 {
        let fam = &self.problem.families;
        let d = self.dim as f64;
        let mut w = 0.0;
        for b in fam.range(i) {
            if self.mu[b] == 0 {
                continue;
            }
            let j = fam.neighbors[b] as usize;
            let (xi, x) = self.xi(i, j);
            let eta = self.eta(u, i, j);
            let (x, wb) = (x.f64(), self.weight[b].f64());
            w += match law {
                Law::Pmb { linearized, .. } => {
                    let s = if linearized {
                        extension(&xi, &eta, T::of(x)).f64() / x
                    } else {
                        stretch(&xi, &eta, T::of(x)).0.f64()
                    };
                    0.25 * wb * s * s * x
                }
                Law::Lps { .. } => {
                    let e = extension(&xi, &eta, T::of(x)).f64();
                    let ed = e - self.theta[i].f64() * x / d;
                    0.5 * self.alpha[i].f64() * wb * ed * ed
                }
            };
        }
        if let Law::Lps { kd, .. } = law {
            w += 0.5 * kd * self.theta[i].f64().powi(2);
        }
        w
    }
}
