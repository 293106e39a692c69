//! The Gmsh `.msh` reader, format 4.1, ASCII or binary (little-endian, `size_t` of 8 bytes):
//! `$MeshFormat`, `$PhysicalNames`, `$Entities`, `$Nodes` and `$Elements`; other sections
//! are skipped. Elements: points (15), lines (1), triangles (2), quadrilaterals (3),
//! tetrahedra (4) and hexahedra (5); any other type is an error naming its first element tag.
//! Each element's physical groups are those of its entity. Coordinates in the file's unit,
//! taken as metres.

use super::{mesh_error, CellKind, Element, Group, Mesh, Place};
use crate::Result;
use std::collections::HashMap;

/// A reader over the file's bytes that counts lines as it goes.
struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    line: usize,
    binary: bool,
    origin: &'a str,
}

impl<'a> Cursor<'a> {
    fn error(&self, what: impl std::fmt::Display) -> crate::Error {
        let place = if self.binary {
            Place::Byte(self.pos)
        } else {
            Place::Line(self.line)
        };
        mesh_error(self.origin, format!("{what}{}", place.show()))
    }

    /// Where the next value starts.
    fn place(&mut self) -> Place {
        if !self.binary {
            self.skip_space();
        }
        if self.binary {
            Place::Byte(self.pos)
        } else {
            Place::Line(self.line)
        }
    }

    fn skip_space(&mut self) {
        while let Some(&b) = self.data.get(self.pos) {
            if !b.is_ascii_whitespace() {
                break;
            }
            if b == b'\n' {
                self.line += 1;
            }
            self.pos += 1;
        }
    }

    /// The next whitespace-separated token (ASCII).
    fn token(&mut self, what: &str) -> Result<&'a str> {
        self.skip_space();
        let start = self.pos;
        while self
            .data
            .get(self.pos)
            .is_some_and(|b| !b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
        if start == self.pos {
            return Err(self.error(format!(
                "the file ends where {what} was expected (truncated?)"
            )));
        }
        std::str::from_utf8(&self.data[start..self.pos])
            .map_err(|_| self.error(format!("{what} is not text")))
    }

    fn parse<T: std::str::FromStr>(&mut self, what: &str) -> Result<T> {
        let t = self.token(what)?;
        t.parse()
            .map_err(|_| self.error(format!("{what} '{t}' is not a valid number")))
    }

