//! The cuSPARSE products of one force evaluation: `eta = (A x I_d) u`, (LPS) `theta = Theta z`
//! and `f = F z` around the bond-row kernels, and their timings for `examples/gpu_spmv.rs`.
//!
//! Units: displacement m, bond differences m, force density N/m^3; times s, traffic bytes.

use super::{GpuMatrix, LPS, PMB_NONLINEAR};
use crate::backend::gpu::buffers::addr;
use crate::gpu::cusparse::Spmv;
use crate::{Real, Result};

impl<T: Real> GpuMatrix<T> {
    /// The sparse products of one force evaluation and the damage, with their names: what
    /// `examples/gpu_spmv.rs` times.
    pub(super) fn products(&self) -> Vec<&Spmv<T>> {
        let mut v = vec![&self.diff, &self.force, &self.damage_op];
        v.extend(self.theta_op.iter());
        v
    }

    /// `eta = (A x I_d) u` for `u` at a device address of `d n` values.
    pub(super) fn form_eta(&self, u: u64) -> Result<()> {
        // SAFETY: `u` holds `d n` values (the caller's promise); `eta` holds `d rows`.
        unsafe { self.diff.apply(&self.handle, u, addr(&self.gpu, &self.eta)) }
    }

    /// LPS: `z = mu e` (with bond breaking), then `theta = Theta z`; `eta` up to date.
    pub(super) fn dilatation_pass(&self, check_bonds: bool) -> Result<()> {
        self.launch(&self.k.lps_extension, self.nrows(), check_bonds)?;
        let op = self.theta_op.as_ref().expect("LPS has Theta");
        let g = &*self.gpu;
        // SAFETY: `z` holds `rows` values, `theta` `n`.
        unsafe { op.apply(&self.handle, addr(g, &self.z), addr(g, &self.theta)) }
    }

    /// Enqueue the force density at `u` into `force` (device addresses of `d n` values).
    pub(super) fn forces(&self, u: u64, force: u64, check_bonds: bool) -> Result<()> {
        self.form_eta(u)?;
        if self.law == LPS {
            self.dilatation_pass(check_bonds)?;
            self.launch(&self.k.lps_force, self.nrows(), false)?;
        } else {
            self.launch(&self.k.pmb, self.nrows(), check_bonds)?;
        }
        self.force_product(force)
    }

    /// `f = F z` into `force` (a device address of `d n` values) from the bond scalars `z`.
    pub(super) fn force_product(&self, force: u64) -> Result<()> {
        // SAFETY: `z` holds the operator's columns, `force` `d n` values (the caller's).
        unsafe {
            self.force
                .apply(&self.handle, addr(&self.gpu, &self.z), force)
        }
    }

    /// Time each sparse product of one force evaluation (and the damage's) on the current
    /// buffers: `(name, rows, columns, non-zeros, minimal bytes, seconds)` per product, the
    /// fastest of `reps` runs each (after one untimed run). For `examples/gpu_spmv.rs`.
    pub fn time_products(&mut self, reps: usize) -> Result<Vec<ProductTiming>> {
        let g = self.gpu.clone();
        let (u, eta, z, f) = (
            addr(&g, &self.u_in),
            addr(&g, &self.eta),
            addr(&g, &self.z),
            addr(&g, &self.f_out),
        );
        let (theta, phi) = (addr(&g, &self.theta), addr(&g, &self.phi));
        let mut cases: Vec<(&'static str, &Spmv<T>, u64, u64)> = vec![
            ("eta = (A x I_d) u", &self.diff, u, eta),
            (
                if self.law == PMB_NONLINEAR {
                    "f = -(A^T x I_d) z / V"
                } else {
                    "f = -B^T z / V"
                },
                &self.force,
                z,
                f,
            ),
        ];
        if let Some(op) = &self.theta_op {
            cases.push(("theta = Theta z", op, z, theta));
        }
        cases.push(("phi = Phi (1 - mu)", &self.damage_op, z, phi));
        let mut out = Vec::new();
        for (name, op, x, y) in cases {
            let mut best = f64::INFINITY;
            for r in 0..=reps.max(1) {
                g.synchronize()?;
                let t0 = std::time::Instant::now();
                // SAFETY: the backend's own buffers, of the operator's sizes.
                unsafe { op.apply(&self.handle, x, y)? };
                g.synchronize()?;
                if r > 0 {
                    best = best.min(t0.elapsed().as_secs_f64());
                }
            }
            let m = &op.matrix;
            out.push(ProductTiming {
                name,
                nrows: m.nrows,
                ncols: m.ncols,
                nnz: m.nnz,
                bytes: op.traffic(),
                seconds: best,
            });
        }
        Ok(out)
    }

    /// Seconds of one force evaluation with bond checking on the device (fastest of
    /// `reps`), the state's buffers as input and output. For `examples/gpu_spmv.rs`.
    pub fn time_force(&mut self, reps: usize) -> Result<f64> {
        let g = self.gpu.clone();
        let (u, f) = (addr(&g, &self.u_in), addr(&g, &self.f_out));
        let mut best = f64::INFINITY;
        for r in 0..=reps.max(1) {
            g.synchronize()?;
            let t0 = std::time::Instant::now();
            self.forces(u, f, true)?;
            g.synchronize()?;
            if r > 0 {
                best = best.min(t0.elapsed().as_secs_f64());
            }
        }
        self.take_broken()?;
        Ok(best)
    }
}

/// One timed sparse product (see [`GpuMatrix::time_products`]).
#[derive(Debug, Clone)]
pub struct ProductTiming {
    pub name: &'static str,
    pub nrows: usize,
    pub ncols: usize,
    pub nnz: usize,
    /// Row pointers, column indices and values read once, `x` read once, `y` written once.
    pub bytes: usize,
    pub seconds: f64,
}
