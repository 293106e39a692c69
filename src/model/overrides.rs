//! `--set KEY=VALUE` overrides applied to the parsed TOML tree before deserialization.
//!
//! `KEY` is a dotted path into the tree (`discretization.dx`, `boundary.0.y`,
//! `geometry.box.0.max`); a numeric segment indexes an array (of tables or of values). `VALUE`
//! is read as a TOML value (`0.5e-3`, `20`, `true`, `"text"`, `[1, 2]`, `{ a = 1 }`) and, where it
//! is not one, taken as a bare string (`material.model=lps`). Missing table keys are created;
//! the schema then refuses the unknown ones by name. Indexing past the end of an array, into a
//! value that is not an array, or through a plain value is an error naming `--set` and the key.

use crate::{Error, Result};
use toml::{Table, Value};

/// Apply one `KEY=VALUE` override (`discretization.dx=0.5e-3`, `boundary.0.y=20`).
pub fn apply(tree: &mut Table, assignment: &str) -> Result<()> {
    let Some((key, value)) = assignment.split_once('=') else {
        return Err(Error::Usage {
            option: "--set".to_string(),
            message: format!(
                "`{assignment}` has no `=`: expected KEY=VALUE with KEY a dotted path into the \
                 model (e.g. --set discretization.dx=0.5e-3, --set boundary.0.y=20)"
            ),
        });
    };
    let key = key.trim();
    let segments: Vec<&str> = key.split('.').map(str::trim).collect();
    if key.is_empty() {
        return Err(usage(
            key,
            format!(
                "`{assignment}` has no key before `=`: expected KEY=VALUE with KEY a dotted \
                 path into the model (e.g. --set discretization.dx=0.5e-3)"
            ),
        ));
    }
    if segments.iter().any(|s| s.is_empty()) {
        return Err(usage(
            key,
            "the key must be a dotted path of non-empty names and indices \
             (e.g. discretization.dx, boundary.0.y)",
        ));
    }
    set(tree, key, &segments, parse_value(value.trim()))
}

/// A TOML value, or the text itself as a string where it does not parse as one.
fn parse_value(text: &str) -> Value {
    text.parse::<Value>()
        .unwrap_or_else(|_| Value::String(text.to_string()))
}

/// An override error naming the option and the key.
fn usage(key: &str, message: impl Into<String>) -> Error {
    Error::Usage {
        option: match key {
            "" => "--set".to_string(),
            _ => format!("--set {key}"),
        },
        message: message.into(),
    }
}

/// Where the walk stands: the container the next segment selects from.
enum Node<'a> {
    Table(&'a mut Table),
    Array(&'a mut Vec<Value>),
}

/// Walk `segments` from `tree` and put `value` at the end of the path.
fn set(tree: &mut Table, key: &str, segments: &[&str], value: Value) -> Result<()> {
    let mut node = Node::Table(tree);
    let last = segments.len() - 1;
    for (k, seg) in segments.iter().enumerate() {
        let here = segments[..k].join(".");
        let slot: &mut Value = match node {
            Node::Table(table) => {
                if index_of(seg).is_some() && !table.contains_key(*seg) {
                    return Err(usage(key, not_an_array(&here, seg)));
                }
                if k == last {
                    table.insert(seg.to_string(), value);
                    return Ok(());
                }
                if !table.contains_key(*seg) {
                    if index_of(segments[k + 1]).is_some() {
                        return Err(usage(key, absent_array(&segments[..=k].join("."))));
                    }
                    table.insert(seg.to_string(), Value::Table(Table::new()));
                }
                match table.get_mut(*seg) {
                    Some(v) => v,
                    None => return Err(usage(key, format!("`{seg}` could not be created"))),
                }
            }
            Node::Array(array) => {
                let i = checked_index(key, &here, seg, array.len())?;
                if k == last {
                    array[i] = value;
                    return Ok(());
                }
                &mut array[i]
            }
        };
        node = match slot {
            Value::Table(t) => Node::Table(t),
            Value::Array(a) => Node::Array(a),
            other => {
                let path = segments[..=k].join(".");
                return Err(usage(
                    key,
                    format!(
                        "`{path}` is a {}, not a table or an array, so `{}` cannot be set \
                         inside it (set `{path}` itself)",
                        other.type_str(),
                        segments[k + 1]
                    ),
                ));
            }
        };
    }
    Ok(())
}

/// The index a segment spells, if it is all digits.
fn index_of(seg: &str) -> Option<usize> {
    if seg.bytes().all(|b| b.is_ascii_digit()) {
        seg.parse().ok()
    } else {
        None
    }
}

/// Check an array index segment against the array length `len`.
fn checked_index(key: &str, here: &str, seg: &str, len: usize) -> Result<usize> {
    let allowed = match len {
        0 => format!("`{here}` has no entries"),
        1 => format!("`{here}` has 1 entry (index 0)"),
        n => format!("`{here}` has {n} entries (indices 0 to {})", n - 1),
    };
    match index_of(seg) {
        Some(i) if i < len => Ok(i),
        Some(i) => Err(usage(key, format!("index {i} is out of range: {allowed}"))),
        None => Err(usage(
            key,
            format!("`{here}` is an array, so `{seg}` must be an index: {allowed}"),
        )),
    }
}

fn not_an_array(here: &str, seg: &str) -> String {
    if here.is_empty() {
        format!("the model is a table, not an array, so index {seg} is not allowed here")
    } else {
        format!(
            "`{here}` is a table, not an array, so index {seg} is not allowed (give a key name)"
        )
    }
}

fn absent_array(path: &str) -> String {
    format!(
        "`{path}` is not in the model, so it cannot be indexed: an override can change an \
         existing array entry, not add one"
    )
}
