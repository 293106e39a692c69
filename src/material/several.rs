//! Several materials in one body (`[[material]]`, `docs/materials.md`): each node's material
//! index and, per pair of materials, the constants of the bonds between them, from the
//! interface rules of `[[interface]]` (the softer material by default).
//!
//! A bond `i -> j` takes the pair table's entry of its two ends' materials: for PMB its
//! micromodulus `c` and critical stretch `s0`; for the state-based models its critical
//! stretch only, each node keeping its own material's `K_d` and `G` (its `alpha_i` and
//! `p_i`), the bond's influence `omega beta V_j` shared, as Peridigm's blocks do. Nothing is
//! stored per bond: the loops read the table through the two ends' indices, the matrix form
//! folds the values into its coefficients.
//!
//! Units: `c` N/m^6 (per unit thickness in 2D), stretches dimensionless, moduli Pa.

use super::constants::{pmb_micromodulus, Law, MaterialConstants};
use crate::geometry::Body;
use crate::model::{InterfaceRule, Model};
use crate::{Error, Result};

/// The materials of a body with more than one.
#[derive(Debug, Clone, PartialEq)]
pub struct MaterialMap {
    /// The materials' names, in the model's order.
    pub names: Vec<String>,
    /// Each material's constants.
    pub constants: Vec<MaterialConstants>,
    /// Material index of every node.
    pub node: Vec<u8>,
    /// `n x n`, row-major by the two ends' materials: the PMB micromodulus of a bond between
    /// them, N/m^6 (0 for the state-based models, whose nodes keep their own constants).
    pub micromodulus: Vec<f64>,
    /// `n x n`: the critical stretch of a bond between them (`+inf`: it never breaks).
    pub critical_stretch: Vec<f64>,
}

impl MaterialMap {
    /// The materials of `model` on `body` (horizon `delta`, 2D thickness `thickness`), with
    /// `region(name)` the nodes of a region: `None` when every node has the one material
    /// (`[material]`, or a single `[[material]]`). Errors name the field: an id no node
    /// carries, a node two materials claim, a node none takes.
    pub fn new<'a>(
        model: &Model,
        body: &Body,
        region: impl Fn(&str) -> &'a [usize],
        delta: f64,
        thickness: f64,
    ) -> Result<Option<MaterialMap>> {
        if model.materials.is_empty() {
            return Ok(None);
        }
        let node = assign(model, body, region)?;
        if model.materials.len() == 1 {
            return Ok(None);
        }
        let dim = model.discretization.dimension;
        let constants: Vec<MaterialConstants> = model
            .materials
            .iter()
            .map(|m| MaterialConstants::of(&m.material, dim, delta, thickness))
            .collect();
        let n = constants.len();
        let (mut micromodulus, mut critical_stretch) = (vec![0.0; n * n], vec![0.0; n * n]);
        for a in 0..n {
            for b in 0..n {
                let (c, s0) = pair_constants(model, &constants, a, b, delta, thickness);
                micromodulus[a * n + b] = c;
                critical_stretch[a * n + b] = s0;
            }
        }
        Ok(Some(MaterialMap {
            names: model.materials.iter().map(|m| m.name.clone()).collect(),
            constants,
            node,
            micromodulus,
            critical_stretch,
        }))
    }

    /// The pair table's index of bond `i -> j`.
    #[inline(always)]
    pub fn pair(&self, i: usize, j: usize) -> usize {
        self.node[i] as usize * self.constants.len() + self.node[j] as usize
    }

    /// The micromodulus of bond `i -> j` (PMB), N/m^6.
    #[inline(always)]
    pub fn c(&self, i: usize, j: usize) -> f64 {
        self.micromodulus[self.pair(i, j)]
    }

    /// The critical stretch of bond `i -> j` (`+inf`: it never breaks).
    #[inline(always)]
    pub fn s0(&self, i: usize, j: usize) -> f64 {
        self.critical_stretch[self.pair(i, j)]
    }

    /// The constants of node `i`'s material.
    #[inline(always)]
    pub fn of_node(&self, i: usize) -> &MaterialConstants {
        &self.constants[self.node[i] as usize]
    }

    /// Each node's mass density, kg/m^3, where the materials' densities differ (`None`:
    /// every material has the first's, `MaterialConstants::density`).
    pub fn node_densities(&self) -> Option<Vec<f64>> {
        self.densities_differ().then(|| {
            (self.node.iter())
                .map(|&k| self.constants[k as usize].density)
                .collect()
        })
    }

    /// Whether the materials differ in mass density.
    pub fn densities_differ(&self) -> bool {
        let first = self.constants[0].density;
        self.constants.iter().any(|m| m.density != first)
    }

    /// The number of nodes of each material.
    pub fn counts(&self) -> Vec<usize> {
        let mut counts = vec![0; self.constants.len()];
        for &k in &self.node {
            counts[k as usize] += 1;
        }
        counts
    }

    /// The pair table as the GPU kernels read it (`kernels/bonds.cuh`, `BondParams`): the
    /// `n x n` micromoduli, the `n x n` critical stretches, then each material's `K_d` (0 for
    /// PMB), all f64.
    pub fn device_table(&self) -> Vec<f64> {
        let kd = self.constants.iter().map(|m| match m.law {
            Law::Lps { kd, .. } => kd,
            Law::Pmb { .. } => 0.0,
        });
        let mut table = self.micromodulus.clone();
        table.extend_from_slice(&self.critical_stretch);
        table.extend(kd);
        table
    }

    /// Whether any bond can break.
    pub fn breaks(&self) -> bool {
        self.critical_stretch.iter().any(|s| s.is_finite())
    }
}

