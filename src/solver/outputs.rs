//! Output steps shared by the run driver (`run.rs`) and the static solve (`implicit.rs`):
//! opening the VTK series and probe file, per-node fields in `f64`, snapshots, probe rows,
//! the damage picture and the summary's fixed keys. Units are SI; forces in probes are
//! newtons (force density times volume).

use super::fields::{extra_fields, ExtraFields};
use crate::dynamics::{Forces, State};
use crate::output::pieces::pick;
use crate::output::{
    write_damage_png, NodeFields, PhaseSeconds, ProbeRegions, ProbeWriter, Summary, VtkSeries,
};
use crate::setup::Problem;
use crate::{Real, Result};
use rayon::prelude::*;
use std::path::Path;

/// The VTK series and probe writer a model asks for, in `dir` (none without a folder).
pub(crate) fn open_outputs(
    problem: &Problem,
    dir: Option<&Path>,
) -> Result<(Option<VtkSeries>, Option<ProbeWriter>)> {
    let out = &problem.model.output;
    let vtk = match dir {
        Some(dir) if out.vtk => Some(VtkSeries::new(dir, &problem.name)?),
        _ => None,
    };
    let impactors = impactor_names(problem);
    let probes = match dir {
        Some(dir) if !out.probes.is_empty() || !impactors.is_empty() => {
            let path = dir.join("probes.csv");
            Some(ProbeWriter::with_impactors(
                &path,
                &out.probes,
                &impactors,
                problem.dim(),
            )?)
        }
        _ => None,
    };
    Ok((vtk, probes))
}

/// The names of the model's impactors' probe columns, in order.
fn impactor_names(problem: &Problem) -> Vec<String> {
    (problem.model.impactor.iter().enumerate())
        .map(|(k, imp)| imp.probe_name(k))
        .collect()
}

/// The probe values of the impactors of `state` (none without contact).
pub(crate) fn impactor_values<T: crate::Real>(
    state: &crate::dynamics::State<T>,
) -> Vec<crate::output::ImpactorValues> {
    let Some(c) = state.contact.as_ref() else {
        return Vec::new();
    };
    (c.impactors.iter())
        .map(|imp| crate::output::ImpactorValues {
            position: imp.position,
            velocity: imp.velocity,
            force: imp.force,
        })
        .collect()
}

/// The per-node fields a backend computes, in `f64`.
pub(crate) struct FieldValues {
    /// The local damage, the `beta V`-weighted fraction of each node's bonds lost.
    pub damage: Vec<f64>,
    /// The fraction of each node's bonds lost, each bond counting the same
    /// ([`bond_count_damage`]).
    pub damage_bond_count: Vec<f64>,
    /// The dilatation (LPS).
    pub dilatation: Option<Vec<f64>>,
    /// The fields of `output.fields` beyond these.
    pub extra: ExtraFields,
}

/// Damage (both fractions), (LPS) dilatation and the fields `output.fields` adds
/// ([`extra_fields`]) of displacement `u` under `forces`' bond status, in `f64`.
pub(crate) fn fields<T: Real>(
    forces: &mut dyn Forces<T>,
    u: &[T],
    problem: &Problem,
) -> Result<FieldValues> {
    let nodes = problem.body.len();
    let mut phi = vec![T::zero(); nodes];
    forces.damage(&mut phi)?;
    let mut theta = vec![T::zero(); nodes];
    let has = forces.dilatation(u, &mut theta)?;
    let f64s = |v: Vec<T>| v.into_par_iter().map(|x| x.f64()).collect::<Vec<f64>>();
    // (the bond status and a softening law's damage only where a chosen field reads them)
    let (status, damage) = match problem.model.output.reads_bonds() {
        true => (forces.bond_status()?, forces.bond_damage()?.map(f64s)),
        false => (Vec::new(), None),
    };
    let u = u.par_iter().map(|x| x.f64()).collect::<Vec<f64>>();
    Ok(FieldValues {
        damage: f64s(phi),
        damage_bond_count: forces.bond_count_damage(&problem.families.offsets)?,
        dilatation: has.then(|| f64s(theta)),
        extra: extra_fields(problem, &u, &status, damage.as_deref())?,
    })
}

/// The fields of one snapshot, owned, `f64`, SI (see [`Snapshot`]): of the whole body, or
/// of the piece's nodes where the series is written in pieces.
pub(crate) struct OwnedSnapshot {
    pub step: usize,
    pub time: f64,
    pub displacement: Vec<f64>,
    pub velocity: Vec<f64>,
    /// Damage, dilatation and the fields `output.fields` adds.
    pub fields: FieldValues,
}

