//! What the run driver (`run.rs`) does differently on the ranks of a distributed run
//! (`distributed.rs`): this rank's backend and share of the snapshots, its piece of each
//! snapshot from its own part (no gather), the whole state gathered where an output needs
//! it (a checkpoint: to rank 0; the end: to every rank where the caller reads the state),
//! the end's damage (its largest a reduction, every node's to rank 0 for the picture), the
//! outputs rank 0 writes alone
//! (resumed from a checkpoint too), whether checkpoints are written, and the abort of every
//! rank where one failed alone.

use super::fields::{material_ids, ExtraFields};
use super::outputs::{self, FieldValues, OwnedSnapshot};
use crate::backend::{Backend, BackendKind, Gather, RankOutputs};
use crate::distributed::RankSetup;
use crate::distributed::StopFlags;
use crate::distributed::{
    Comm, DistributedCpu, DistributedGpu, DistributedGpuMatrix, DistributedMatrix, RankPlan,
};
use crate::dynamics::{Adr, State};
use crate::material::FailureHistory;
use crate::output::checkpoint::Checkpoint;
use crate::output::pieces::pick;
use crate::output::{Pieces, ProbeWriter, VtkSeries};
use crate::setup::{Problem, SetupTimes};
use crate::{Error, Real, Result};
use rayon::prelude::*;
use std::path::Path;
use std::sync::Arc;

/// The ranks of a distributed run: the transport and the stop flags.
#[derive(Debug, Clone)]
pub struct Ranks {
    pub comm: Arc<dyn Comm>,
    /// Set by this process's signal handler (`raw`) and agreed by all ranks (`agreed`, the
    /// flag the driver reads: `RunOptions::cancel` should be it).
    pub stop: Option<StopFlags>,
}

impl Ranks {
    /// Whether this rank writes the run's shared files (rank 0).
    pub fn writes(&self) -> bool {
        self.comm.rank() == 0
    }
}

/// This rank's backend of kind `kind` (`gpu-loop`: [`DistributedGpu`] on the rank's device;
/// `cpu-matrix`: [`DistributedMatrix`]; `gpu-matrix`: [`DistributedGpuMatrix`]; otherwise `cpu-loop`, [`DistributedCpu`]), the ranks
/// with this rank's share of the snapshots, and the seconds of the backend's creation by
/// phase.
#[allow(clippy::type_complexity)]
pub(super) fn backend<T: Real>(
    problem: &Problem,
    kind: BackendKind,
    ranks: Ranks,
) -> Result<(Box<dyn Backend<T>>, Option<(Ranks, Pieces)>, RankSetup)> {
    let (comm, stop) = (ranks.comm.clone(), ranks.stop.clone());
    let pieces = |plan: &RankPlan| Pieces {
        rank: plan.rank,
        ranks: plan.ranks,
        nodes: plan.owned_of[plan.rank].clone(),
    };
    let (backend, pieces, setup): (Box<dyn Backend<T>>, _, _) = match kind {
        BackendKind::GpuLoop => {
            let b = DistributedGpu::<T>::new(problem, comm, stop)?;
            let (pieces, setup) = (pieces(b.plan()), b.setup);
            (Box::new(b), pieces, setup)
        }
        BackendKind::GpuMatrix => {
            let b = DistributedGpuMatrix::<T>::new(problem, comm, stop)?;
            let (pieces, setup) = (pieces(b.plan()), b.setup());
            (Box::new(b), pieces, setup)
        }
        BackendKind::CpuMatrix => {
            let b = DistributedMatrix::<T>::new(problem, comm, stop)?;
            let (pieces, setup) = (pieces(b.plan()), b.setup);
            (Box::new(b), pieces, setup)
        }
        _ => {
            let b = DistributedCpu::<T>::new(problem, comm, stop)?;
            let (pieces, setup) = (pieces(b.plan()), b.setup);
            (Box::new(b), pieces, setup)
        }
    };
    // (every rank's setup done before the first exchange: the exchanges' timings then measure
    // the loop, not the wait for a rank still setting up)
    ranks.comm.sum_u64(0);
    Ok((backend, Some((ranks, pieces)), setup))
}

/// A rank's setup phases into the run's `setup` (`rank_cut`, `rank_subdomain`,
/// `rank_part`); their sum, s (0 for a run in one process).
pub(super) fn record_setup(setup: &mut SetupTimes, rank: RankSetup) -> f64 {
    let RankSetup {
        cut,
        subdomain,
        part,
    } = rank;
    (setup.rank_cut, setup.rank_subdomain, setup.rank_part) = (cut, subdomain, part);
    [cut, subdomain, part].into_iter().flatten().sum()
}

/// Whether a distributed run in `dir` writes probe rows (every rank computes them).
pub(super) fn probes_on(problem: &Problem, dir: Option<&Path>) -> bool {
    dir.is_some() && !problem.model.output.probes.is_empty()
}

