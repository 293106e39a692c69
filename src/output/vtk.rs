//! VTK XML output: one UnstructuredGrid file (`.vtu`) per snapshot and a ParaView collection
//! (`.pvd`) that lists them with their times. A distributed run writes each snapshot in
//! pieces (`pieces.rs`): one `.vtu` per rank of the nodes it owns, from the fields of those
//! nodes alone, and a `.pvtu` (PUnstructuredGrid) naming them and their arrays, which the
//! `.pvd` then lists.
//!
//! Each node is a `VTK_VERTEX` cell. Points are the reference positions (Float64, 3
//! components, metres), so in ParaView apply "Warp By Vector" with `displacement` to see the
//! deformed body. The snapshot time (s) is stored as the field `TimeValue`. Point data, in
//! this order, each where the snapshot has it and `output.fields` chooses it (absent: the
//! first six, the arrays the files held before that key existed):
//!
//! | array | type, components | unit | contents |
//! |---|---|---|---|
//! | `displacement` | Float64, 3 | m | z = 0 in 2D, so the warp filter works |
//! | `velocity` | Float64, 3 | m/s | |
//! | `damage` | Float64, 1 | - | the `beta V`-weighted fraction of each node's bonds lost |
//! | `damage_bond_count` | Float64, 1 | - | each bond counting the same (where the run gives it) |
//! | `volume` | Float64, 1 | m^3 | |
//! | `dilatation` | Float64, 1 | - | LPS only (`docs/materials.md`) |
//! | `force_density_N_m3` | Float64, 3 | N/m^3 | internal (bond) force density `L_i` |
//! | `strain_energy_density_J_m3` | Float64, 1 | J/m^3 | |
//! | `stress_Pa` | Float64, 9 | Pa | bond virial stress, row-major, tension positive |
//! | `material_id` | Int64, 1 | - | 0 where the body gives none |
//! | `broken_bonds` | Int64, 1 | - | broken directed bonds `i -> j` of each node |
//!
//! The arrays added with `output.fields` carry their unit in their name (the six older ones
//! keep theirs, unit as in the table); `docs/models.md` says how each is computed.
//!
//! Encoding: raw appended binary (`<AppendedData encoding="raw">`), little-endian, with
//! `header_type="UInt64"`: after the `_` marker, each array is a UInt64 byte count followed
//! by its values; each `DataArray` names the byte offset of its block from the `_` marker.
//! This is the layout VTK's own writers produce with `EncodeAppendedData` off; it needs no
//! base64 pass, so a million nodes (about 110 MB) write in well under a second on a local
//! disk. Cells use the VTK >= 6 `connectivity` / `offsets` / `types` arrays (Int64, Int64,
//! UInt8).

use super::pieces::Pieces;
use super::{format_f64, invalid_input, write_atomically, NodeFields};
use crate::model::OutputField;
use crate::Error;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// `VTK_VERTEX` in VTK's cell type enumeration.
const VTK_VERTEX: u8 = 1;

/// Buffer size of the `.vtu` writer: large enough that the per-value `write_all` calls are
/// plain memory copies.
const BUFFER_BYTES: usize = 1 << 20;

/// A series of `.vtu` snapshots in one folder and the `.pvd` collection that lists them.
#[derive(Debug)]
pub struct VtkSeries {
    dir: PathBuf,
    stem: String,
    /// `(step, time, file name)` of every snapshot written so far, in step order.
    entries: Vec<(usize, f64, String)>,
    /// This rank's share where the snapshots are written in pieces.
    pieces: Option<Pieces>,
}