/// The micromodulus and critical stretch of a bond between materials `a` and `b`.
fn pair_constants(
    model: &Model,
    m: &[MaterialConstants],
    a: usize,
    b: usize,
    delta: f64,
    thickness: f64,
) -> (f64, f64) {
    let c = |k: usize| match m[k].law {
        Law::Pmb { c, .. } => c,
        Law::Lps { .. } => 0.0,
    };
    let s = |k: usize| m[k].critical_stretch.unwrap_or(f64::INFINITY);
    if a == b {
        return (c(a), s(a));
    }
    let (na, nb) = (&model.materials[a].name, &model.materials[b].name);
    let interface = model.interface.iter().find(|t| {
        (&t.materials[0] == na && &t.materials[1] == nb)
            || (&t.materials[0] == nb && &t.materials[1] == na)
    });
    match interface.map_or(InterfaceRule::Softer, |t| t.rule) {
        InterfaceRule::Softer => {
            // (the smaller Young's modulus; on a tie the one named first)
            let (ea, eb) = (m[a].youngs_modulus, m[b].youngs_modulus);
            let soft = if eb < ea || (eb == ea && b < a) { b } else { a };
            (c(soft), s(soft))
        }
        InterfaceRule::Harmonic => (harmonic(c(a), c(b)), harmonic(s(a), s(b))),
        InterfaceRule::Explicit => {
            let t = interface.expect("an explicit rule comes from an interface table");
            let c = match (t.micromodulus, t.youngs_modulus) {
                (Some(c), _) => c,
                (None, Some(e)) => {
                    pmb_micromodulus(model.discretization.dimension, e, delta, thickness)
                }
                (None, None) => 0.0,
            };
            (c, t.critical_stretch.unwrap_or(f64::INFINITY))
        }
    }
}

/// The harmonic mean `2 a b / (a + b)`; where one is infinite (a material whose bonds never
/// break), the other alone (the limit of `2 a b / (a + b)` is `2 a`, which would let the
/// interface stretch twice as far as the breaking material).
pub fn harmonic(a: f64, b: f64) -> f64 {
    match (a.is_finite(), b.is_finite()) {
        (true, true) if a + b > 0.0 => 2.0 * a * b / (a + b),
        (true, true) => 0.0,
        (true, false) => a,
        (false, true) => b,
        (false, false) => f64::INFINITY,
    }
}

/// Each node's material index: a `[[material]]`'s regions and id claim nodes; the one with
/// neither takes the rest.
fn assign<'a>(model: &Model, body: &Body, region: impl Fn(&str) -> &'a [usize]) -> Result<Vec<u8>> {
    const NONE: u8 = u8::MAX;
    let mut node = vec![NONE; body.len()];
    let at = |i: usize| {
        let p = body.positions[i];
        format!("node {i} at ({:e}, {:e}, {:e}) m", p[0], p[1], p[2])
    };
    let claim = |node: &mut [u8], i: usize, k: usize, field: String| -> Result<()> {
        if node[i] != NONE && node[i] as usize != k {
            return Err(Error::model(
                field,
                format!(
                    "{} is also material.{}'s (\"{}\"): each node takes one material",
                    at(i),
                    node[i],
                    model.materials[node[i] as usize].name
                ),
            ));
        }
        node[i] = k as u8;
        Ok(())
    };
    for (k, m) in model.materials.iter().enumerate() {
        for (r, name) in m.regions.iter().enumerate() {
            for &i in region(name) {
                claim(&mut node, i, k, format!("material.{k}.regions.{r}"))?;
            }
        }
        if let Some(id) = m.id {
            let ids = body.material_ids.as_deref().ok_or_else(|| {
                Error::model(
                    format!("material.{k}.id"),
                    format!(
                        "id {id}, but the body's nodes carry no material id (a point cloud's \
                         `material` column or a mesh's physical groups give them)"
                    ),
                )
            })?;
            let mut found = false;
            for (i, &v) in ids.iter().enumerate() {
                if v == id {
                    claim(&mut node, i, k, format!("material.{k}.id"))?;
                    found = true;
                }
            }
            if !found {
                let mut present: Vec<i64> = ids.to_vec();
                present.sort_unstable();
                present.dedup();
                present.truncate(20);
                return Err(Error::model(
                    format!("material.{k}.id"),
                    format!("no node carries material id {id} (ids found: {present:?})"),
                ));
            }
        }
    }
    let rest = model
        .materials
        .iter()
        .position(|m| m.id.is_none() && m.regions.is_empty());
    for (i, m) in node.iter_mut().enumerate() {
        if *m != NONE {
            continue;
        }
        match rest {
            Some(k) => *m = k as u8,
            None => {
                return Err(Error::model(
                    "material",
                    format!(
                        "{} takes no material: no [[material]]'s regions or id hold it; give \
                         one material neither id nor regions to take the nodes left",
                        at(i)
                    ),
                ))
            }
        }
    }
    Ok(node)
}
