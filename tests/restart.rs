//! Checkpoints and restarts (`output/checkpoint`, `solver/restart.rs`): a run resumed from a
//! checkpoint equals the uninterrupted run bit for bit (displacement, velocity, bond status,
//! probe file and VTK series) on the CPU backends, explicit and ADR, with bonds breaking;
//! the crack tips go on as in the uninterrupted run; a cancelled run resumes to the same end; a checkpoint of another model is refused naming
//! what differs; a damaged one is caught by its checksum and passed over; the newest
//! `checkpoint_keep` (default 2) are kept.

mod common;

use common::cli::{peridot, stderr, write_model, TINY, TINY_ADR};
use peridot::backend::partitioned::SubdomainRequest;
use peridot::backend::BackendKind;
use peridot::output::checkpoint;
use peridot::output::Summary;
use peridot::solver::run::{simulate, simulate_from, Outcome};
use peridot::solver::{Cancel, RunOptions};
use peridot::{Error, Precision};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// The tiny plate pulled hard enough that bonds break within 60 steps.
const BREAKING: &[&str] = &["boundary.0.y=60.0"];

fn options(backend: BackendKind, out: &Path, cancel: Option<Cancel>) -> RunOptions {
    RunOptions {
        process_start: None,
        backend,
        precision: Precision::F64,
        out_dir: Some(out.to_path_buf()),
        quiet: true,
        subdomains: None,
        cancel,
    }
}

