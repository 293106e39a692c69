//! Range and consistency checks of a deserialized model, one function per table.
//!
//! The first problem found is returned as [`Error::Model`] naming the dotted field path with
//! array indices (`boundary.2.region`, `geometry.remove.0.radius`), the offending value and the
//! allowed range. Values are SI (`docs/models.md` lists every key with its unit).
//!
//! Not checked here, because they need the discretized body: regions that select no node, and a
//! `solver.dt` above the stable time step.

mod contact;
mod initial;
mod shapes;

use super::{
    Boundary, BoundaryKind, BreakTiming, DamageLaw, Dimension, Discretization, Influence, Material,
    MaterialModel, Model, Output, Ramp, Region, Shape, Solver, SolverKind,
};
use crate::{Error, Result};
use shapes::{geometry, precrack, regions};

/// Largest accepted horizon in multiples of the spacing.
const MAX_HORIZON_FACTOR: f64 = 20.0;
/// Largest accepted `solver.steps`.
const MAX_STEPS: usize = 1_000_000_000;
/// Tolerance on the Poisson ratio that bond-based PD fixes.
const PMB_NU_TOLERANCE: f64 = 1e-3;

/// Check every value of `model`; the first problem found is returned, naming its field.
pub fn validate(model: &Model) -> Result<()> {
    let dim = model.discretization.dimension;
    if let Some(name) = &model.name {
        file_name(name)?;
    }
    if model.materials.is_empty() {
        material(&model.material, dim)?;
    }
    super::several::validate(model, |m| material(m, dim))?;
    discretization(&model.discretization)?;
    geometry(&model.geometry, dim)?;
    for (i, p) in model.precrack.iter().enumerate() {
        precrack(i, p, dim)?;
    }
    regions(&model.region, dim)?;
    let names: Vec<&str> = model.region.iter().map(|r| r.name.as_str()).collect();
    for (i, b) in model.boundary.iter().enumerate() {
        boundary(i, b, dim, &model.region)?;
    }
    for (i, init) in model.initial.iter().enumerate() {
        initial::initial(i, init, dim, &names, model.solver.kind)?;
    }
    if let Some(c) = &model.contact {
        contact::contact(c, model.solver.kind)?;
    }
    for (i, imp) in model.impactor.iter().enumerate() {
        contact::impactor(i, imp, dim, model.solver.kind)?;
    }
    solver(&model.solver)?;
    output(&model.output, &names)
}

/// `name`: it names the output folder (`out/<name>`) and the files in it, so it must be a
/// plain file name: not empty, no path separator (`/`, `\`), not `.` or `..`, not absolute.
/// A run then writes nothing outside its output folder.
fn file_name(name: &str) -> Result<()> {
    let what = "it names the output folder and files; leave it out for the model file's stem";
    if name.trim().is_empty() {
        return Err(Error::model("name", format!("must not be empty ({what})")));
    }
    let mut parts = std::path::Path::new(name).components();
    let plain = matches!(
        (parts.next(), parts.next()),
        (Some(std::path::Component::Normal(p)), None) if p == name
    );
    if !plain || name.contains(['/', '\\', '\0']) || name.contains("..") {
        return Err(Error::model(
            "name",
            format!(
                "must be a plain file name: no path separator, no `..`, not absolute ({what}) \
                 (got {name:?})"
            ),
        ));
    }
    Ok(())
}

