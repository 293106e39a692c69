//! Restart checkpoints: the file format, and the `checkpoints/` folder of a run's output
//! folder. A checkpoint holds everything a run needs to go on bit for bit: the explicit
//! state (`u`, `v`, `a`, `f`, `b`, step, time) in the run's precision, the bond status, the
//! ADR history and where the ADR loop stood, the probe file, the VTK series and the crack
//! tips written so far.
//!
//! Layout (`codec.rs`; integers little-endian):
//!
//! | field | bytes |
//! |---|---|
//! | magic `PDCKPT\r\n` | 8 |
//! | format version ([`FORMAT_VERSION`]) | u32 |
//! | crate version | u64 length + UTF-8 |
//! | precision (4: f32, 8: f64), dimension, solver (0 explicit, 1 ADR) | 3 x u8 |
//! | nodes, directed bonds, model fingerprint (`model/fingerprint.rs` and the node positions) | 3 x u64 |
//! | step, then time (s; ADR: the load parameter) | u64, f64 |
//! | `u`, `v`, `a`, `f`, `b` (`dim x nodes` each) | u64 count + values |
//! | bond status (1 intact, 0 broken, CSR order) | u64 count + bytes |
//! | failure history (version 3): present (u8), then the damage per bond of a softening law (CSR order, `bonds` values); present (u8), then each node's critical stretch with `critical_stretch_alpha` (`nodes` values) | |
//! | ADR: present (u8); started (u8), residual (f64), load step, iteration in it (u64), `F^{n-1}` | |
//! | `probes.csv` so far (present u8, then its bytes) | |
//! | VTK snapshots so far: count, then step (u64), time (f64), file name per entry | |
//! | crack tips: `crack_tips.csv` so far and the tracker's memory (`tips.rs`) | |
//! | impactors (version 4): count (u64), then each one's position, velocity and last contact force (9 x f64) | |
//! | CRC-32 of all the bytes above | u32 |
//!
//! Files are `checkpoints/step_<step:08>.ckpt`, written as `.ckpt.tmp`, flushed to disk,
//! renamed, and the folder synced: a checkpoint is whole or absent. After a write the oldest
//! beyond `keep` are removed.

mod codec;
mod tips;

pub use tips::TipsPlace;

use crate::dynamics::contact::ImpactorState;
use crate::dynamics::{AdrHistory, State};
use crate::material::FailureHistory;
use crate::{Error, Precision, Real, Result};
use codec::{checksum, Decoded, Decoder, Encoder};
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

/// The version of the checkpoint layout this peridot writes. Version 4 added the rigid
/// impactors' motion (version 2 and 3 files carry none: a model with impactors does not
/// restart from them). Version 3 added the failure
/// history (a softening law's damage per bond, each node's critical stretch with `alpha`);
/// version 2 files, without it, are read too (a restarted `alpha` run then takes each node's
/// critical stretch from the stretches at the checkpoint, one step late). A file of another
/// version is refused.
pub const FORMAT_VERSION: u32 = 4;
/// The versions this peridot reads.
const READABLE: [u32; 3] = [2, 3, 4];
const MAGIC: &[u8; 8] = b"PDCKPT\r\n";
/// Checkpoints kept when the model does not say (`output.checkpoint_keep`).
pub const DEFAULT_KEEP: usize = 2;
/// The folder, inside a run's output folder, that holds its checkpoints.
pub const FOLDER: &str = "checkpoints";

/// What a checkpoint is of: compared with the run that would resume from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    pub format: u32,
    pub crate_version: String,
    pub precision: Precision,
    pub dim: usize,
    pub adr: bool,
    pub nodes: usize,
    pub bonds: usize,
    /// Fingerprint of the model's physics and discretization.
    pub model_hash: u64,
}

/// Where an ADR run stood: its history and its place in the loop.
#[derive(Debug, Clone, PartialEq)]
pub struct AdrPlace<T> {
    pub history: AdrHistory<T>,
    /// Load steps done (0 without `solver.load_steps`).
    pub load_step: usize,
    /// Iterations done in the current load step.
    pub iteration: usize,
}

/// One VTK snapshot of the series: step, time (s), file name.
pub type SnapshotEntry = (usize, f64, String);

