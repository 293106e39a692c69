//! Rigid-body modes a static solve must remove: for every piece of the body (a connected
//! component of the intact bonds; a fully detached node is a piece of its own), the
//! translations and linearized rotations that its Dirichlet conditions do not hold.
//!
//! Such a mode `r` has `K r = 0`, so `K u = f` is singular along it and solvable only if
//! `r . f = 0` (the loads are in equilibrium). The static solve then:
//! 1. checks equilibrium and removes the round-off part of the imbalance from `f` by a
//!    volume-proportional ("inertia relief") correction, which leaves `r . f = 0` exactly;
//! 2. holds as many dofs as there are free modes at zero ("supports", chosen by pivoted
//!    Gram-Schmidt so that they fix the modes well-conditioned); with loads in equilibrium
//!    these supports carry no reaction and do not change the strain;
//! 3. shifts the solution along the free modes so that its volume-weighted rigid part is
//!    zero (mean translation and mean rotation of the piece vanish).
//!
//! Units: positions in m; modes are dimensionless (unit Euclidean norm); forces in N.

use crate::neighbors::Families;

/// Free rigid modes of one piece of the body.
#[derive(Debug, Clone)]
pub struct PieceModes {
    /// Global dofs of the piece, ascending.
    pub dofs: Vec<usize>,
    /// Orthonormal basis of the free modes, each over `dofs`.
    pub modes: Vec<Vec<f64>>,
    /// Dofs held at zero to remove the modes (as many as modes).
    pub supports: Vec<usize>,
}

/// Free rigid modes of a whole body.
#[derive(Debug, Clone, Default)]
pub struct RigidModes {
    pub pieces: Vec<PieceModes>,
    /// Number of pieces (connected components of the intact bonds).
    pub piece_count: usize,
}

/// Relative size below which a rigid-mode direction counts as zero.
const ZERO: f64 = 1e-10;

impl RigidModes {
    /// Free modes of a body with node `positions`, `dim` components per node, `families` with
    /// bond status `mu` (1 intact), and the per-dof Dirichlet mask `constrained`.
    pub fn find(
        positions: &[[f64; 3]],
        dim: usize,
        families: &Families,
        mu: &[u8],
        constrained: &[bool],
    ) -> RigidModes {
        let pieces = connected_components(families, mu);
        let piece_count = pieces.len();
        let pieces = pieces
            .iter()
            .filter_map(|nodes| piece_modes(positions, dim, nodes, constrained))
            .collect();
        RigidModes {
            pieces,
            piece_count,
        }
    }

    /// Total number of free modes.
    pub fn count(&self) -> usize {
        self.pieces.iter().map(|p| p.modes.len()).sum()
    }

    /// Every support dof, ascending.
    pub fn supports(&self) -> Vec<usize> {
        let mut s: Vec<usize> = self
            .pieces
            .iter()
            .flat_map(|p| p.supports.iter().copied())
            .collect();
        s.sort_unstable();
        s
    }

    /// `|Q^T f|`: the norm of the part of `f` along the free modes.
    pub fn imbalance(&self, f: &[f64]) -> f64 {
        self.pieces
            .iter()
            .flat_map(|p| p.modes.iter().map(move |m| dot_on(m, &p.dofs, f)))
            .fold(0.0, |s, x| s + x * x)
            .sqrt()
    }

    /// Remove from `f` its part along the free modes by a correction proportional to the
    /// per-dof `weight` (volumes: `f <- f - W Q (Q^T W Q)^-1 Q^T f`), so that `Q^T f = 0`.
    pub fn relieve(&self, f: &mut [f64], weight: &[f64]) {
        for p in &self.pieces {
            let rhs: Vec<f64> = p.modes.iter().map(|m| dot_on(m, &p.dofs, f)).collect();
            let c = solve_small(gram(p, weight), rhs);
            for (k, &dof) in p.dofs.iter().enumerate() {
                let s: f64 = p.modes.iter().zip(&c).map(|(m, c)| m[k] * c).sum();
                f[dof] -= weight[dof] * s;
            }
        }
    }

