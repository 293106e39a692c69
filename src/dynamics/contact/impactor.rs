//! Rigid impactors: a sphere (a disc in 2D), a cylinder (3D; a disc in 2D) and a flat punch
//! (an axis-aligned box), each a rigid body of one translation. A node inside one is pushed
//! out along the normal of the nearest surface by the penalty force density
//! `c_sr (p / delta) V_i n` (N/m^3; `p` the depth inside, m; `V_i` the node's volume), as if
//! it met its mirror image across the surface; the impactor takes the opposite of
//! `V_i` times it. A free impactor moves by the same leapfrog as the body; a prescribed one
//! at its constant velocity. Units: m, m/s, kg, N.

use crate::model::{Impactor, ImpactorMotion, ImpactorShape};

/// The geometry of an impactor relative to its reference point (the centre; a punch's
/// `min` corner).
#[derive(Debug, Clone)]
enum Form {
    /// Ball (3D) or disc (2D, and a 2D cylinder).
    Ball { radius: f64 },
    /// Cylinder of unit `axis`, `half_length` along it (`INFINITY`: unbounded).
    Cylinder {
        radius: f64,
        axis: [f64; 3],
        half_length: f64,
    },
    /// Box from the reference point to it plus `size`.
    Punch { size: [f64; 3] },
}

/// What a restart needs of an impactor's motion: where it is, how fast it goes and the
/// force of the last evaluation (its next half kick), m, m/s, N.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImpactorState {
    pub position: [f64; 3],
    pub velocity: [f64; 3],
    pub force: [f64; 3],
}

/// One rigid impactor and its motion.
#[derive(Debug, Clone)]
pub struct RigidImpactor {
    /// Its columns' name in `probes.csv`.
    pub name: String,
    form: Form,
    /// Reference point, m.
    pub position: [f64; 3],
    /// Velocity, m/s.
    pub velocity: [f64; 3],
    /// Mass, kg (`None`: prescribed motion).
    pub mass: Option<f64>,
    /// Contact force on the impactor at the last force evaluation, N.
    pub force: [f64; 3],
    dim: usize,
}

fn vec3(v: &[f64]) -> [f64; 3] {
    let mut out = [0.0; 3];
    out[..v.len()].copy_from_slice(v);
    out
}

impl RigidImpactor {
    /// The impactor of `[[impactor]]` entry `k` (validated) in `dim` dimensions.
    pub fn new(k: usize, imp: &Impactor, dim: usize) -> Self {
        let radius = imp.radius.unwrap_or(0.0);
        let (form, position) = match (imp.shape, dim) {
            (ImpactorShape::Punch, _) => {
                let (lo, hi) = (
                    vec3(imp.min.as_deref().unwrap_or(&[])),
                    vec3(imp.max.as_deref().unwrap_or(&[])),
                );
                let size = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
                (Form::Punch { size }, lo)
            }
            (ImpactorShape::Cylinder, 3) => {
                let a = vec3(imp.axis.as_deref().unwrap_or(&[0.0, 0.0, 1.0]));
                let n = (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt();
                let form = Form::Cylinder {
                    radius,
                    axis: [a[0] / n, a[1] / n, a[2] / n],
                    half_length: imp.half_length.unwrap_or(f64::INFINITY),
                };
                (form, vec3(imp.center.as_deref().unwrap_or(&[])))
            }
            _ => (
                Form::Ball { radius },
                vec3(imp.center.as_deref().unwrap_or(&[])),
            ),
        };
        RigidImpactor {
            name: imp.probe_name(k),
            form,
            position,
            velocity: vec3(&imp.velocity),
            mass: match imp.motion {
                ImpactorMotion::Free => imp.mass,
                ImpactorMotion::Prescribed => None,
            },
            force: [0.0; 3],
            dim,
        }
    }

    /// Its motion, for a checkpoint.
    pub fn motion(&self) -> ImpactorState {
        ImpactorState {
            position: self.position,
            velocity: self.velocity,
            force: self.force,
        }
    }

    /// Take up the motion of a checkpoint.
    pub fn resume(&mut self, s: &ImpactorState) {
        self.position = s.position;
        self.velocity = s.velocity;
        self.force = s.force;
    }

    /// The depth (m) of point `y` inside the impactor and the unit normal out of it through
    /// the nearest surface; `None` outside or on the surface.
    pub fn penetration(&self, y: &[f64; 3]) -> Option<(f64, [f64; 3])> {
        let d = self.dim;
        let mut w = [0.0; 3];
        for k in 0..d {
            w[k] = y[k] - self.position[k];
        }
        match &self.form {
            Form::Ball { radius } => {
                let r = norm(&w, d);
                (r < *radius).then(|| (radius - r, direction(&w, r, d)))
            }
            Form::Cylinder {
                radius,
                axis,
                half_length,
            } => {
                let s = w[0] * axis[0] + w[1] * axis[1] + w[2] * axis[2];
                let radial = [w[0] - s * axis[0], w[1] - s * axis[1], w[2] - s * axis[2]];
                let rho = norm(&radial, 3);
                if rho >= *radius || s.abs() >= *half_length {
                    return None;
                }
                let (side, cap) = (radius - rho, half_length - s.abs());
                if side <= cap {
                    Some((side, direction(&radial, rho, 3)))
                } else {
                    let sign = if s < 0.0 { -1.0 } else { 1.0 };
                    Some((cap, [sign * axis[0], sign * axis[1], sign * axis[2]]))
                }
            }
            Form::Punch { size } => {
                let mut best: Option<(f64, [f64; 3])> = None;
                for k in 0..d {
                    if w[k] <= 0.0 || w[k] >= size[k] {
                        return None;
                    }
                    for (depth, sign) in [(w[k], -1.0), (size[k] - w[k], 1.0)] {
                        if best.is_none_or(|(b, _)| depth < b) {
                            let mut n = [0.0; 3];
                            n[k] = sign;
                            best = Some((depth, n));
                        }
                    }
                }
                best
            }
        }
    }

    /// The first half of a leapfrog step of length `dt`: a free impactor's half kick by its
    /// last force, then the drift.
    pub fn kick_drift(&mut self, dt: f64) {
        self.kick(0.5 * dt);
        for k in 0..self.dim {
            self.position[k] += dt * self.velocity[k];
        }
    }

    /// `v += h F / M` for a free impactor.
    pub fn kick(&mut self, h: f64) {
        if let Some(m) = self.mass {
            for k in 0..self.dim {
                self.velocity[k] += h * self.force[k] / m;
            }
        }
    }
}

fn norm(w: &[f64; 3], d: usize) -> f64 {
    w[..d].iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `w / r`, or the last axis where `r` is zero (a point at the centre).
fn direction(w: &[f64; 3], r: f64, d: usize) -> [f64; 3] {
    if r > 0.0 {
        [w[0] / r, w[1] / r, w[2] / r]
    } else {
        let mut n = [0.0; 3];
        n[d - 1] = 1.0;
        n
    }
}
