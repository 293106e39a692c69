//! The checks of a model that need its discretized body, run before any neighbour search:
//! by `peridot validate`, `info` and `run` alike (all three call [`checked_body`], and
//! [`Problem::build_with`](super::Problem::build_with) and
//! [`Problem::build_lean`](super::Problem::build_lean) do too).
//!
//! Building the body ([`build_body`]) already refuses a node count above the index limit
//! (estimated from the boxes and `dx` before any lattice point is placed; counted for a
//! cloud), an unreadable or malformed CSV file (naming the line and column), a cloud of fewer
//! than 2 points or with a repeated point (naming both lines), an empty body, a body of one
//! node and a removed shape lying entirely outside the body or taking no node of it. Here, on
//! the body: every region selects a node, every pre-crack cuts a bond (searched among the
//! nodes near it only), and the material gives finite, non-zero constants at this spacing.
//! Each message names the field and `dx`. Lengths in metres, SI otherwise.

use crate::geometry::{bond_crosses_precrack, build_body, region_nodes, Body};
use crate::material::constants::pmb_micromodulus;
use crate::material::{family_radius, Law, MaterialConstants};
use crate::model::{Model, Precrack};
use crate::neighbors::CellList;
use crate::{Error, Precision, Result};
use rayon::prelude::*;
use std::path::Path;

/// The body of a validated `model` (`model_dir` resolves a relative `points_csv`), after
/// every check that needs the body and no neighbour search; the first problem found is an
/// error naming its field.
pub fn checked_body(model: &Model, model_dir: &Path) -> Result<Body> {
    checked_body_for(model, model_dir, Precision::F64)
}

/// [`checked_body`] for a run in `precision`: the material's numbers must be normal in it.
pub fn checked_body_for(model: &Model, model_dir: &Path, precision: Precision) -> Result<Body> {
    let body = build_body(model, model_dir)?;
    check_body(model, &body, precision)?;
    Ok(body)
}

/// The checks of [`checked_body_for`] on an already built `body` of `model`.
pub fn check_body(model: &Model, body: &Body, precision: Precision) -> Result<()> {
    for (k, r) in model.region.iter().enumerate() {
        region_nodes(body, &r.shape, &format!("region.{k}"))?;
    }
    precracks(model, body)?;
    check_material(model, body, precision)
}

/// Every pre-crack must have a node within the family radius of its bounding box: a crack
/// farther from every node cuts no bond (a bond lies within its length of both its ends). A
/// crack that reaches partly outside the body is fine.
fn precracks(model: &Model, body: &Body) -> Result<()> {
    let kind = model.discretization.partial_volume;
    let radius = family_radius(kind, body.delta, body.dx);
    for (k, b) in super::crack_boxes(model, body.dim(), radius)
        .into_iter()
        .enumerate()
    {
        let Some(b) = b else { continue };
        let boxes = [b];
        let near: Vec<[f64; 3]> = body
            .positions
            .par_iter()
            .filter(|x| super::in_any(&boxes, x))
            .copied()
            .collect();
        if near.is_empty() {
            return Err(Error::model(
                format!("precrack.{k}"),
                format!(
                    "the pre-crack lies entirely outside the body: no node within the family \
                     radius {} m of it at dx = {} m, so it cuts no bond; the body's nodes \
                     span {} to {} m",
                    num(radius),
                    num(body.dx),
                    show(&body.bbox_min, body.dim()),
                    show(&body.bbox_max, body.dim())
                ),
            ));
        }
        if !cuts_a_bond(&model.precrack[k], body.dim(), &near, radius) {
            return Err(Error::model(
                format!("precrack.{k}"),
                format!(
                    "the pre-crack cuts no bond at dx = {} m (family radius {} m): no two \
                     nodes within that radius lie strictly on opposite sides of it, so it \
                     leaves the body intact; make it longer than dx, place it between lattice \
                     rows, or decrease dx",
                    num(body.dx),
                    num(radius)
                ),
            ));
        }
    }
    Ok(())
}

/// Whether `crack` crosses a bond between two of the nodes `near` (the nodes within `radius`
/// of its bounding box, where every bond it crosses has both ends).
fn cuts_a_bond(crack: &Precrack, dim: usize, near: &[[f64; 3]], radius: f64) -> bool {
    let list = CellList::new(near, dim, radius);
    (0..near.len()).into_par_iter().any(|i| {
        let mut family = Vec::new();
        list.family_into(i, &mut family);
        family
            .iter()
            .any(|&j| bond_crosses_precrack(crack, dim, &near[i], &near[j as usize]))
    })
}

/// Whether `value` is a normal number (not zero, not subnormal, not infinite, not NaN) once
/// rounded to `precision`.
fn normal_in(value: f64, precision: Precision) -> bool {
    match precision {
        Precision::F32 => (value as f32).is_normal(),
        Precision::F64 => value.is_normal(),
    }
}