impl VtkSeries {
    /// Series writing `<dir>/<stem>_<step:06>.vtu` files and `<dir>/<stem>.pvd`.
    /// Creates `dir` if it does not exist. `stem` must be a plain file name (no separators).
    pub fn new(dir: &Path, stem: &str) -> crate::Result<Self> {
        if stem.is_empty() || stem.contains(['/', '\\']) || stem == "." || stem == ".." {
            return Err(invalid_input(
                &dir.join(format!("{stem}.pvd")),
                format!("series name {stem:?} must be a non-empty file name without separators"),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        Ok(VtkSeries {
            dir: dir.to_path_buf(),
            stem: stem.to_string(),
            entries: Vec::new(),
            pieces: None,
        })
    }

    /// The series written in pieces: this rank writes `<stem>_<step:06>_<rank>.vtu` of its
    /// nodes (the fields handed to [`VtkSeries::write`] are then those of its nodes alone,
    /// in the order of `pieces.nodes`); rank 0 also the `<stem>_<step:06>.pvtu` of all
    /// pieces and the `.pvd`.
    pub fn in_pieces(mut self, pieces: Pieces) -> Self {
        self.pieces = Some(pieces);
        self
    }

    /// This rank's share where the series is written in pieces.
    pub fn pieces(&self) -> Option<&Pieces> {
        self.pieces.as_ref()
    }

    /// Continue a series at a restart: the snapshots `entries` (`(step, time, file name)`, in
    /// step order, as a checkpoint kept them) are listed again in a rewritten `.pvd`. Their
    /// files are looked for in `from` and copied into `dir` where the two differ; a snapshot
    /// file in `dir` at or after `after` that is not listed (written by the interrupted run
    /// after its checkpoint) is removed.
    pub fn resume(
        dir: &Path,
        stem: &str,
        entries: Vec<(usize, f64, String)>,
        from: &Path,
        after: usize,
    ) -> crate::Result<Self> {
        let mut series = VtkSeries::new(dir, stem)?;
        for (_, _, name) in &entries {
            // (a distributed run's `.pvtu` with the pieces it names)
            let sources = match name.ends_with(".pvtu") {
                true => pvtu_sources(&from.join(name))?,
                false => Vec::new(),
            };
            for name in std::iter::once(name).chain(&sources) {
                let (src, dst) = (from.join(name), dir.join(name));
                if src != dst && !dst.exists() {
                    std::fs::copy(&src, &dst).map_err(|e| Error::io(&src, e))?;
                }
            }
        }
        series.entries = entries;
        series.remove_unlisted(after)?;
        series.write_pvd()?;
        Ok(series)
    }

    /// Remove the snapshot files of steps from `after` on that the series does not list:
    /// `<stem>_<step>.vtu`, and a distributed run's `<stem>_<step>.pvtu` and pieces
    /// `<stem>_<step>_<rank>.vtu`.
    fn remove_unlisted(&self, after: usize) -> crate::Result<()> {
        let Ok(files) = std::fs::read_dir(&self.dir) else {
            return Ok(());
        };
        let prefix = format!("{}_", self.stem);
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            let step = (name.strip_prefix(&prefix))
                .and_then(|r| r.strip_suffix(".vtu").or_else(|| r.strip_suffix(".pvtu")))
                .and_then(|r| r.split('_').next()?.parse::<usize>().ok());
            let listed = self.entries.iter().any(|e| Some(e.0) == step);
            if step.is_some_and(|s| s >= after) && !listed {
                let path = file.path();
                std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            }
        }
        Ok(())
    }

    /// The snapshots written so far: `(step, time, file name)`, in step order.
    pub fn entries(&self) -> &[(usize, f64, String)] {
        &self.entries
    }

    /// Path of the `.pvd` collection.
    pub fn pvd_path(&self) -> PathBuf {
        self.dir.join(format!("{}.pvd", self.stem))
    }

    /// Write one snapshot (in pieces: this rank's piece, `fields` those of its nodes);
    /// rewrites the .pvd after every snapshot so a run that stops early leaves a valid
    /// series. Returns the .vtu path (the .pvtu's in pieces). Writing the same step again
    /// replaces that snapshot.
    pub fn write(&mut self, step: usize, time: f64, fields: &NodeFields) -> crate::Result<PathBuf> {
        let name = format!("{}_{step:06}.vtu", self.stem);
        let path = self.dir.join(&name);
        fields.check().map_err(|m| invalid_input(&path, m))?;
        if let Some(pieces) = &self.pieces {
            return self.write_piece(step, time, fields, pieces.clone());
        }
        write_vtu(&path, time, fields)?;
        match self.entries.iter_mut().find(|entry| entry.0 == step) {
            Some(entry) => entry.1 = time,
            None => {
                self.entries.push((step, time, name));
                self.entries.sort_by_key(|entry| entry.0);
            }
        }
        self.write_pvd()?;
        Ok(path)
    }

    /// This rank's piece of a snapshot (`fields`: its nodes'); on rank 0 also its `.pvtu`
    /// and the `.pvd`. Returns the `.pvtu` path.
    fn write_piece(
        &mut self,
        step: usize,
        time: f64,
        fields: &NodeFields,
        pieces: Pieces,
    ) -> crate::Result<PathBuf> {
        let piece = |r: usize| format!("{}_{step:06}_{r}.vtu", self.stem);
        let path = self.dir.join(piece(pieces.rank));
        if fields.nodes() != pieces.nodes.len() {
            let message = format!(
                "the piece of rank {} got {} nodes' fields for its {} nodes",
                pieces.rank,
                fields.nodes(),
                pieces.nodes.len()
            );
            return Err(invalid_input(&path, message));
        }
        write_vtu(&path, time, fields)?;
        let name = format!("{}_{step:06}.pvtu", self.stem);
        let path = self.dir.join(&name);
        match self.entries.iter_mut().find(|entry| entry.0 == step) {
            Some(entry) => entry.1 = time,
            None => {
                self.entries.push((step, time, name));
                self.entries.sort_by_key(|entry| entry.0);
            }
        }
        if pieces.rank == 0 {
            let sources: Vec<String> = (0..pieces.ranks).map(piece).collect();
            write_atomically(&path, |w| write_pvtu(w, fields, &sources))?;
            self.write_pvd()?;
        }
        Ok(path)
    }

    /// Rewrite the `.pvd` listing every snapshot so far (atomically: a reader sees the old or
    /// the new list, never half of one).
    fn write_pvd(&self) -> crate::Result<()> {
        write_atomically(&self.pvd_path(), |w| {
            writeln!(w, "<?xml version=\"1.0\"?>")?;
            writeln!(
                w,
                "<VTKFile type=\"Collection\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">"
            )?;
            writeln!(w, "  <Collection>")?;
            for (_, time, file) in &self.entries {
                writeln!(
                    w,
                    "    <DataSet timestep=\"{}\" group=\"\" part=\"0\" file=\"{}\"/>",
                    format_f64(*time),
                    xml_escape(file)
                )?;
            }
            writeln!(w, "  </Collection>")?;
            writeln!(w, "</VTKFile>")
        })
    }
}

/// The arrays of a snapshot. [`Array::layout`] gives the order of their blocks in the
/// appended section: point data, then points, then cells.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Array {
    /// A point-data array, by the `output.fields` entry that chooses it.
    Point(OutputField),
    Points,
    Connectivity,
    Offsets,
    Types,
}

impl Array {
    /// The arrays of `fields`, in file order.
    fn layout(fields: &NodeFields) -> Vec<Array> {
        use OutputField::*;
        let given = [
            (Displacement, true),
            (Velocity, true),
            (Damage, true),
            (DamageBondCount, fields.damage_bond_count.is_some()),
            (Volume, true),
            (Dilatation, fields.dilatation.is_some()),
            (ForceDensity, fields.force_density.is_some()),
            (StrainEnergyDensity, fields.strain_energy_density.is_some()),
            (Stress, fields.stress.is_some()),
            (MaterialId, fields.material_id.is_some()),
            (BrokenBonds, fields.broken_bonds.is_some()),
        ];
        let chosen = |f: &OutputField| fields.only.is_none_or(|only| only.contains(f));
        let mut arrays: Vec<Array> = (given.into_iter())
            .filter(|(f, has)| *has && chosen(f))
            .map(|(f, _)| Array::Point(f))
            .collect();
        arrays.extend([
            Array::Points,
            Array::Connectivity,
            Array::Offsets,
            Array::Types,
        ]);
        arrays
    }

