//! `peridot._native`: the engine's Python bindings (PyO3). The Python package `peridot`
//! (`python/peridot/`) wraps these into its public API; what is here is thin: models
//! (`model.rs`), runs stepped from Python (`simulation.rs`), whole runs, static solves and
//! operators (`operators.rs`), and the engine's errors as Python exceptions (`errors.rs`).
//! Units are SI, as in the engine.

mod errors;
mod model;
mod operators;
mod simulation;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<model::Model>()?;
    m.add_class::<simulation::Simulation>()?;
    m.add_function(wrap_pyfunction!(operators::operators, m)?)?;
    m.add_function(wrap_pyfunction!(operators::solve_static, m)?)?;
    m.add_function(wrap_pyfunction!(operators::static_system, m)?)?;
    m.add_function(wrap_pyfunction!(operators::run, m)?)?;
    m.add_function(wrap_pyfunction!(operators::gpu_available, m)?)?;
    errors::register(m)?;
    Ok(())
}