/// Run `text` with `overrides` on `backend` into `out`, resumed from `restart` if given.
fn run(
    text: &str,
    overrides: &[&str],
    backend: BackendKind,
    out: &Path,
    restart: Option<&Path>,
) -> peridot::Result<Outcome<f64>> {
    let problem = common::problem(text, overrides);
    simulate_from::<f64>(problem, &options(backend, out, None), restart)
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Two runs' ends are the same bit for bit: state, bond status, probe file, VTK series.
fn assert_same_end(a: &Outcome<f64>, a_dir: &Path, b: &Outcome<f64>, b_dir: &Path) {
    assert_eq!(a.state.step, b.state.step);
    assert_eq!(a.state.time.to_bits(), b.state.time.to_bits());
    assert!(bits(&a.state.u) == bits(&b.state.u), "displacement differs");
    assert!(bits(&a.state.v) == bits(&b.state.v), "velocity differs");
    let (sa, sb) = (
        a.backend.bond_status().unwrap(),
        b.backend.bond_status().unwrap(),
    );
    assert!(sa == sb, "bond status differs");
    assert_eq!(a.summary.broken_bonds, b.summary.broken_bonds);
    let read = |d: &Path, f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    assert_eq!(read(a_dir, "probes.csv"), read(b_dir, "probes.csv"));
    let pvd = format!("{}.pvd", a.problem.name);
    assert_eq!(read(a_dir, &pvd), read(b_dir, &pvd));
    // The crack tips go on with the same ids, matches and fitted speeds.
    assert_eq!(read(a_dir, "crack_tips.csv"), read(b_dir, "crack_tips.csv"));
    // (what the samples found, not how long they took)
    let found = |t: &Option<peridot::output::CrackTipSummary>| {
        t.clone()
            .map(|t| peridot::output::CrackTipSummary { seconds: None, ..t })
    };
    assert_eq!(found(&a.summary.crack_tips), found(&b.summary.crack_tips));
}

/// Explicit, bonds breaking: 60 steps at once equal 20 steps checkpointed, then resumed with
/// `solver.steps` extended to 60 (into the same folder, and into another).
fn explicit_resumes_bitwise(backend: BackendKind) {
    explicit_resumes_bitwise_with(backend, &[]);
}

/// [`explicit_resumes_bitwise`] with `extra` overrides of the model.
fn explicit_resumes_bitwise_with(backend: BackendKind, extra: &[&str]) {
    explicit_resumes_bitwise_in(TINY, backend, extra);
}

/// [`explicit_resumes_bitwise_with`] of the model `text`; returns the uninterrupted run and
/// the one resumed into another folder.
fn explicit_resumes_bitwise_in(
    text: &str,
    backend: BackendKind,
    extra: &[&str],
) -> (Outcome<f64>, Outcome<f64>) {
    let tmp = tempfile::tempdir().unwrap();
    let (full, part, other) = (
        tmp.path().join("full"),
        tmp.path().join("part"),
        tmp.path().join("other"),
    );
    let long: Vec<&str> = [BREAKING, extra, &["solver.steps=60"]].concat();
    let a = run(text, &long, backend, &full, None).unwrap();
    assert!(
        a.summary.broken_bonds > a.problem.precracked_bonds(),
        "bonds break"
    );
    let short: Vec<&str> = [
        BREAKING,
        extra,
        &["output.checkpoint_every=20", "solver.steps=20"],
    ]
    .concat();
    run(text, &short, backend, &part, None).unwrap();
    assert!(checkpoint::path_of(&part, 20).is_file());
    let b = run(text, &long, backend, &other, Some(&part)).unwrap();
    assert_eq!(b.summary.restarted_from_step, Some(20));
    assert_same_end(&a, &full, &b, &other);
    let history = |o: &Outcome<f64>| o.backend.failure_history().unwrap();
    assert!(history(&a) == history(&b), "failure history differs");
    let c = run(text, &long, backend, &part, Some(&part)).unwrap();
    assert_same_end(&a, &full, &c, &part);
    let written = Summary::read(&part.join("summary.json")).unwrap();
    assert_eq!(written.restarted_from_step, Some(20));
    (a, b)
}

/// An impact restarts bitwise: the tiny plate hit from below by a free disc at 50 m/s,
/// 0.01 mm below its bottom nodes (in contact from the first steps), with node contact: the
/// run checkpointed at step 20 (in contact: asserted) and resumed equals the uninterrupted one bit for bit, the disc's position,
/// velocity and contact force included (the checkpoint carries them, format 4).
#[test]
fn explicit_restart_with_an_impactor_is_bitwise() {
    let text = format!(
        "{TINY}[contact]\n[[impactor]]\nname = \"disc\"\nshape = \"sphere\"\n\
         center = [0.01, -0.00251]\nradius = 0.003\nmass = 1e-3\nvelocity = [0, 50]\n"
    );
    let (a, b) = explicit_resumes_bitwise_in(&text, BackendKind::CpuLoop, &[]);
    let tmp = tempfile::tempdir().unwrap();
    let at20 = run(
        &text,
        &[BREAKING[0], "solver.steps=20"],
        BackendKind::CpuLoop,
        tmp.path(),
        None,
    )
    .unwrap();
    let disc = &at20.state.contact.as_ref().expect("contact").impactors[0];
    assert!(disc.force[1] < 0.0, "in contact at step 20");
    let motion = |o: &Outcome<f64>| {
        let imp = &o.state.contact.as_ref().expect("contact").impactors[0];
        assert!(imp.force[1] < 0.0, "the disc pushes the plate at the end");
        [imp.position, imp.velocity, imp.force].map(|v| v.map(f64::to_bits))
    };
    assert_eq!(motion(&a), motion(&b), "the disc's motion differs");
}

/// A running crack's tips: the pre-cracked plate made small (as in `tests/crack_tips.rs`),
/// 1250 steps with a checkpoint at step 1150 while the crack runs, then resumed from it into
/// another folder: `crack_tips.csv` (ids, positions, fitted speeds) and the summary's
/// `crack_tips` equal the uninterrupted run's, byte for byte.
#[test]
fn crack_tips_go_on_across_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let (full, other) = (tmp.path().join("full"), tmp.path().join("other"));
    let text = std::fs::read_to_string("models/precracked_plate_2d.toml").unwrap();
    let sets = [
        "discretization.dx=0.5e-3",
        "material.critical_stretch=0.03162",
        "output.vtk_every=1250",
        "output.image=false",
        "output.checkpoint_every=1150",
    ];
    let a = run(&text, &sets, BackendKind::CpuLoop, &full, None).unwrap();
    let checkpoint_time = a.summary.dt * 1150.0;
    let csv = std::fs::read_to_string(full.join("crack_tips.csv")).unwrap();
    let before = csv
        .lines()
        .skip(1)
        .filter(|l| l.split(',').next().unwrap().parse::<f64>().unwrap() < checkpoint_time)
        .count();
    assert!(before > 0, "the crack has tips before the checkpoint");
    assert!(csv.lines().count() > before + 1, "and after it");
    let b = run(&text, &sets, BackendKind::CpuLoop, &other, Some(&full)).unwrap();
    assert_eq!(b.summary.restarted_from_step, Some(1150));
    assert_same_end(&a, &full, &b, &other);
}

