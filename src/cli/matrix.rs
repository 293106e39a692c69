//! `peridot export-matrix` and `peridot solve-static`.

use super::{load_model, load_problem, MatrixFormat, ModelArgs};
use peridot::backend::estimate::export_estimate;
use peridot::setup::memory::{self, ModelCounts};
use peridot::setup::Problem;
use peridot::solver::export::{export_matrices, write_sparsity, Exported};
use peridot::solver::implicit::{solve_static as solve, StaticOptions};
use peridot::Precision;
use std::path::{Path, PathBuf};

pub fn export(
    args: &ModelArgs,
    out: &Path,
    what: &str,
    format: MatrixFormat,
) -> anyhow::Result<()> {
    let what = Exported::parse_list(what)?;
    // the memory guard, before the body (the folder is made once the matrices are)
    let (model, dir) = load_model(args)?;
    let counts = ModelCounts::of(&model, &dir, Precision::F64);
    let held = export_estimate(&counts);
    memory::check_host(&held, args.memory_limit_bytes()?, |cap| {
        vec![counts.coarser_dx(held.host, cap)]
    })?;
    let problem = Problem::build(model, &dir)?;
    if format == MatrixFormat::Png {
        let path = out.join("sparsity.png");
        let panels = write_sparsity(&problem, &problem.initial_mu, &what, &path)?;
        for (k, (name, rows, cols, nnz)) in panels.iter().enumerate() {
            println!("panel {}: {name}, {rows} x {cols}, {nnz} non-zeros", k + 1);
        }
        println!("sparsity patterns: {}", path.display());
        return Ok(());
    }
    let sidecar = export_matrices(&problem, &problem.initial_mu, &what, out)?;
    for m in &sidecar.matrices {
        println!(
            "{}: {} x {}, {} entries stored, {}, {}",
            m.file, m.rows, m.cols, m.stored_entries, m.symmetry, m.units
        );
    }
    println!(
        "{} nodes, {} dofs (dof = {} * node + component); sidecar {}",
        sidecar.nodes,
        sidecar.dofs,
        sidecar.dimension,
        out.join("export.json").display()
    );
    Ok(())
}

pub fn solve_static(args: &ModelArgs, out: Option<PathBuf>) -> anyhow::Result<()> {
    let problem = load_problem(args)?;
    let out_dir = out.unwrap_or_else(|| PathBuf::from("out").join(&problem.name));
    let opts = StaticOptions {
        out_dir: Some(out_dir.clone()),
    };
    let outcome = solve(problem, &opts)?;
    let s = &outcome.summary;
    let info = s.static_solve.clone().unwrap_or_default();
    println!(
        "{}: {} nodes, {} free dofs, K with {} non-zeros, {} in {:.2} s",
        s.model, s.nodes, info.free_dofs, info.stiffness_nnz, info.factorization, s.wall_seconds
    );
    let residual = s.static_residual.unwrap_or(f64::NAN);
    println!(
        "relative residual {residual:.3e} ({}); max |u| {:.4e} m",
        if s.converged == Some(true) {
            "converged"
        } else {
            "NOT converged"
        },
        outcome.u.iter().fold(0.0f64, |m, x| m.max(x.abs()))
    );
    println!("outputs in {}", out_dir.display());
    if s.converged != Some(true) {
        anyhow::bail!("the static solve did not reach a residual of 1e-10 ({residual:.3e})");
    }
    Ok(())
}
