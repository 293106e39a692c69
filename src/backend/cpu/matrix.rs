//! The CPU matrix backend: the matrix formulation of `theory.md` section 4 on the operators of
//! `crate::operators`, with rayon. One force evaluation is
//!
//! 1. `eta = A u` per component (bond differences; a row-parallel SpMV),
//! 2. one elementwise bond kernel: extension `e = xi . eta / x` (or the nonlinear stretch), and
//!    the force scalar times the weight, `z = w o t`; LPS splits it around
//!    `theta = Theta (mu o e)`,
//! 3. the transposed product `f = -B^T z` (or `-A^T z` per component for nonlinear PMB), whose
//!    epilogue divides by `V_i` to return a force density, N/m^3.
//!
//! Extensions are formed from differences (`eta = A u`, then `e = xi . eta / x`) in both
//! precisions rather than as `e = B u`: with a large rigid motion `B u` subtracts two large
//! products and loses digits in `f32`; the difference form keeps them, is one code path for
//! both precisions, and gives the loop backend's extensions bit for bit, so the failure
//! criterion sees the same stretches. `eta` is kept with a copy of the `u` it came from, so
//! `break_bonds` followed by `internal_force` at the same `u` (an explicit step) forms it once.
//!
//! Every product and kernel writes only its own rows and sums in storage order; global sums
//! are taken over fixed chunks in order: results are bitwise the same at any thread count.

use crate::backend::{check_material, Backend, Footprint, Scheme};
use crate::dynamics::Forces;
use crate::material::laws::{extension, pmb, stretch, Vec3};
use crate::material::Law;
use crate::operators::spmv::{spmv, spmv_interleaved, spmv_rows, spmv_with};
use crate::operators::{
    footprint_of, mat_bytes, nnz, BondRows, BondVectors, Mat, OperatorCounts, Operators, Storage,
};
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::Arc;

/// Bond rows per rayon task in the bond kernels (fixed, so chunked sums do not depend on
/// the thread count).
const CHUNK: usize = 4096;

/// Matrix-formulation backend on the CPU.
pub struct CpuMatrix<T: Real> {
    problem: Arc<Problem>,
    storage: Storage,
    dim: usize,
    law: Law,
    rows: BondRows,
    /// The bond vectors of the operators (`xi`, `length`, `a`, `g`, `w`, ...).
    vectors: BondVectors<T>,
    incidence: Mat<T>,
    /// `B^T`, for the linear laws (nonlinear PMB uses `A^T`).
    bt: Option<Mat<T>>,
    incidence_t: Option<Mat<T>>,
    theta_op: Option<Mat<T>>,
    damage_op: Mat<T>,
    /// Bond status per row (1 intact, 0 broken).
    mu: Vec<u8>,
    /// `-1 / V_i` per node, the epilogue of the transposed product.
    neg_inv_volume: Vec<T>,
    /// Scratch: `eta` (`d` per row), `z` (per row; `d` per row for nonlinear PMB), `theta`.
    eta: Vec<T>,
    z: Vec<T>,
    theta: Vec<T>,
    /// The displacement `eta` was formed from, if any.
    eta_of: Option<Vec<T>>,
}

impl<T: Real> CpuMatrix<T> {
    /// Assemble the operators of `problem` in `storage` (bond status from its pre-cracks).
    /// `B` is not kept (an explicit step does not use it), nor `B^T` for nonlinear PMB.
    pub fn new(problem: Arc<Problem>, storage: Storage) -> Result<Self> {
        check_material(&problem, "cpu-matrix", Scheme::Matrix)?;
        crate::backend::check_contact(&problem, "cpu-matrix", crate::backend::Placement::InCore)?;
        let ops = Operators::<T>::assemble(&problem, storage)?;
        let (n, d, rows) = (problem.body.len(), problem.dim(), ops.rows());
        let law = problem.material.law;
        let nonlinear = ops.incidence_t.is_some();
        let lps = ops.theta.is_some();
        let mu = ops.row_status(&problem.initial_mu);
        let neg_inv_volume = problem
            .body
            .volumes
            .iter()
            .map(|&v| T::of(-1.0 / v))
            .collect();
        Ok(CpuMatrix {
            storage,
            dim: d,
            law,
            rows: ops.rows,
            vectors: ops.vectors,
            incidence: ops.incidence,
            bt: (!nonlinear).then_some(ops.bt),
            incidence_t: ops.incidence_t,
            theta_op: ops.theta,
            damage_op: ops.damage,
            mu,
            neg_inv_volume,
            eta: vec![T::zero(); d * rows],
            z: vec![T::zero(); if nonlinear { d * rows } else { rows }],
            theta: vec![T::zero(); if lps { n } else { 0 }],
            eta_of: None,
            problem,
        })
    }