    /// Shift `u` along the free modes so that `Q^T W u = 0`
    /// (`u <- u - Q (Q^T W Q)^-1 Q^T W u`); Dirichlet dofs are untouched (the modes vanish
    /// there).
    pub fn normalize(&self, u: &mut [f64], weight: &[f64]) {
        for p in &self.pieces {
            let rhs: Vec<f64> = p
                .modes
                .iter()
                .map(|m| {
                    p.dofs
                        .iter()
                        .zip(m)
                        .map(|(&d, x)| x * weight[d] * u[d])
                        .sum()
                })
                .collect();
            let c = solve_small(gram(p, weight), rhs);
            for (k, &dof) in p.dofs.iter().enumerate() {
                u[dof] -= p.modes.iter().zip(&c).map(|(m, c)| m[k] * c).sum::<f64>();
            }
        }
    }
}

fn dot_on(mode: &[f64], dofs: &[usize], f: &[f64]) -> f64 {
    mode.iter().zip(dofs).map(|(m, &d)| m * f[d]).sum()
}

/// `Q^T W Q` of a piece.
fn gram(p: &PieceModes, weight: &[f64]) -> Vec<Vec<f64>> {
    let r = p.modes.len();
    let mut g = vec![vec![0.0; r]; r];
    for a in 0..r {
        for b in 0..=a {
            let s: f64 = p
                .dofs
                .iter()
                .enumerate()
                .map(|(k, &d)| p.modes[a][k] * weight[d] * p.modes[b][k])
                .sum();
            g[a][b] = s;
            g[b][a] = s;
        }
    }
    g
}

/// Connected components of the intact bonds, each a list of nodes ascending, ordered by their
/// smallest node.
pub fn connected_components(families: &Families, mu: &[u8]) -> Vec<Vec<usize>> {
    let n = families.nodes();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for i in 0..n {
        for b in families.range(i) {
            if mu[b] == 0 {
                continue;
            }
            let (a, c) = (
                root(&mut parent, i),
                root(&mut parent, families.neighbors[b] as usize),
            );
            if a != c {
                parent[a.max(c)] = a.min(c);
            }
        }
    }
    let mut label = vec![usize::MAX; n];
    let mut pieces: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        let r = root(&mut parent, i);
        if label[r] == usize::MAX {
            label[r] = pieces.len();
            pieces.push(Vec::new());
        }
        pieces[label[r]].push(i);
    }
    pieces
}

/// The free modes of one piece, or `None` if its Dirichlet conditions hold every mode.
fn piece_modes(
    positions: &[[f64; 3]],
    dim: usize,
    nodes: &[usize],
    constrained: &[bool],
) -> Option<PieceModes> {
    let dofs: Vec<usize> = nodes
        .iter()
        .flat_map(|&i| (0..dim).map(move |k| dim * i + k))
        .collect();
    let basis = orthonormal(rigid_modes(positions, dim, nodes));
    // G = R_c^T R_c over the constrained rows; its null space is the free modes.
    let r = basis.len();
    let mut g = vec![vec![0.0; r]; r];
    for (k, &dof) in dofs.iter().enumerate() {
        if constrained[dof] {
            for a in 0..r {
                for b in 0..r {
                    g[a][b] += basis[a][k] * basis[b][k];
                }
            }
        }
    }
    let (values, vectors) = jacobi_eigen(g);
    let modes: Vec<Vec<f64>> = values
        .iter()
        .zip(&vectors)
        .filter(|(&v, _)| v <= ZERO)
        .map(|(_, z)| {
            (0..dofs.len())
                .map(|k| (0..r).map(|a| z[a] * basis[a][k]).sum())
                .collect()
        })
        .collect();
    if modes.is_empty() {
        return None;
    }
    let modes = orthonormal(modes);
    let supports = choose_supports(&modes, &dofs, constrained);
    Some(PieceModes {
        dofs,
        modes,
        supports,
    })
}

/// Translations and linearized rotations about the centroid of `nodes`, over their dofs.
fn rigid_modes(positions: &[[f64; 3]], dim: usize, nodes: &[usize]) -> Vec<Vec<f64>> {
    let mut c = [0.0; 3];
    for &i in nodes {
        for k in 0..3 {
            c[k] += positions[i][k] / nodes.len() as f64;
        }
    }
    let rel = |i: usize| -> [f64; 3] {
        let p = positions[i];
        [p[0] - c[0], p[1] - c[1], p[2] - c[2]]
    };
    // Rotation about axis a: the velocity field e_a x (X - c).
    let rotation = |axis: usize| -> Vec<f64> {
        nodes
            .iter()
            .flat_map(|&i| {
                let x = rel(i);
                let mut e = [0.0; 3];
                e[axis] = 1.0;
                let v = [
                    e[1] * x[2] - e[2] * x[1],
                    e[2] * x[0] - e[0] * x[2],
                    e[0] * x[1] - e[1] * x[0],
                ];
                v.into_iter().take(dim).collect::<Vec<_>>()
            })
            .collect()
    };
    let mut modes: Vec<Vec<f64>> = (0..dim)
        .map(|k| {
            let mut m = vec![0.0; dim * nodes.len()];
            m.iter_mut().skip(k).step_by(dim).for_each(|x| *x = 1.0);
            m
        })
        .collect();
    let axes: &[usize] = if dim == 2 { &[2] } else { &[0, 1, 2] };
    modes.extend(axes.iter().map(|&a| rotation(a)));
    modes
}