/// The VTK series (in pieces, on every rank) and the probe writer (rank 0) of a run in
/// `dir`, resumed from `resume` (a checkpoint and the folder it is in: rank 0 lists its
/// snapshots and probe rows again, as a run in one process does).
pub(super) fn open_outputs<T: Real>(
    problem: &Problem,
    dir: Option<&Path>,
    ranks: &Ranks,
    pieces: Pieces,
    resume: Option<(&Checkpoint<T>, &Path)>,
) -> Result<(Option<VtkSeries>, Option<ProbeWriter>)> {
    let (vtk, probes) = match (ranks.writes(), resume) {
        (true, Some((ckpt, from))) => super::restart::resume_outputs(problem, ckpt, from, dir)?,
        (true, None) => super::outputs::open_outputs(problem, dir)?,
        (false, _) => {
            let out = &problem.model.output;
            let vtk = match dir {
                Some(dir) if out.vtk => Some(VtkSeries::new(dir, &problem.name)?),
                _ => None,
            };
            (vtk, None)
        }
    };
    Ok((vtk.map(|v| v.in_pieces(pieces)), probes))
}

/// Whether a run writes checkpoints (where it has an output folder): in one process, and
/// across ranks where the rank's backend (named `backend`) does
/// ([`checkpoints_across_ranks`]).
pub(super) fn checkpoints(ranks: Option<&Ranks>, backend: &str) -> bool {
    ranks.is_none() || checkpoints_across_ranks(backend)
}

/// Whether a rank's backend named `backend` writes checkpoints across ranks (and so an
/// interrupted run can be resumed): every backend that runs across ranks, every rank taking the
/// same decisions and sending its owned parts (the state, the bond status, the failure
/// history, ADR's last free force: `checkpoint_parts`) to rank 0, which gathers them whole
/// and writes the one-process file.
pub fn checkpoints_across_ranks(backend: &str) -> bool {
    backend.starts_with("cpu-") || matches!(backend, "gpu-loop-mpi" | "gpu-matrix-mpi")
}

/// End every rank where this rank failed alone: an error every rank meets at the same step
/// (an unstable run, seen through a reduction) lets each finish; any other (a file this rank
/// could not write, a transport fault) would leave the others waiting in the next exchange,
/// so the job is aborted (`MPI_Abort`) after the message.
pub(super) fn abort_unless_collective(ranks: &Ranks, error: &Error) {
    if matches!(error, Error::Unstable { .. }) || ranks.comm.size() == 1 {
        return;
    }
    eprintln!("error on rank {}: {error}", ranks.comm.rank());
    ranks.comm.abort(1)
}

/// The rank's part of the outputs of `backend` (every rank backend has one).
fn part_of<T: Real>(backend: &mut dyn Backend<T>) -> Result<&mut dyn RankOutputs<T>> {
    let name = backend.name();
    backend.rank_outputs().ok_or_else(|| Error::Backend {
        backend: name.to_string(),
        message: "runs across ranks but holds no rank's part of the outputs".to_string(),
    })
}

/// The damage at the end of a run of `problem`, in `f64`, and its largest value over every
/// node. In one process the damage of every node. Across ranks (collective) the whole state
/// is first gathered to every rank where `state_whole` says (`simulate_distributed` returns
/// it; a run of the command line reads none, so no rank holds the end state whole), the
/// largest damage is the largest of each rank's owned nodes' (a maximum: exact), and every
/// node's damage is gathered to rank 0 alone where `picture` (the run draws `damage.png`),
/// else to no rank: empty.
pub(super) fn end_damage<T: Real>(
    backend: &mut dyn Backend<T>,
    (state, problem): (&mut State<T>, &Problem),
    ranks: Option<&Ranks>,
    (state_whole, picture): (bool, bool),
) -> Result<(Vec<f64>, f64)> {
    let largest = |phi: &mut dyn Iterator<Item = f64>| phi.fold(0.0, f64::max);
    let Some(ranks) = ranks else {
        let phi = damage_on_root(backend, problem.body.len())?;
        let max = largest(&mut phi.iter().copied());
        return Ok((phi, max));
    };
    let part = part_of(backend)?;
    if state_whole {
        part.gather_state(state, Gather::Every)?;
    }
    let mine = part.owned_damage()?;
    let max = ranks
        .comm
        .max_f64(largest(&mut mine.iter().map(|x| x.f64())));
    let phi = match picture {
        true => f64s(part.owned_to(&mine, 1, Gather::Root)?),
        false => Vec::new(),
    };
    Ok((phi, max))
}