    fn name(self) -> &'static str {
        match self {
            Array::Point(OutputField::Displacement) => "displacement",
            Array::Point(OutputField::Velocity) => "velocity",
            Array::Point(OutputField::Damage) => "damage",
            Array::Point(OutputField::DamageBondCount) => "damage_bond_count",
            Array::Point(OutputField::Volume) => "volume",
            Array::Point(OutputField::Dilatation) => "dilatation",
            Array::Point(OutputField::ForceDensity) => "force_density_N_m3",
            Array::Point(OutputField::StrainEnergyDensity) => "strain_energy_density_J_m3",
            Array::Point(OutputField::Stress) => "stress_Pa",
            Array::Point(OutputField::MaterialId) => "material_id",
            Array::Point(OutputField::BrokenBonds) => "broken_bonds",
            Array::Points => "Points",
            Array::Connectivity => "connectivity",
            Array::Offsets => "offsets",
            Array::Types => "types",
        }
    }

    /// The XML element the array belongs to.
    fn section(self) -> &'static str {
        match self {
            Array::Points => "Points",
            Array::Connectivity | Array::Offsets | Array::Types => "Cells",
            _ => "PointData",
        }
    }

    /// VTK type name and size of one value in bytes.
    fn value_type(self) -> (&'static str, u64) {
        match self {
            Array::Connectivity | Array::Offsets => ("Int64", 8),
            Array::Point(OutputField::MaterialId) | Array::Point(OutputField::BrokenBonds) => {
                ("Int64", 8)
            }
            Array::Types => ("UInt8", 1),
            _ => ("Float64", 8),
        }
    }

    fn components(self) -> usize {
        match self {
            Array::Point(OutputField::Displacement)
            | Array::Point(OutputField::Velocity)
            | Array::Points => 3,
            Array::Point(OutputField::ForceDensity) => 3,
            Array::Point(OutputField::Stress) => 9,
            _ => 1,
        }
    }

    /// Size of the array's data in bytes (without the UInt64 block header).
    fn bytes(self, nodes: usize) -> u64 {
        nodes as u64 * self.components() as u64 * self.value_type().1
    }

    /// Write the array's values, little-endian.
    fn write_values(self, w: &mut impl Write, fields: &NodeFields) -> std::io::Result<()> {
        let n = fields.nodes() as i64;
        match self {
            Array::Point(OutputField::Displacement) => {
                write_padded_vectors(w, fields.displacement, fields.dim)
            }
            Array::Point(OutputField::Velocity) => {
                write_padded_vectors(w, fields.velocity, fields.dim)
            }
            Array::Point(OutputField::Damage) => write_f64s(w, fields.damage),
            Array::Point(OutputField::DamageBondCount) => {
                write_f64s(w, fields.damage_bond_count.unwrap_or_default())
            }
            Array::Point(OutputField::Volume) => write_f64s(w, fields.volumes),
            Array::Point(OutputField::Dilatation) => {
                write_f64s(w, fields.dilatation.unwrap_or_default())
            }
            Array::Point(OutputField::ForceDensity) => {
                write_padded_vectors(w, fields.force_density.unwrap_or_default(), fields.dim)
            }
            Array::Point(OutputField::StrainEnergyDensity) => {
                write_f64s(w, fields.strain_energy_density.unwrap_or_default())
            }
            Array::Point(OutputField::Stress) => write_f64s(w, fields.stress.unwrap_or_default()),
            Array::Point(OutputField::MaterialId) => {
                write_i64s(w, fields.material_id.unwrap_or_default().iter().copied())
            }
            Array::Point(OutputField::BrokenBonds) => {
                write_i64s(w, fields.broken_bonds.unwrap_or_default().iter().copied())
            }
            Array::Points => write_f64s(w, fields.positions.as_flattened()),
            Array::Connectivity => write_i64s(w, 0..n),
            Array::Offsets => write_i64s(w, 1..n + 1),
            Array::Types => write_repeated_byte(w, VTK_VERTEX, n as usize),
        }
    }
}