/// The snapshot of the whole `state` of `problem`, its fields from `forces` ([`fields`]).
pub(crate) fn snapshot<T: Real>(
    forces: &mut dyn Forces<T>,
    state: &State<T>,
    problem: &Problem,
) -> Result<OwnedSnapshot> {
    let f64s = |x: &[T]| x.par_iter().map(|x| x.f64()).collect();
    Ok(OwnedSnapshot {
        step: state.step,
        time: state.time,
        displacement: f64s(&state.u),
        velocity: f64s(&state.v),
        fields: fields(forces, &state.u, problem)?,
    })
}

/// Per-node fields of one snapshot, `f64`, SI.
pub(crate) struct Snapshot<'a> {
    pub step: usize,
    pub time: f64,
    pub displacement: &'a [f64],
    pub velocity: &'a [f64],
    pub damage: &'a [f64],
    pub damage_bond_count: Option<&'a [f64]>,
    pub dilatation: Option<&'a [f64]>,
    pub extra: &'a ExtraFields,
}

/// The reference positions (m) and volumes (m^3) of a piece's nodes: a rank's share of
/// every snapshot of a distributed run, picked once.
pub(crate) struct PieceGeometry {
    pub positions: Vec<[f64; 3]>,
    pub volumes: Vec<f64>,
}

impl PieceGeometry {
    /// The geometry of `problem`'s body at `nodes`.
    pub(crate) fn of(problem: &Problem, nodes: &[usize]) -> Self {
        let b = &problem.body;
        PieceGeometry {
            positions: pick(&b.positions, nodes, 1),
            volumes: pick(&b.volumes, nodes, 1),
        }
    }
}

/// Write one VTK snapshot of `problem`'s body, or with `piece` (a series in pieces) of the
/// piece's nodes, whose values `s` then holds.
pub(crate) fn write_snapshot(
    vtk: &mut VtkSeries,
    problem: &Problem,
    piece: Option<&PieceGeometry>,
    s: &Snapshot,
) -> Result<()> {
    let body = &problem.body;
    let (positions, volumes) = match piece {
        Some(p) => (&p.positions[..], &p.volumes[..]),
        None => (&body.positions[..], &body.volumes[..]),
    };
    let fields = NodeFields {
        dim: body.dim(),
        positions,
        volumes,
        displacement: s.displacement,
        velocity: s.velocity,
        damage: s.damage,
        damage_bond_count: s.damage_bond_count,
        dilatation: s.dilatation,
        force_density: s.extra.force_density.as_deref(),
        strain_energy_density: s.extra.strain_energy_density.as_deref(),
        stress: s.extra.stress.as_deref(),
        material_id: s.extra.material_id.as_deref(),
        broken_bonds: s.extra.broken_bonds.as_deref(),
        only: problem.model.output.fields.as_deref(),
    };
    vtk.write(s.step, s.time, &fields)?;
    Ok(())
}

/// The probe regions of `problem` (its `output.probes`, in order), for
/// [`Backend::probe_values`](crate::backend::Backend::probe_values) and
/// [`ProbeRegions::on_host`].
pub(crate) fn probe_regions(problem: &Problem) -> ProbeRegions {
    let names = &problem.model.output.probes;
    let nodes = names.iter().map(|name| problem.region(name));
    ProbeRegions::new(problem.dim(), nodes, &problem.body.volumes)
}

/// `damage.png` in `dir`, if the model asks for pictures.
pub(crate) fn write_picture(problem: &Problem, dir: &Path, phi: &[f64]) -> Result<()> {
    if !problem.model.output.image {
        return Ok(());
    }
    let b = &problem.body;
    // a mesh's nodes are not on a lattice: pixels of one spacing would leave holes between
    // them, so a pixel there spans MESH_PIXEL spacings
    let pixel = match problem.model.geometry.mesh {
        Some(_) => MESH_PIXEL * b.dx,
        None => b.dx,
    };
    write_damage_png(&dir.join("damage.png"), &b.positions, b.dim(), pixel, phi)
}

/// The damage picture's pixel on a mesh body, in multiples of `dx`.
const MESH_PIXEL: f64 = 1.5;

/// The summary's keys known before a run: model, size, backend, precision, discretization.
pub(crate) fn initial_summary(
    problem: &Problem,
    backend: &str,
    precision: &str,
    dt: f64,
) -> Summary {
    let m = &problem.model;
    Summary {
        model: problem.name.clone(),
        nodes: problem.body.len(),
        bonds: problem.families.bonds(),
        backend: backend.to_string(),
        precision: precision.to_string(),
        dt,
        phase_seconds: PhaseSeconds {
            neighbors: Some(problem.neighbor_seconds),
            ..Default::default()
        },
        neighbor_search: problem.neighbor_search.name().to_string(),
        setup: problem.setup,
        solver: format!("{:?}", m.solver.kind).to_lowercase(),
        dimension: format!("{:?}", m.discretization.dimension),
        material: problem.material.name().to_string(),
        dx: problem.body.dx,
        delta: problem.body.delta,
        ..Default::default()
    }
}