    /// The storage of the bond rows.
    pub fn storage(&self) -> Storage {
        self.storage
    }

    /// Number of bond rows held.
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// Bytes the backend will hold for `problem` in `storage`, without assembling: the
    /// operators of an explicit step (`Footprint::step`), the bond vectors, the bond status and
    /// the scratch vectors. Equals [`Backend::memory_bytes`] of the assembled backend.
    pub fn memory_estimate(problem: &Problem, storage: Storage) -> usize {
        Self::memory_estimate_of(&OperatorCounts::of(problem), storage, false)
    }

    /// [`memory_estimate`](Self::memory_estimate) of a problem of `counts`; with `peak`, while
    /// it is made: every operator as assembled (`B` too, dropped once made), not only a
    /// step's.
    pub fn memory_estimate_of(counts: &OperatorCounts, storage: Storage, peak: bool) -> usize {
        let t = std::mem::size_of::<T>();
        let fp = footprint_of(counts, storage, t);
        let (n, d, rows) = (counts.nodes, counts.dim, fp.rows);
        let (nonlinear, lps) = match counts.law {
            Law::Pmb { linearized, .. } => (!linearized, false),
            Law::Lps { .. } => (false, true),
        };
        // status; eta and z per row; 1/V, the u of eta and theta per node
        let per_row = 1 + d * t + if nonlinear { d * t } else { t };
        let per_node = t + d * t + if lps { t } else { 0 };
        let operators = if peak { fp.assembled() } else { fp.step() };
        operators + rows * per_row + n * per_node
    }

    /// Form `eta = A u` unless it is already the one of this `u` (bitwise, signed zeros too).
    fn update_eta(&mut self, u: &[T]) {
        let same = |c: &Vec<T>| {
            c.iter()
                .zip(u)
                .all(|(a, b)| a == b && a.is_sign_negative() == b.is_sign_negative())
        };
        if self.eta_of.as_ref().is_some_and(same) {
            return;
        }
        self.eta_rows(u, 0..self.mu.len());
        self.eta_is_of(Some(u));
    }

    /// `eta` of the rows `rows` at `u` (each row reads its two ends only).
    fn eta_rows(&mut self, u: &[T], rows: Range<usize>) {
        let d = self.dim;
        let out = &mut self.eta[d * rows.start..d * rows.end];
        spmv_rows(&self.incidence, d, u, rows.start, out, |_, _, s| s);
    }

    /// Record that `eta` is the one of `u` (`None`: of no displacement).
    fn eta_is_of(&mut self, u: Option<&[T]>) {
        match (&mut self.eta_of, u) {
            (Some(c), Some(u)) => c.copy_from_slice(u),
            (_, Some(u)) => self.eta_of = Some(u.to_vec()),
            (_, None) => self.eta_of = None,
        }
    }

    /// `xi`, `eta` of row `r` as 3-vectors (zero-padded in 2D, like the loop backend's), in
    /// dimension `D` (a constant, so the copies compile to moves).
    #[inline(always)]
    fn bond<const D: usize>(&self, r: usize) -> (Vec3<T>, Vec3<T>, T) {
        let (mut xi, mut eta) = ([T::zero(); 3], [T::zero(); 3]);
        for k in 0..D {
            xi[k] = self.vectors.xi[D * r + k];
            eta[k] = self.eta[D * r + k];
        }
        (xi, eta, self.vectors.length[r])
    }

    fn is_nonlinear(&self) -> bool {
        self.incidence_t.is_some()
    }

    /// Stretch of row `r` for the failure criterion (PMB `s`, linearized and LPS `e / x`).
    #[inline(always)]
    fn criterion_stretch<const D: usize>(&self, r: usize) -> T {
        let (xi, eta, x) = self.bond::<D>(r);
        // (LPS: the linearized criterion `e / x`)
        pmb::criterion_stretch(!self.is_nonlinear(), &xi, &eta, x)
    }

    /// Extension `e` of row `r`, m (nonlinear PMB: `|y| - x` as `s x`).
    #[inline(always)]
    fn extension_of<const D: usize>(&self, r: usize) -> T {
        let (xi, eta, x) = self.bond::<D>(r);
        if self.is_nonlinear() {
            stretch(&xi, &eta, x).0 * x
        } else {
            extension(&xi, &eta, x)
        }
    }