/// The material at this discretization: its bond constants, the critical stretch, and the
/// force and acceleration a bond gives at the smallest stretch the run's `precision`
/// resolves, each a finite normal number in that precision (not zero, not subnormal, not
/// infinite; an `f32` run rounds the constants and computes its forces in `f32`). A modulus
/// or density so extreme that these leave the range makes the stable time step and the
/// forces meaningless (a run would report NaN or a blow-up at the first stability check).
pub fn check_material(model: &Model, body: &Body, precision: Precision) -> Result<()> {
    let m = &model.material;
    let constants = MaterialConstants::new(model, body.delta, body.thickness);
    // (a micromodulus given directly: its implied modulus, the field named that of `c`)
    let (e, rho) = (constants.youngs_modulus, m.density);
    let modulus_field = match m.micromodulus {
        Some(_) => "material.micromodulus",
        None => "material.youngs_modulus",
    };
    let (name, eps, tiny, huge) = match precision {
        Precision::F32 => (
            "f32",
            f32::EPSILON as f64,
            format!("{:e}", f32::MIN_POSITIVE),
            format!("{:e}", f32::MAX),
        ),
        Precision::F64 => (
            "f64",
            f64::EPSILON,
            format!("{:e}", f64::MIN_POSITIVE),
            format!("{:e}", f64::MAX),
        ),
    };
    // an f32 run refused where f64 would do says so
    let wider = match precision {
        Precision::F32 => ", or --precision f64",
        Precision::F64 => "",
    };
    let degenerate = |field: &str, what: &str, value: f64| {
        let (given, other) = match field {
            "material.density" => (
                format!("{} kg/m^3", num(rho)),
                format!("youngs_modulus = {} Pa", num(e)),
            ),
            _ => (
                format!("{} Pa", num(e)),
                format!("density = {} kg/m^3", num(rho)),
            ),
        };
        Error::model(
            field,
            format!(
                "{given} is degenerate with {other}, horizon {} m, dx {} m: {what} is {}, \
                 zero, subnormal or not finite in {name} (normal {name} numbers span {tiny} to \
                 {huge}); use a modulus and density in a physical range (SI units: Pa, \
                 kg/m^3){wider}",
                num(body.delta),
                num(body.dx),
                num(value),
            ),
        )
    };
    let constants_of_law: Vec<(&str, f64)> = match constants.law {
        Law::Pmb { c, .. } => vec![("the micromodulus c (N/m^6)", c)],
        Law::Lps { kd, g, .. } => vec![
            ("the bulk-like modulus K_d (Pa)", kd),
            ("the shear modulus G (Pa)", g),
        ],
    };
    for (what, value) in constants_of_law {
        if !normal_in(value, precision) {
            return Err(degenerate(modulus_field, what, value));
        }
    }
    if let Some(s0) = constants.critical_stretch {
        if !s0.is_normal() {
            let field = match m.fracture_energy {
                Some(_) => "material.fracture_energy",
                None => "material.critical_stretch",
            };
            return Err(Error::model(
                field,
                format!(
                    "gives the critical stretch {} with youngs_modulus = {} Pa and horizon {} \
                     m: not a finite number > 0",
                    num(s0),
                    num(e),
                    num(body.delta)
                ),
            ));
        }
    }
    if let Some(law) = constants.softening {
        if let Some(wrong) = law.disorder() {
            let from = match m.fracture_energy {
                Some(g0) => format!(
                    " (with fracture_energy = {} J/m^2, youngs_modulus = {} Pa and horizon {} m)",
                    num(g0),
                    num(e),
                    num(body.delta)
                ),
                None => String::new(),
            };
            return Err(Error::model(
                "material.damage_law",
                format!(
                    "{}: {wrong}{from}; softening needs 0 < critical_stretch < kink_stretch < \
                     final_stretch",
                    m.damage_law.unwrap_or_default().name()
                ),
            ));
        }
    }
    // A bond's force density per unit stretch with the smallest node volume (the PMB
    // micromodulus of the modulus sets the scale for either law), its value at the smallest
    // resolvable stretch, and the accelerations they give.
    let v_min = body.volumes.iter().copied().fold(f64::INFINITY, f64::min);
    let c = pmb_micromodulus(
        model.discretization.dimension,
        e,
        body.delta,
        body.thickness,
    );
    let force = c * v_min;
    let smallest = force * eps;
    let at_smallest = format!("its force at the smallest stretch {name} resolves (N/m^3)");
    let acceleration_at_smallest =
        format!("the acceleration at the smallest stretch {name} resolves (m/s^2)");
    for (what, value) in [
        ("a bond's force density per unit stretch c V (N/m^3)", force),
        (at_smallest.as_str(), smallest),
    ] {
        if !normal_in(value, precision) {
            return Err(degenerate(modulus_field, what, value));
        }
    }
    for (what, value) in [
        (
            "the acceleration per unit stretch c V / density (m/s^2)",
            force / rho,
        ),
        (acceleration_at_smallest.as_str(), smallest / rho),
    ] {
        if !normal_in(value, precision) {
            return Err(degenerate("material.density", what, value));
        }
    }
    Ok(())
}

/// A number as messages show it: plain for moderate magnitudes, exponent form otherwise.
fn num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() || (1e-3..1e6).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A point of `dim` components: `(0, 0.5)`.
fn show(p: &[f64; 3], dim: usize) -> String {
    let parts: Vec<String> = p[..dim].iter().map(|x| num(*x)).collect();
    format!("({})", parts.join(", "))
}
