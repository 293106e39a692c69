//! The fingerprint of a model's physics and discretization: a stable 64-bit hash that a
//! restart checkpoint carries, so that a run resumes only from a checkpoint of the same
//! physics (`output/checkpoint`, `solver/restart.rs`).
//!
//! What is hashed: the model as canonical JSON (object keys sorted, numbers in serde_json's
//! shortest round-trip form) with these keys removed, because a restart may change them:
//! `name` (the run's name), `solver.steps` (a resumed run may go further),
//! `solver.gpu_memory_budget` and `solver.rank_partition` (how the run executes, not what
//! it computes) and the whole `[output]` table. Everything else is in: material,
//! discretization, geometry (the file name of a point cloud, not its contents: the caller
//! adds the nodes), pre-cracks, regions, boundary conditions and the rest of `[solver]`
//! (`dt`, damping, ADR settings, ...).
//! The hash is FNV-1a over the UTF-8 text: stable across builds and platforms.

use super::Model;
use serde_json::Value;

/// FNV-1a, 64 bits: a small, stable hash (not a cryptographic one).
#[derive(Debug, Clone, Copy)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv64 {
    /// Hash `bytes` into the state.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// The hash so far.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

/// The model's physics and discretization as canonical JSON (see the module docs for what is
/// left out).
pub fn physics_text(model: &Model) -> String {
    let mut tree = serde_json::to_value(model).unwrap_or(Value::Null);
    if let Value::Object(top) = &mut tree {
        top.remove("name");
        top.remove("output");
        if let Some(Value::Object(solver)) = top.get_mut("solver") {
            solver.remove("steps");
            solver.remove("gpu_memory_budget");
            solver.remove("rank_partition");
        }
    }
    let mut text = String::new();
    canonical(&tree, &mut text);
    text
}

/// FNV-1a of [`physics_text`].
pub fn physics_hash(model: &Model) -> u64 {
    let mut h = Fnv64::default();
    h.write(physics_text(model).as_bytes());
    h.finish()
}

/// `value` as JSON with object keys in sorted order, whatever the map type keeps.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (n, key) in keys.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: &str = r#"
name = "a"
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
[solver]
kind = "explicit"
steps = 40
"#;

    fn hash(overrides: &[&str]) -> u64 {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        physics_hash(&crate::model::parse(MODEL, "test", &o).unwrap())
    }

    #[test]
    fn run_length_name_and_outputs_are_not_hashed() {
        let base = hash(&[]);
        assert_eq!(base, hash(&["solver.steps=400"]));
        assert_eq!(base, hash(&["name=\"b\""]));
        assert_eq!(
            base,
            hash(&["output.vtk_every=5", "output.checkpoint_every=10"])
        );
    }

    #[test]
    fn physics_and_discretization_are_hashed() {
        let base = hash(&[]);
        assert_ne!(base, hash(&["discretization.dx=0.5e-3"]));
        assert_ne!(base, hash(&["material.youngs_modulus=100e9"]));
        assert_ne!(base, hash(&["solver.dt=1e-8"]));
    }
}
