//! Checkpoints of a run and restarts from them (the format is `output/checkpoint`): which
//! checkpoint of a folder a restart takes, whether it fits the run, how its bond status
//! reaches the backend, how the outputs continue, and when a run writes one.
//!
//! A restart builds its backend from the problem with the checkpoint's bond status as the
//! initial one ([`adopt_bond_status`]): every backend, on the CPU or a device, in core or in
//! subdomains, starts from `Problem::initial_mu` as it starts from pre-cracks, so a restored
//! status reaches each of them the way the initial one does. The failure history beyond the
//! status (a softening law's damage per bond, each node's critical stretch with
//! `critical_stretch_alpha`; `material::FailureHistory`) goes the same way, through
//! `Problem::restored`, which the backends that run those options (`cpu-loop`, `gpu-loop`)
//! start from. The state vectors go in through the driver's `State` (a device backend uploads
//! them on its first call), the ADR history through `Adr` (a device backend makes its buffers
//! from it).

use crate::dynamics::contact::Contact;
use crate::model::fingerprint::{physics_hash, Fnv64};
use crate::output::checkpoint::{self, Checkpoint, Header, DEFAULT_KEEP};
use crate::output::{ProbeWriter, VtkSeries};
use crate::setup::Problem;
use crate::{Error, Real, Result};
use std::path::{Path, PathBuf};

/// The fingerprint a checkpoint of `problem` carries: the model's physics and
/// discretization (`model/fingerprint.rs`) and the node positions (which a point cloud's or
/// a mesh's file, not the model, holds), bit for bit; for a body read from a file also its
/// volumes, material ids and per-node initial fields.
pub fn fingerprint(problem: &Problem) -> u64 {
    let mut h = Fnv64::default();
    h.write(&physics_hash(&problem.model).to_le_bytes());
    let body = &problem.body;
    for p in &body.positions {
        for x in p {
            h.write(&x.to_bits().to_le_bytes());
        }
    }
    let g = &problem.model.geometry;
    if g.points_csv.is_some() || g.mesh.is_some() {
        for v in &body.volumes {
            h.write(&v.to_bits().to_le_bytes());
        }
        for m in body.material_ids.iter().flatten() {
            h.write(&m.to_le_bytes());
        }
        let fields = [&body.initial_displacement, &body.initial_velocity];
        for x in fields.into_iter().flatten().flatten().flatten() {
            h.write(&x.to_bits().to_le_bytes());
        }
    }
    h.finish()
}

/// The header a checkpoint of a run of `problem` in precision `T` has.
pub fn header_of<T: Real>(problem: &Problem) -> Header {
    let adr = problem.model.solver.kind == crate::model::SolverKind::Adr;
    let (dim, nodes) = (problem.dim(), problem.body.len());
    Header::of_run::<T>(
        dim,
        adr,
        nodes,
        problem.families.bonds(),
        fingerprint(problem),
    )
}

/// The newest readable checkpoint in output folder `dir` for a run of `problem`. A damaged
/// one (checksum, truncation) is passed over with a warning for the one before it; one of
/// another model, precision or version is refused with what differs.
pub fn load_latest<T: Real>(problem: &Problem, dir: &Path) -> Result<Checkpoint<T>> {
    let found = checkpoint::list(dir)?;
    if found.is_empty() {
        return Err(Error::Usage {
            option: "--restart".into(),
            message: format!(
                "no checkpoint in {} (a run writes them with output.checkpoint_every or \
                 --checkpoint-every, and when it is interrupted)",
                dir.join(checkpoint::FOLDER).display()
            ),
        });
    }
    let expected = header_of::<T>(problem);
    let mut damaged = Vec::new();
    for (_, path) in found.iter().rev() {
        match checkpoint::read::<T>(path, &expected) {
            Ok(mut c) => {
                for d in &damaged {
                    eprintln!("warning: {d}; resuming from the older {}", path.display());
                }
                resume_contact(problem, &mut c, path)?;
                return Ok(c);
            }
            Err(Error::Io { path, error }) if error.kind() == std::io::ErrorKind::InvalidData => {
                damaged.push(format!("{}: {error}", path.display()));
            }
            Err(e) => return Err(e),
        }
    }
    Err(Error::Usage {
        option: "--restart".into(),
        message: format!(
            "no usable checkpoint in {}: {}",
            dir.display(),
            damaged.join("; ")
        ),
    })
}

/// The contact of a resumed state: the problem's (its pair list is searched anew, which
/// changes no force), with the impactors' motion of the checkpoint. A model with impactors
/// needs a checkpoint that carries them (format 4), as many as the model has.
fn resume_contact<T: Real>(problem: &Problem, c: &mut Checkpoint<T>, path: &Path) -> Result<()> {
    let mut contact = Contact::of(problem).map(Box::new);
    let model = problem.model.impactor.len();
    if let Some(contact) = contact.as_mut().filter(|_| model > 0) {
        if c.impactors.len() != model {
            return Err(Error::Usage {
                option: "--restart".into(),
                message: format!(
                    "{} carries the motion of {} impactors, the model has {model}                      [[impactor]] tables (a checkpoint before format 4 carries none): run                      it again from the start",
                    path.display(),
                    c.impactors.len()
                ),
            });
        }
        for (imp, m) in contact.impactors.iter_mut().zip(&c.impactors) {
            imp.resume(m);
        }
    }
    c.state.contact = contact;
    Ok(())
}

