//! The VTK XML unstructured grid (`.vtu`) reader: one `Piece`, its `Points`, its `Cells`
//! (`connectivity`, `offsets`, `types`) and an integer `CellData` array (the first one, or
//! the one named `gmsh:physical`, `region` or `material` where present) whose values group
//! the cells. Data arrays may be `ascii`, inline `binary` (base64) or `appended` (raw or
//! base64), little-endian, with a `UInt32` or `UInt64` header; compressed data is refused.
//! Cell types: vertex (1), line (3), triangle (5), quad (9), tetra (10), hexahedron (12).

use super::{mesh_error, CellKind, Element, Group, Mesh, Place};
use crate::Result;
use std::collections::HashMap;

/// Cell-data array names preferred as the cells' groups, in order.
const GROUP_ARRAYS: [&str; 4] = ["gmsh:physical", "region", "material", "CellEntityIds"];

/// Attribute `name` of the tag text `tag` (`<DataArray type="Float64" ...>`).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let end = tag[start..].find('"')? + start;
    Some(&tag[start..end])
}

/// The decoder of a file: its XML, appended data and header width.
struct Vtu<'a> {
    origin: &'a str,
    xml: &'a str,
    appended: Option<(&'a [u8], bool)>,
    header64: bool,
}

/// A data array's tag and its inline text.
struct Array<'a> {
    tag: &'a str,
    text: &'a str,
}

impl<'a> Vtu<'a> {
    fn err(&self, what: impl std::fmt::Display) -> crate::Error {
        mesh_error(self.origin, what)
    }

