//! The memory guard and the shared setup checks on the command line: each backend kind is
//! refused by its own byte count, named in the message with what would fit; `neighbors`,
//! `bench`, `export-matrix` and `validate` go through the guard and the checks `run` makes;
//! a refusal leaves no `--out` folder; an f32 run of a material degenerate in f32 is refused.
//! The device side is pure and unit-tested (`backend/estimate.rs`, `gpu/device.rs`).

mod common;

use common::cli::{peridot_in, stderr, write_model, TINY};

/// The host bytes `peridot info --backend KIND` prints for the memory guard of `model`.
fn guard_bytes(dir: &std::path::Path, model: &str, backend: &str) -> f64 {
    let args = ["info", model, "--backend", backend];
    guard_line_bytes(dir, &args, &format!("memory guard {backend} f64: host"))
}

/// The host bytes of the line starting with `start` that `peridot args` prints.
fn guard_line_bytes(dir: &std::path::Path, args: &[&str], start: &str) -> f64 {
    let o = peridot_in(dir, args);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", stderr(&o));
    let line = out
        .lines()
        .find(|l| l.starts_with(start))
        .unwrap_or_else(|| panic!("no line {start}: {out}"));
    let start = line.find(" GiB (").expect("the bytes follow the GiB") + 6;
    let end = line[start..].find(" bytes").unwrap() + start;
    line[start..end].parse().unwrap()
}

// The tiny plate (231 nodes, 28 bonds each) held by cpu-matrix (the stored problem and the
// operators as assembled) takes more than by cpu-loop (its per-bond arrays only), as `info`
// prints them. Under a limit halfway between, `run --backend cpu-matrix` is refused naming
// the backend, both numbers and a coarser dx that fits, before any output folder is made;
// `run --backend cpu-loop` passes the guard and runs.
#[test]
fn each_backend_is_refused_by_its_own_byte_count() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let cpu_loop = guard_bytes(dir.path(), &model, "cpu-loop");
    let cpu_matrix = guard_bytes(dir.path(), &model, "cpu-matrix");
    assert!(
        cpu_matrix > 1.5 * cpu_loop && cpu_loop > 231.0 * 28.0 * 14.0,
        "cpu-loop {cpu_loop} B, cpu-matrix {cpu_matrix} B"
    );
    let limit = format!("{:.0}", 0.5 * (cpu_loop + cpu_matrix));
    let out = dir.path().join("out");
    let o = out.to_str().unwrap();
    let refused = peridot_in(
        dir.path(),
        &[
            "run",
            &model,
            "--backend",
            "cpu-matrix",
            "--memory-limit",
            &limit,
            "--out",
            o,
        ],
    );
    let err = stderr(&refused);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    for part in [
        "host memory",
        "cpu-matrix f64",
        "--memory-limit",
        "discretization.dx >=",
    ] {
        assert!(err.contains(part), "{part} missing: {err}");
    }
    assert!(!out.exists(), "a refused run makes no output folder");
    let ran = peridot_in(
        dir.path(),
        &[
            "run",
            &model,
            "--backend",
            "cpu-loop",
            "--memory-limit",
            &limit,
            "--out",
            o,
            "--quiet",
        ],
    );
    assert!(ran.status.success(), "{}", stderr(&ran));
}

// `info --ranks P` prints the guard's estimate of one rank of P (`backend/estimate/ranks.rs`,
// `rank_estimate`), what each process of `mpirun -n P peridot run` is guarded by: on the
// benchmark block at its default dx 2.5 mm (21^3 nodes, 122 bonds in a full family, 7 cell
// slabs) a rank of 4 holds a quarter of the bonds and two slabs' more, the per-node arrays
// and the gathered bond status whole: 0.84 of the in-core cpu-loop's bytes by the formula,
// asserted below the in-core and above a quarter of it, and the number the library's
// estimate gives (to the printed byte).
#[test]
fn info_with_ranks_prints_one_rank_s_estimate() {
    use peridot::backend::estimate::{estimate, RankShape, RunShape};
    use peridot::backend::BackendKind;
    let dir = tempfile::tempdir().unwrap();
    let model = concat!(env!("CARGO_MANIFEST_DIR"), "/models/pmb_block_3d.toml");
    let in_core = guard_bytes(dir.path(), model, "cpu-loop");
    let args = ["info", model, "--backend", "cpu-loop", "--ranks", "4"];
    let start = "memory guard cpu-loop f64 (lean setup), one rank of 4: host";
    let rank = guard_line_bytes(dir.path(), &args, start);
    assert!(
        rank < in_core && rank > in_core / 4.0,
        "{rank} of {in_core}"
    );
    let m = peridot::model::load(std::path::Path::new(model), &[]).unwrap();
    let counts = peridot::setup::memory::ModelCounts::of(&m, dir.path(), peridot::Precision::F64);
    let shape = RunShape {
        lean: true,
        ranks: Some(RankShape {
            count: 4,
            on_host: 1,
            restart: false,
        }),
        ..RunShape::in_core(BackendKind::CpuLoop)
    };
    let expected = estimate(&counts, &shape).host;
    assert!((rank - expected).abs() <= 0.5, "{rank} against {expected}");
}