/// Make the checkpoint's bond status `problem`'s initial one, so the backend built from it
/// starts there. Needs the stored bonds (not a lean problem), except on the ranks of a
/// distributed run (`across_ranks`): a rank's part takes its bonds' status from the held
/// one by global bond, on a lean problem too (`distributed/part.rs`), and the driver
/// releases it once the part is built ([`release_held_status`]).
pub fn adopt_bond_status(problem: &mut Problem, status: Vec<u8>, across_ranks: bool) -> Result<()> {
    if !problem.bonds_stored && !across_ranks {
        return Err(Error::Usage {
            option: "--restart".into(),
            message: "a restart needs the bonds held on the host; this run was set up lean \
                      (too little host memory for them)"
                .into(),
        });
    }
    assert_eq!(
        status.len(),
        problem.families.bonds(),
        "checked by the header"
    );
    problem.precracked = status.iter().filter(|&&m| m == 0).count();
    problem.initial_mu = status;
    Ok(())
}

/// Drop the whole-body per-bond arrays a restart set on a lean problem (the bond status,
/// a softening law's damage per bond) once a rank's backend holds its part of them: a lean
/// problem holds no per-bond array for the run, as without a restart.
pub(crate) fn release_held_status(problem: &mut Problem) {
    if !problem.bonds_stored {
        problem.initial_mu = Vec::new();
        problem.restored.bond_damage = Vec::new();
    }
}

/// The VTK series and probe writer of a resumed run writing into `out`: the checkpoint's
/// snapshot list and probe rows again (snapshot files copied from `from`, the folder of the
/// earlier run, where `out` is another), then continued.
pub(crate) fn resume_outputs<T: Real>(
    problem: &Problem,
    ckpt: &Checkpoint<T>,
    from: &Path,
    out: Option<&Path>,
) -> Result<(Option<VtkSeries>, Option<ProbeWriter>)> {
    let Some(out) = out else {
        return Ok((None, None));
    };
    let o = &problem.model.output;
    let step = ckpt.state.step;
    let vtk = match o.vtk {
        true => {
            let entries = ckpt.snapshots.clone();
            Some(VtkSeries::resume(out, &problem.name, entries, from, step)?)
        }
        false => None,
    };
    let path = out.join("probes.csv");
    let (dim, impactors) = (problem.dim(), problem.model.impactor.len());
    let probes = match (&ckpt.probes_csv, o.probes.is_empty() && impactors == 0) {
        (_, true) => None,
        (Some(text), false) => Some(ProbeWriter::resume(&path, text, &o.probes, impactors, dim)?),
        (None, false) => {
            let names: Vec<String> = (problem.model.impactor.iter().enumerate())
                .map(|(k, imp)| imp.probe_name(k))
                .collect();
            Some(ProbeWriter::with_impactors(&path, &o.probes, &names, dim)?)
        }
    };
    Ok((vtk, probes))
}

/// When a run writes checkpoints, and where.
#[derive(Debug, Clone)]
pub(crate) struct Saver {
    out: PathBuf,
    every: usize,
    keep: usize,
    /// The step of the last checkpoint written or resumed from.
    last: usize,
    /// The last file written, and its step.
    pub(crate) written: Option<PathBuf>,
    pub(crate) written_step: Option<usize>,
    /// Whether this process writes the files (rank 0 of a distributed run, which gathers
    /// the whole; the other ranks take the same decisions and send their parts).
    writes: bool,
}

impl Saver {
    /// Checkpoints of `problem`'s run into output folder `out`, the first due after `start`,
    /// written where `writes`.
    pub(crate) fn new(problem: &Problem, out: &Path, start: usize, writes: bool) -> Self {
        let o = &problem.model.output;
        Saver {
            out: out.to_path_buf(),
            every: o.checkpoint_every.unwrap_or(0),
            keep: o.checkpoint_keep.unwrap_or(DEFAULT_KEEP),
            last: start,
            written: None,
            written_step: None,
            writes,
        }
    }

    /// Whether a checkpoint is due at `step`: the first step at or past the next multiple of
    /// `checkpoint_every` after the last one.
    pub(crate) fn due(&self, step: usize) -> bool {
        self.every > 0 && step > self.last && step / self.every > self.last / self.every
    }

    /// Whether this process writes the files (the other ranks send their parts).
    pub(crate) fn writes(&self) -> bool {
        self.writes
    }

    /// Write `ckpt` (whether due or not: an interrupted run writes one anyway).
    pub(crate) fn save<T: Real>(&mut self, ckpt: &Checkpoint<T>) -> Result<()> {
        if self.writes {
            self.written = Some(checkpoint::write(&self.out, ckpt, self.keep)?);
        }
        self.passed(ckpt.state.step);
        Ok(())
    }

    /// The checkpoint of `step` taken (written here, or by rank 0 where this rank sent its
    /// parts): the next is due from there.
    pub(crate) fn passed(&mut self, step: usize) {
        self.last = step;
        self.written_step = Some(step);
    }

    /// The probe file of the run as it stands (read back for a checkpoint).
    pub(crate) fn probe_text(&self, probes: Option<&ProbeWriter>) -> Result<Option<Vec<u8>>> {
        probes
            .map(|w| std::fs::read(w.path()).map_err(|e| Error::io(w.path(), e)))
            .transpose()
    }
}