/// Everything a run needs to go on from a step.
#[derive(Debug, Clone)]
pub struct Checkpoint<T: Real> {
    pub header: Header,
    pub state: State<T>,
    pub bond_status: Vec<u8>,
    /// What failure remembers besides the status (empty from a version 2 file).
    pub history: FailureHistory<T>,
    pub adr: Option<AdrPlace<T>>,
    /// The probe file as it was at the checkpoint (`None`: the run writes none).
    pub probes_csv: Option<Vec<u8>>,
    pub snapshots: Vec<SnapshotEntry>,
    /// The crack-tip output (`None`: the run writes none).
    pub tips: Option<TipsPlace>,
    /// The rigid impactors' motion, in the model's order (empty without impactors and from
    /// a file before version 4).
    pub impactors: Vec<ImpactorState>,
}

impl Header {
    /// The header of a run of this crate in precision `T`.
    pub fn of_run<T: Real>(dim: usize, adr: bool, nodes: usize, bonds: usize, hash: u64) -> Self {
        Header {
            format: FORMAT_VERSION,
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            precision: T::PRECISION,
            dim,
            adr,
            nodes,
            bonds,
            model_hash: hash,
        }
    }

    /// What differs between this checkpoint's header and the run's `expected` one, as a
    /// list of phrases (empty: it fits).
    pub fn differences(&self, expected: &Header) -> Vec<String> {
        let mut d = Vec::new();
        let mut differ = |what: &str, got: String, want: String| {
            if got != want {
                d.push(format!("{what} {got} (this run: {want})"));
            }
        };
        if !READABLE.contains(&self.format) {
            differ(
                "format version",
                self.format.to_string(),
                expected.format.to_string(),
            );
        }
        differ(
            "peridot version",
            self.crate_version.clone(),
            expected.crate_version.clone(),
        );
        differ(
            "precision",
            self.precision.name().into(),
            expected.precision.name().into(),
        );
        differ("dimension", self.dim.to_string(), expected.dim.to_string());
        let solver = |adr: bool| if adr { "adr" } else { "explicit" }.to_string();
        differ("solver", solver(self.adr), solver(expected.adr));
        differ("nodes", self.nodes.to_string(), expected.nodes.to_string());
        differ("bonds", self.bonds.to_string(), expected.bonds.to_string());
        let hash = |h: u64| format!("{h:016x}");
        differ(
            "model fingerprint",
            hash(self.model_hash),
            hash(expected.model_hash),
        );
        d
    }
}

/// The file of the checkpoint at `step` in output folder `out`.
pub fn path_of(out: &Path, step: usize) -> PathBuf {
    out.join(FOLDER).join(format!("step_{step:08}.ckpt"))
}

/// The checkpoints in output folder `out`, oldest first: `(step, path)`.
pub fn list(out: &Path) -> Result<Vec<(usize, PathBuf)>> {
    let dir = out.join(FOLDER);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let mut found = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(&dir, e))?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let step = name
            .strip_prefix("step_")
            .and_then(|s| s.strip_suffix(".ckpt"))
            .and_then(|s| s.parse::<usize>().ok());
        if let Some(step) = step {
            found.push((step, path));
        }
    }
    found.sort();
    Ok(found)
}

/// Write `ckpt` into output folder `out` (temporary file, flushed, renamed, folder synced),
/// then remove all but the newest `keep`. Returns the file written.
pub fn write<T: Real>(out: &Path, ckpt: &Checkpoint<T>, keep: usize) -> Result<PathBuf> {
    let dir = out.join(FOLDER);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = path_of(out, ckpt.state.step);
    let tmp = path.with_extension("ckpt.tmp");
    let written = File::create(&tmp).and_then(|file| {
        let mut enc = Encoder::new(BufWriter::with_capacity(1 << 20, file));
        encode(&mut enc, ckpt)?;
        let file = enc.finish()?.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    });
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(&tmp, e));
    }
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    // The rename is durable once the folder is synced (where the platform allows it).
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    prune(out, keep.max(1))?;
    Ok(path)
}

