//! Whole computations from Python: the sparse operators of the matrix form (the matrices
//! `peridot export-matrix` writes, as CSR arrays), the static solve, and a whole run as
//! `peridot run` does it (on a thread of its own, so Ctrl-C can stop it at a step
//! boundary through the run's cancel flag).

use crate::errors::IntoPy;
use crate::model::Model;
use crate::simulation::{backend_kind, options, precision_of, problem_for};
use numpy::PyArray1;
use peridot::material::Law;
use peridot::setup::Problem;
use peridot::solver::export::{matrices, Exported};
use peridot::solver::implicit::{self, StaticOptions};
use peridot::solver::Cancel;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::time::Duration;

/// One matrix as CSR arrays: `(name, indptr, indices, data, (rows, cols))`.
type CsrArrays<'py> = (
    String,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<f64>>,
    (usize, usize),
);

/// The operators of `model` at its initial bond status (pre-cracks broken), in the order
/// `B`, `Theta` (LPS only), `K`: the matrices and orderings of `peridot export-matrix`
/// (dof = dim * node + component; one row of `B` per directed bond, in CSR order of the
/// families), `K` with both triangles.
#[pyfunction]
pub fn operators<'py>(py: Python<'py>, model: &Model) -> PyResult<Vec<CsrArrays<'py>>> {
    let (m, dir) = (model.model.clone(), model.dir.clone());
    let built = py.detach(move || -> peridot::Result<_> {
        let problem = Problem::build(m, &dir)?;
        let mut what = vec![Exported::B];
        if matches!(problem.material.law, Law::Lps { .. }) {
            what.push(Exported::Theta);
        }
        what.push(Exported::K);
        matrices(&problem, &problem.initial_mu, &what)
    });
    let built = built.py_err()?;
    Ok(built
        .into_iter()
        .map(|(item, m)| {
            let sym = m.symbolic();
            let indptr: Vec<u64> = sym.row_ptr().iter().map(|&p| p as u64).collect();
            let indices: Vec<u32> = sym.col_idx().to_vec();
            (
                item.name().to_string(),
                PyArray1::from_vec(py, indptr),
                PyArray1::from_vec(py, indices),
                PyArray1::from_vec(py, m.val().to_vec()),
                (m.nrows(), m.ncols()),
            )
        })
        .collect())
}

/// The static displacement of `model` (m, flat node-major), as `peridot solve-static`
/// computes it; with `out`, its outputs written there.
#[pyfunction]
#[pyo3(signature = (model, out = None))]
pub fn solve_static<'py>(
    py: Python<'py>,
    model: &Model,
    out: Option<PathBuf>,
) -> PyResult<Bound<'py, PyArray1<f64>>> {
    let (m, dir) = (model.model.clone(), model.dir.clone());
    let u = py.detach(move || -> peridot::Result<Vec<f64>> {
        let problem = Problem::build(m, &dir)?;
        Ok(implicit::solve_static(problem, &StaticOptions { out_dir: out })?.u)
    });
    Ok(PyArray1::from_vec(py, u.py_err()?))
}

/// The static system `K u = f` of `model` as `solve-static` sets it up, at its initial bond
/// status: `(f, prescribed dofs, their values, rigid modes (k columns of dofs values,
/// concatenated), k, supports)`; N, m.
#[pyfunction]
#[allow(clippy::type_complexity)]
pub fn static_system<'py>(
    py: Python<'py>,
    model: &Model,
) -> PyResult<(
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<f64>>,
    Bound<'py, PyArray1<f64>>,
    usize,
    Bound<'py, PyArray1<u64>>,
)> {
    let (m, dir) = (model.model.clone(), model.dir.clone());
    let system = py.detach(move || -> peridot::Result<_> {
        let problem = Problem::build(m, &dir)?;
        implicit::static_system(&problem, &problem.initial_mu)
    });
    let s = system.py_err()?;
    let dofs: Vec<u64> = s.prescribed.iter().map(|&(d, _)| d as u64).collect();
    let values: Vec<f64> = s.prescribed.iter().map(|&(_, v)| v).collect();
    let k = s.rigid_modes.len();
    let supports: Vec<u64> = s.supports.iter().map(|&d| d as u64).collect();
    Ok((
        PyArray1::from_vec(py, s.load),
        PyArray1::from_vec(py, dofs),
        PyArray1::from_vec(py, values),
        PyArray1::from_vec(py, s.rigid_modes.concat()),
        k,
        PyArray1::from_vec(py, supports),
    ))
}

/// Run `model` to its end as `peridot run` does, writing its outputs into `out` (none
/// without); returns `summary.json` as JSON text. The run goes on a thread of its own while
/// this one waits with the GIL released and checks the signals every 20 ms: Ctrl-C sets the
/// run's cancel flag, waits for it to stop at a step boundary (checkpoint, outputs and
/// summary written, status `interrupted`) and raises `KeyboardInterrupt`.
#[pyfunction]
#[pyo3(signature = (model, out = None, backend = "auto", precision = "f64", quiet = true))]
pub fn run(
    py: Python<'_>,
    model: &Model,
    out: Option<PathBuf>,
    backend: &str,
    precision: &str,
    quiet: bool,
) -> PyResult<String> {
    let precision = precision_of(precision)?;
    let kind = backend_kind(backend, precision)?;
    let cancel = Cancel::new();
    let mut opts = options(kind, precision, out, quiet);
    opts.cancel = Some(cancel.clone());
    let model = model.clone();
    let worker = std::thread::Builder::new()
        .name("peridot-run".into())
        .spawn(move || {
            let problem = problem_for(&model, kind, precision)?;
            peridot::solver::run(problem, &opts)
        })
        .map_err(|e| PyRuntimeError::new_err(format!("could not start the run: {e}")))?;
    while !worker.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(20)));
        if let Err(signal) = py.check_signals() {
            cancel.cancel();
            let _ = py.detach(|| worker.join());
            return Err(signal);
        }
    }
    let summary = worker
        .join()
        .map_err(|_| PyRuntimeError::new_err("the run's thread panicked"))?
        .py_err()?;
    serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Whether a CUDA driver and device are usable here (the GPU backends can run).
#[pyfunction]
pub fn gpu_available() -> bool {
    peridot::gpu::driver_available() && peridot::gpu::Gpu::get().is_ok()
}
