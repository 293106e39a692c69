//! Mutated model files never crash the program: every model of `models/` is mutated (a
//! value replaced by an odd one of another type or scale, a key removed, an unknown key
//! added, an array cut short), a fixed number of cases per model from a fixed seed, and
//! each mutant goes through `peridot validate` and `peridot info` under a host memory limit
//! of `GUARD_LIMIT` (the memory guard refuses a mutant beyond it from the boxes and `dx`
//! alone, before any node is placed, so mutants of any size go through both) and, where it
//! is valid and small (a lattice of at most `MAX_NODES` nodes by its boxes and `dx`), a
//! one-step `peridot run`. Each must end with exit status 0 or 1 and a message, never a panic (exit
//! 101, "panicked") or a signal. `PERIDOT_FUZZ_CASES` sets the cases per model (default
//! 40: seconds on 2 cores), `PERIDOT_FUZZ_SEED` the seed. Longer runs: `fuzz/`
//! (`cargo fuzz`, see `fuzz/README.md`).

use std::path::{Path, PathBuf};
use std::process::Command;
use toml::{Table, Value};

/// Mutants larger than this are not run (a run's setup and outputs take seconds beyond it).
const MAX_NODES: f64 = 20_000.0;

/// `--memory-limit` of `validate` and `info`: a mutated `dx` can ask for billions of nodes,
/// which the guard refuses; 16 MiB holds the lean setup `info` builds up to about 1e5 nodes
/// (at most a second or so each on 2 cores).
const GUARD_LIMIT: &str = "16MiB";

/// A small deterministic generator (SplitMix64): the same cases on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Values a mutation puts in place of another: other types, zero, negative, tiny, huge,
/// not finite, empty.
fn odd_value(rng: &mut Rng, old: &Value) -> Value {
    let scaled = |f: f64| match old {
        Value::Float(x) => Value::Float(x * f),
        Value::Integer(i) => Value::Integer(i.saturating_mul(f as i64)),
        _ => Value::Float(f),
    };
    match rng.below(16) {
        0 => Value::Float(0.0),
        1 => Value::Float(-1.0),
        2 => Value::Float(f64::NAN),
        3 => Value::Float(f64::INFINITY),
        4 => Value::Float(5e-324),
        5 => Value::Float(1e300),
        6 => Value::Integer(i64::MAX),
        7 => Value::Integer(-3),
        8 => Value::String(String::new()),
        9 => Value::String("garbage".into()),
        10 => Value::Boolean(true),
        11 => Value::Array(Vec::new()),
        12 => Value::Table(Table::new()),
        13 => scaled(1e-6),
        14 => scaled(1e6),
        _ => scaled(-1.0),
    }
}

/// The paths (keys and array indices) of every value in `v`, tables and arrays included.
fn paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                prefix.push(k.clone());
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(i.to_string());
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

/// The container holding the last step of `path`, and that step.
fn parent<'a>(root: &'a mut Value, path: &'a [String]) -> Option<(&'a mut Value, &'a str)> {
    let (last, init) = path.split_last()?;
    let mut v = root;
    for step in init {
        v = match v {
            Value::Table(t) => t.get_mut(step)?,
            Value::Array(a) => a.get_mut(step.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some((v, last.as_str()))
}

/// One mutation of `model` at a random place.
fn mutate(model: &mut Value, rng: &mut Rng) {
    let mut all = Vec::new();
    paths(model, &mut Vec::new(), &mut all);
    let path = all[rng.below(all.len())].clone();
    let Some((container, key)) = parent(model, &path) else {
        return;
    };
    let kind = rng.below(8);
    match container {
        Value::Table(t) => match kind {
            0 => {
                t.remove(key);
            }
            1 => {
                t.insert("unexpected_key".into(), Value::Integer(1));
            }
            _ => {
                let new = odd_value(rng, &t[key]);
                t.insert(key.to_string(), new);
            }
        },
        Value::Array(a) => {
            let i: usize = key.parse().unwrap_or(0);
            match kind {
                0 => a.truncate(i),
                1 => a.push(a[i].clone()),
                _ => a[i] = odd_value(rng, &a[i]),
            }
        }
        _ => {}
    }
}

/// Nodes of the lattice the boxes of `model` fill at its `dx` (an upper bound before
/// removals), or infinity where that cannot be told.
fn lattice_nodes(model: &Value) -> f64 {
    let num = |v: &Value| match v {
        Value::Float(x) => *x,
        Value::Integer(i) => *i as f64,
        _ => f64::NAN,
    };
    let dx = model
        .get("discretization")
        .and_then(|d| d.get("dx"))
        .map(num)
        .unwrap_or(f64::NAN);
    let Some(Value::Array(boxes)) = model.get("geometry").and_then(|g| g.get("box")) else {
        return f64::INFINITY;
    };
    let mut total = 0.0;
    for b in boxes {
        let (Some(Value::Array(lo)), Some(Value::Array(hi))) = (b.get("min"), b.get("max")) else {
            return f64::INFINITY;
        };
        total += lo
            .iter()
            .zip(hi)
            .map(|(l, h)| ((num(h) - num(l)).abs() / dx).floor() + 1.0)
            .product::<f64>();
    }
    if total.is_finite() && dx > 0.0 {
        total
    } else {
        f64::INFINITY
    }
}

/// Run `peridot ARGS`: a crash (panic, signal) is returned as a description.
fn crashes(args: &[&str]) -> Option<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_peridot"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("the peridot binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) | Some(1) | Some(2) if !stderr.contains("panicked") => None,
        code => Some(format!("exit {code:?}: {}", stderr.trim())),
    }
}

#[test]
fn mutated_models_end_in_a_message_never_a_crash() {
    let cases: usize = std::env::var("PERIDOT_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let seed: u64 = std::env::var("PERIDOT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2026);
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&models)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    let work = tempfile::tempdir().unwrap();
    let mut rng = Rng(seed);
    let (mut failures, mut ran) = (Vec::new(), 0);
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let original: Value = Value::Table(text.parse::<Table>().unwrap());
        for case in 0..cases {
            let mut model = original.clone();
            for _ in 0..1 + rng.below(2) {
                mutate(&mut model, &mut rng);
            }
            let Value::Table(table) = &model else {
                unreachable!()
            };
            let Ok(mutant) = toml::to_string(table) else {
                continue;
            };
            let stem = file.file_stem().unwrap().to_string_lossy();
            let path = work.path().join(format!("{stem}_{case}.toml"));
            std::fs::write(&path, &mutant).unwrap();
            let p = path.to_str().unwrap();
            let out = work.path().join(format!("out_{stem}_{case}"));
            let limit = ["--memory-limit", GUARD_LIMIT];
            let mut crash = crashes(&[&["validate", p][..], &limit].concat())
                .or_else(|| crashes(&[&["info", p][..], &limit].concat()));
            if crash.is_none() && lattice_nodes(&model) <= MAX_NODES {
                ran += 1;
                let o = out.to_str().unwrap();
                crash = crashes(&["run", p, "--quiet", "--out", o, "--set", "solver.steps=1"]);
            }
            if let Some(c) = crash {
                failures.push(format!("{}:\n{mutant}\n{c}", path.display()));
            }
        }
    }
    println!(
        "{} mutants of {} models through validate and info, {ran} also through a one-step run",
        cases * files.len(),
        files.len()
    );
    // (the cases must reach the run: most small valid mutants do)
    assert!(
        ran >= files.len(),
        "only {ran} mutants were run: the test lost its reach"
    );
    assert!(
        failures.is_empty(),
        "{} mutants crashed the program:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
