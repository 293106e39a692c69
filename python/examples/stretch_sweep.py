"""Crack-tip speed against the critical stretch: the pre-cracked plate at 20 m/s (seed 000,
problem 3) at a coarse spacing, one run per critical stretch, the fastest tip of each from
the run's crack-tip samples, plotted to stretch_sweep.png.

    python examples/stretch_sweep.py [--dx 0.5e-3] [--backend auto]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import peridot  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "models", "precracked_plate_2d.toml")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dx", type=float, default=0.5e-3)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--out", default="stretch_sweep")
    a = ap.parse_args()
    stretches = np.linspace(0.02, 0.06, 5)
    speeds = []
    for s0 in stretches:
        model = peridot.Model.from_file(MODEL, overrides={
            "discretization.dx": a.dx, "material.critical_stretch": float(s0),
            "output.vtk": False, "output.image": False})
        summary = peridot.run(model, out=os.path.join(a.out, f"s0_{s0:.3f}"), backend=a.backend)
        tips = summary.get("crack_tips") or {}
        speeds.append(tips.get("fastest_tip_speed") or 0.0)
        print(f"s0 = {s0:.3f}: fastest tip {speeds[-1]:.0f} m/s, "
              f"{summary['broken_bonds']} bonds broken, {summary['wall_seconds']:.1f} s")
    plt.figure(figsize=(5, 3.5))
    plt.plot(stretches, speeds, "o-")
    plt.xlabel("critical stretch s0")
    plt.ylabel("fastest crack tip (m/s)")
    plt.title(f"pre-cracked plate, 20 m/s, dx = {a.dx * 1e3:g} mm")
    plt.tight_layout()
    plt.savefig(os.path.join(a.out, "stretch_sweep.png"), dpi=120)
    print("wrote", os.path.join(a.out, "stretch_sweep.png"))


if __name__ == "__main__":
    main()