    /// The rest of the current line, trimmed (ASCII).
    fn rest_of_line(&mut self) -> &'a str {
        let start = self.pos;
        while self.data.get(self.pos).is_some_and(|&b| b != b'\n') {
            self.pos += 1;
        }
        let text = std::str::from_utf8(&self.data[start..self.pos]).unwrap_or("");
        text.trim()
    }

    fn bytes<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let end = self.pos + N;
        let Some(b) = self.data.get(self.pos..end) else {
            return Err(self.error(format!("the file ends inside {what} (truncated?)")));
        };
        self.pos = end;
        Ok(b.try_into().unwrap_or([0; N]))
    }

    /// An `int` (4 bytes binary) or a token.
    fn int(&mut self, what: &str) -> Result<i64> {
        if self.binary {
            Ok(i32::from_le_bytes(self.bytes::<4>(what)?) as i64)
        } else {
            self.parse(what)
        }
    }

    /// A `size_t` (8 bytes binary) or a token.
    fn size(&mut self, what: &str) -> Result<u64> {
        if self.binary {
            Ok(u64::from_le_bytes(self.bytes::<8>(what)?))
        } else {
            self.parse(what)
        }
    }

    fn double(&mut self, what: &str) -> Result<f64> {
        if self.binary {
            Ok(f64::from_le_bytes(self.bytes::<8>(what)?))
        } else {
            self.parse(what)
        }
    }

    /// A count that must fit what is left of the file (`bytes` each at least).
    fn count(&mut self, what: &str, bytes: usize) -> Result<usize> {
        let n = self.size(what)?;
        let left = (self.data.len() - self.pos) as u64;
        let bytes = if self.binary { bytes } else { 2 };
        if n > left / bytes.max(1) as u64 + 1 {
            return Err(self.error(format!(
                "{what} = {n} is more than the rest of the file can hold (truncated?)"
            )));
        }
        Ok(n as usize)
    }

    /// Move past the `$End<name>` line of the section.
    fn end_section(&mut self, name: &str) -> Result<()> {
        self.skip_space();
        let tag = format!("$End{name}");
        let t = self.token(&tag)?;
        if t != tag {
            return Err(self.error(format!("expected {tag}, found '{}'", short(t))));
        }
        Ok(())
    }

    /// Skip an unknown section `name` up to its `$End<name>`.
    fn skip_section(&mut self, name: &str) -> Result<()> {
        let tag = format!("\n$End{name}");
        let rest = &self.data[self.pos..];
        match find(rest, tag.as_bytes()) {
            Some(k) => {
                let skipped = &rest[..k + tag.len()];
                self.line += skipped.iter().filter(|&&b| b == b'\n').count();
                self.pos += k + tag.len();
                Ok(())
            }
            None => Err(self.error(format!("section ${name} has no $End{name} (truncated?)"))),
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn short(t: &str) -> String {
    t.chars().take(40).collect()
}

/// Physical tags of each entity `(dim, tag)`.
type Entities = HashMap<(usize, i64), Vec<i64>>;

/// Parse the bytes of a `.msh` file (`origin` names it in messages).
pub(crate) fn parse_msh(data: &[u8], origin: &str) -> Result<Mesh> {
    let mut c = Cursor {
        data,
        pos: 0,
        line: 1,
        binary: false,
        origin,
    };
    let mut names: HashMap<(usize, i64), String> = HashMap::new();
    let mut entities: Entities = HashMap::new();
    let mut mesh = Mesh {
        origin: origin.to_string(),
        element_word: "element tag",
        ..Mesh::default()
    };
    let mut index: HashMap<u64, u32> = HashMap::new();
    let (mut format, mut nodes, mut elements) = (false, false, false);
    loop {
        c.skip_space();
        if c.pos >= data.len() {
            break;
        }
        let section = c.token("a section")?;
        let Some(name) = section.strip_prefix('$') else {
            return Err(c.error(format!(
                "expected a section ($Name), found '{}'",
                short(section)
            )));
        };
        if c.binary {
            // binary data starts right after the header line's break
            if c.data.get(c.pos) == Some(&b'\r') {
                c.pos += 1;
            }
            if c.data.get(c.pos) == Some(&b'\n') {
                c.pos += 1;
                c.line += 1;
            }
        }
        match name {
            "MeshFormat" => {
                mesh_format(&mut c)?;
                format = true;
            }
            _ if !format => return Err(c.error("the file does not start with $MeshFormat")),
            "PhysicalNames" => {
                let binary = std::mem::replace(&mut c.binary, false);
                physical_names(&mut c, &mut names)?;
                c.binary = binary;
                c.end_section(name)?;
            }
            "Entities" => {
                entities = read_entities(&mut c)?;
                c.end_section(name)?;
            }
            "Nodes" => {
                read_nodes(&mut c, &mut mesh, &mut index)?;
                c.end_section(name)?;
                nodes = true;
            }
            "Elements" => {
                if !nodes {
                    return Err(c.error("$Elements before $Nodes"));
                }
                read_elements(&mut c, &mut mesh, &index, &entities, &mut names)?;
                c.end_section(name)?;
                elements = true;
            }
            _ => c.skip_section(name)?,
        }
    }
    if !format {
        return Err(mesh_error(origin, "empty file; expected a Gmsh 4.1 mesh"));
    }
    if !(nodes && elements) {
        return Err(mesh_error(
            origin,
            format!(
                "no ${} section (truncated?)",
                if nodes { "Elements" } else { "Nodes" }
            ),
        ));
    }
    Ok(mesh)
}

/// `$MeshFormat`: version 4.1, file type, data size 8.
fn mesh_format(c: &mut Cursor) -> Result<()> {
    let version = c.token("the version")?;
    if version != "4.1" {
        return Err(c.error(format!(
            "MSH version {version} is not read; export the mesh as version 4.1 (Gmsh: \
             Mesh.MshFileVersion = 4.1, or File > Export > Version 4 ASCII or binary)"
        )));
    }
    let file_type: u32 = c.parse("the file type")?;
    let size: u32 = c.parse("the data size")?;
    if size != 8 {
        return Err(c.error(format!("data size {size}; only 8 (64-bit size_t) is read")));
    }
    match file_type {
        0 => {}
        1 => {
            // the line break, then the integer 1 in the file's byte order
            while c.data.get(c.pos).is_some_and(|&b| b != b'\n') {
                c.pos += 1;
            }
            c.pos += 1;
            c.line += 1;
            c.binary = true;
            let one = c.int("the byte-order mark")?;
            if one != 1 {
                return Err(c.error("a big-endian binary file; only little-endian is read"));
            }
        }
        t => return Err(c.error(format!("file type {t}; expected 0 (ASCII) or 1 (binary)"))),
    }
    let binary = std::mem::replace(&mut c.binary, false);
    c.end_section("MeshFormat")?;
    c.binary = binary;
    Ok(())
}

/// `$PhysicalNames` (always ASCII): `dim tag "name"` lines.
fn physical_names(c: &mut Cursor, names: &mut HashMap<(usize, i64), String>) -> Result<()> {
    let n: usize = c.parse("the number of physical names")?;
    for _ in 0..n {
        let dim: usize = c.parse("a physical group's dimension")?;
        let tag: i64 = c.parse("a physical tag")?;
        c.skip_space();
        let rest = c.rest_of_line();
        let name = rest.trim_matches('"').to_string();
        if name.is_empty() {
            return Err(c.error("a physical group without a name"));
        }
        names.insert((dim, tag), name);
    }
    Ok(())
}

/// `$Entities`: the physical tags of every point, curve, surface and volume.
fn read_entities(c: &mut Cursor) -> Result<Entities> {
    let mut counts = [0usize; 4];
    for (d, n) in counts.iter_mut().enumerate() {
        *n = c.count(&format!("the number of entities of dimension {d}"), 4)?;
    }
    let mut map = HashMap::new();
    for (dim, &n) in counts.iter().enumerate() {
        for _ in 0..n {
            let tag = c.int("an entity tag")?;
            for _ in 0..if dim == 0 { 3 } else { 6 } {
                c.double("an entity's coordinates")?;
            }
            let np = c.count("the number of physical tags", 4)?;
            let mut tags = Vec::with_capacity(np);
            for _ in 0..np {
                tags.push(c.int("a physical tag")?);
            }
            if dim > 0 {
                let nb = c.count("the number of bounding entities", 4)?;
                for _ in 0..nb {
                    c.int("a bounding entity")?;
                }
            }
            map.insert((dim, tag), tags);
        }
    }
    Ok(map)
}

/// `$Nodes`: blocks of tags then coordinates.
fn read_nodes(c: &mut Cursor, mesh: &mut Mesh, index: &mut HashMap<u64, u32>) -> Result<()> {
    let blocks = c.count("the number of node blocks", 20)?;
    let total = c.count("the number of nodes", 32)?;
    c.size("the least node tag")?;
    c.size("the greatest node tag")?;
    mesh.vertices.reserve(total.min(1 << 20));
    mesh.vertex_ids.reserve(total.min(1 << 20));
    for _ in 0..blocks {
        let dim = c.int("a node block's entity dimension")?;
        c.int("a node block's entity tag")?;
        let parametric = c.int("a node block's parametric flag")? != 0;
        let n = c.count("the nodes of a block", 32)?;
        let start = mesh.vertices.len();
        for _ in 0..n {
            let place = c.place();
            let tag = c.size("a node tag")?;
            let k = mesh.vertex_ids.len() as u32;
            if index.insert(tag, k).is_some() {
                return Err(mesh_error(
                    c.origin,
                    format!("node tag {tag} appears twice{}", place.show()),
                ));
            }
            mesh.vertex_ids.push(tag);
        }
        let extra = if parametric {
            dim.clamp(0, 3) as usize
        } else {
            0
        };
        for k in 0..n {
            let mut p = [0.0; 3];
            for x in &mut p {
                *x = c.double("a node coordinate")?;
            }
            if let Some(a) = p.iter().position(|x| !x.is_finite()) {
                return Err(c.error(format!(
                    "node tag {}: coordinate {} is not finite",
                    mesh.vertex_ids[start + k],
                    ["x", "y", "z"][a]
                )));
            }
            for _ in 0..extra {
                c.double("a node's parametric coordinate")?;
            }
            mesh.vertices.push(p);
        }
    }
    if mesh.vertices.len() != total {
        return Err(c.error(format!(
            "the node blocks hold {} nodes; the section's header says {total}",
            mesh.vertices.len()
        )));
    }
    Ok(())
}

/// The kind of Gmsh element type `t`, or a message naming it.
fn kind_of(t: i64) -> std::result::Result<CellKind, String> {
    Ok(match t {
        15 => CellKind::Point,
        1 => CellKind::Line,
        2 => CellKind::Triangle,
        3 => CellKind::Quad,
        4 => CellKind::Tet,
        5 => CellKind::Hex,
        _ => {
            let name = match t {
                6 => "prism",
                7 => "pyramid",
                8 => "second-order line",
                9 => "second-order triangle",
                10 | 16 => "second-order quadrilateral",
                11 => "second-order tetrahedron",
                12 | 17 => "second-order hexahedron",
                _ => "unknown",
            };
            return Err(format!(
                "element type {t} ({name}) is not read; supported: points (15), lines (1), \
                 triangles (2), quadrilaterals (3), tetrahedra (4), hexahedra (5) of first order \
                 (Gmsh: Mesh.ElementOrder = 1; Mesh.RecombineAll for quadrilaterals)"
            ));
        }
    })
}

/// `$Elements`: blocks of one type on one entity.
fn read_elements(
    c: &mut Cursor,
    mesh: &mut Mesh,
    index: &HashMap<u64, u32>,
    entities: &Entities,
    names: &mut HashMap<(usize, i64), String>,
) -> Result<()> {
    let blocks = c.count("the number of element blocks", 20)?;
    let total = c.count("the number of elements", 16)?;
    c.size("the least element tag")?;
    c.size("the greatest element tag")?;
    mesh.elements.reserve(total.min(1 << 20));
    // group index of each (dim, physical tag)
    let mut group_of: HashMap<(usize, i64), u32> = HashMap::new();
    for _ in 0..blocks {
        let dim = c.int("an element block's entity dimension")?;
        let entity = c.int("an element block's entity tag")?;
        let etype = c.int("an element type")?;
        let n = c.count("the elements of a block", 16)?;
        let kind = match kind_of(etype) {
            Ok(k) => k,
            Err(message) => {
                let place = c.place();
                let first = if n > 0 {
                    c.size("an element tag").ok()
                } else {
                    None
                };
                let which = first.map_or(String::new(), |t| format!("element tag {t}: "));
                return Err(mesh_error(
                    c.origin,
                    format!("{which}{message}{}", place.show()),
                ));
            }
        };
        let dim = dim.clamp(0, 3) as usize;
        let physical = entities.get(&(dim, entity)).cloned().unwrap_or_default();
        let mut groups = Vec::with_capacity(physical.len());
        for &p in &physical {
            let next = mesh.groups.len() as u32;
            let g = *group_of.entry((dim, p)).or_insert_with(|| {
                let name = names.remove(&(dim, p)).unwrap_or_else(|| p.to_string());
                mesh.groups.push(Group { name, number: p });
                next
            });
            groups.push(g);
        }
        let material = physical.first().copied();
        for _ in 0..n {
            let place = c.place();
            let id = c.size("an element tag")?;
            let mut nodes = [0u32; 8];
            for slot in nodes.iter_mut().take(kind.vertices()) {
                let tag = c.size("an element's node tag")?;
                *slot = *index.get(&tag).ok_or_else(|| {
                    mesh_error(
                        c.origin,
                        format!(
                            "element tag {id} ({}): node tag {tag} is not in $Nodes{}",
                            kind.name(),
                            place.show()
                        ),
                    )
                })?;
            }
            mesh.elements.push(Element {
                kind,
                nodes,
                id,
                groups: groups.clone(),
                material,
                place,
            });
        }
    }
    // physical groups named but without elements are still groups (selecting none)
    let mut rest: Vec<_> = names.drain().collect();
    rest.sort();
    for ((_, number), name) in rest {
        mesh.groups.push(Group { name, number });
    }
    Ok(())
}
