//! The static system beside an exported `K` (`export-matrix`, `run --export-stiffness`):
//! `f.mtx` (the load, N), `prescribed.csv` (the prescribed dofs and values, m) and
//! `rigid_modes.mtx` (the free rigid-body modes), so `K u = f` is solved in SciPy or MATLAB
//! as `solve-static` solves it (`docs/matrix-formulation.md`).

use super::implicit::static_system;
use crate::output::export::SystemFiles;
use crate::output::matrix_market::write_matrix_market_array;
use crate::setup::Problem;
use crate::{Error, Result};
use std::fmt::Write as _;
use std::path::Path;

/// How to solve the exported system, for the sidecar's notes.
pub const SOLVE_NOTE: &str = "K u = f: f = scipy.io.mmread('f.mtx').ravel(); \
    p = numpy.loadtxt('prescribed.csv', delimiter=',', skiprows=1, ndmin=2); \
    held = numpy.r_[p[:, 0].astype(int), supports]; u = numpy.zeros(f.size); \
    u[p[:, 0].astype(int)] = p[:, 1]; free = numpy.setdiff1d(numpy.arange(f.size), held); \
    u[free] = scipy.sparse.linalg.spsolve(K[free][:, free], f[free] - K[free][:, held] @ u[held]) \
    (supports: static_system.supports; the result differs from solve-static's by a rigid \
    motion along rigid_modes.mtx)";

/// Write the static system of `problem` at bond status `mu` into `dir`; a body free to move
/// under loads out of equilibrium has none, which the returned files say.
pub fn write_static_system(problem: &Problem, mu: &[u8], dir: &Path) -> Result<SystemFiles> {
    let system = match static_system(problem, mu) {
        Ok(s) => s,
        Err(e @ Error::Model { .. }) => {
            return Ok(SystemFiles {
                refused: Some(e.to_string()),
                ..Default::default()
            })
        }
        Err(e) => return Err(e),
    };
    let ndof = system.load.len();
    let comment = |what: &str| {
        vec![
            format!("peridot export of model {}: {what}", problem.name),
            format!(
                "dof = {} * node + component; see export.json",
                problem.dim()
            ),
        ]
    };
    let load = comment("load f, N (body forces and tractions times volumes)");
    write_matrix_market_array(&dir.join("f.mtx"), (ndof, 1), &system.load, &load)?;
    let mut csv = String::from("dof,value\n");
    for (dof, value) in &system.prescribed {
        let _ = writeln!(csv, "{dof},{}", crate::output::format_f64(*value));
    }
    let path = dir.join("prescribed.csv");
    std::fs::write(&path, csv).map_err(|e| Error::io(&path, e))?;
    let rigid_modes_file = match system.rigid_modes.len() {
        0 => None,
        k => {
            let values: Vec<f64> = system.rigid_modes.concat();
            let what = comment("free rigid-body modes (K r = 0), orthonormal columns");
            write_matrix_market_array(&dir.join("rigid_modes.mtx"), (ndof, k), &values, &what)?;
            Some("rigid_modes.mtx".to_string())
        }
    };
    Ok(SystemFiles {
        load_file: Some("f.mtx".into()),
        prescribed_file: Some("prescribed.csv".into()),
        rigid_modes_file,
        supports: system.supports,
        refused: None,
    })
}
