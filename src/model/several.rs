//! Several materials in a model file (`docs/materials.md`): the `[[material]]` array of
//! tables, each a `[material]` table with a `name` and the nodes it takes (`id`, `regions`),
//! split at parsing into [`super::NamedMaterial`]s (the first also `Model::material`), and the
//! checks of the materials and `[[interface]]` tables that need no body: names unique and
//! known, the options every material shares equal, explicit interfaces complete. Which node
//! takes which material is resolved with the body (`crate::material::several`).

use super::{Interface, InterfaceRule, Material, Model};
use crate::{Error, Result};
use toml::{Table, Value};

/// The keys of a `[[material]]` entry that are not the material's constants.
const HEADER: [&str; 3] = ["name", "id", "regions"];

/// Split a `[[material]]` array of `tree` (a `[material]` table is left alone) into
/// `materials` (name, id, regions and the constants) and `material` (the first's constants).
pub(super) fn split_material_array(tree: &mut Table, origin: &str) -> Result<()> {
    let Some(Value::Array(entries)) = tree.get("material") else {
        return Ok(());
    };
    let parse = |field: String, message: String| Error::Parse {
        path: origin.to_string(),
        message: format!("{field}: {message}"),
    };
    if entries.is_empty() {
        return Err(parse(
            "material".into(),
            "an empty [[material]] array; give at least one material".into(),
        ));
    }
    if tree.contains_key("materials") {
        return Err(parse(
            "materials".into(),
            "give the materials as [[material]] tables, not both forms".into(),
        ));
    }
    let mut named = Vec::with_capacity(entries.len());
    for (k, entry) in entries.iter().enumerate() {
        let Value::Table(entry) = entry else {
            return Err(parse(format!("material.{k}"), "must be a table".into()));
        };
        let mut header = Table::new();
        let mut constants = entry.clone();
        for key in HEADER {
            if let Some(v) = constants.remove(key) {
                header.insert(key.into(), v);
            }
        }
        if !header.contains_key("name") {
            return Err(parse(
                format!("material.{k}.name"),
                "missing: each [[material]] needs a name (interfaces and `peridot info` \
                 name it)"
                    .into(),
            ));
        }
        if let Err(e) = Value::Table(constants.clone()).try_into::<Material>() {
            return Err(parse(format!("material.{k}"), e.message().trim().into()));
        }
        header.insert("material".into(), Value::Table(constants));
        named.push(Value::Table(header));
    }
    let first = named[0]["material"].clone();
    tree.insert("material".into(), first);
    tree.insert("materials".into(), Value::Array(named));
    Ok(())
}

/// Check the named materials and interfaces of `model` (each material's constants are
/// checked by `check_one`, with its field names prefixed `material.<k>.` by the caller).
pub(super) fn validate(model: &Model, check_one: impl Fn(&Material) -> Result<()>) -> Result<()> {
    if model.materials.is_empty() {
        return match model.interface.first() {
            Some(_) => Err(Error::model(
                "interface.0",
                "needs several materials: give [[material]] tables with names",
            )),
            None => Ok(()),
        };
    }
    let first = &model.materials[0].material;
    if canonical(first) != canonical(&model.material) {
        return Err(Error::model(
            "material",
            "differs from the first of materials: give the materials as [[material]] tables",
        ));
    }
    if model.materials.len() > MAX_MATERIALS {
        return Err(Error::model(
            "material",
            format!(
                "{} materials; at most {MAX_MATERIALS}",
                model.materials.len()
            ),
        ));
    }
    let regions: Vec<&str> = model.region.iter().map(|r| r.name.as_str()).collect();
    let mut rest = None;
    for (k, m) in model.materials.iter().enumerate() {
        let at = |key: &str| format!("material.{k}.{key}");
        check_one(&m.material).map_err(|e| prefixed(e, k))?;
        if m.name.trim().is_empty() {
            return Err(Error::model(at("name"), "must not be empty"));
        }
        if let Some(other) = model.materials[..k].iter().position(|o| o.name == m.name) {
            return Err(Error::model(
                at("name"),
                format!("\"{}\" is also material.{other}'s name", m.name),
            ));
        }
        for (r, name) in m.regions.iter().enumerate() {
            if !regions.contains(&name.as_str()) {
                return Err(Error::model(
                    format!("material.{k}.regions.{r}"),
                    format!("no region named \"{name}\" (defined: {})", quoted(&regions)),
                ));
            }
            let earlier = model.materials[..k]
                .iter()
                .position(|o| o.regions.contains(name));
            if let Some(other) = earlier {
                return Err(Error::model(
                    format!("material.{k}.regions.{r}"),
                    format!("region \"{name}\" is also assigned to material.{other}"),
                ));
            }
        }
        if let Some(id) = m.id {
            if let Some(other) = model.materials[..k].iter().position(|o| o.id == Some(id)) {
                return Err(Error::model(
                    at("id"),
                    format!("id {id} is also material.{other}'s"),
                ));
            }
        }
        if m.id.is_none() && m.regions.is_empty() {
            if let Some(other) = rest {
                return Err(Error::model(
                    at("regions"),
                    format!(
                        "material.{other} already takes the nodes no other material takes \
                         (it has neither id nor regions); give this one an id or regions"
                    ),
                ));
            }
            rest = Some(k);
        }
        shared(k, first, &m.material)?;
    }
    for (k, interface) in model.interface.iter().enumerate() {
        interface_table(k, interface, model)?;
    }
    Ok(())
}

/// The most materials a model may name (each node keeps its material's index in a byte).
pub const MAX_MATERIALS: usize = 255;