    /// LPS pass 1: `z = mu o e`, then `theta = Theta z`.
    fn lps_dilatation(&mut self) {
        self.lps_extensions(0..self.mu.len());
        self.theta_product();
    }

    /// LPS: `theta = Theta z`, each node's dilatation from every row's masked extension (a
    /// rank's ghosts' are partial until their owners' replace them:
    /// [`CpuMatrix::theta_mut`]).
    pub fn theta_product(&mut self) {
        if let Some(m) = &self.theta_op {
            spmv(m, &self.z, &mut self.theta);
        }
    }

    /// LPS: `z = mu o e` of the rows `rows`.
    fn lps_extensions(&mut self, rows: Range<usize>) {
        match self.dim {
            2 => self.lps_extensions_in::<2>(rows),
            _ => self.lps_extensions_in::<3>(rows),
        }
    }

    fn lps_extensions_in<const D: usize>(&mut self, rows: Range<usize>) {
        let mut z = std::mem::take(&mut self.z);
        let this = &*self;
        let part = &mut z[rows.clone()];
        part.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
            for (k, zr) in out.iter_mut().enumerate() {
                let r = rows.start + c * CHUNK + k;
                *zr = if this.mu[r] == 1 {
                    this.extension_of::<D>(r)
                } else {
                    T::zero()
                };
            }
        });
        self.z = z;
    }

    /// LPS pass 2 over the rows `rows`, in place: `z = w o mu o (a e + g theta_i
    /// [+ g_ji theta_j])` from `z = mu o e`.
    pub fn lps_force_scalars(&mut self, rows: Range<usize>) {
        let mut z = std::mem::take(&mut self.z);
        let this = &*self;
        let v = &self.vectors;
        let half = !v.g_second.is_empty();
        let part = &mut z[rows.clone()];
        part.par_chunks_mut(CHUNK).enumerate().for_each(|(c, out)| {
            for (k, zr) in out.iter_mut().enumerate() {
                let r = rows.start + c * CHUNK + k;
                if this.mu[r] == 0 {
                    *zr = T::zero();
                    continue;
                }
                let (i, j) = this.rows.ends(r);
                let mut t = v.a[r] * *zr + v.g[r] * this.theta[i];
                if half {
                    t += v.g_second[r] * this.theta[j];
                }
                *zr = v.w[r] * t;
            }
        });
        self.z = z;
    }

    /// Break every intact row of `rows` whose stretch exceeds `s0` (no-fail nodes
    /// excepted); returns the number of rows broken.
    fn break_kernel<const D: usize>(
        &mut self,
        rows: Range<usize>,
        s0: impl Fn(usize, usize) -> T + Sync,
    ) -> usize {
        let mut mu = std::mem::take(&mut self.mu);
        let this = &*self;
        let no_fail = &self.problem.no_fail;
        let broken = mu[rows.clone()]
            .par_chunks_mut(CHUNK)
            .enumerate()
            .map(|(c, out)| {
                let mut count = 0;
                for (k, m) in out.iter_mut().enumerate() {
                    let r = rows.start + c * CHUNK + k;
                    let (i, j) = this.rows.ends(r);
                    if *m == 1
                        && !no_fail[i]
                        && !no_fail[j]
                        && this.criterion_stretch::<D>(r) > s0(i, j)
                    {
                        *m = 0;
                        count += 1;
                    }
                }
                count
            })
            .sum();
        self.mu = mu;
        broken
    }

    /// PMB over the rows `rows`: `z = w o mu o a o e` (linearized) or, per component,
    /// `w o mu o a o e o y / |y|`.
    fn pmb_force_scalars(&mut self, rows: Range<usize>) {
        match (self.is_nonlinear(), self.dim) {
            (false, 2) => self.pmb_kernel::<2, false>(rows),
            (false, _) => self.pmb_kernel::<3, false>(rows),
            (true, 2) => self.pmb_kernel::<2, true>(rows),
            (true, _) => self.pmb_kernel::<3, true>(rows),
        }
    }

    /// The PMB bond kernel in dimension `D`, with `D` values per row if `NONLINEAR`, else 1.
    fn pmb_kernel<const D: usize, const NONLINEAR: bool>(&mut self, rows: Range<usize>) {
        let mut z = std::mem::take(&mut self.z);
        let (this, v) = (&*self, &self.vectors);
        let per = if NONLINEAR { D } else { 1 };
        z[per * rows.start..per * rows.end]
            .par_chunks_mut(CHUNK * per)
            .enumerate()
            .for_each(|(c, out)| {
                for (k, zr) in out.chunks_exact_mut(per).enumerate() {
                    let r = rows.start + c * CHUNK + k;
                    if this.mu[r] == 0 {
                        zr.fill(T::zero());
                        continue;
                    }
                    let (xi, eta, x) = this.bond::<D>(r);
                    if !NONLINEAR {
                        zr[0] = v.w[r] * (v.a[r] * extension(&xi, &eta, x));
                    } else {
                        let (s, ly) = stretch(&xi, &eta, x);
                        let scale = v.w[r] * (v.a[r] * (s * x)) / ly;
                        for q in 0..D {
                            zr[q] = scale * (xi[q] + eta[q]);
                        }
                    }
                }
            });
        self.z = z;
    }

    /// Break the over-stretched intact rows of `rows` (`eta` current there); the rows
    /// broken. Several materials: the critical stretch of each row's pair of materials.
    fn break_rows(&mut self, rows: Range<usize>) -> usize {
        let problem = self.problem.clone();
        if let Some(map) = problem.materials.as_ref().filter(|m| m.breaks()) {
            let s0: Vec<T> = map.critical_stretch.iter().map(|&s| T::of(s)).collect();
            let at = |i: usize, j: usize| s0[map.pair(i, j)];
            return match self.dim {
                2 => self.break_kernel::<2>(rows, at),
                _ => self.break_kernel::<3>(rows, at),
            };
        }
        let s0 = problem.material.critical_stretch;
        let Some(s0) = s0.filter(|_| problem.materials.is_none()).map(T::of) else {
            return 0;
        };
        match self.dim {
            2 => self.break_kernel::<2>(rows, |_, _| s0),
            _ => self.break_kernel::<3>(rows, |_, _| s0),
        }
    }
}

