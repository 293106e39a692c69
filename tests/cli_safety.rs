//! The command line on mutated models and in odd places: a model `name` that is a path writes
//! nothing outside the output folder; an error before the first step leaves no empty output
//! folder that the run created, and keeps one that existed; messages show the OS text once,
//! tiny numbers in exponent form, the field of a TOML value out of range and the key that
//! forced a time step; every option has help; `neighbors` runs on the CPU without a GPU.

mod common;

use common::cli::{peridot_in, stderr, write_model, TINY};
use std::path::Path;

/// `peridot ARGS` run in the folder `cwd`.
/// The names in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

// A `name` that is a path (a parent folder, absolute, with a separator) is refused by
// `validate` and by `run`, naming `name` and the value, and the run creates nothing: not the
// folder the name points at (outside the output folder), nor `out/`.
#[test]
fn a_name_that_is_a_path_is_refused_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let model = write_model(dir.path(), TINY);
    let absolute = dir.path().join("abs");
    let names = [
        "../escape".to_string(),
        absolute.to_string_lossy().into_owned(),
        "a/b".to_string(),
        "..".to_string(),
    ];
    for name in &names {
        let set = format!("name={name:?}");
        for cmd in ["validate", "run"] {
            let args = [cmd, &model, "--set", &set, "--quiet"];
            // validate has no --quiet
            let o = peridot_in(&work, &args[..if cmd == "run" { 5 } else { 4 }]);
            assert!(!o.status.success(), "{cmd} accepted name {name}");
            let err = stderr(&o);
            assert!(
                err.contains("name: must be a plain file name"),
                "{cmd}: {err}"
            );
            assert!(err.contains(&format!("{name:?}")), "{cmd}: {err}");
        }
    }
    assert_eq!(
        listing(&work),
        Vec::<String>::new(),
        "nothing in the working folder"
    );
    assert_eq!(
        listing(dir.path()),
        ["model.toml", "work"],
        "nothing beside it"
    );
}

// An error after the output folder is made but before the first step (here a time step above
// the stable one; a GPU backend that fails to start is the same case) removes the folders the
// run created, parents included (`out/` of the default `out/<name>`), and keeps a folder
// that existed before the run, and the files in it.
#[test]
fn an_early_failure_leaves_no_empty_output_folder_but_keeps_an_existing_one() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let too_large = ["--set", "solver.dt=1e-5", "--quiet"];
    let run = |out: Option<&Path>| {
        let out = out.map(|p| p.to_string_lossy().into_owned());
        let mut args = vec!["run", &model];
        args.extend_from_slice(&too_large);
        if let Some(out) = &out {
            args.extend_from_slice(&["--out", out.as_str()]);
        }
        peridot_in(&work, &args)
    };
    // the default out/tiny: neither out/tiny nor out/ is left
    let o = run(None);
    assert!(
        !o.status.success() && stderr(&o).contains("solver.dt"),
        "{}",
        stderr(&o)
    );
    assert_eq!(listing(&work), Vec::<String>::new(), "out/ left behind");
    // a new nested folder: all of it removed
    let nested = dir.path().join("new").join("deeper");
    assert!(!run(Some(&nested)).status.success());
    assert!(!dir.path().join("new").exists(), "new/deeper left behind");
    // an existing empty folder and an existing folder with a file are kept as they were
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(!run(Some(&empty)).status.success());
    assert!(empty.is_dir(), "an existing folder was removed");
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    std::fs::write(full.join("notes.txt"), "mine").unwrap();
    assert!(!run(Some(&full.join("sub"))).status.success());
    assert_eq!(listing(&full), ["notes.txt"]);
    // a GPU backend: where it cannot start, it leaves no folder either
    let gpu = dir.path().join("gpu");
    let out = gpu.to_string_lossy().into_owned();
    let o = peridot_in(
        &work,
        &[
            "run",
            &model,
            "--backend",
            "gpu-loop",
            "--quiet",
            "--out",
            &out,
        ],
    );
    if !o.status.success() {
        assert!(!gpu.exists(), "a failed GPU start left {}", gpu.display());
    }
}