/// The piece files a `.pvtu` at `path` names (its `<Piece Source="...">`s).
fn pvtu_sources(path: &Path) -> crate::Result<Vec<String>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let unescape = |s: &str| {
        (s.replace("&quot;", "\"").replace("&apos;", "'"))
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    Ok((text.split("<Piece Source=\"").skip(1))
        .filter_map(|s| Some(unescape(&s[..s.find('"')?])))
        .collect())
}

/// A `.pvtu`: the point arrays of `fields` (names, types, components) and the pieces'
/// `sources` (file names in the same folder).
fn write_pvtu(w: &mut impl Write, fields: &NodeFields, sources: &[String]) -> std::io::Result<()> {
    writeln!(w, "<?xml version=\"1.0\"?>")?;
    writeln!(
        w,
        "<VTKFile type=\"PUnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">"
    )?;
    writeln!(w, "  <PUnstructuredGrid GhostLevel=\"0\">")?;
    writeln!(w, "    <PPointData>")?;
    let layout = Array::layout(fields);
    let p_array = |w: &mut dyn Write, a: Array, named: bool| {
        let (ty, _) = a.value_type();
        let name = match named {
            true => format!(" Name=\"{}\"", a.name()),
            false => String::new(),
        };
        writeln!(
            w,
            "      <PDataArray type=\"{ty}\"{name} NumberOfComponents=\"{}\"/>",
            a.components()
        )
    };
    for &a in layout.iter().filter(|a| a.section() == "PointData") {
        p_array(w, a, true)?;
    }
    writeln!(w, "    </PPointData>")?;
    writeln!(w, "    <PPoints>")?;
    p_array(w, Array::Points, false)?;
    writeln!(w, "    </PPoints>")?;
    for source in sources {
        writeln!(w, "    <Piece Source=\"{}\"/>", xml_escape(source))?;
    }
    writeln!(w, "  </PUnstructuredGrid>")?;
    writeln!(w, "</VTKFile>")
}