/// A force evaluation in row ranges, for a rank's part whose ghosts' values arrive while
/// it works (`distributed/matrix.rs`): the rows `0..early_rows()` read no ghost
/// ([`BondRows::early`]), so they run while the ghosts' displacements travel, and (LPS)
/// their force scalars while the ghosts' dilatations travel: [`CpuMatrix::bond_rows`] over
/// both ranges, LPS [`CpuMatrix::theta_product`] and [`CpuMatrix::lps_force_scalars`] over
/// both, then [`CpuMatrix::transposed_product`]. Each row's arithmetic is the whole pass's,
/// so the split gives its bits.
impl<T: Real> CpuMatrix<T> {
    /// The rows that read no ghost come first: `0..early_rows()`.
    pub fn early_rows(&self) -> usize {
        self.rows.early
    }

    /// The row pass of a force evaluation over `rows` at `u` (only their ends read): `eta`,
    /// with `check` the breaking, then PMB's force scalars or LPS's masked extensions. Run
    /// over `0..early_rows()` then the rest; after the last row `eta` is `u`'s. The rows
    /// broken.
    pub fn bond_rows(&mut self, u: &[T], rows: Range<usize>, check: bool) -> usize {
        if rows.start == 0 {
            self.eta_is_of(None);
        }
        self.eta_rows(u, rows.clone());
        let broken = if check {
            self.break_rows(rows.clone())
        } else {
            0
        };
        match self.law {
            Law::Pmb { .. } => self.pmb_force_scalars(rows.clone()),
            Law::Lps { .. } => self.lps_extensions(rows.clone()),
        }
        if rows.end == self.mu.len() {
            self.eta_is_of(Some(u));
        }
        broken
    }

    /// The dilatation per node the LPS force scalars read.
    pub fn theta_mut(&mut self) -> &mut [T] {
        &mut self.theta
    }
}

impl<T: Real> Forces<T> for CpuMatrix<T> {
    fn internal_force(&mut self, u: &[T], force: &mut [T]) -> Result<()> {
        self.update_eta(u);
        let all = 0..self.mu.len();
        match self.law {
            Law::Pmb { .. } => self.pmb_force_scalars(all),
            Law::Lps { .. } => {
                self.lps_dilatation();
                self.lps_force_scalars(all);
            }
        }
        self.transposed_product(force);
        Ok(())
    }