// An I/O error shows the OS text once: `path: text (os error N)`, not the text a second time
// from the error's source.
#[test]
fn an_io_error_shows_the_os_text_once() {
    let dir = tempfile::tempdir().unwrap();
    let o = peridot_in(dir.path(), &["validate", "no/such/model.toml"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("no/such/model.toml: "), "{err}");
    assert_eq!(err.matches("os error").count(), 1, "{err}");
    // an output folder that is a file
    let model = write_model(dir.path(), TINY);
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let o = peridot_in(dir.path(), &["run", &model, "--quiet", "--out", "a-file"]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert_eq!(err.matches("os error").count(), 1, "{err}");
}

// A tiny dx is shown in exponent form (`5e-324`), not as 330 digits, in an error that names
// the field.
#[test]
fn a_tiny_number_is_shown_in_exponent_form() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let out = dir.path().join("out");
    let o = peridot_in(
        dir.path(),
        &[
            "run",
            &model,
            "--quiet",
            "--set",
            "discretization.dx=5e-324",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(err.contains("discretization.dx"), "{err}");
    assert!(err.contains("5e-324"), "{err}");
    assert!(!err.contains("0.0000000000"), "{err}");
    assert!(err.lines().all(|l| l.len() < 300), "{err}");
}

// A value the TOML reader refuses (an integer beyond 64 bits) is named by its dotted field
// and value, not only by its line.
#[test]
fn a_huge_integer_names_its_field() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(
        dir.path(),
        &TINY.replace("steps = 40", "steps = 99999999999999999999"),
    );
    let o = peridot_in(dir.path(), &["validate", &model]);
    let err = stderr(&o);
    assert!(!o.status.success());
    assert!(
        err.contains("solver.steps: integer 99999999999999999999"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

// A forced time step above the stable one runs with a warning that names the key forcing it,
// solver.force_dt, and does not tell the user to set what is already set.
#[test]
fn the_forced_time_step_warning_names_force_dt() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let out = dir.path().join("out");
    let o = peridot_in(
        dir.path(),
        &[
            "run",
            &model,
            "--quiet",
            "--backend",
            "cpu-loop",
            "--set",
            "solver.dt=3e-7",
            "--set",
            "solver.force_dt=true",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    let warning = err
        .lines()
        .find(|l| l.starts_with("warning:"))
        .expect("a warning");
    assert!(
        warning.starts_with("warning: solver.force_dt: solver.dt = 3.0000e-7 s"),
        "{warning}"
    );
    assert!(warning.contains("stable time step"), "{warning}");
    assert!(!warning.contains("set solver.force_dt"), "{warning}");
}

// Every option of every command has a help line (`-h` shows text beside each option).
#[test]
fn every_option_has_help() {
    let dir = tempfile::tempdir().unwrap();
    for cmd in [
        "run",
        "export-matrix",
        "solve-static",
        "info",
        "neighbors",
        "validate",
        "bench",
    ] {
        let o = peridot_in(dir.path(), &[cmd, "-h"]);
        let help = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{cmd}");
        for line in help.lines().filter(|l| l.trim_start().starts_with('-')) {
            // the text before `[default: ...]` / `[possible values: ...]`
            let text = line.split('[').next().unwrap_or("");
            let words: Vec<&str> = text.split_whitespace().collect();
            let described = words.iter().any(|w| {
                !w.starts_with('-') && !w.starts_with('<') && !w.ends_with(',') && *w != "..."
            });
            assert!(described, "{cmd}: no help for `{}`", line.trim());
        }
    }
}

// `neighbors MODEL` with no `--search` picks the device where a GPU is usable and the CPU
// otherwise, and says which on stderr; without a GPU it runs the CPU search and succeeds.
#[test]
fn neighbors_runs_where_it_can_and_says_where() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY);
    let o = peridot_in(dir.path(), &["neighbors", &model]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("search auto: "), "{err}");
    let out = String::from_utf8_lossy(&o.stdout);
    if !peridot::gpu::driver_available() {
        assert!(err.contains("using cpu"), "{err}");
        assert!(out.contains("cpu search 1"), "{out}");
    } else {
        assert!(out.contains("search 1"), "{out}");
    }
}

// A model needing terabytes (the notched column grown to 20 m: about 7e8 nodes) is refused
// by `info` and by `run` under an address-space limit of 4 GB, with the estimate and what
// is available named, before anything large is allocated: an allocation beyond the limit
// would abort the process (a signal, not exit status 1), and no output folder is made.
#[test]
fn a_model_larger_than_memory_is_refused_before_it_is_allocated() {
    let root = env!("CARGO_MANIFEST_DIR");
    let bin = env!("CARGO_BIN_EXE_peridot");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    for command in ["info", "run"] {
        let script = format!(
            "ulimit -v 4000000 && exec {bin} {command} {root}/models/notched_column_3d.toml \
             --set geometry.box.0.max.2=20 {}",
            if command == "run" {
                format!("--out {}", out.display())
            } else {
                String::new()
            }
        );
        let o = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{command}: {err}");
        assert!(
            err.contains("host memory") && err.contains("GiB"),
            "{command}: {err}"
        );
        assert!(err.contains("available"), "{command}: {err}");
        assert!(!err.contains("panicked"), "{command}: {err}");
    }
    assert!(!out.exists(), "a refused run makes no output folder");
    // --memory-limit below a small model's need refuses it too, naming the option
    let o = std::process::Command::new(bin)
        .args(["info", &format!("{root}/models/plate_tension_2d.toml")])
        .args(["--memory-limit", "1KiB"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("--memory-limit"), "{err}");
}