#[test]
fn explicit_restart_is_bitwise_on_cpu_loop() {
    explicit_resumes_bitwise(BackendKind::CpuLoop);
}

/// The failure history goes across a restart: each node's critical stretch with
/// `critical_stretch_alpha` (without it in the checkpoint, the restarted run took it from the
/// stretches at the checkpoint, one step late, and differed), and a softening law's damage
/// per bond (bilinear, softening between stretches 0.01 and 0.03).
#[test]
fn explicit_restart_with_failure_history_is_bitwise() {
    explicit_resumes_bitwise_with(
        BackendKind::CpuLoop,
        &["material.critical_stretch_alpha=0.25"],
    );
    explicit_resumes_bitwise_with(
        BackendKind::CpuLoop,
        &[
            "material.damage_law=\"bilinear\"",
            "material.final_stretch=0.03",
        ],
    );
}

#[test]
fn explicit_restart_is_bitwise_on_cpu_matrix() {
    explicit_resumes_bitwise(BackendKind::CpuMatrix);
}

/// The same on the CPU emulation of subdomains (`cpu-loop --subdomains 3`): the restored
/// bond status reaches every subdomain.
#[test]
fn explicit_restart_is_bitwise_in_subdomains() {
    let tmp = tempfile::tempdir().unwrap();
    let (full, part) = (tmp.path().join("full"), tmp.path().join("part"));
    let mut opts = options(BackendKind::CpuLoop, &full, None);
    opts.subdomains = Some(SubdomainRequest {
        count: Some(3),
        budget: None,
        streamed: false,
    });
    let long: Vec<&str> = [BREAKING, &["solver.steps=60"]].concat();
    let a = simulate_from::<f64>(common::problem(TINY, &long), &opts, None).unwrap();
    assert_eq!(a.backend.name(), "cpu-loop-partitioned");
    let short: Vec<&str> = [BREAKING, &["output.checkpoint_every=20", "solver.steps=30"]].concat();
    opts.out_dir = Some(part.clone());
    simulate_from::<f64>(common::problem(TINY, &short), &opts, None).unwrap();
    let b = simulate_from::<f64>(common::problem(TINY, &long), &opts, Some(&part)).unwrap();
    assert_eq!(b.summary.restarted_from_step, Some(20));
    assert_eq!(b.backend.name(), "cpu-loop-partitioned");
    assert_same_end(&a, &full, &b, &part);
}

/// ADR with bonds breaking, with and without load steps: resumed from a checkpoint in the
/// middle of the run (into the first run's folder) it ends as the uninterrupted run.
#[test]
fn adr_restart_is_bitwise() {
    for extra in [&[][..], &["solver.load_steps=6"][..]] {
        let tmp = tempfile::tempdir().unwrap();
        let (full, part) = (tmp.path().join("full"), tmp.path().join("part"));
        let a = run(TINY_ADR, extra, BackendKind::CpuLoop, &full, None).unwrap();
        assert!(
            a.summary.broken_bonds > a.problem.precracked_bonds(),
            "bonds break"
        );
        let every = ["output.checkpoint_every=3", "output.checkpoint_keep=100"];
        let every: Vec<&str> = [extra, &every[..]].concat();
        run(TINY_ADR, &every, BackendKind::CpuLoop, &part, None).unwrap();
        // Back to the checkpoint in the middle: the later ones are removed.
        let all = checkpoint::list(&part).unwrap();
        assert!(all.len() >= 3, "{extra:?}: {all:?}");
        let middle = all[all.len() / 2].0;
        for (_, path) in &all[all.len() / 2 + 1..] {
            std::fs::remove_file(path).unwrap();
        }
        let b = run(TINY_ADR, extra, BackendKind::CpuLoop, &part, Some(&part)).unwrap();
        assert_eq!(b.summary.restarted_from_step, Some(middle), "{extra:?}");
        assert_same_end(&a, &full, &b, &part);
    }
}

