//! What a rank's piece of a snapshot must be: the `.vtu` the writer makes of a one-process
//! snapshot's values at the nodes the rank owns (what each piece was when every rank
//! gathered the whole state and picked its nodes), for byte-for-byte comparisons.

use super::{vtu_array, vtu_ints};
use peridot::output::pieces::pick;
use peridot::output::{NodeFields, VtkSeries};
use peridot::setup::Problem;
use std::path::Path;

/// The `TimeValue` of one of our `.vtu` snapshots, s.
fn time_of(path: &Path) -> f64 {
    let bytes = std::fs::read(path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let tag = text.split("Name=\"TimeValue\"").nth(1).unwrap();
    let value = &tag[tag.find('>').unwrap() + 1..tag.find('<').unwrap()];
    value.trim().parse().unwrap()
}

/// The bytes of the piece at `nodes` of the one-process snapshot `whole` (a `.vtu` of
/// `problem`'s body, step `step`), written by the library's writer into `scratch`.
pub fn expected_piece(
    problem: &Problem,
    whole: &Path,
    step: usize,
    nodes: &[usize],
    scratch: &Path,
) -> Vec<u8> {
    let text = String::from_utf8_lossy(&std::fs::read(whole).unwrap()).into_owned();
    let has = |name: &str| text.contains(&format!("Name=\"{name}\""));
    let d = problem.dim();
    // (vectors are padded to 3 components in the file; an array `output.fields` leaves out
    // is not written: zeros stand for it)
    let vector = |name: &str| -> Vec<f64> {
        if !has(name) {
            return vec![0.0; d * nodes.len()];
        }
        let padded = vtu_array(whole, name);
        let flat: Vec<f64> = padded
            .chunks_exact(3)
            .flat_map(|c| c[..d].to_vec())
            .collect();
        pick(&flat, nodes, d)
    };
    let scalar = |name: &str| has(name).then(|| pick(&vtu_array(whole, name), nodes, 1));
    let ints = |name: &str| has(name).then(|| pick(&vtu_ints(whole, name), nodes, 1));
    let body = &problem.body;
    let (positions, volumes) = (
        pick(&body.positions, nodes, 1),
        pick(&body.volumes, nodes, 1),
    );
    let (u, v) = (vector("displacement"), vector("velocity"));
    let damage = scalar("damage").unwrap_or_else(|| vec![0.0; nodes.len()]);
    let (count, theta) = (scalar("damage_bond_count"), scalar("dilatation"));
    let force = has("force_density_N_m3").then(|| vector("force_density_N_m3"));
    let energy = scalar("strain_energy_density_J_m3");
    let stress = has("stress_Pa").then(|| pick(&vtu_array(whole, "stress_Pa"), nodes, 9));
    let (material, broken) = (ints("material_id"), ints("broken_bonds"));
    let fields = NodeFields {
        dim: d,
        positions: &positions,
        volumes: &volumes,
        displacement: &u,
        velocity: &v,
        damage: &damage,
        damage_bond_count: count.as_deref(),
        dilatation: theta.as_deref(),
        force_density: force.as_deref(),
        strain_energy_density: energy.as_deref(),
        stress: stress.as_deref(),
        material_id: material.as_deref(),
        broken_bonds: broken.as_deref(),
        only: problem.model.output.fields.as_deref(),
    };
    let mut series = VtkSeries::new(scratch, "expected").unwrap();
    let path = series.write(step, time_of(whole), &fields).unwrap();
    std::fs::read(path).unwrap()
}
