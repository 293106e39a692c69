//! The model file: schema (`schema.rs`), `--set` overrides applied to the parsed TOML tree
//! (`overrides.rs`), deserialization with errors naming the field path and array index
//! (`deserialize.rs`), and range and consistency checks (`validate.rs`). The file format is
//! documented in `docs/models.md`.
//!
//! `load` is the one entry point: read, override, deserialize, validate. Every error names the
//! dotted field path, the value and the allowed range.

mod deserialize;
pub mod fingerprint;
mod located;
pub mod overrides;
pub mod schema;
pub mod several;
pub mod size;
pub mod validate;

pub use schema::*;

use crate::{Error, Result};
use std::path::Path;

/// Read a model file, apply `--set KEY=VALUE` overrides, deserialize and validate it.
pub fn load(path: &Path, overrides: &[String]) -> Result<Model> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut model = parse(&text, &path.display().to_string(), overrides)?;
    if model.name.is_none() {
        model.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
    }
    Ok(model)
}

/// Parse model text (`origin` names it in messages), apply overrides, validate.
pub fn parse(text: &str, origin: &str, overrides: &[String]) -> Result<Model> {
    let mut tree: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        let field = e.span().and_then(|r| located::field_at(text, r.start));
        let message = located::message(e.message()) + &location(text, e.span());
        Error::Parse {
            path: origin.to_string(),
            message: match field {
                Some(field) => format!("{field}: {message}"),
                None => message,
            },
        }
    })?;
    for o in overrides {
        overrides::apply(&mut tree, o)?;
    }
    let model = deserialize::model_from_tree(tree, origin)?;
    validate::validate(&model)?;
    Ok(model)
}

fn location(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(r) => {
            let line = text[..r.start.min(text.len())].matches('\n').count() + 1;
            format!(" (line {line})")
        }
        None => String::new(),
    }
}