/// The steps of the rows of `probes.csv` (none while it is missing).
fn probe_steps(path: &Path) -> Vec<usize> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect()
}

/// A run cancelled while it steps leaves a checkpoint of the step it stopped at; resumed
/// from it, it ends as the run that was not interrupted.
#[test]
fn cancelled_run_resumes_to_the_same_end() {
    let tmp = tempfile::tempdir().unwrap();
    let (full, part) = (tmp.path().join("full"), tmp.path().join("part"));
    let long: Vec<&str> = [BREAKING, &["solver.steps=400", "output.vtk_every=0"]].concat();
    let a = run(TINY, &long, BackendKind::CpuLoop, &full, None).unwrap();
    let cancel = Cancel::new();
    let done = AtomicBool::new(false);
    let stopped = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if probe_steps(&part.join("probes.csv")).iter().any(|&s| s > 0) {
                    cancel.cancel();
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        let problem = common::problem(TINY, &long);
        let opts = options(BackendKind::CpuLoop, &part, Some(cancel.clone()));
        let o = simulate::<f64>(problem, &opts);
        done.store(true, Ordering::SeqCst);
        o.unwrap().summary
    });
    let step = stopped.stopped_at_step.expect("interrupted");
    assert!(
        checkpoint::path_of(&part, step).is_file(),
        "the interrupted step's checkpoint"
    );
    let b = run(TINY, &long, BackendKind::CpuLoop, &part, Some(&part)).unwrap();
    assert_eq!(b.summary.restarted_from_step, Some(step));
    assert_same_end(&a, &full, &b, &part);
}

/// A checkpoint of a different discretization, material or precision is refused with what
/// differs; so is a folder without checkpoints.
#[test]
fn checkpoint_of_another_model_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let part = tmp.path().join("part");
    run(
        TINY,
        &["output.checkpoint_every=10", "solver.steps=10"],
        BackendKind::CpuLoop,
        &part,
        None,
    )
    .unwrap();
    let refused = |overrides: &[&str]| {
        let out = tmp.path().join("again");
        match run(TINY, overrides, BackendKind::CpuLoop, &out, Some(&part)) {
            Err(e @ Error::Usage { .. }) => e.to_string(),
            Err(e) => panic!("another error: {e}"),
            Ok(_) => panic!("a checkpoint of another model was taken up"),
        }
    };
    let dx = refused(&["discretization.dx=0.5e-3"]);
    assert!(
        dx.contains("nodes") && dx.contains("model fingerprint"),
        "{dx}"
    );
    let material = refused(&["material.youngs_modulus=100e9"]);
    assert!(
        material.contains("model fingerprint") && !material.contains("nodes"),
        "{material}"
    );
    let problem = common::problem(TINY, &[]);
    let mut opts = options(BackendKind::CpuLoop, &tmp.path().join("f32"), None);
    opts.precision = Precision::F32;
    let e = peridot::solver::run::run_restarted(problem, &opts, &part).unwrap_err();
    assert!(
        e.to_string().contains("precision f64 (this run: f32)"),
        "{e}"
    );
    let none = run(
        TINY,
        &[],
        BackendKind::CpuLoop,
        &tmp.path().join("x"),
        Some(tmp.path()),
    );
    assert!(none.err().unwrap().to_string().contains("no checkpoint in"));
}