/// Remove all checkpoints of `out` but the newest `keep`.
fn prune(out: &Path, keep: usize) -> Result<()> {
    let all = list(out)?;
    let old = all.len().saturating_sub(keep);
    for (_, path) in &all[..old] {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

fn encode<T: Real, W: std::io::Write>(
    e: &mut Encoder<W>,
    c: &Checkpoint<T>,
) -> std::io::Result<()> {
    let h = &c.header;
    e.bytes(MAGIC)?;
    e.u32(h.format)?;
    e.blob(h.crate_version.as_bytes())?;
    e.u8(precision_byte(h.precision))?;
    e.u8(h.dim as u8)?;
    e.u8(u8::from(h.adr))?;
    e.usize(h.nodes)?;
    e.usize(h.bonds)?;
    e.u64(h.model_hash)?;
    let s = &c.state;
    e.usize(s.step)?;
    e.f64(s.time)?;
    for v in [&s.u, &s.v, &s.a, &s.f, &s.b] {
        e.reals(v)?;
    }
    e.blob(&c.bond_status)?;
    // (a version 2 layout has no history: written only by the test that reads one back)
    let history = if h.format >= 3 {
        [&c.history.bond_damage, &c.history.node_s0].to_vec()
    } else {
        Vec::new()
    };
    for values in history {
        e.u8(u8::from(!values.is_empty()))?;
        if !values.is_empty() {
            e.reals(values)?;
        }
    }
    e.u8(u8::from(c.adr.is_some()))?;
    if let Some(a) = &c.adr {
        e.u8(u8::from(a.history.started))?;
        e.f64(a.history.residual)?;
        e.usize(a.load_step)?;
        e.usize(a.iteration)?;
        e.reals(&a.history.f_prev)?;
    }
    e.u8(u8::from(c.probes_csv.is_some()))?;
    e.blob(c.probes_csv.as_deref().unwrap_or(&[]))?;
    e.usize(c.snapshots.len())?;
    for (step, time, name) in &c.snapshots {
        e.usize(*step)?;
        e.f64(*time)?;
        e.blob(name.as_bytes())?;
    }
    tips::encode(e, c.tips.as_ref())?;
    if h.format >= 4 {
        e.usize(c.impactors.len())?;
        for m in &c.impactors {
            for x in m.position.iter().chain(&m.velocity).chain(&m.force) {
                e.f64(*x)?;
            }
        }
    }
    Ok(())
}

fn precision_byte(p: Precision) -> u8 {
    match p {
        Precision::F32 => 4,
        Precision::F64 => 8,
    }
}

/// The bytes of the file at `path` with its checksum verified, without the checksum.
fn checked_bytes(path: &Path) -> Result<Vec<u8>> {
    let mut bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let damaged = |m: String| {
        Error::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, m),
        )
    };
    if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(damaged("not a peridot checkpoint (no magic number)".into()));
    }
    let body = bytes.len() - 4;
    let stored = u32::from_le_bytes(bytes[body..].try_into().expect("4 bytes"));
    let actual = checksum(&bytes[..body]);
    if stored != actual {
        return Err(damaged(format!(
            "checksum mismatch (stored {stored:08x}, computed {actual:08x}): the file is \
             damaged or was cut short"
        )));
    }
    bytes.truncate(body);
    Ok(bytes)
}

fn decode_header(d: &mut Decoder) -> Decoded<Header> {
    d.take(MAGIC.len())?;
    let format = d.u32()?;
    if !READABLE.contains(&format) {
        return Err(format!(
            "format version {format}; this peridot reads versions {READABLE:?}"
        ));
    }
    let crate_version = d.string()?;
    let precision = match d.u8()? {
        4 => Precision::F32,
        8 => Precision::F64,
        b => return Err(format!("unknown precision code {b}")),
    };
    Ok(Header {
        format,
        crate_version,
        precision,
        dim: d.u8()? as usize,
        adr: d.u8()? != 0,
        nodes: d.usize()?,
        bonds: d.usize()?,
        model_hash: d.u64()?,
    })
}