/// `[material]`: moduli, Poisson ratio by model and dimension, fracture parameters.
fn material(m: &Material, dim: Dimension) -> Result<()> {
    modulus(m)?;
    positive("material.density", m.density, " kg/m^3")?;
    poisson_ratio(m, dim)?;
    match m.damage_law.unwrap_or_default() {
        DamageLaw::Brittle => fracture(m)?,
        law => softening(m, law)?,
    }
    failure_options(m)?;
    match m.model {
        model if model.is_state_based() && m.surface_correction => Err(Error::model(
            "material.surface_correction",
            format!(
                "only for model = \"pmb\" or \"pmb-linear\" (got model = \"{}\")",
                model_name(model)
            ),
        )),
        MaterialModel::Pmb | MaterialModel::PmbLinear if m.influence == Influence::One => {
            Err(Error::model(
                "material.influence",
                format!(
                    "only for model = \"lps\" or \"lps-nonlinear\" (got influence = \"one\" with model = \"{}\"; \
                     bond-based PD uses a constant micromodulus)",
                    model_name(m.model)
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// `material.poisson_ratio`: required for LPS within the admissible range of the dimension;
/// for PMB optional and, if given, the value bond-based PD fixes.
fn poisson_ratio(m: &Material, dim: Dimension) -> Result<()> {
    const FIELD: &str = "material.poisson_ratio";
    let (range, nu_ok): (&str, fn(f64) -> bool) = match dim {
        Dimension::PlaneStress => ("in (-1, 0.5]", |nu| nu > -1.0 && nu <= 0.5),
        _ => ("in (-1, 0.5)", |nu| nu > -1.0 && nu < 0.5),
    };
    match (m.model, m.poisson_ratio) {
        (model, None) if model.is_state_based() => Err(Error::model(
            FIELD,
            format!(
                "required for model = \"{}\": a number {range} for dimension = \"{}\"",
                model_name(model),
                dim_name(dim)
            ),
        )),
        (model, Some(nu)) if model.is_state_based() && !nu_ok(nu) => Err(Error::model(
            FIELD,
            format!(
                "must be a number {range} for dimension = \"{}\" (got {})",
                dim_name(dim),
                num(nu)
            ),
        )),
        (MaterialModel::Pmb | MaterialModel::PmbLinear, Some(nu)) => {
            let (fixed, text) = match dim {
                Dimension::PlaneStress => (1.0 / 3.0, "1/3"),
                _ => (0.25, "1/4"),
            };
            if (nu - fixed).abs() <= PMB_NU_TOLERANCE {
                return Ok(());
            }
            Err(Error::model(
                FIELD,
                format!(
                    "bond-based PD (model = \"{}\") fixes the Poisson ratio at {text} for \
                     dimension = \"{}\": omit poisson_ratio or give {text}, or use model = \
                     \"lps\" for another value (got {})",
                    model_name(m.model),
                    dim_name(dim),
                    num(nu)
                ),
            ))
        }
        _ => Ok(()),
    }
}

/// `material.critical_stretch_alpha` and `material.break_timing`: `alpha` a finite number
/// >= 0; either, where it changes anything, needs a critical stretch.
fn failure_options(m: &Material) -> Result<()> {
    let breaks = m.fracture_energy.is_some() || m.critical_stretch.is_some();
    if let Some(alpha) = m.critical_stretch_alpha {
        if !(alpha.is_finite() && alpha >= 0.0) {
            return Err(Error::model(
                "material.critical_stretch_alpha",
                format!(
                    "must be a finite number >= 0 (LAMMPS and Silling and Askari use 0.25) \
                     (got {})",
                    num(alpha)
                ),
            ));
        }
        if alpha != 0.0 && !breaks {
            return Err(Error::model(
                "material.critical_stretch_alpha",
                "needs material.critical_stretch or material.fracture_energy (no bond breaks \
                 without one)",
            ));
        }
    }
    if m.break_timing == Some(BreakTiming::AfterForce) && !breaks {
        return Err(Error::model(
            "material.break_timing",
            "\"after-force\" needs material.critical_stretch or material.fracture_energy (no \
             bond breaks without one)",
        ));
    }
    Ok(())
}

/// `material.youngs_modulus` or `material.micromodulus` (PMB only): exactly one, > 0.
fn modulus(m: &Material) -> Result<()> {
    match (m.youngs_modulus, m.micromodulus) {
        (Some(_), Some(_)) => Err(Error::model(
            "material.micromodulus",
            "give material.youngs_modulus or material.micromodulus, not both (the \
             micromodulus implies the modulus: `peridot info` shows it)",
        )),
        (None, None) => Err(Error::model(
            "material.youngs_modulus",
            "required: Young's modulus in Pa (or, for model = \"pmb\" or \"pmb-linear\", \
             material.micromodulus, the bond constant c in N/m^6)",
        )),
        (Some(e), None) => positive("material.youngs_modulus", e, " Pa"),
        (None, Some(c)) => {
            positive("material.micromodulus", c, " N/m^6")?;
            if m.model.is_state_based() {
                return Err(Error::model(
                    "material.micromodulus",
                    format!(
                        "only for model = \"pmb\" or \"pmb-linear\" (got model = \"{}\"); \
                         give material.youngs_modulus",
                        model_name(m.model)
                    ),
                ));
            }
            Ok(())
        }
    }
}

/// A softening `material.damage_law` (`bilinear`, `trilinear`; PMB only): its stretches
/// given or following from `fracture_energy` (`docs/materials.md`), each in range. Their
/// order, which may depend on the fracture energy, is checked with the constants
/// (`setup::check`).
fn softening(m: &Material, law: DamageLaw) -> Result<()> {
    const FIELD: &str = "material.damage_law";
    let name = law.name();
    if m.model.is_state_based() {
        return Err(Error::model(
            FIELD,
            format!(
                "\"{name}\" is a bond-based law: only for model = \"pmb\" or \"pmb-linear\" \
                 (got model = \"{}\"); the state-based models break bonds at the critical \
                 stretch (damage_law = \"brittle\")",
                model_name(m.model)
            ),
        ));
    }
    let stretch = |field: &str, v: Option<f64>| match v {
        Some(v) if !(v > 0.0 && v < 1.0) => Err(Error::model(
            field,
            format!("must be a finite number in (0, 1) (got {})", num(v)),
        )),
        _ => Ok(()),
    };
    stretch("material.critical_stretch", m.critical_stretch)?;
    stretch("material.final_stretch", m.final_stretch)?;
    stretch("material.kink_stretch", m.kink_stretch)?;
    if let Some(g0) = m.fracture_energy {
        positive("material.fracture_energy", g0, " J/m^2")?;
    }
    let given = [m.critical_stretch, m.final_stretch, m.fracture_energy]
        .iter()
        .filter(|v| v.is_some())
        .count();
    match law {
        DamageLaw::Bilinear => {
            for (field, v) in [
                ("material.kink_stretch", m.kink_stretch),
                ("material.kink_force_ratio", m.kink_force_ratio),
            ] {
                if v.is_some() {
                    return Err(Error::model(
                        field,
                        "only for damage_law = \"trilinear\" (the bilinear law has no kink)",
                    ));
                }
            }
            if given != 2 {
                return Err(Error::model(
                    FIELD,
                    format!(
                        "\"bilinear\" needs two of material.critical_stretch (s0), \
                         material.final_stretch (s1) and material.fracture_energy (the work \
                         to failure, s0 s1 = the brittle s0^2 of that energy) (got {given})"
                    ),
                ));
            }
        }
        _ => {
            if m.critical_stretch.is_none() || m.kink_stretch.is_none() {
                return Err(Error::model(
                    FIELD,
                    "\"trilinear\" needs material.critical_stretch (s0) and \
                     material.kink_stretch (the kink), and one of material.final_stretch \
                     and material.fracture_energy",
                ));
            }
            if given != 2 {
                return Err(Error::model(
                    "material.final_stretch",
                    "\"trilinear\": give final_stretch or fracture_energy (which gives it), \
                     one of the two",
                ));
            }
            if let Some(beta) = m.kink_force_ratio {
                if !(beta > 0.0 && beta <= 1.0) {
                    return Err(Error::model(
                        "material.kink_force_ratio",
                        format!(
                            "must be a number in (0, 1]: the force at the kink over the \
                             peak force (got {})",
                            num(beta)
                        ),
                    ));
                }
            }
        }
    }
    if m.critical_stretch_alpha.is_some_and(|a| a != 0.0) {
        return Err(Error::model(
            "material.critical_stretch_alpha",
            format!(
                "only with damage_law = \"brittle\" (got damage_law = \"{name}\"): a \
                 softening bond's damage follows its own stretch"
            ),
        ));
    }
    Ok(())
}

/// `material.fracture_energy` / `material.critical_stretch`: at most one, each in range.
fn fracture(m: &Material) -> Result<()> {
    for field in ["final_stretch", "kink_stretch", "kink_force_ratio"] {
        let given = match field {
            "final_stretch" => m.final_stretch,
            "kink_stretch" => m.kink_stretch,
            _ => m.kink_force_ratio,
        };
        if given.is_some() {
            return Err(Error::model(
                format!("material.{field}"),
                "only with a softening law: damage_law = \"bilinear\" or \"trilinear\" (the \
                 default \"brittle\" law breaks a bond at the critical stretch)",
            ));
        }
    }
    match (m.fracture_energy, m.critical_stretch) {
        (Some(_), Some(_)) => Err(Error::model(
            "material.critical_stretch",
            "give fracture_energy or critical_stretch, not both",
        )),
        (Some(g0), None) => {
            positive("material.fracture_energy", g0, " J/m^2")?;
            if m.model.is_state_based() && m.influence == Influence::One {
                return Err(Error::model(
                    "material.fracture_energy",
                    format!(
                        "cannot be used with model = \"{}\" and influence = \"one\": the \
                         LPS critical-stretch formula is derived for influence = \
                         \"delta-over-x\"; give material.critical_stretch instead",
                        model_name(m.model)
                    ),
                ));
            }
            Ok(())
        }
        (None, Some(s0)) if !(s0 > 0.0 && s0 < 1.0) => Err(Error::model(
            "material.critical_stretch",
            format!("must be a finite number in (0, 1) (got {})", num(s0)),
        )),
        _ => Ok(()),
    }
}

/// `[discretization]`: spacing, horizon, thickness.
fn discretization(disc: &Discretization) -> Result<()> {
    let dx = disc.dx;
    positive("discretization.dx", dx, " m")?;
    match (disc.horizon_factor, disc.delta) {
        (None, None) => Err(Error::model(
            "discretization.horizon_factor",
            "give the horizon: horizon_factor (multiples of dx, typically 3.015) or delta (m)",
        )),
        (Some(_), Some(_)) => Err(Error::model(
            "discretization.delta",
            "give horizon_factor or delta, not both",
        )),
        (Some(m), None) if !(m > 1.0 && m <= MAX_HORIZON_FACTOR) => Err(Error::model(
            "discretization.horizon_factor",
            format!(
                "must be a finite number in (1, {MAX_HORIZON_FACTOR}]: the horizon must be \
                 larger than the spacing dx (got {})",
                num(m)
            ),
        )),
        (None, Some(delta)) if !(delta > dx && delta <= MAX_HORIZON_FACTOR * dx) => {
            Err(Error::model(
                "discretization.delta",
                format!(
                    "must be a finite number in (dx, {MAX_HORIZON_FACTOR} dx] = ({}, {}] m: \
                     the horizon must be larger than the spacing (got {})",
                    num(dx),
                    num(MAX_HORIZON_FACTOR * dx),
                    num(delta)
                ),
            ))
        }
        _ => Ok(()),
    }?;
    match (disc.dimension, disc.thickness) {
        (Dimension::ThreeD, Some(_)) => Err(Error::model(
            "discretization.thickness",
            "not used in 3D (remove it; it is the out-of-plane thickness of a 2D model)",
        )),
        (Dimension::ThreeD, None) => Ok(()),
        (dim, None) => Err(Error::model(
            "discretization.thickness",
            format!(
                "required for dimension = \"{}\": the out-of-plane thickness, a finite \
                 number > 0 m",
                dim_name(dim)
            ),
        )),
        (_, Some(h)) => positive("discretization.thickness", h, " m"),
    }
}

/// `[[boundary]]` entry `i`: region, components by kind, ramp.
fn boundary(i: usize, b: &Boundary, dim: Dimension, regions: &[Region]) -> Result<()> {
    let f = format!("boundary.{i}");
    let names: Vec<&str> = regions.iter().map(|r| r.name.as_str()).collect();
    region_name(&format!("{f}.region"), &b.region, &names)?;
    let edge = regions
        .iter()
        .any(|r| r.name == b.region && matches!(r.shape, Shape::Edge { .. } | Shape::Layer { .. }));
    if b.kind == BoundaryKind::Traction && !edge {
        return Err(Error::model(
            format!("{f}.region"),
            format!(
                "kind = \"traction\" acts on the face of an edge or layer region: region \
                 \"{}\" must have shape = \"edge\" or \"layer\"",
                b.region
            ),
        ));
    }
    components(&f, b, dim)?;
    ramp(&f, b)
}

/// The components `x`, `y`, `z` of a boundary condition.
fn components(f: &str, b: &Boundary, dim: Dimension) -> Result<()> {
    let given = [("x", b.x), ("y", b.y), ("z", b.z)];
    if dim.d() == 2 && b.z.is_some() {
        return Err(Error::model(
            format!("{f}.z"),
            format!("only in 3D (dimension = \"{}\")", dim_name(dim)),
        ));
    }
    for (name, value) in given {
        if let Some(v) = value.filter(|v| !v.is_finite()) {
            return Err(Error::model(
                format!("{f}.{name}"),
                format!("must be a finite number (got {})", num(v)),
            ));
        }
    }
    let first = given.iter().find(|(_, v)| v.is_some()).map(|(n, _)| *n);
    let axes = if dim.d() == 3 { "x, y, z" } else { "x, y" };
    let unit = match b.kind {
        BoundaryKind::Fixed | BoundaryKind::NoFail => {
            return match first {
                Some(name) => Err(Error::model(
                    format!("{f}.{name}"),
                    match b.kind {
                        BoundaryKind::Fixed => {
                            "kind = \"fixed\" takes no components: it holds \
                                                all of them at zero"
                        }
                        _ => {
                            "kind = \"no-fail\" takes no components: it keeps the bonds of \
                              its region from breaking"
                        }
                    },
                )),
                None => Ok(()),
            };
        }
        BoundaryKind::BodyForce => "N/m^3",
        BoundaryKind::Traction => "Pa",
        BoundaryKind::Displacement => "m",
        BoundaryKind::Velocity | BoundaryKind::InitialVelocity => "m/s",
    };
    match first {
        Some(_) => Ok(()),
        None => Err(Error::model(
            f,
            format!(
                "kind = \"{}\" needs at least one of {axes} (in {unit})",
                kind_name(b.kind)
            ),
        )),
    }
}

/// The ramp of a boundary condition: none, or linear/smooth with exactly one duration.
fn ramp(f: &str, b: &Boundary) -> Result<()> {
    let rampable = matches!(
        b.kind,
        BoundaryKind::BodyForce
            | BoundaryKind::Traction
            | BoundaryKind::Displacement
            | BoundaryKind::Velocity
    );
    if b.ramp != Ramp::None && !rampable {
        return Err(Error::model(
            format!("{f}.ramp"),
            format!(
                "only body-force, traction, displacement and velocity can be ramped \
                 (got kind = \"{}\")",
                kind_name(b.kind)
            ),
        ));
    }
    let ramp = ramp_name(b.ramp);
    match (b.ramp, b.ramp_time, b.ramp_steps) {
        (Ramp::None, None, None) => Ok(()),
        (Ramp::None, time, _) => Err(Error::model(
            format!(
                "{f}.{}",
                if time.is_some() {
                    "ramp_time"
                } else {
                    "ramp_steps"
                }
            ),
            "given with ramp = \"none\": set ramp = \"linear\" or \"smooth\", or remove it",
        )),
        (_, None, None) => Err(Error::model(
            format!("{f}.ramp"),
            format!("ramp = \"{ramp}\" needs its duration: ramp_time (s) or ramp_steps"),
        )),
        (_, Some(_), Some(_)) => Err(Error::model(
            format!("{f}.ramp_steps"),
            "give ramp_time or ramp_steps, not both",
        )),
        (_, Some(t), None) => positive(&format!("{f}.ramp_time"), t, " s"),
        (_, None, Some(0)) => Err(Error::model(
            format!("{f}.ramp_steps"),
            "must be >= 1 (got 0)",
        )),
        (_, None, Some(_)) => Ok(()),
    }
}

/// `[solver]`: step count, time step, damping, ADR settings.
fn solver(s: &Solver) -> Result<()> {
    if !(1..=MAX_STEPS).contains(&s.steps) {
        return Err(Error::model(
            "solver.steps",
            format!("must be in 1..={MAX_STEPS} (got {})", s.steps),
        ));
    }
    let adr = s.kind == SolverKind::Adr;
    if let Some(dt) = s.dt {
        if adr {
            return Err(only_for(
                "solver.dt",
                "explicit",
                "(ADR uses the fictitious time step 1)",
            ));
        }
        positive("solver.dt", dt, " s")?;
    }
    if let Some(f) = s.safety_factor.filter(|f| !(*f > 0.0 && *f <= 1.0)) {
        return Err(Error::model(
            "solver.safety_factor",
            format!("must be a number in (0, 1] (got {})", num(f)),
        ));
    }
    if let Some(c) = s.damping.filter(|c| !(c.is_finite() && *c >= 0.0)) {
        return Err(Error::model(
            "solver.damping",
            format!("must be a finite number >= 0 N s/m^4 (got {})", num(c)),
        ));
    }
    if let Some(tol) = s.tolerance {
        if !adr {
            return Err(only_for(
                "solver.tolerance",
                "adr",
                "(the ADR residual tolerance)",
            ));
        }
        if !(tol > 0.0 && tol < 1.0) {
            return Err(Error::model(
                "solver.tolerance",
                format!("must be a number in (0, 1) (got {})", num(tol)),
            ));
        }
    }
    let bad_budget = |b: &&super::size::ByteSize| b.bytes().is_none() && b.percent().is_none();
    if let Some(b) = s.gpu_memory_budget.as_ref().filter(bad_budget) {
        return Err(Error::model(
            "solver.gpu_memory_budget",
            format!(
                "must be a memory size of at least 1 byte (1.5e9, \"512MiB\", \"2GiB\") or a \
                 share of the in-core footprint in (0, 100] percent (\"15%\") (got {b})"
            ),
        ));
    }
    match s.load_steps {
        Some(_) if !adr => Err(only_for("solver.load_steps", "adr", "(ADR load steps)")),
        Some(0) => Err(Error::model("solver.load_steps", "must be >= 1 (got 0)")),
        _ => Ok(()),
    }
}

/// `[output]`: probe regions and interval, the crack-tip threshold, the snapshot fields.
fn output(o: &Output, names: &[&str]) -> Result<()> {
    for (i, probe) in o.probes.iter().enumerate() {
        region_name(&format!("output.probes.{i}"), probe, names)?;
    }
    if let Some(t) = o.tips_threshold {
        if !(t > 0.0 && t <= 1.0) {
            return Err(Error::model(
                "output.tips_threshold",
                format!("must be a damage in (0, 1] (got {t}); leave it out for the default rule"),
            ));
        }
    }
    let fields = o.fields.as_deref().unwrap_or_default();
    for (k, f) in fields.iter().enumerate() {
        if fields[..k].contains(f) {
            return Err(Error::model(
                format!("output.fields.{k}"),
                format!("{f:?} is listed twice; name each field once"),
            ));
        }
    }
    if o.checkpoint_keep == Some(0) {
        return Err(Error::model(
            "output.checkpoint_keep",
            "must be >= 1 when given (got 0); leave it out to keep the last 2",
        ));
    }
    match o.probe_every {
        Some(0) => Err(Error::model(
            "output.probe_every",
            "must be >= 1 when given (got 0); leave it out for steps / 100",
        )),
        _ => Ok(()),
    }
}

/// `name` must be one of the defined region names.
fn region_name(field: &str, name: &str, names: &[&str]) -> Result<()> {
    if names.contains(&name) {
        return Ok(());
    }
    let defined = if names.is_empty() {
        "no [[region]] is defined".to_string()
    } else {
        let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
        format!("defined: {}", quoted.join(", "))
    };
    Err(Error::model(
        field,
        format!("no region named \"{name}\" ({defined})"),
    ))
}

/// A setting given for the other solver kind.
fn only_for(field: &str, kind: &str, what: &str) -> Error {
    Error::model(field, format!("only for solver.kind = \"{kind}\" {what}"))
}

/// `value` must be finite and positive; `unit` is `" Pa"`-style or empty.
fn positive(field: &str, value: f64, unit: &str) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        return Ok(());
    }
    Err(Error::model(
        field,
        format!("must be a finite number > 0{unit} (got {})", num(value)),
    ))
}

/// A number as messages show it: plain for moderate magnitudes, exponent form otherwise
/// (`0.25`, `-2e11`, `1e-5`, `5e-324`), so that no message spells out hundreds of digits.
/// Every message that shows a model value uses it.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if v == 0.0 || !v.is_finite() || (1e-3..1e6).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A vector as messages show it: `[0, 0.5]`.
fn vec_str(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| num(*x)).collect();
    format!("[{}]", parts.join(", "))
}

fn dim_name(dim: Dimension) -> &'static str {
    match dim {
        Dimension::PlaneStress => "plane-stress",
        Dimension::PlaneStrain => "plane-strain",
        Dimension::ThreeD => "3d",
    }
}

fn model_name(model: MaterialModel) -> &'static str {
    model.name()
}

fn kind_name(kind: BoundaryKind) -> &'static str {
    match kind {
        BoundaryKind::BodyForce => "body-force",
        BoundaryKind::Traction => "traction",
        BoundaryKind::Displacement => "displacement",
        BoundaryKind::Velocity => "velocity",
        BoundaryKind::Fixed => "fixed",
        BoundaryKind::InitialVelocity => "initial-velocity",
        BoundaryKind::NoFail => "no-fail",
    }
}

fn ramp_name(ramp: Ramp) -> &'static str {
    match ramp {
        Ramp::None => "none",
        Ramp::Linear => "linear",
        Ramp::Smooth => "smooth",
    }
}
