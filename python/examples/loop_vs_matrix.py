"""Loop against matrix: the same model on the loop and the matrix scheme (CPU, and GPU where
there is one), node-steps per second and the largest difference of the final displacement.

    python examples/loop_vs_matrix.py [--dx 1e-3]
"""

import argparse
import os
import time

import numpy as np

import peridot

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "models", "lps_block_3d.toml")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dx", type=float, default=1e-3)
    ap.add_argument("--steps", type=int, default=200)
    a = ap.parse_args()
    model = peridot.Model.from_file(MODEL, overrides={
        "discretization.dx": a.dx, "solver.steps": a.steps})
    backends = ["cpu-loop", "cpu-matrix"]
    if peridot.gpu_available():
        backends += ["gpu-loop", "gpu-matrix"]
    reference = None
    print(f"{model.info()['nodes']} nodes, {a.steps} steps")
    for backend in backends:
        t0 = time.perf_counter()
        sim = peridot.Simulation(model, backend=backend)
        setup = time.perf_counter() - t0
        sim.run(every=a.steps)
        s = sim.summary()
        u = sim.displacement
        if reference is None:
            reference = u
        diff = np.abs(u - reference).max() / max(np.abs(reference).max(), 1e-300)
        print(f"{backend:11s} setup {setup:6.2f} s, {s['node_steps_per_second']:.3e} "
              f"node-steps/s, max |u - u_cpu-loop| / max |u| = {diff:.1e}")


if __name__ == "__main__":
    main()
