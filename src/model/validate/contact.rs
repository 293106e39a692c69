//! Checks of `[contact]` and `[[impactor]]`: factors in their ranges, each shape's keys and
//! no other, `d` finite components, a positive mass for a free impactor, explicit runs only
//! (units: m, kg, m/s; factors of `dx` and of the bond constant).

use super::{dim_name, num, positive};
use crate::model::{Contact, Dimension, Impactor, ImpactorMotion, ImpactorShape, SolverKind};
use crate::{Error, Result};

/// `[contact]`.
pub(super) fn contact(c: &Contact, kind: SolverKind) -> Result<()> {
    explicit_only("contact", kind)?;
    for (name, value, range) in [
        ("distance_factor", c.distance_factor, (0.0, 2.0)),
        ("stiffness_factor", c.stiffness_factor, (0.0, 1e6)),
        ("skin_factor", c.skin_factor, (0.0, 2.0)),
    ] {
        let Some(v) = value else { continue };
        if !(v > range.0 && v <= range.1) {
            return Err(Error::model(
                format!("contact.{name}"),
                format!(
                    "is {}; expected in ({}, {}]",
                    num(v),
                    num(range.0),
                    num(range.1)
                ),
            ));
        }
    }
    Ok(())
}

/// `[[impactor]]` entry `i`.
pub(super) fn impactor(i: usize, imp: &Impactor, dim: Dimension, kind: SolverKind) -> Result<()> {
    let f = format!("impactor.{i}");
    explicit_only(&f, kind)?;
    let d = dim.d();
    let given = [
        ("center", imp.center.is_some()),
        ("radius", imp.radius.is_some()),
        ("axis", imp.axis.is_some()),
        ("half_length", imp.half_length.is_some()),
        ("min", imp.min.is_some()),
        ("max", imp.max.is_some()),
    ];
    let (needs, allowed): (&[&str], &[&str]) = match (imp.shape, d) {
        (ImpactorShape::Punch, _) => (&["min", "max"], &["min", "max"]),
        (ImpactorShape::Cylinder, 3) => (
            &["center", "radius", "axis"],
            &["center", "radius", "axis", "half_length"],
        ),
        _ => (&["center", "radius"], &["center", "radius"]),
    };
    let shape = match imp.shape {
        ImpactorShape::Sphere => "sphere",
        ImpactorShape::Cylinder => "cylinder",
        ImpactorShape::Punch => "punch",
    };
    for (key, present) in given {
        if needs.contains(&key) && !present {
            return Err(Error::model(
                format!("{f}.{key}"),
                format!(
                    "is missing; shape = \"{shape}\" in {} needs {needs:?}",
                    dim_name(dim)
                ),
            ));
        }
    }
    for (key, present) in given {
        if present && !allowed.contains(&key) {
            return Err(Error::model(
                format!("{f}.{key}"),
                format!(
                    "is not a key of shape = \"{shape}\" in {} (keys: {allowed:?})",
                    dim_name(dim)
                ),
            ));
        }
    }
    for (key, v) in [
        ("center", &imp.center),
        ("axis", &imp.axis),
        ("min", &imp.min),
        ("max", &imp.max),
        ("velocity", &Some(imp.velocity.clone())),
    ] {
        if let Some(v) = v {
            vector(&format!("{f}.{key}"), v, dim)?;
        }
    }
    if let Some(r) = imp.radius {
        positive(&format!("{f}.radius"), r, " m")?;
    }
    if let Some(h) = imp.half_length {
        positive(&format!("{f}.half_length"), h, " m")?;
    }
    if let Some(a) = &imp.axis {
        if a.iter().map(|x| x * x).sum::<f64>() == 0.0 {
            return Err(Error::model(
                format!("{f}.axis"),
                "is zero; give a direction",
            ));
        }
    }
    if let (Some(lo), Some(hi)) = (&imp.min, &imp.max) {
        if let Some(k) = (0..d).find(|&k| lo[k] >= hi[k]) {
            return Err(Error::model(
                format!("{f}.max"),
                format!(
                    "component {} is {}, not above min's {}",
                    k + 1,
                    num(hi[k]),
                    num(lo[k])
                ),
            ));
        }
    }
    match (imp.motion, imp.mass) {
        (ImpactorMotion::Free, None) => Err(Error::model(
            format!("{f}.mass"),
            "is missing; a free impactor needs its mass (kg), or give motion = \"prescribed\"",
        )),
        (ImpactorMotion::Free, Some(m)) => positive(&format!("{f}.mass"), m, " kg"),
        (ImpactorMotion::Prescribed, Some(_)) => Err(Error::model(
            format!("{f}.mass"),
            "is for motion = \"free\"; a prescribed impactor moves at its velocity whatever \
             the force",
        )),
        (ImpactorMotion::Prescribed, None) => Ok(()),
    }
}

/// `d` finite components.
fn vector(field: &str, v: &[f64], dim: Dimension) -> Result<()> {
    if v.len() != dim.d() {
        return Err(Error::model(
            field,
            format!(
                "{} components; dimension = \"{}\" needs {}",
                v.len(),
                dim_name(dim),
                dim.d()
            ),
        ));
    }
    if let Some(k) = v.iter().position(|x| !x.is_finite()) {
        return Err(Error::model(
            field,
            format!("component {} is {}; expected a finite number", k + 1, v[k]),
        ));
    }
    Ok(())
}

fn explicit_only(field: &str, kind: SolverKind) -> Result<()> {
    match kind {
        SolverKind::Explicit => Ok(()),
        SolverKind::Adr => Err(Error::model(
            field,
            "contact and impactors are for solver.kind = \"explicit\" (ADR relaxes to a static \
             state)",
        )),
    }
}