/// The options every material shares with the first, and the restrictions of several
/// materials (`docs/materials.md`).
fn shared(k: usize, first: &Material, m: &Material) -> Result<()> {
    let differ = |key: &str, a: String, b: String| {
        Err(Error::model(
            format!("material.{k}.{key}"),
            format!(
                "{b} differs from material.0's {a}: every material shares it (one model, one \
                 influence function)"
            ),
        ))
    };
    if m.model != first.model {
        return differ("model", first.model.name().into(), m.model.name().into());
    }
    if m.influence != first.influence {
        return differ(
            "influence",
            format!("{:?}", first.influence),
            format!("{:?}", m.influence),
        );
    }
    if m.surface_correction != first.surface_correction {
        let (a, b) = (first.surface_correction, m.surface_correction);
        return differ("surface_correction", a.to_string(), b.to_string());
    }
    if m.break_timing != first.break_timing {
        let (a, b) = (first.break_timing, m.break_timing);
        return differ("break_timing", format!("{a:?}"), format!("{b:?}"));
    }
    let refuse = |key: &str, what: &str| {
        Err(Error::model(
            format!("material.{k}.{key}"),
            format!("{what} with several materials is not supported; leave it out"),
        ))
    };
    if m.damage_law.is_some_and(|l| l != super::DamageLaw::Brittle) {
        return refuse("damage_law", "a softening damage law");
    }
    if m.critical_stretch_alpha.is_some_and(|a| a != 0.0) {
        return refuse("critical_stretch_alpha", "a nonzero alpha");
    }
    Ok(())
}

/// One `[[interface]]` table.
fn interface_table(k: usize, t: &Interface, model: &Model) -> Result<()> {
    let at = |key: &str| format!("interface.{k}.{key}");
    let names: Vec<&str> = model.materials.iter().map(|m| m.name.as_str()).collect();
    if t.materials.len() != 2 || t.materials[0] == t.materials[1] {
        return Err(Error::model(
            at("materials"),
            format!(
                "must name two different materials (got {:?}; defined: {})",
                t.materials,
                quoted(&names)
            ),
        ));
    }
    for (q, name) in t.materials.iter().enumerate() {
        if !names.contains(&name.as_str()) {
            return Err(Error::model(
                format!("interface.{k}.materials.{q}"),
                format!("no material named \"{name}\" (defined: {})", quoted(&names)),
            ));
        }
    }
    let same = |o: &Interface| {
        (o.materials[0] == t.materials[0] && o.materials[1] == t.materials[1])
            || (o.materials[0] == t.materials[1] && o.materials[1] == t.materials[0])
    };
    if let Some(other) = model.interface[..k].iter().position(same) {
        return Err(Error::model(
            at("materials"),
            format!("the pair {:?} also has interface.{other}", t.materials),
        ));
    }
    let state_based = model.material.model.is_state_based();
    let stiffness = t.youngs_modulus.is_some() || t.micromodulus.is_some();
    if t.rule != InterfaceRule::Explicit && (stiffness || t.critical_stretch.is_some()) {
        let key = match (t.youngs_modulus, t.micromodulus) {
            (Some(_), _) => "youngs_modulus",
            (_, Some(_)) => "micromodulus",
            _ => "critical_stretch",
        };
        return Err(Error::model(
            at(key),
            format!(
                "only with rule = \"explicit\" (got rule = \"{}\")",
                t.rule.name()
            ),
        ));
    }
    if t.rule == InterfaceRule::Explicit {
        match (state_based, t.youngs_modulus, t.micromodulus) {
            (true, _, _) if stiffness => {
                return Err(Error::model(
                    at(if t.youngs_modulus.is_some() {
                        "youngs_modulus"
                    } else {
                        "micromodulus"
                    }),
                    "not for a state-based model: each node keeps its own material's \
                     constants, and an interface gives its bonds' critical_stretch only",
                ))
            }
            (false, Some(_), Some(_)) => {
                return Err(Error::model(
                    at("micromodulus"),
                    "give youngs_modulus or micromodulus, not both",
                ))
            }
            (false, None, None) => {
                return Err(Error::model(
                    at("youngs_modulus"),
                    "rule = \"explicit\" needs youngs_modulus (Pa) or micromodulus (N/m^6)",
                ))
            }
            _ => {}
        }
        for (key, v) in [
            ("youngs_modulus", t.youngs_modulus),
            ("micromodulus", t.micromodulus),
        ] {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                return Err(Error::model(
                    at(key),
                    format!("must be finite and > 0 (got {})", v.unwrap_or(0.0)),
                ));
            }
        }
        if let Some(s) = t.critical_stretch {
            if !(s.is_finite() && s > 0.0 && s < 1.0) {
                return Err(Error::model(
                    at("critical_stretch"),
                    format!("must be in (0, 1) (got {s})"),
                ));
            }
        }
    }
    Ok(())
}

/// `error` of material `k`'s constants, its field renamed `material.<k>.<key>`.
fn prefixed(error: Error, k: usize) -> Error {
    match error {
        Error::Model { field, message } => Error::Model {
            field: match field.strip_prefix("material.") {
                Some(key) => format!("material.{k}.{key}"),
                None => field,
            },
            message: message.replace("material.", &format!("material.{k}.")),
        },
        other => other,
    }
}

/// The TOML text of a material, for comparing two.
fn canonical(m: &Material) -> String {
    toml::to_string(m).unwrap_or_default()
}

fn quoted(names: &[&str]) -> String {
    match names.is_empty() {
        true => "none".into(),
        false => names
            .iter()
            .map(|n| format!("\"{n}\""))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether `model` names several materials (more than one `[[material]]`).
pub fn several(model: &Model) -> bool {
    model.materials.len() > 1
}