    /// The text between `<name` and `</name>` (first occurrence), or `None`.
    fn section(&self, name: &str) -> Option<&'a str> {
        let open = format!("<{name}");
        let start = self.xml.find(&open)?;
        let close = format!("</{name}>");
        let end = self.xml[start..].find(&close)? + start;
        Some(&self.xml[start..end])
    }

    /// The data arrays of a section's text.
    fn arrays(&self, text: &'a str) -> Vec<Array<'a>> {
        let mut out = Vec::new();
        let mut rest = text;
        while let Some(k) = rest.find("<DataArray") {
            rest = &rest[k..];
            let Some(close) = rest.find('>') else { break };
            let tag = &rest[..=close];
            if tag.ends_with("/>") {
                out.push(Array { tag, text: "" });
                rest = &rest[close + 1..];
            } else {
                let body = &rest[close + 1..];
                let end = body.find("</DataArray>").unwrap_or(body.len());
                out.push(Array {
                    tag,
                    text: &body[..end],
                });
                rest = &body[end..];
            }
        }
        out
    }

    /// The values of `array` as `f64` (`count` of them).
    fn values(&self, array: &Array, count: usize) -> Result<Vec<f64>> {
        let name = attr(array.tag, "Name").unwrap_or("?");
        let ty = attr(array.tag, "type").unwrap_or("");
        let width = match ty {
            "Int8" | "UInt8" => 1,
            "Int16" | "UInt16" => 2,
            "Int32" | "UInt32" | "Float32" => 4,
            "Int64" | "UInt64" | "Float64" => 8,
            _ => {
                return Err(self.err(format!(
                    "DataArray \"{name}\": type \"{ty}\" is not read (Int8..UInt64, Float32, \
                     Float64)"
                )))
            }
        };
        let format = attr(array.tag, "format").unwrap_or("ascii");
        let bytes: Vec<u8> = match format {
            "ascii" => {
                let mut out = Vec::with_capacity(count.min(array.text.len()));
                for t in array.text.split_ascii_whitespace() {
                    let v: f64 = t.parse().map_err(|_| {
                        self.err(format!(
                            "DataArray \"{name}\": value {} '{t}' is not a number",
                            out.len()
                        ))
                    })?;
                    out.push(v);
                }
                return self.counted(name, out, count);
            }
            "binary" => {
                let raw = decode64(array.text.trim().as_bytes(), usize::MAX)
                    .ok_or_else(|| self.err(format!("DataArray \"{name}\": bad base64")))?;
                self.payload(name, &raw)?
            }
            "appended" => {
                let Some((data, base64)) = self.appended else {
                    return Err(self.err(format!(
                        "DataArray \"{name}\" is appended, but the file has no AppendedData"
                    )));
                };
                let offset: usize = attr(array.tag, "offset")
                    .and_then(|o| o.parse().ok())
                    .ok_or_else(|| self.err(format!("DataArray \"{name}\": no offset")))?;
                let Some(from) = data.get(offset..) else {
                    return Err(self.err(format!(
                        "DataArray \"{name}\": offset {offset} lies past the appended data \
                         (truncated?)"
                    )));
                };
                if base64 {
                    let h = if self.header64 { 8 } else { 4 };
                    let head = decode64(from, h)
                        .ok_or_else(|| self.err(format!("DataArray \"{name}\": bad base64")))?;
                    let size = self.header(&head);
                    let raw = decode64(from, h + size)
                        .ok_or_else(|| self.err(format!("DataArray \"{name}\": bad base64")))?;
                    self.payload(name, &raw)?
                } else {
                    self.payload(name, from)?
                }
            }
            f => {
                return Err(self.err(format!(
                    "DataArray \"{name}\": format \"{f}\" is not read (ascii, binary, appended)"
                )))
            }
        };
        let n = bytes.len() / width;
        let out = (0..n)
            .map(|k| {
                let b = &bytes[k * width..(k + 1) * width];
                let mut w = [0u8; 8];
                w[..width].copy_from_slice(b);
                match ty {
                    "Float64" => f64::from_le_bytes(w),
                    "Float32" => f32::from_le_bytes([w[0], w[1], w[2], w[3]]) as f64,
                    "Int8" => b[0] as i8 as f64,
                    "Int16" => i16::from_le_bytes([w[0], w[1]]) as f64,
                    "Int32" => i32::from_le_bytes([w[0], w[1], w[2], w[3]]) as f64,
                    "Int64" => i64::from_le_bytes(w) as f64,
                    _ => u64::from_le_bytes(w) as f64,
                }
            })
            .collect();
        self.counted(name, out, count)
    }

    fn header(&self, head: &[u8]) -> usize {
        let mut w = [0u8; 8];
        let h = if self.header64 { 8 } else { 4 };
        w[..h.min(head.len())].copy_from_slice(&head[..h.min(head.len())]);
        u64::from_le_bytes(w) as usize
    }

    /// The data bytes of a block that starts with its byte-count header.
    fn payload(&self, name: &str, block: &[u8]) -> Result<Vec<u8>> {
        let h = if self.header64 { 8 } else { 4 };
        if block.len() < h {
            return Err(self.err(format!("DataArray \"{name}\": no size header (truncated?)")));
        }
        let size = self.header(&block[..h]);
        match block.get(h..h.saturating_add(size)) {
            Some(b) => Ok(b.to_vec()),
            None => Err(self.err(format!(
                "DataArray \"{name}\": {size} bytes announced, {} left (truncated?)",
                block.len() - h
            ))),
        }
    }

    fn counted(&self, name: &str, values: Vec<f64>, count: usize) -> Result<Vec<f64>> {
        if values.len() < count {
            return Err(self.err(format!(
                "DataArray \"{name}\": {} values, {count} expected (truncated?)",
                values.len()
            )));
        }
        Ok(values)
    }
}