    fn break_bonds(&mut self, u: &[T]) -> Result<usize> {
        self.update_eta(u);
        Ok(self.break_rows(0..self.mu.len()) * self.bonds_per_row())
    }

    fn damage(&self, phi: &mut [T]) -> Result<()> {
        let broken: Vec<T> = self.mu.iter().map(|&m| T::of(1.0 - m as f64)).collect();
        spmv(&self.damage_op, &broken, phi);
        Ok(())
    }

    fn dilatation(&mut self, u: &[T], theta: &mut [T]) -> Result<bool> {
        if self.theta_op.is_none() {
            return Ok(false);
        }
        self.update_eta(u);
        self.lps_dilatation();
        theta.copy_from_slice(&self.theta);
        Ok(true)
    }

    fn strain_energy(&mut self, u: &[T]) -> Result<f64> {
        let (rows, nodes) = (self.mu.len(), self.neg_inv_volume.len());
        Ok(self.strain_energy_of(u, rows, nodes))
    }

    fn broken_bonds(&self) -> usize {
        self.mu.iter().filter(|&&m| m == 0).count() * self.bonds_per_row()
    }

    fn bond_status(&self) -> Result<Vec<u8>> {
        Ok(self.rows.bond_status(&self.mu))
    }
}

impl<T: Real> CpuMatrix<T> {
    pub fn memory_bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let mats = self
            .held_matrices()
            .iter()
            .map(|m| mat_bytes(m))
            .sum::<usize>();
        let scalars = [&self.neg_inv_volume, &self.eta, &self.z, &self.theta]
            .iter()
            .map(|v| v.len())
            .sum::<usize>()
            + self
                .eta_of
                .as_ref()
                .map_or(self.dim * self.neg_inv_volume.len(), Vec::len);
        mats + self.vectors.bytes() + scalars * t + self.rows.index_bytes() + self.mu.len()
    }

    pub fn bytes_per_step(&self) -> usize {
        self.step_bytes()
    }

    pub fn operator_nnz(&self) -> Vec<(&'static str, usize)> {
        let mut out = vec![("A", nnz(&self.incidence))];
        if let Some(m) = &self.bt {
            out.push(("B^T", nnz(m)));
        }
        if let Some(m) = &self.incidence_t {
            out.push(("A^T", nnz(m)));
        }
        if let Some(m) = &self.theta_op {
            out.push(("Theta", nnz(m)));
        }
        out.push(("Phi", nnz(&self.damage_op)));
        out
    }
}

impl<T: Real> Backend<T> for CpuMatrix<T> {
    fn name(&self) -> &'static str {
        "cpu-matrix"
    }

    fn footprint(&self) -> Footprint {
        Footprint {
            operator_nnz: self.operator_nnz(),
            ..Footprint::new(self.memory_bytes(), self.bytes_per_step())
        }
    }
}

impl<T: Real> CpuMatrix<T> {
    /// Directed bonds per row: 1 in full storage, 2 in half.
    fn bonds_per_row(&self) -> usize {
        match self.storage {
            Storage::Full => 1,
            Storage::Half => 2,
        }
    }

    fn held_matrices(&self) -> Vec<&Mat<T>> {
        let mut v = vec![&self.incidence, &self.damage_op];
        v.extend(self.bt.iter());
        v.extend(self.incidence_t.iter());
        v.extend(self.theta_op.iter());
        v
    }

    /// `force = -B^T z / V` (or `-A^T z / V` per component for nonlinear PMB) from the bond
    /// scalars in `self.z`.
    pub fn transposed_product(&self, force: &mut [T]) {
        let d = self.dim;
        let inv = &self.neg_inv_volume;
        match (&self.incidence_t, &self.bt) {
            (Some(at), _) => spmv_interleaved(at, d, &self.z, force, |i, _, s| s * inv[i]),
            (None, Some(bt)) => spmv_with(bt, &self.z, force, |k, s| s * inv[k / d]),
            (None, None) => unreachable!("a linear law keeps B^T"),
        }
    }

    /// LPS forces with the dilatation of every node given instead of computed from this
    /// backend's rows (a partitioned run: halo nodes' dilatations come from their owners).
    pub fn internal_force_with_theta(&mut self, u: &[T], theta: &[T], force: &mut [T]) {
        self.update_eta(u);
        self.lps_extensions(0..self.mu.len());
        self.theta.copy_from_slice(theta);
        self.lps_force_scalars(0..self.mu.len());
        self.transposed_product(force);
    }