/// Modified Gram-Schmidt, twice, dropping vectors that (nearly) depend on earlier ones.
fn orthonormal(vectors: Vec<Vec<f64>>) -> Vec<Vec<f64>> {
    let mut out: Vec<Vec<f64>> = Vec::new();
    for mut v in vectors {
        let norm0 = norm(&v);
        if norm0 == 0.0 {
            continue;
        }
        for _ in 0..2 {
            for q in &out {
                let s: f64 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
                v.iter_mut().zip(q).for_each(|(x, q)| *x -= s * q);
            }
        }
        let n = norm(&v);
        if n > ZERO.sqrt() * norm0 {
            v.iter_mut().for_each(|x| *x /= n);
            out.push(v);
        }
    }
    out
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// Pick one unconstrained dof per mode so that the modes restricted to the picked dofs form a
/// well-conditioned square matrix: pivoted Gram-Schmidt on the rows of the mode matrix
/// (largest remaining row first, lowest dof on ties).
fn choose_supports(modes: &[Vec<f64>], dofs: &[usize], constrained: &[bool]) -> Vec<usize> {
    let r = modes.len();
    let mut rows: Vec<Vec<f64>> = (0..dofs.len())
        .map(|k| (0..r).map(|a| modes[a][k]).collect())
        .collect();
    let mut picked = Vec::with_capacity(r);
    for _ in 0..r {
        let best = (0..dofs.len())
            .filter(|&k| !constrained[dofs[k]] && !picked.contains(&k))
            .map(|k| (k, norm(&rows[k])))
            .fold(None, |acc: Option<(usize, f64)>, (k, n)| match acc {
                Some((_, m)) if m >= n => acc,
                _ => Some((k, n)),
            });
        let Some((k, n)) = best else { break };
        if n == 0.0 {
            break;
        }
        let v: Vec<f64> = rows[k].iter().map(|x| x / n).collect();
        for row in rows.iter_mut() {
            let s: f64 = row.iter().zip(&v).map(|(a, b)| a * b).sum();
            row.iter_mut().zip(&v).for_each(|(x, v)| *x -= s * v);
        }
        picked.push(k);
    }
    let mut supports: Vec<usize> = picked.into_iter().map(|k| dofs[k]).collect();
    supports.sort_unstable();
    supports
}

/// Eigenvalues (ascending) and unit eigenvectors of a small symmetric matrix, by cyclic
/// Jacobi rotations.
pub fn jacobi_eigen(mut a: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let mut v: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| f64::from(u8::from(i == j))).collect())
        .collect();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| a[i][j] * a[i][j])
            .sum();
        let scale: f64 = (0..n).map(|i| a[i][i] * a[i][i]).sum();
        if off <= 1e-30 * scale.max(f64::MIN_POSITIVE) {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if a[p][q] == 0.0 {
                    continue;
                }
                let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
                // signum(0) = 1: a rotation by 45 degrees when the diagonal is equal
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let (c, s) = (1.0 / (t * t + 1.0).sqrt(), t / (t * t + 1.0).sqrt());
                for row in a.iter_mut() {
                    let (akp, akq) = (row[p], row[q]);
                    row[p] = c * akp - s * akq;
                    row[q] = s * akp + c * akq;
                }
                for k in 0..n {
                    let (apk, aqk) = (a[p][k], a[q][k]);
                    a[p][k] = c * apk - s * aqk;
                    a[q][k] = s * apk + c * aqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = c * vp - s * vq;
                    row[q] = s * vp + c * vq;
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[i][i].total_cmp(&a[j][j]));
    let values = order.iter().map(|&i| a[i][i]).collect();
    let vectors = order
        .iter()
        .map(|&i| (0..n).map(|k| v[k][i]).collect())
        .collect();
    (values, vectors)
}