// `neighbors` builds its body through the checks `validate`, `info` and `run` make: a
// region selecting no node is refused naming it, as `run` refuses it (before, `neighbors`
// searched such a model); and it is refused by the memory guard under a 1 KiB limit.
#[test]
fn neighbors_makes_the_shared_checks_and_the_guard() {
    let dir = tempfile::tempdir().unwrap();
    let empty_region = TINY.replace(
        "[[boundary]]",
        "[[region]]\nname = \"far\"\nshape = \"box\"\nmin = [1.0, 1.0]\nmax = [1.1, 1.1]\n\
         [[boundary]]",
    );
    let model = write_model(dir.path(), &empty_region);
    let commands: [&[&str]; 2] = [
        &["neighbors", &model, "--search", "cpu"],
        &["validate", &model],
    ];
    for args in commands {
        let o = peridot_in(dir.path(), args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("region.1"), "{args:?}: {err}");
    }
    let model = write_model(dir.path(), TINY);
    let o = peridot_in(
        dir.path(),
        &[
            "neighbors",
            &model,
            "--search",
            "cpu",
            "--memory-limit",
            "1KiB",
        ],
    );
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("host memory") && err.contains("neighbors"),
        "{err}"
    );
}

// `export-matrix --out` and `bench --out` refused by the guard (a 1 KiB limit) make no
// folder; `validate` is guarded too. The same commands without the limit write their folder.
#[test]
fn refused_exports_and_benches_leave_no_folder() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let export = dir.path().join("new/export");
    let bench = dir.path().join("new/bench");
    let (e, b) = (export.to_str().unwrap(), bench.to_str().unwrap());
    let limit = ["--memory-limit", "1KiB"];
    let commands: [Vec<&str>; 3] = [
        vec!["export-matrix", &model, "--out", e],
        vec![
            "bench",
            &model,
            "--backends",
            "cpu-loop",
            "--precisions",
            "f64",
            "--out",
            b,
        ],
        vec!["validate", &model],
    ];
    for args in &commands {
        let o = peridot_in(dir.path(), &[&args[..], &limit].concat());
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("host memory"), "{args:?}: {err}");
    }
    assert!(
        !dir.path().join("new").exists(),
        "a refused command made a folder"
    );
    let o = peridot_in(dir.path(), &commands[0]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(export.join("K.mtx").exists());
}

// A modulus of 1e-35 Pa on the tiny plate: c V ~ 1e-33 N/m^3 is normal in both precisions,
// but its force at the smallest stretch f32 resolves (c V 1.2e-7 ~ 1e-40) is below f32's
// smallest normal 1.2e-38: `run --precision f32` is refused naming f32 and --precision f64;
// `validate` (f64: c V 2.2e-16 ~ 2e-49, far above 2.2e-308) accepts it.
#[test]
fn an_f32_run_of_a_material_degenerate_in_f32_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let set = ["--set", "material.youngs_modulus=1e-35"];
    let ok = peridot_in(dir.path(), &[&["validate", &model][..], &set].concat());
    assert!(ok.status.success(), "{}", stderr(&ok));
    let out = dir.path().join("out");
    let args = [
        "run",
        &model,
        "--precision",
        "f32",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = peridot_in(dir.path(), &[&args[..], &set].concat());
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    for part in [
        "material.youngs_modulus",
        "1e-35 Pa",
        "in f32",
        "--precision f64",
    ] {
        assert!(err.contains(part), "{part} missing: {err}");
    }
    assert!(!out.exists());
}