    /// Strain energy of the first `rows` bond rows and (LPS) the dilatation term of the
    /// first `nodes` nodes, J, counting of each row the directions that leave one of those
    /// nodes (a partitioned run's owned nodes come first): in half storage a row whose second
    /// node is not among them counts its first node's share only (LPS the `a_ij` term, PMB
    /// half the row: its two directions' coefficients are equal). [`Backend::strain_energy`]
    /// is all rows and nodes.
    pub fn strain_energy_of(&mut self, u: &[T], rows: usize, nodes: usize) -> f64 {
        self.update_eta(u);
        if self.theta_op.is_some() {
            self.lps_dilatation();
        }
        let (this, half) = (&*self, self.storage == Storage::Half);
        let partial: Vec<f64> = (0..rows.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                (c * CHUNK..((c + 1) * CHUNK).min(rows))
                    .map(|r| {
                        let both = !half || (this.rows.second[r] as usize) < nodes;
                        match this.dim {
                            2 => this.row_energy::<2>(r, both),
                            _ => this.row_energy::<3>(r, both),
                        }
                    })
                    .sum()
            })
            .collect();
        let mut total: f64 = partial.iter().sum();
        if let Law::Lps { .. } = self.law {
            let (p, v) = (&self.problem, &self.problem.body.volumes);
            let kd = |i: usize| match p.law_of(i) {
                Law::Lps { kd, .. } => kd,
                Law::Pmb { .. } => 0.0,
            };
            total += (0..nodes)
                .map(|i| 0.5 * kd(i) * v[i] * self.theta[i].f64().powi(2))
                .sum::<f64>();
        }
        total
    }

    /// Directed bonds broken among the first `rows` bond rows that leave one of the first
    /// `nodes` nodes ([`BondRows::broken_leaving`]).
    pub fn broken_bonds_of(&self, rows: usize, nodes: usize) -> usize {
        self.rows.broken_leaving(&self.mu[..rows], nodes)
    }

    /// Strain energy of row `r`, J (LPS: `self.theta` up to date); without `both` (half
    /// storage only), its first node's direction only.
    fn row_energy<const D: usize>(&self, r: usize, both: bool) -> f64 {
        if self.mu[r] == 0 {
            return 0.0;
        }
        let e = self.extension_of::<D>(r).f64();
        let v = &self.vectors;
        let (w, a) = (v.w[r].f64(), v.a[r].f64());
        match self.law {
            // (half storage: `a = a_ij + a_ji` with `a_ij = a_ji`, so half is `a_ij` exactly)
            Law::Pmb { .. } if !both => 0.25 * w * a * e * e,
            Law::Pmb { .. } => 0.5 * w * a * e * e,
            Law::Lps { .. } => {
                let (i, j) = self.rows.ends(r);
                let (x, d) = (v.length[r].f64(), self.dim as f64);
                let ed = |k: usize| e - self.theta[k].f64() * x / d;
                if v.a_first.is_empty() {
                    0.5 * w * a * ed(i).powi(2)
                } else if !both {
                    0.5 * w * v.a_first[r].f64() * ed(i).powi(2)
                } else {
                    let a_ij = v.a_first[r].f64();
                    0.5 * w * (a_ij * ed(i).powi(2) + (a - a_ij) * ed(j).powi(2))
                }
            }
        }
    }

    /// Minimal bytes of one explicit step (bond breaking and force evaluation): every
    /// operator and per-row vector read once, `u` read once, `eta`, `z` and `theta` written
    /// once and read once, the status read and written, the force written once.
    fn step_bytes(&self) -> usize {
        let t = std::mem::size_of::<T>();
        let (n, d, rows) = (self.neg_inv_volume.len(), self.dim, self.mu.len());
        let mats = self.held_matrices();
        let ops: usize = mats
            .iter()
            .filter(|m| !std::ptr::eq(**m, &self.damage_op))
            .map(|m| mat_bytes(m))
            .sum();
        let v = &self.vectors;
        // (not `a_first`: the energy's only)
        let vectors = [&v.xi, &v.length, &v.a, &v.g, &v.g_second, &v.w]
            .iter()
            .map(|v| v.len())
            .sum::<usize>();
        let scratch = 2 * (self.eta.len() + self.z.len() + self.theta.len());
        // row ends (no-fail check, dilatation gather), status in and out, no-fail flags,
        // u in, f out, 1 / V
        ops + (vectors + scratch) * t + 8 * rows + 2 * rows + n + (2 * d * n + n) * t
    }
}
