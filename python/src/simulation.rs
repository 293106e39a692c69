//! `Simulation`: a run of a model stepped from Python (`peridot::solver::Session`), its
//! state as NumPy arrays (f64, node-major, SI) and its summary as JSON text. The GIL is
//! released while the engine steps; between chunks of steps the signals are checked, so
//! Ctrl-C raises `KeyboardInterrupt` at a step boundary and leaves the run usable.

use crate::errors::IntoPy;
use crate::model::Model;
use numpy::{PyArray1, PyReadonlyArray1};
use peridot::backend::estimate::{self, RunShape};
use peridot::backend::BackendKind;
use peridot::setup::memory::ModelCounts;
use peridot::setup::{checked_body_for, Problem};
use peridot::solver::{RunOptions, Session};
use peridot::{Precision, Real};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::time::Instant;

/// The backend named `name` (`auto` resolved as `peridot run` resolves it).
pub fn backend_kind(name: &str, precision: Precision) -> PyResult<BackendKind> {
    let kind = match name {
        "auto" => peridot::backend::resolve_auto(precision).0,
        "cpu-loop" => BackendKind::CpuLoop,
        "cpu-matrix" => BackendKind::CpuMatrix,
        "gpu-loop" => BackendKind::GpuLoop,
        "gpu-matrix" => BackendKind::GpuMatrix,
        _ => {
            return Err(PyValueError::new_err(format!(
                "backend: {name:?} is not a backend; choose from auto, cpu-loop, cpu-matrix, \
                 gpu-loop, gpu-matrix"
            )))
        }
    };
    Ok(kind)
}

/// The precision named `name`.
pub fn precision_of(name: &str) -> PyResult<Precision> {
    match name {
        "f64" => Ok(Precision::F64),
        "f32" => Ok(Precision::F32),
        _ => Err(PyValueError::new_err(format!(
            "precision: {name:?} is not a precision; choose from f64, f32"
        ))),
    }
}

/// The problem of `model` for a run on `backend` in `precision`, as `peridot run` sets up an
/// in-core run with stored bonds: the memory guard on the host first (`MemoryError`), then
/// the body with its checks, then the families from the backend's neighbour search.
pub fn problem_for(
    model: &Model,
    backend: BackendKind,
    precision: Precision,
) -> peridot::Result<Problem> {
    let counts = ModelCounts::of(&model.model, &model.dir, precision);
    estimate::guard_host(&counts, &RunShape::in_core(backend), None, false)?;
    let body = checked_body_for(&model.model, &model.dir, precision)?;
    Problem::from_body(
        model.model.clone(),
        body,
        backend.neighbor_search(precision),
    )
}

/// The options of a run from Python: no process start, no cancel flag (signals are checked
/// between chunks instead).
pub fn options(
    backend: BackendKind,
    precision: Precision,
    out: Option<PathBuf>,
    quiet: bool,
) -> RunOptions {
    RunOptions {
        backend,
        precision,
        out_dir: out,
        quiet,
        subdomains: None,
        cancel: None,
        process_start: None,
    }
}

/// A session in either precision.
enum Inner {
    F32(Session<f32>),
    F64(Session<f64>),
}

/// Hands the session to the thread that steps it while the GIL is released: the same
/// thread (`Python::detach` runs its closure on the caller's thread), and the class is
/// `unsendable`, so no other thread ever sees it.
struct OnThisThread<'a>(&'a mut Inner);
// SAFETY: see the type's documentation: the value never leaves the thread that made it.
unsafe impl Send for OnThisThread<'_> {}

/// Apply `$body` to the session of either precision, bound to `$s`.
macro_rules! each {
    ($inner:expr, $s:ident => $body:expr) => {
        match $inner {
            Inner::F32($s) => $body,
            Inner::F64($s) => $body,
        }
    };
}

/// A run of a model stepped from Python (`peridot.Simulation` wraps it).
#[pyclass(module = "peridot._native", unsendable)]
pub struct Simulation {
    inner: Option<Inner>,
}

impl Simulation {
    fn inner(&mut self) -> PyResult<&mut Inner> {
        self.inner.as_mut().ok_or_else(|| {
            PyValueError::new_err("the simulation is finished (finish() was called)")
        })
    }
}

/// `values` (f64) in precision `T`.
fn to_real<T: Real>(values: &[f64]) -> Vec<T> {
    values.iter().map(|&x| T::of(x)).collect()
}