/// Base64 decoded quantum by quantum (so blocks encoded one after the other, each padded,
/// decode too), stopping once `want` bytes are out; `None` on a bad character.
fn decode64(text: &[u8], want: usize) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::new();
    let mut quantum = Vec::with_capacity(4);
    for &c in text {
        if out.len() >= want {
            break;
        }
        if c.is_ascii_whitespace() {
            continue;
        }
        if c == b'<' {
            break;
        }
        quantum.push(c);
        if quantum.len() == 4 {
            let pad = quantum.iter().filter(|&&c| c == b'=').count();
            let mut v = 0u32;
            for &q in &quantum {
                v = (v << 6) | if q == b'=' { 0 } else { value(q)? };
            }
            let bytes = [(v >> 16) as u8, (v >> 8) as u8, v as u8];
            out.extend_from_slice(&bytes[..3 - pad.min(2)]);
            quantum.clear();
        }
    }
    out.truncate(want.min(out.len()));
    Some(out)
}

/// The kind of VTK cell type `t`.
fn kind_of(t: f64) -> Option<CellKind> {
    Some(match t as i64 {
        1 => CellKind::Point,
        3 => CellKind::Line,
        5 => CellKind::Triangle,
        9 => CellKind::Quad,
        10 => CellKind::Tet,
        12 => CellKind::Hex,
        _ => return None,
    })
}