/// Write one `.vtu` file: the XML header, then the appended data blocks.
fn write_vtu(path: &Path, time: f64, fields: &NodeFields) -> crate::Result<()> {
    let file = File::create(path).map_err(|e| Error::io(path, e))?;
    let mut w = BufWriter::with_capacity(BUFFER_BYTES, file);
    write_header(&mut w, time, fields)
        .and_then(|()| write_blocks(&mut w, fields))
        .and_then(|()| w.write_all(b"\n  </AppendedData>\n</VTKFile>\n"))
        .and_then(|()| w.flush())
        .map_err(|e| Error::io(path, e))
}

/// The XML part of a `.vtu`, up to and including the `_` that starts the appended data.
fn write_header(w: &mut impl Write, time: f64, fields: &NodeFields) -> std::io::Result<()> {
    let n = fields.nodes();
    writeln!(w, "<?xml version=\"1.0\"?>")?;
    writeln!(
        w,
        "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">"
    )?;
    writeln!(w, "  <UnstructuredGrid>")?;
    writeln!(w, "    <FieldData>")?;
    writeln!(
        w,
        "      <DataArray type=\"Float64\" Name=\"TimeValue\" NumberOfTuples=\"1\" format=\"ascii\">{}</DataArray>",
        format_f64(time)
    )?;
    writeln!(w, "    </FieldData>")?;
    writeln!(
        w,
        "    <Piece NumberOfPoints=\"{n}\" NumberOfCells=\"{n}\">"
    )?;
    let mut offset = 0u64;
    let mut open_section = "";
    for array in Array::layout(fields) {
        let section = array.section();
        if section != open_section {
            if !open_section.is_empty() {
                writeln!(w, "      </{open_section}>")?;
            }
            if section == "PointData" {
                // (the active scalars and vectors, where the file has them)
                let layout = Array::layout(fields);
                let has = |a: Array| layout.contains(&a);
                let scalars = if has(Array::Point(OutputField::Damage)) {
                    " Scalars=\"damage\""
                } else {
                    ""
                };
                let vectors = match has(Array::Point(OutputField::Displacement)) {
                    true => " Vectors=\"displacement\"",
                    false => "",
                };
                writeln!(w, "      <PointData{scalars}{vectors}>")?;
            } else {
                writeln!(w, "      <{section}>")?;
            }
            open_section = section;
        }
        writeln!(
            w,
            "        <DataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\" format=\"appended\" offset=\"{offset}\"/>",
            array.value_type().0,
            array.name(),
            array.components()
        )?;
        offset += 8 + array.bytes(n);
    }
    writeln!(w, "      </{open_section}>")?;
    writeln!(w, "    </Piece>")?;
    writeln!(w, "  </UnstructuredGrid>")?;
    writeln!(w, "  <AppendedData encoding=\"raw\">")?;
    write!(w, "   _")
}

/// The appended data blocks: for each array, its size in bytes as a UInt64, then its values.
fn write_blocks(w: &mut impl Write, fields: &NodeFields) -> std::io::Result<()> {
    for array in Array::layout(fields) {
        w.write_all(&array.bytes(fields.nodes()).to_le_bytes())?;
        array.write_values(w, fields)?;
    }
    Ok(())
}

/// Little-endian `f64` values.
fn write_f64s(w: &mut impl Write, values: &[f64]) -> std::io::Result<()> {
    for v in values {
        w.write_all(&v.to_le_bytes())?;
    }
    Ok(())
}

/// `dim`-component vectors widened to 3 components with zeros.
fn write_padded_vectors(w: &mut impl Write, values: &[f64], dim: usize) -> std::io::Result<()> {
    let mut padded = [0.0f64; 3];
    for vector in values.chunks_exact(dim) {
        padded[..dim].copy_from_slice(vector);
        write_f64s(w, &padded)?;
    }
    Ok(())
}

/// Little-endian `i64` values.
fn write_i64s(w: &mut impl Write, values: impl Iterator<Item = i64>) -> std::io::Result<()> {
    for v in values {
        w.write_all(&v.to_le_bytes())?;
    }
    Ok(())
}

/// `count` copies of `byte`.
fn write_repeated_byte(w: &mut impl Write, byte: u8, count: usize) -> std::io::Result<()> {
    let chunk = [byte; 4096];
    let mut left = count;
    while left > 0 {
        let k = left.min(chunk.len());
        w.write_all(&chunk[..k])?;
        left -= k;
    }
    Ok(())
}

/// Escape the five XML special characters for use in an attribute value.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            _ => out.push(c),
        }
    }
    out
}