fn decode_body<T: Real>(d: &mut Decoder, header: Header) -> Decoded<Checkpoint<T>> {
    let ndof = header.dim * header.nodes;
    let mut state = State::<T>::at_rest(0);
    state.step = d.usize()?;
    state.time = d.f64()?;
    state.u = d.reals(ndof, "u")?;
    state.v = d.reals(ndof, "v")?;
    state.a = d.reals(ndof, "a")?;
    state.f = d.reals(ndof, "f")?;
    state.b = d.reals(ndof, "b")?;
    let bond_status = d.blob()?.to_vec();
    if bond_status.len() != header.bonds {
        return Err(format!(
            "{} bond states for {} bonds",
            bond_status.len(),
            header.bonds
        ));
    }
    let mut history = FailureHistory::default();
    if header.format >= 3 {
        if d.u8()? != 0 {
            history.bond_damage = d.reals(header.bonds, "bond damage")?;
        }
        if d.u8()? != 0 {
            history.node_s0 = d.reals(header.nodes, "critical stretch per node")?;
        }
    }
    let adr = match d.u8()? {
        0 => None,
        _ => {
            let started = d.u8()? != 0;
            let residual = d.f64()?;
            let (load_step, iteration) = (d.usize()?, d.usize()?);
            let f_prev = d.reals(ndof, "ADR force")?;
            let history = AdrHistory {
                f_prev,
                started,
                residual,
            };
            Some(AdrPlace {
                history,
                load_step,
                iteration,
            })
        }
    };
    let has_probes = d.u8()? != 0;
    let csv = d.blob()?.to_vec();
    let mut snapshots = Vec::new();
    for _ in 0..d.usize()? {
        snapshots.push((d.usize()?, d.f64()?, d.string()?));
    }
    let tips = tips::decode(d)?;
    let mut impactors = Vec::new();
    if header.format >= 4 {
        for _ in 0..d.usize()? {
            let mut v = [[0.0; 3]; 3];
            for x in v.iter_mut().flatten() {
                *x = d.f64()?;
            }
            impactors.push(ImpactorState {
                position: v[0],
                velocity: v[1],
                force: v[2],
            });
        }
    }
    if !d.done() {
        return Err("has bytes after its last field".into());
    }
    Ok(Checkpoint {
        header,
        state,
        bond_status,
        history,
        adr,
        probes_csv: has_probes.then_some(csv),
        snapshots,
        tips,
        impactors,
    })
}

/// Read the header of the checkpoint at `path` (checksum verified).
pub fn read_header(path: &Path) -> Result<Header> {
    let bytes = checked_bytes(path)?;
    decode_header(&mut Decoder::new(&bytes)).map_err(|m| malformed(path, m))
}

/// Read the checkpoint at `path` in precision `T`: checksum verified, then a header equal to
/// `expected` (else an error naming each difference), then the arrays.
pub fn read<T: Real>(path: &Path, expected: &Header) -> Result<Checkpoint<T>> {
    let bytes = checked_bytes(path)?;
    let mut d = Decoder::new(&bytes);
    let header = decode_header(&mut d).map_err(|m| malformed(path, m))?;
    let differences = header.differences(expected);
    if !differences.is_empty() {
        return Err(Error::Usage {
            option: "--restart".into(),
            message: format!(
                "{} is of another run: {}; restart only from a checkpoint of the same model \
                 (material, discretization, geometry, loads, solver other than solver.steps), \
                 precision and peridot version",
                path.display(),
                differences.join(", ")
            ),
        });
    }
    decode_body(&mut d, header).map_err(|m| malformed(path, m))
}

fn malformed(path: &Path, message: String) -> Error {
    Error::io(
        path,
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("checkpoint {message}"),
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(format: u32, history: FailureHistory<f64>) -> Checkpoint<f64> {
        let mut header = Header::of_run::<f64>(2, false, 3, 4, 0xfeed);
        header.format = format;
        Checkpoint {
            header,
            state: State::at_rest(6),
            bond_status: vec![1, 0, 1, 1],
            history,
            adr: None,
            probes_csv: None,
            snapshots: Vec::new(),
            tips: None,
            impactors: Vec::new(),
        }
    }

    /// A version 3 file gives its failure history back bit for bit; a version 2 file (no
    /// history) is still read, with an empty history.
    #[test]
    fn the_failure_history_is_stored_and_version_2_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let expected = Header::of_run::<f64>(2, false, 3, 4, 0xfeed);
        let history = FailureHistory {
            bond_damage: vec![0.0, 1.0, 0.25, 1.0 / 3.0],
            node_s0: vec![0.01, f64::INFINITY, -0.5],
        };
        let mut c = checkpoint(3, history.clone());
        c.state.step = 7;
        write(dir.path(), &c, 2).unwrap();
        let back = read::<f64>(&path_of(dir.path(), 7), &expected).unwrap();
        assert_eq!(back.history, history);
        assert_eq!(back.bond_status, c.bond_status);
        let mut old = checkpoint(2, history);
        old.state.step = 8;
        write(dir.path(), &old, 2).unwrap();
        let back = read::<f64>(&path_of(dir.path(), 8), &expected).unwrap();
        assert!(back.history.is_empty() && back.header.format == 2);
        assert_eq!(back.bond_status, old.bond_status);
    }
}