/// `values` in f64.
fn to_f64<T: Real>(values: &[T]) -> Vec<f64> {
    values.iter().map(|x| x.f64()).collect()
}

#[pymethods]
impl Simulation {
    /// Set up the run of `model` on `backend` in `precision` (the time step, the backend,
    /// the output folder `out` if given, and the outputs of step 0), stopped before its
    /// first step.
    #[new]
    #[pyo3(signature = (model, backend = "auto", precision = "f64", out = None, quiet = true))]
    fn new(
        py: Python<'_>,
        model: &Model,
        backend: &str,
        precision: &str,
        out: Option<PathBuf>,
        quiet: bool,
    ) -> PyResult<Self> {
        let precision = precision_of(precision)?;
        let kind = backend_kind(backend, precision)?;
        let opts = options(kind, precision, out, quiet);
        let model = model.clone();
        let inner = py.detach(move || -> peridot::Result<Inner> {
            let problem = problem_for(&model, kind, precision)?;
            Ok(match precision {
                Precision::F32 => Inner::F32(Session::start(problem, &opts)?),
                Precision::F64 => Inner::F64(Session::start(problem, &opts)?),
            })
        });
        Ok(Simulation {
            inner: Some(inner.py_err()?),
        })
    }

    /// Advance by `n` steps (fewer at the model's last step); returns the steps taken.
    /// Chunks of steps run with the GIL released, each about a tenth of a second; between
    /// them a pending signal raises its exception (Ctrl-C: `KeyboardInterrupt`) with the
    /// run at a step boundary.
    fn step(&mut self, py: Python<'_>, n: usize) -> PyResult<usize> {
        let inner = self.inner()?;
        let (mut done, mut chunk) = (0usize, 1usize);
        while done < n {
            let want = chunk.min(n - done);
            let handle = OnThisThread(&mut *inner);
            let t0 = Instant::now();
            let taken = py.detach(move || {
                let OnThisThread(inner) = handle;
                each!(inner, s => s.step(want))
            });
            let taken = taken.py_err()?;
            done += taken;
            py.check_signals()?;
            if taken < want {
                break;
            }
            if t0.elapsed().as_secs_f64() < 0.05 {
                chunk = chunk.saturating_mul(2);
            }
        }
        Ok(done)
    }

    /// Steps done so far.
    #[getter]
    fn steps_done(&mut self) -> PyResult<usize> {
        Ok(each!(self.inner()?, s => s.steps_done()))
    }

    /// The model's number of steps (`solver.steps`).
    #[getter]
    fn steps_total(&mut self) -> PyResult<usize> {
        Ok(each!(self.inner()?, s => s.steps_total()))
    }

    /// Whether the run is at its last step.
    #[getter]
    fn finished(&mut self) -> PyResult<bool> {
        Ok(each!(self.inner()?, s => s.finished()))
    }

    /// The time step, s.
    #[getter]
    fn dt(&mut self) -> PyResult<f64> {
        Ok(each!(self.inner()?, s => s.dt()))
    }

    /// The time, s.
    #[getter]
    fn time(&mut self) -> PyResult<f64> {
        Ok(each!(self.inner()?, s => s.state().time))
    }

    /// The spatial dimension (2 or 3).
    #[getter]
    fn dim(&mut self) -> PyResult<usize> {
        Ok(each!(self.inner()?, s => s.problem().dim()))
    }

