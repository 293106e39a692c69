//! `peridot bench` (`contract.md`): `bench.json` is a list with one record per backend x
//! precision x size that ran, every contract key present with a sane value; backends this
//! build cannot run are skipped with a line saying so; `--sizes` scales the spacing to about
//! the asked node count. No timing is asserted: only that times are positive and consistent.

mod common;

use common::cli::{peridot, write_model};
use std::path::Path;

const TINY_2D: &str = r#"
name = "tiny_bench"
[material]
model = "pmb"
youngs_modulus = 200e9
density = 8000
critical_stretch = 0.01
[discretization]
dimension = "plane-stress"
thickness = 1e-3
dx = 1e-3
horizon_factor = 3.015
[geometry]
box = [{ min = [0, 0], max = [0.02, 0.01] }]
[[region]]
name = "top"
shape = "edge"
side = "+y"
depth_dx = 2
[[boundary]]
region = "top"
kind = "velocity"
y = 5.0
[solver]
kind = "explicit"
steps = 40
"#;

const CONTRACT_KEYS: [&str; 14] = [
    "backend",
    "precision",
    "dim",
    "nodes",
    "bonds",
    "steps",
    "seconds_per_step",
    "node_steps_per_second",
    "bytes_per_step",
    "achieved_gb_per_s",
    "copy_gb_per_s",
    "fraction_of_copy",
    "memory_bytes",
    "nnz",
];

const BACKENDS: [&str; 4] = ["cpu-loop", "cpu-matrix", "gpu-loop", "gpu-matrix"];

fn read_records(dir: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join("bench.json")).expect("bench.json written");
    let json: serde_json::Value = serde_json::from_str(&text).expect("bench.json is JSON");
    json.as_array().expect("bench.json is a list").clone()
}

fn num(r: &serde_json::Value, key: &str) -> f64 {
    r[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is a number: {r}"))
}

#[test]
fn bench_json_has_every_contract_key_with_sane_values() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY_2D);
    let out = dir.path().join("out");
    let o = peridot(&[
        "bench",
        &model,
        "--steps",
        "3",
        "--warmup",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records = read_records(&out);
    assert!(!records.is_empty());
    for r in &records {
        for key in CONTRACT_KEYS {
            assert!(r.get(key).is_some(), "bench.json lacks {key}: {r}");
        }
        assert_eq!(r["dim"], 2);
        assert_eq!(r["nodes"], 200);
        assert_eq!(r["steps"], 3);
        assert!(num(r, "bonds") > 200.0);
        let s = num(r, "seconds_per_step");
        assert!(s > 0.0 && s.is_finite());
        let nsps = num(r, "node_steps_per_second");
        assert!(
            (nsps * s / 200.0 - 1.0).abs() < 1e-9,
            "nodes / seconds_per_step"
        );
        let bytes = num(r, "bytes_per_step");
        assert!(bytes > 0.0);
        let gbs = num(r, "achieved_gb_per_s");
        assert!(
            (gbs * s * 1e9 / bytes - 1.0).abs() < 1e-9,
            "bytes_per_step / seconds"
        );
        assert!(num(r, "memory_bytes") > 0.0);
        assert!(r["nnz"].is_object());
        assert!(["f32", "f64"].contains(&r["precision"].as_str().unwrap()));
        let backend = r["backend"].as_str().unwrap();
        assert!(BACKENDS.contains(&backend), "{backend}");
        if backend.starts_with("cpu") {
            assert!(r["copy_gb_per_s"].is_null(), "no device copy on the CPU");
            if let Some(f) = r["fraction_of_copy"].as_f64() {
                assert!(f > 0.0 && f.is_finite());
            }
        }
        if backend.ends_with("matrix") {
            assert!(!r["nnz"].as_object().unwrap().is_empty(), "matrix nnz");
        }
    }
    // The reference backend always runs, in both precisions.
    for p in ["f64", "f32"] {
        assert!(records
            .iter()
            .any(|r| r["backend"] == "cpu-loop" && r["precision"] == p));
    }
    // Every asked backend either ran or was skipped with a line saying so.
    for b in BACKENDS {
        let ran = records.iter().any(|r| r["backend"] == b);
        let skipped = stdout.contains(&format!("skip {b} "));
        assert!(
            ran || skipped,
            "{b}: neither a record nor a skip line:\n{stdout}"
        );
    }
}

#[test]
fn sizes_scale_the_spacing_to_the_asked_node_count() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY_2D);
    let out = dir.path().join("out");
    let o = peridot(&[
        "bench",
        &model,
        "--backends",
        "cpu-loop",
        "--precisions",
        "f64",
        "--sizes",
        "800,3k",
        "--steps",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let records = read_records(&out);
    assert_eq!(records.len(), 2);
    // 20 x 10 mm at dx 1 mm is 200 nodes; halving dx gives 800, a third of it 1,800, ...
    assert_eq!(records[0]["nodes"], 800);
    let n = num(&records[1], "nodes");
    assert!((n / 3000.0 - 1.0).abs() < 0.1, "{n} nodes for 3k");
    assert!(num(&records[1], "dx") < num(&records[0], "dx"));
}

#[test]
fn bad_bench_options_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let model = write_model(dir.path(), TINY_2D);
    let out = dir.path().join("out");
    for (opt, value) in [("--sizes", "0"), ("--sizes", "many"), ("--steps", "0")] {
        let o = peridot(&["bench", &model, opt, value, "--out", out.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!o.status.success(), "{opt} {value} accepted");
        assert!(err.contains(opt), "{opt} {value}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}
