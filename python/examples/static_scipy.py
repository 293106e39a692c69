"""The stiffness matrix in your own solver: a bar clamped at its left end and pulled 10 um at
its right end, solved with `scipy.sparse.linalg.spsolve` on `K` from `peridot.operators`,
against `peridot.solve_static` (the engine's own solve of the same system).

    python examples/static_scipy.py
"""

import numpy as np
import scipy.sparse.linalg as spla

import peridot

BAR = {
    "material": {"model": "lps", "youngs_modulus": 70e9, "poisson_ratio": 0.3,
                 "density": 2700.0, "critical_stretch": 0.01},
    "discretization": {"dimension": "plane-stress", "thickness": 1e-3, "dx": 2e-3,
                       "horizon_factor": 3.015},
    "geometry": {"box": [{"min": [0.0, 0.0], "max": [0.2, 0.04]}]},
    "region": [{"name": "left", "shape": "edge", "side": "-x", "depth_dx": 3},
               {"name": "right", "shape": "edge", "side": "+x", "depth_dx": 3}],
    "boundary": [{"region": "left", "kind": "displacement", "x": 0.0, "y": 0.0},
                 {"region": "right", "kind": "displacement", "x": 1e-5, "y": 0.0}],
    "solver": {"kind": "explicit", "steps": 1, "damage": False},
}


def main():
    model = peridot.Model.from_dict(BAR)
    k = peridot.operators(model)["K"].tocsr()
    sim = peridot.Simulation(model, backend="cpu-loop")
    d = sim.dim
    left, right = sim.region("left"), sim.region("right")
    n = sim.positions.shape[0]
    # prescribed dofs and values: dof = d * node + component
    prescribed = np.zeros(n * d, dtype=bool)
    value = np.zeros(n * d)
    for nodes, ux in [(left, 0.0), (right, 1e-5)]:
        prescribed[d * nodes] = prescribed[d * nodes + 1] = True
        value[d * nodes] = ux
    free = ~prescribed
    # K u = 0 on the free dofs (no load but the prescribed displacement)
    rhs = -(k[free][:, prescribed] @ value[prescribed])
    u = value.copy()
    u[free] = spla.spsolve(k[free][:, free].tocsc(), rhs)
    u_engine = peridot.solve_static(model).reshape(-1)
    diff = np.abs(u - u_engine).max() / np.abs(u_engine).max()
    print(f"{n} nodes, K {k.shape[0]}x{k.shape[1]} with {k.nnz} entries")
    print(f"max |u_scipy - u_engine| / max |u| = {diff:.2e}")
    mid = np.abs(sim.positions[:, 0] - 0.1) < 1.5e-3
    print(f"u_x at mid-length: {u[d * np.flatnonzero(mid)].mean():.4e} m (half the pull: 5e-6)")


if __name__ == "__main__":
    main()
