//! Checks of `[[initial]]` tables: a defined region, at least one field, `d` finite
//! components each (m/s for a velocity, m for a displacement), no velocity for ADR (whose
//! velocity is the relaxation's own).

use super::{dim_name, region_name};
use crate::model::{Dimension, Initial, SolverKind};
use crate::{Error, Result};

/// `[[initial]]` entry `i`.
pub(super) fn initial(
    i: usize,
    init: &Initial,
    dim: Dimension,
    names: &[&str],
    kind: SolverKind,
) -> Result<()> {
    let f = format!("initial.{i}");
    if let Some(r) = &init.region {
        region_name(&format!("{f}.region"), r, names)?;
    }
    if init.velocity.is_none() && init.displacement.is_none() {
        return Err(Error::model(
            f,
            "gives no field; give velocity = [..] (m/s) and / or displacement = [..] (m)",
        ));
    }
    if init.velocity.is_some() && kind == SolverKind::Adr {
        return Err(Error::model(
            format!("{f}.velocity"),
            "ADR relaxes to a static state with a fictitious velocity of its own: an initial \
             velocity is for solver.kind = \"explicit\" (an initial displacement is ADR's \
             starting point)",
        ));
    }
    for (name, unit, value) in [
        ("velocity", "m/s", &init.velocity),
        ("displacement", "m", &init.displacement),
    ] {
        let Some(v) = value else { continue };
        if v.len() != dim.d() {
            return Err(Error::model(
                format!("{f}.{name}"),
                format!(
                    "{} components; dimension = \"{}\" needs {} ({unit})",
                    v.len(),
                    dim_name(dim),
                    dim.d()
                ),
            ));
        }
        if let Some(k) = v.iter().position(|x| !x.is_finite()) {
            return Err(Error::model(
                format!("{f}.{name}"),
                format!(
                    "component {} is {}; expected a finite number ({unit})",
                    k + 1,
                    v[k]
                ),
            ));
        }
    }
    Ok(())
}