/// A damaged newest checkpoint fails its checksum; a restart warns and takes the one before,
/// and ends as the run that was not interrupted; with no sound one left it is an error.
#[test]
fn damaged_checkpoint_is_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let (full, part) = (tmp.path().join("full"), tmp.path().join("part"));
    let args: Vec<&str> = [BREAKING, &["output.checkpoint_every=10", "solver.steps=20"]].concat();
    let a = run(TINY, &args, BackendKind::CpuLoop, &full, None).unwrap();
    run(TINY, &args, BackendKind::CpuLoop, &part, None).unwrap();
    let newest = checkpoint::path_of(&part, 20);
    let mut bytes = std::fs::read(&newest).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&newest, &bytes).unwrap();
    let e = checkpoint::read_header(&newest).unwrap_err().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
    let b = run(TINY, &args, BackendKind::CpuLoop, &part, Some(&part)).unwrap();
    assert_eq!(b.summary.restarted_from_step, Some(10));
    assert_same_end(&a, &full, &b, &part);
    // Cut short: also caught.
    for (_, path) in checkpoint::list(&part).unwrap() {
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 100]).unwrap();
    }
    let e = run(
        TINY,
        &args,
        BackendKind::CpuLoop,
        &tmp.path().join("y"),
        Some(&part),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("no usable checkpoint"), "{e}");
}

/// The newest two checkpoints are kept by default, `output.checkpoint_keep` of them if set;
/// no temporary file is left.
#[test]
fn the_newest_checkpoints_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let steps = |dir: &Path| -> Vec<usize> {
        checkpoint::list(dir)
            .unwrap()
            .into_iter()
            .map(|c| c.0)
            .collect()
    };
    let two = tmp.path().join("two");
    run(
        TINY,
        &["output.checkpoint_every=10", "solver.steps=60"],
        BackendKind::CpuLoop,
        &two,
        None,
    )
    .unwrap();
    assert_eq!(steps(&two), [50, 60]);
    let three = tmp.path().join("three");
    let keep = [
        "output.checkpoint_every=10",
        "output.checkpoint_keep=3",
        "solver.steps=60",
    ];
    run(TINY, &keep, BackendKind::CpuLoop, &three, None).unwrap();
    assert_eq!(steps(&three), [40, 50, 60]);
    let files = std::fs::read_dir(three.join(checkpoint::FOLDER))
        .unwrap()
        .count();
    assert_eq!(files, 3, "no temporary file left");
    let none = tmp.path().join("none");
    run(
        TINY,
        &["solver.steps=20"],
        BackendKind::CpuLoop,
        &none,
        None,
    )
    .unwrap();
    assert!(
        steps(&none).is_empty(),
        "no checkpoint unless asked or interrupted"
    );
}

/// The command line: `--checkpoint-every`, then `--restart` into the same folder with more
/// steps; a restart of another model is refused with a one-line reason.
#[test]
fn command_line_checkpoints_and_restarts() {
    let tmp = tempfile::tempdir().unwrap();
    let model = write_model(tmp.path(), TINY);
    let out = tmp.path().join("out");
    let out_s = out.to_string_lossy().into_owned();
    let base = [
        "run",
        model.as_str(),
        "--backend",
        "cpu-loop",
        "--quiet",
        "--out",
        out_s.as_str(),
    ];
    let first = peridot(&[&base[..], &["--checkpoint-every", "20"]].concat());
    assert!(first.status.success(), "{}", stderr(&first));
    assert!(checkpoint::path_of(&out, 40).is_file());
    let again = ["run", model.as_str(), "--backend", "cpu-loop", "--quiet"];
    let resumed = peridot(
        &[
            &again[..],
            &["--restart", &out_s, "--set", "solver.steps=60"],
        ]
        .concat(),
    );
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    let s = Summary::read(&out.join("summary.json")).unwrap();
    assert_eq!((s.restarted_from_step, s.steps), (Some(40), 60));
    let other = peridot(
        &[
            &again[..],
            &["--restart", &out_s, "--set", "material.density=7000"],
        ]
        .concat(),
    );
    assert!(!other.status.success());
    let e = stderr(&other);
    assert!(
        e.contains("--restart") && e.contains("model fingerprint"),
        "{e}"
    );
    assert!(!e.contains("panicked"), "{e}");
}
