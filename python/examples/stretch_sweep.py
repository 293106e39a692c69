"""Crack-tip speed against the critical stretch: the pre-cracked plate at 20 m/s (seed 000,
problem 3) at a coarse spacing, one run per critical stretch, the fastest tip of each from
the run's crack-tip samples (none where no tip ran a horizon), plotted to stretch_sweep.png
against the Rayleigh speed. At dx = 0.5 mm the brittlest settings fragment the plate, and
the fastest "tip" there is a fragment's (above the Rayleigh speed); see docs/plate-study.md
for the plate at the published resolution.

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
    stretches = np.linspace(0.01, 0.035, 6)
    speeds = []
    for s0 in stretches:
        model = peridot.Model.from_file(MODEL, overrides={
            "discretization.dx": a.dx, "material.critical_stretch": float(s0),
            "output.vtk": False, "output.image": False})
        summary = peridot.run(model, out=os.path.join(a.out, f"s0_{s0:.3f}"), backend=a.backend)
        tips = summary.get("crack_tips") or {}
        # (0: no tip ran a horizon within the run)
        speeds.append(tips.get("fastest_tip_speed") or float("nan"))
        print(f"s0 = {s0:.3f}: fastest tip {speeds[-1]:.0f} m/s, "
              f"{summary['broken_bonds']} bonds broken, {summary['wall_seconds']:.1f} s")
    plt.figure(figsize=(5, 3.5))
    plt.plot(stretches, speeds, "o-", label="fastest tip")
    # the Rayleigh speed of the model's material (PMB plane stress: nu = 1/3)
    e, rho, nu = 192e9, 8000.0, 1.0 / 3.0
    c_s = np.sqrt(e / (2 * (1 + nu) * rho))
    c_r = c_s * (0.862 + 1.14 * nu) / (1 + nu)
    plt.axhline(c_r, color="gray", linestyle="--", label="Rayleigh speed")
    plt.legend()
    plt.xlabel("critical stretch s0")
    plt.ylabel("fastest crack tip (m/s)")
    plt.title(f"pre-cracked plate, 20 m/s, dx = {a.dx * 1e3:g} mm")
    plt.tight_layout()
    plt.savefig(os.path.join(a.out, "stretch_sweep.png"), dpi=120)
    print("wrote", os.path.join(a.out, "stretch_sweep.png"))


if __name__ == "__main__":
    main()