    /// Reference positions, m, flat node-major with 3 components (z = 0 in 2D).
    fn positions<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let flat: Vec<f64> =
            each!(self.inner()?, s => s.problem().body.positions.as_flattened().to_vec());
        Ok(PyArray1::from_vec(py, flat))
    }

    /// The nodes of the region `name` (indices into the node arrays).
    fn region<'py>(&mut self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let nodes = each!(self.inner()?, s => {
            let p = s.problem();
            match p.regions.iter().any(|r| r.name == name) {
                true => Ok(p.region(name).iter().map(|&i| i as u64).collect::<Vec<u64>>()),
                false => Err(PyValueError::new_err(format!(
                    "region: {name:?} is not a region of the model; it has {:?}",
                    p.regions.iter().map(|r| r.name.as_str()).collect::<Vec<_>>()
                ))),
            }
        })?;
        Ok(PyArray1::from_vec(py, nodes))
    }

    /// Node volumes, m^3.
    fn volumes<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let v = each!(self.inner()?, s => s.problem().body.volumes.clone());
        Ok(PyArray1::from_vec(py, v))
    }

    /// Displacement, m, flat node-major (`dim` components per node).
    fn displacement<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let u = each!(self.inner()?, s => to_f64(&s.state().u));
        Ok(PyArray1::from_vec(py, u))
    }

    /// Velocity, m/s, flat node-major.
    fn velocity<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let v = each!(self.inner()?, s => to_f64(&s.state().v));
        Ok(PyArray1::from_vec(py, v))
    }

    /// Internal force density at the current displacement, N/m^3, flat node-major.
    fn force_density<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let f = each!(self.inner()?, s => to_f64(&s.state().f));
        Ok(PyArray1::from_vec(py, f))
    }

    /// Set the displacement (m) and/or velocity (m/s), flat node-major; the forces are
    /// computed again from the new displacement and the conditions imposed at the current
    /// time. Returns the bonds the new displacement broke.
    #[pyo3(signature = (displacement = None, velocity = None))]
    fn set_state(
        &mut self,
        displacement: Option<PyReadonlyArray1<'_, f64>>,
        velocity: Option<PyReadonlyArray1<'_, f64>>,
    ) -> PyResult<usize> {
        let u = displacement
            .map(|a| a.as_slice().map(<[f64]>::to_vec))
            .transpose()?;
        let v = velocity
            .map(|a| a.as_slice().map(<[f64]>::to_vec))
            .transpose()?;
        let inner = self.inner()?;
        let ndof = each!(&*inner, s => s.state().u.len());
        for (name, values) in [("displacement", &u), ("velocity", &v)] {
            if let Some(values) = values {
                if values.len() != ndof {
                    return Err(PyValueError::new_err(format!(
                        "{name}: {} values given; the model has {ndof} (nodes x dim)",
                        values.len()
                    )));
                }
            }
        }
        let broken = each!(inner, s => s.edit_state(|state| {
            if let Some(u) = &u {
                state.u = to_real(u);
            }
            if let Some(v) = &v {
                state.v = to_real(v);
            }
        }));
        broken.py_err()
    }

    /// The local damage of each node (0..1, the `beta V`-weighted fraction of its bonds
    /// lost).
    fn damage<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let phi = each!(self.inner()?, s => s.damage()).py_err()?;
        Ok(PyArray1::from_vec(py, phi))
    }

    /// Each bond's status in the CSR order of `families()`: 1 intact, 0 broken.
    fn bond_status<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<u8>>> {
        let status = each!(self.inner()?, s => s.bond_status()).py_err()?;
        Ok(PyArray1::from_vec(py, status))
    }

    /// The families as CSR index arrays `(offsets, neighbours)`: node `i`'s neighbours are
    /// `neighbours[offsets[i]:offsets[i + 1]]`, sorted.
    #[allow(clippy::type_complexity)]
    fn families<'py>(
        &mut self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u32>>)> {
        let (offsets, neighbors) = each!(self.inner()?, s => {
            let f = &s.problem().families;
            (
                f.offsets.iter().map(|&o| o as u64).collect::<Vec<u64>>(),
                f.neighbors.iter().map(|&j| j as u32).collect::<Vec<u32>>(),
            )
        });
        Ok((
            PyArray1::from_vec(py, offsets),
            PyArray1::from_vec(py, neighbors),
        ))
    }

    /// The run's summary so far as JSON text (`summary.json`'s keys; `status` `running`
    /// until the last step).
    fn summary_json(&mut self) -> PyResult<String> {
        let summary = each!(self.inner()?, s => s.summary()).py_err()?;
        serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// End the run: the damage picture, the last snapshot and `summary.json` where there is
    /// an output folder, as at the end of `peridot run`. Returns the summary as JSON text;
    /// the simulation cannot step after this.
    fn finish_json(&mut self) -> PyResult<String> {
        let inner = self
            .inner
            .take()
            .ok_or_else(|| PyValueError::new_err("the simulation is already finished"))?;
        let summary = match inner {
            Inner::F32(s) => s.finish(),
            Inner::F64(s) => s.finish(),
        };
        let summary = summary.py_err()?;
        serde_json::to_string(&summary).map_err(|e| PyValueError::new_err(e.to_string()))
    }
}