/// Parse the bytes of a `.vtu` file (`origin` names it in messages).
pub(crate) fn parse_vtu(data: &[u8], origin: &str) -> Result<Mesh> {
    let marker = b"<AppendedData";
    let split = data.windows(marker.len()).position(|w| w == marker);
    let xml_bytes = &data[..split.unwrap_or(data.len())];
    let xml = std::str::from_utf8(xml_bytes)
        .map_err(|_| mesh_error(origin, "the XML part is not UTF-8 text"))?;
    let appended = match split {
        Some(k) => {
            let rest = &data[k..];
            let close = rest.iter().position(|&b| b == b'>').unwrap_or(rest.len());
            let tag = std::str::from_utf8(&rest[..close]).unwrap_or("");
            let base64 = attr(tag, "encoding") == Some("base64");
            let under = rest[close..].iter().position(|&b| b == b'_');
            under.map(|u| (&rest[close + u + 1..], base64))
        }
        None => None,
    };
    let file_tag = xml
        .find("<VTKFile")
        .map(|k| &xml[k..k + xml[k..].find('>').unwrap_or(0)])
        .ok_or_else(|| mesh_error(origin, "no <VTKFile> element; not a VTK XML file"))?;
    if attr(file_tag, "type") != Some("UnstructuredGrid") {
        return Err(mesh_error(origin, "not an UnstructuredGrid file"));
    }
    if attr(file_tag, "byte_order") == Some("BigEndian") {
        return Err(mesh_error(origin, "big-endian data is not read"));
    }
    if let Some(c) = attr(file_tag, "compressor") {
        return Err(mesh_error(
            origin,
            format!("compressed data ({c}) is not read; write the file uncompressed"),
        ));
    }
    let v = Vtu {
        origin,
        xml,
        appended,
        header64: attr(file_tag, "header_type") == Some("UInt64"),
    };
    if xml.matches("<Piece").count() != 1 {
        return Err(v.err("expected exactly one <Piece>"));
    }
    let piece = v
        .section("Piece")
        .ok_or_else(|| v.err("no </Piece> (truncated?)"))?;
    let number = |key: &str| -> Result<usize> {
        let tag = &piece[..piece.find('>').unwrap_or(0)];
        attr(tag, key)
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| v.err(format!("<Piece> has no {key}")))
    };
    let (points, cells) = (number("NumberOfPoints")?, number("NumberOfCells")?);
    if points > data.len() || cells > data.len() {
        return Err(v.err(format!(
            "<Piece> announces {points} points and {cells} cells, more than the file's {} \
             bytes can hold",
            data.len()
        )));
    }
    let mut mesh = Mesh {
        origin: origin.to_string(),
        element_word: "cell",
        ..Mesh::default()
    };
    let pts = v.section("Points").ok_or_else(|| v.err("no <Points>"))?;
    let pa = v.arrays(pts);
    let first = pa
        .first()
        .ok_or_else(|| v.err("<Points> holds no DataArray"))?;
    let xyz = v.values(first, 3 * points)?;
    for k in 0..points {
        let p = [xyz[3 * k], xyz[3 * k + 1], xyz[3 * k + 2]];
        if let Some(a) = p.iter().position(|x| !x.is_finite()) {
            return Err(v.err(format!(
                "point {k}: coordinate {} is not finite",
                ["x", "y", "z"][a]
            )));
        }
        mesh.vertices.push(p);
        mesh.vertex_ids.push(k as u64);
    }
    let cs = v.section("Cells").ok_or_else(|| v.err("no <Cells>"))?;
    let named: HashMap<&str, Array> = v
        .arrays(cs)
        .into_iter()
        .map(|a| (attr(a.tag, "Name").unwrap_or(""), a))
        .collect();
    let get = |n: &str| {
        named
            .get(n)
            .ok_or_else(|| v.err(format!("<Cells> has no \"{n}\" array")))
    };
    let offsets = v.values(get("offsets")?, cells)?;
    let types = v.values(get("types")?, cells)?;
    let total = offsets.get(cells.wrapping_sub(1)).copied().unwrap_or(0.0) as usize;
    let conn = v.values(get("connectivity")?, total)?;
    let groups = cell_groups(&v, cells)?;
    if let Some((_, values)) = &groups {
        let mut values = values.clone();
        values.sort_unstable();
        values.dedup();
        mesh.groups = values
            .iter()
            .map(|&n| Group {
                name: n.to_string(),
                number: n,
            })
            .collect();
    }
    let mut start = 0usize;
    for c in 0..cells {
        let end = offsets[c] as usize;
        let kind = kind_of(types[c]).ok_or_else(|| {
            v.err(format!(
                "cell {c}: VTK cell type {} is not read; supported: vertex (1), line (3), \
                 triangle (5), quad (9), tetra (10), hexahedron (12)",
                types[c]
            ))
        })?;
        if end < start || end - start != kind.vertices() || end > conn.len() {
            return Err(v.err(format!(
                "cell {c} ({}): offsets give {} vertices, expected {}",
                kind.name(),
                end as i64 - start as i64,
                kind.vertices()
            )));
        }
        let mut nodes = [0u32; 8];
        for (slot, &p) in nodes.iter_mut().zip(&conn[start..end]) {
            if !(p >= 0.0 && (p as usize) < points) {
                return Err(v.err(format!(
                    "cell {c} ({}): point {p} does not exist (the file has {points} points)",
                    kind.name()
                )));
            }
            *slot = p as u32;
        }
        let value = groups.as_ref().map(|g| g.1[c]);
        let group = value.and_then(|x| mesh.groups.iter().position(|g| g.number == x));
        mesh.elements.push(Element {
            kind,
            nodes,
            id: c as u64,
            groups: group.map(|g| vec![g as u32]).unwrap_or_default(),
            material: value,
            place: Place::Unknown,
        });
        start = end;
    }
    Ok(mesh)
}

/// The integer cell-data array that groups the cells: its name and values.
fn cell_groups(v: &Vtu, cells: usize) -> Result<Option<(String, Vec<i64>)>> {
    let Some(cd) = v.section("CellData") else {
        return Ok(None);
    };
    let arrays: Vec<Array> = v
        .arrays(cd)
        .into_iter()
        .filter(|a| {
            attr(a.tag, "type").is_some_and(|t| t.contains("Int"))
                && attr(a.tag, "NumberOfComponents").unwrap_or("1") == "1"
        })
        .collect();
    let name_of = |a: &Array| attr(a.tag, "Name").unwrap_or("").to_string();
    let chosen = GROUP_ARRAYS
        .iter()
        .find_map(|n| arrays.iter().find(|a| name_of(a) == *n))
        .or(arrays.first());
    let Some(a) = chosen else { return Ok(None) };
    let values = v.values(a, cells)?;
    Ok(Some((
        name_of(a),
        values.iter().map(|&x| x as i64).collect(),
    )))
}
