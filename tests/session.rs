//! A run stepped by a library caller (`solver::Session`, the Python package's `Simulation`)
//! against the run driver of `peridot run`.

mod common;

use common::{assert_bitwise, partition_bar, run};
use peridot::backend::BackendKind;
use peridot::solver::{RunOptions, Session};
use peridot::Precision;

fn options() -> RunOptions {
    RunOptions {
        backend: BackendKind::CpuLoop,
        precision: Precision::F64,
        out_dir: None,
        quiet: true,
        subdomains: None,
        cancel: None,
        process_start: None,
    }
}

/// Stepped in uneven chunks, a session takes the driver's steps: the same IEEE operations
/// in the same order, so the final state and the broken bonds are identical (no tolerance),
/// here on a bar that cracks.
#[test]
fn stepped_session_equals_the_run_bitwise() {
    let whole = run::<f64>(partition_bar("pmb", "plane-stress", 120));
    let mut session = Session::<f64>::start(partition_bar("pmb", "plane-stress", 120), &options())
        .expect("session starts");
    let mut taken = 0;
    for chunk in [1, 3, 17, 9, 1000] {
        taken += session.step(chunk).expect("steps");
    }
    assert_eq!(taken, 120);
    assert!(session.finished());
    assert_eq!(session.step(5).expect("no step past the end"), 0);
    assert_bitwise(&session.state().u, &whole.state.u, "displacement");
    assert_bitwise(&session.state().v, &whole.state.v, "velocity");
    let summary = session.finish().expect("finishes");
    assert_eq!(summary.broken_bonds, whole.summary.broken_bonds);
    assert!(summary.broken_bonds > 0, "the bar cracks within its steps");
    assert_eq!(summary.status, peridot::output::RunStatus::Completed);
}

/// Mid-run the summary says the run is going on, with the steps done.
#[test]
fn summary_mid_run_is_running() {
    let mut session = Session::<f64>::start(partition_bar("pmb", "plane-stress", 40), &options())
        .expect("session starts");
    session.step(10).expect("steps");
    let s = session.summary().expect("summary");
    assert_eq!(s.status, peridot::output::RunStatus::Running);
    assert_eq!(s.steps, 10);
}

/// A displacement written between steps is a rigid translation of a body without
/// conditions: it strains no bond, so the force density stays zero (to the round-off of
/// `|y| - |x|` at |x| = 1 mm: 1e-16 m, times c / V terms, far below 1e-3 of a strained
/// bond's force), and the step goes on from it.
#[test]
fn edited_translation_gives_no_force() {
    let text = common::small_model("lps", "plane-stress", false, "");
    let mut session =
        Session::<f64>::start(common::problem(&text, &[]), &options()).expect("session starts");
    let broken = session
        .edit_state(|s| {
            for k in (0..s.u.len()).step_by(2) {
                s.u[k] += 1e-3;
            }
        })
        .expect("edit");
    assert_eq!(broken, 0);
    let f = &session.state().f;
    let max_f = f.iter().fold(0.0f64, |m, f| m.max(f.abs()));
    // a strain of 1e-3 in this material gives forces of order E 1e-3 / dx ~ 1e11 N/m^3
    assert!(
        max_f < 1e3,
        "a translation strains no bond (max |f| = {max_f:e} N/m^3)"
    );
    assert_eq!(session.step(5).expect("steps"), 1);
    assert!(session.state().u[0] >= 1e-3);
}

/// An ADR model is refused with the field named.
#[test]
fn adr_model_is_refused() {
    let material = format!("{}critical_stretch = 0.01\n", common::material("pmb", None));
    let text = common::adr_strip(&material, "1e-5", "steps = 100", false);
    let problem = common::problem(&text, &[]);
    let Err(e) = Session::<f64>::start(problem, &options()) else {
        panic!("an ADR model is refused");
    };
    assert!(e.to_string().starts_with("solver.kind"), "{e}");
}
