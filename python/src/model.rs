//! `Model`: a validated model file in memory, from a TOML file with `--set`-style
//! overrides or from the JSON text of a Python dict, and what `peridot info` says of it.

use crate::errors::IntoPy;
use peridot::model::{self, Model as EngineModel};
use peridot::setup::Problem;
use peridot::solver::run::choose_dt;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use serde_json::json;
use std::path::PathBuf;

/// A validated model (`peridot.Model` wraps it).
#[pyclass(module = "peridot._native", frozen, skip_from_py_object)]
#[derive(Clone)]
pub struct Model {
    pub model: EngineModel,
    /// The folder relative file names (meshes, point clouds) are read from.
    pub dir: PathBuf,
}

#[pymethods]
impl Model {
    /// The model of the TOML file `path` with `overrides` (`"key=value"`, the command
    /// line's `--set`, TOML values) applied in order.
    #[staticmethod]
    fn from_file(path: PathBuf, overrides: Vec<String>) -> PyResult<Self> {
        let model = model::load(&path, &overrides).py_err()?;
        let dir = path.parent().map(PathBuf::from).unwrap_or_default();
        Ok(Model { model, dir })
    }

    /// The model of `json` (a dict of the file's tables, as JSON text), relative file names
    /// read from `dir`.
    #[staticmethod]
    fn from_json(json: &str, dir: PathBuf) -> PyResult<Self> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let table = toml::Value::try_from(value).map_err(|e| {
            PyValueError::new_err(format!("the model dict is not a TOML document: {e}"))
        })?;
        let text = toml::to_string(&table).map_err(|e| PyValueError::new_err(e.to_string()))?;
        let model = model::parse(&text, "<dict>", &[]).py_err()?;
        Ok(Model { model, dir })
    }

    /// The model as TOML text (every key the engine reads, defaults included where the
    /// schema writes them).
    fn to_toml(&self) -> PyResult<String> {
        toml::to_string(&self.model).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The model's name (the file stem unless `name` is set).
    #[getter]
    fn name(&self) -> Option<String> {
        self.model.name.clone()
    }

    /// The spatial dimension `d` (2 or 3).
    #[getter]
    fn dim(&self) -> usize {
        self.model.discretization.dimension.d()
    }

    /// What `peridot info` says of the model, as JSON text: the size, the discretization,
    /// the material, the time step and the regions' node counts. Builds the body and the
    /// family sizes (no bond is stored).
    fn info_json(&self, py: Python<'_>) -> PyResult<String> {
        let (model, dir) = (self.model.clone(), self.dir.clone());
        let problem = py
            .detach(move || Problem::build_lean(model, &dir))
            .py_err()?;
        let (dt, stable, _) = choose_dt(&problem).py_err()?;
        let (fmin, fmean, fmax) = problem.families.size_stats();
        let b = &problem.body;
        let regions: serde_json::Map<String, serde_json::Value> = problem
            .model
            .region
            .iter()
            .map(|r| (r.name.clone(), json!(problem.region(&r.name).len())))
            .collect();
        let info = json!({
            "name": problem.name,
            "dimension": problem.model.discretization.dimension,
            "dim": b.dim(),
            "nodes": b.len(),
            "bonds": problem.families.bonds(),
            "family_size": {"min": fmin, "mean": fmean, "max": fmax},
            "dx": b.dx,
            "delta": b.delta,
            "horizon_factor": b.delta / b.dx,
            "material": problem.material.name(),
            "youngs_modulus": problem.material.youngs_modulus,
            "density": problem.material.density,
            "dt": dt,
            "stable_dt": stable,
            "steps": problem.model.solver.steps,
            "regions": regions,
            "bbox": {"min": b.bbox_min, "max": b.bbox_max},
        });
        Ok(info.to_string())
    }
}