/// Solve a small dense system by Gaussian elimination with partial pivoting.
fn solve_small(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, piv);
        b.swap(col, piv);
        let d = a[col][col];
        if d == 0.0 {
            continue;
        }
        for row in col + 1..n {
            let f = a[row][col] / d;
            for k in col..n {
                a[row][k] -= f * a[col][k];
            }
            b[row] -= f * b[col];
        }
    }
    let mut x = vec![0.0; n];
    for row in (0..n).rev() {
        let s: f64 = (row + 1..n).map(|k| a[row][k] * x[k]).sum();
        x[row] = if a[row][row] != 0.0 {
            (b[row] - s) / a[row][row]
        } else {
            0.0
        };
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square_lattice(n: usize) -> Vec<[f64; 3]> {
        (0..n * n)
            .map(|k| [(k % n) as f64, (k / n) as f64, 0.0])
            .collect()
    }

    fn all_pairs(n: usize) -> Families {
        let offsets = (0..=n).map(|i| i * (n - 1)).collect();
        let neighbors = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(|j| j as u32))
            .collect();
        Families { offsets, neighbors }
    }

    // Jacobi: the eigenpairs of a symmetric 3 x 3 matrix reproduce it.
    #[test]
    fn jacobi_diagonalizes() {
        let a = vec![
            vec![4.0, 1.0, -2.0],
            vec![1.0, 2.0, 0.5],
            vec![-2.0, 0.5, 3.0],
        ];
        let (l, v) = jacobi_eigen(a.clone());
        for (lambda, x) in l.iter().zip(&v) {
            for i in 0..3 {
                let ax: f64 = (0..3).map(|j| a[i][j] * x[j]).sum();
                assert!((ax - lambda * x[i]).abs() < 1e-12);
            }
        }
        assert!(l[0] <= l[1] && l[1] <= l[2]);
    }

    // A free 2D piece has 3 free modes and 3 supports; fixing one node leaves the rotation
    // about it; fixing x on one edge and y at one node leaves none.
    #[test]
    fn free_modes_follow_the_constraints() {
        let pos = square_lattice(3);
        let fam = all_pairs(9);
        let mu = vec![1u8; fam.bonds()];
        let free = RigidModes::find(&pos, 2, &fam, &mu, &[false; 18]);
        assert_eq!(
            (free.count(), free.supports().len(), free.piece_count),
            (3, 3, 1)
        );
        let mut c = vec![false; 18];
        c[8] = true;
        c[9] = true;
        let one = RigidModes::find(&pos, 2, &fam, &mu, &c);
        assert_eq!(one.count(), 1);
        let m = &one.pieces[0].modes[0];
        assert!(
            m[8].abs() < 1e-12 && m[9].abs() < 1e-12,
            "rotation about node 4"
        );
        for i in [0, 3, 6] {
            c[2 * i] = true;
        }
        assert_eq!(RigidModes::find(&pos, 2, &fam, &mu, &c).count(), 0);
    }

    // Relief leaves no load along the modes; normalization no rigid part in u.
    #[test]
    fn relief_and_normalization_remove_the_rigid_part() {
        let pos = square_lattice(3);
        let fam = all_pairs(9);
        let mut mu = vec![1u8; fam.bonds()];
        // detach node 8 completely: two pieces
        for i in 0..9 {
            for b in fam.range(i) {
                if i == 8 || fam.neighbors[b] == 8 {
                    mu[b] = 0;
                }
            }
        }
        let rm = RigidModes::find(&pos, 2, &fam, &mu, &[false; 18]);
        assert_eq!((rm.piece_count, rm.count()), (2, 5));
        let w: Vec<f64> = (0..18).map(|k| 1.0 + k as f64 * 0.1).collect();
        let mut f: Vec<f64> = (0..18).map(|k| (k as f64 * 0.7).sin()).collect();
        rm.relieve(&mut f, &w);
        assert!(rm.imbalance(&f) < 1e-14);
        let mut u: Vec<f64> = (0..18).map(|k| (k as f64 * 1.3).cos()).collect();
        rm.normalize(&mut u, &w);
        let wu: Vec<f64> = u.iter().zip(&w).map(|(u, w)| u * w).collect();
        assert!(rm.imbalance(&wu) < 1e-14);
    }
}
