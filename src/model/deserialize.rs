//! Deserialization of the (overridden) TOML tree into a [`Model`], with schema errors that name
//! the dotted field path including array indices (`region.1: unknown field `foo``).
//!
//! The `toml` crate reports the path of a schema error without array indices (`boundary.kind`),
//! so on error each entry of the array on that path is deserialized alone to find the one at
//! fault.

use super::{Boundary, BoxShape, Model, Precrack, Region, Shape};
use crate::{Error, Result};
use serde::de::DeserializeOwned;
use toml::{Table, Value};

/// Deserialize `tree` into a model; `origin` names the file in messages.
pub(super) fn model_from_tree(mut tree: Table, origin: &str) -> Result<Model> {
    super::several::split_material_array(&mut tree, origin)?;
    let error = match Value::Table(tree.clone()).try_into::<Model>() {
        Ok(model) => return Ok(model),
        Err(e) => e,
    };
    let (path, message) = split(&error);
    let located = locate(&tree, &path).unwrap_or((path, message));
    Err(Error::Parse {
        path: origin.to_string(),
        message: match located {
            (p, m) if p.is_empty() => m,
            (p, m) => format!("{p}: {m}"),
        },
    })
}

/// The key path (without indices) and message of a `toml` deserialization error.
fn split(error: &toml::de::Error) -> (String, String) {
    let text = error.to_string();
    let path = text
        .rfind("\nin `")
        .and_then(|start| {
            let rest = &text[start + 5..];
            rest.find('`').map(|end| rest[..end].to_string())
        })
        .unwrap_or_default();
    (path, error.message().trim_end().to_string())
}

/// Find the array entry at fault for an error at `path`: returns the path with the index
/// inserted and the entry's own message, or `None` where the path crosses no array of tables.
fn locate(tree: &Table, path: &str) -> Option<(String, String)> {
    const ARRAYS: [&str; 5] = [
        "geometry.box",
        "geometry.remove",
        "precrack",
        "region",
        "boundary",
    ];
    let array = ARRAYS
        .iter()
        .find(|a| path == **a || path.starts_with(&format!("{a}.")))?;
    let entries = match array.split_once('.') {
        Some((table, key)) => tree.get(table)?.get(key)?.as_array()?,
        None => tree.get(*array)?.as_array()?,
    };
    entries.iter().enumerate().find_map(|(i, entry)| {
        let error = match *array {
            "geometry.box" => entry_error::<BoxShape>(entry),
            "geometry.remove" => entry_error::<Shape>(entry),
            "precrack" => entry_error::<Precrack>(entry),
            "region" => entry_error::<Region>(entry),
            _ => entry_error::<Boundary>(entry),
        }?;
        let (inner, message) = split(&error);
        let at = match inner.is_empty() {
            true => format!("{array}.{i}"),
            false => format!("{array}.{i}.{inner}"),
        };
        Some((at, message))
    })
}

/// The error of deserializing one array entry as `T`, if any.
fn entry_error<T: DeserializeOwned>(entry: &Value) -> Option<toml::de::Error> {
    entry.clone().try_into::<T>().err()
}