/// Every node's damage (of `nodes`) where one process reads the whole field (crack tips,
/// the picture): in one process the backend's; across ranks (collective) each rank's owned
/// nodes' gathered to rank 0 alone, the others receiving nothing (empty).
pub(super) fn damage_on_root<T: Real>(
    backend: &mut dyn Backend<T>,
    nodes: usize,
) -> Result<Vec<f64>> {
    if let Some(part) = backend.rank_outputs() {
        let mine = part.owned_damage()?;
        return Ok(f64s(part.owned_to(&mine, 1, Gather::Root)?));
    }
    let mut phi = vec![T::zero(); nodes];
    backend.as_forces().damage(&mut phi)?;
    Ok(f64s(phi))
}

/// `values` in `f64`.
fn f64s<T: Real>(values: Vec<T>) -> Vec<f64> {
    values.into_par_iter().map(|x| x.f64()).collect()
}

/// What a checkpoint of the current step holds of the backend beyond the state, whole on
/// the rank that writes the file: the bond status and the failure history, with ADR's last
/// free force made current in `adr`. Across ranks (collective) the state, ADR's history and
/// the bonds are gathered to rank 0 alone; in one process the backend's own.
pub(super) fn checkpoint_parts<T: Real>(
    backend: &mut dyn Backend<T>,
    state: &mut State<T>,
    adr: Option<&mut Adr<T>>,
) -> Result<(Vec<u8>, FailureHistory<T>)> {
    if let Some(part) = backend.rank_outputs() {
        part.gather_state(state, Gather::Root)?;
        if let Some(adr) = adr {
            part.adr_to(adr, Gather::Root)?;
        }
        return part.bonds_to(Gather::Root);
    }
    if let Some(adr) = adr {
        backend.sync_adr(adr)?;
    }
    Ok((backend.bond_status()?, backend.failure_history()?))
}

/// This rank's piece of the snapshot of `state` (its owned nodes' values, `f64`): the owned
/// entries of the state (current after a call with `full_sync` or `sync_state`) and the
/// part's own damage, bond-count damage and dilatation, with no gather (collective only
/// where the dilatation exchanges the ghosts' displacement). A field of `output.fields` read
/// over every node's bonds on the host (force density, energy density, stress, broken
/// bonds: `fields.rs`) still takes the whole state and fields, gathered to every rank as in
/// one process, and the piece is picked from them.
pub(super) fn snapshot_piece<T: Real>(
    backend: &mut dyn Backend<T>,
    state: &mut State<T>,
    problem: &Problem,
) -> Result<OwnedSnapshot> {
    let part = part_of(backend)?;
    let nodes = part.owned().to_vec();
    let d = problem.dim();
    if problem.model.output.reads_bonds() {
        part.gather_state(state, Gather::Every)?;
        let whole = outputs::fields(backend.as_forces(), &state.u, problem)?;
        return Ok(piece_of_whole(state, &whole, &nodes, d));
    }
    let f64s = |x: Vec<T>| x.into_iter().map(|x| x.f64()).collect::<Vec<f64>>();
    let fields = FieldValues {
        damage: f64s(part.owned_damage()?),
        damage_bond_count: part.owned_bond_count_damage()?,
        dilatation: part.owned_dilatation(&state.u)?.map(f64s),
        extra: ExtraFields {
            material_id: material_ids(problem, Some(&nodes)),
            ..ExtraFields::default()
        },
    };
    Ok(OwnedSnapshot {
        step: state.step,
        time: state.time,
        displacement: f64s(pick(&state.u, &nodes, d)),
        velocity: f64s(pick(&state.v, &nodes, d)),
        fields,
    })
}

/// The piece at `nodes` of the snapshot of the whole `state` with fields `whole` (`d`
/// components per node of a vector).
fn piece_of_whole<T: Real>(
    state: &State<T>,
    whole: &FieldValues,
    nodes: &[usize],
    d: usize,
) -> OwnedSnapshot {
    let at = |x: &[f64], per: usize| pick(x, nodes, per);
    let opt = |x: &Option<Vec<f64>>, per: usize| x.as_deref().map(|x| at(x, per));
    let ints = |x: &Option<Vec<i64>>| x.as_deref().map(|x| pick(x, nodes, 1));
    let f64s = |x: &[T]| pick(x, nodes, d).into_iter().map(|x| x.f64()).collect();
    let e = &whole.extra;
    OwnedSnapshot {
        step: state.step,
        time: state.time,
        displacement: f64s(&state.u),
        velocity: f64s(&state.v),
        fields: FieldValues {
            damage: at(&whole.damage, 1),
            damage_bond_count: at(&whole.damage_bond_count, 1),
            dilatation: opt(&whole.dilatation, 1),
            extra: ExtraFields {
                force_density: opt(&e.force_density, d),
                strain_energy_density: opt(&e.strain_energy_density, 1),
                stress: opt(&e.stress, 9),
                material_id: ints(&e.material_id),
                broken_bonds: ints(&e.broken_bonds),
            },
        },
    }
}
