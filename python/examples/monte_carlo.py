"""Monte Carlo over Young's modulus and the fracture energy (the outer-loop study PeriPy
was made for): Kalthoff-Winkler 2D at a coarse spacing with E and G0 drawn from normal
distributions (5 % and 10 % standard deviation), the time the first crack tip appears and
the bonds broken at the end, as histograms in monte_carlo.png.

    python examples/monte_carlo.py [--samples 20] [--dx 0.2e-3]
"""

import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import peridot  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, "..", "..", "models", "kalthoff_winkler_2d.toml")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--dx", type=float, default=0.2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="monte_carlo")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    e_mean, g_mean = 190e9, 1.1e3
    first, broken = [], []
    for k in range(a.samples):
        e = rng.normal(e_mean, 0.05 * e_mean)
        g0 = rng.normal(g_mean, 0.10 * g_mean)
        # the model gives a critical stretch: the one of G0 in plane-strain PMB
        # (theory.md: s0 = sqrt(5 pi G0 / (12 E delta)))
        s0 = np.sqrt(5 * np.pi * g0 / (12 * e * 3.015 * a.dx))
        model = peridot.Model.from_file(MODEL, overrides={
            "discretization.dx": a.dx, "material.youngs_modulus": e,
            "material.critical_stretch": float(s0), "output.vtk": False,
            "output.image": False})
        run_dir = os.path.join(a.out, f"sample_{k:03d}")
        summary = peridot.run(model, out=run_dir)
        broken.append(summary["broken_bonds"])
        first.append(first_tip_time(os.path.join(run_dir, "crack_tips.csv")))
        print(f"{k:3d}: E = {e / 1e9:6.1f} GPa, G0 = {g0:6.0f} J/m^2, first tip "
              f"{first[-1] * 1e6:5.2f} us, {broken[-1]} bonds broken")
    fig, ax = plt.subplots(1, 2, figsize=(8, 3.2))
    ax[0].hist(np.array(first) * 1e6, bins=10)
    ax[0].set_xlabel("first crack tip (us)")
    ax[1].hist(broken, bins=10)
    ax[1].set_xlabel("bonds broken at the end")
    fig.suptitle(f"Kalthoff-Winkler 2D, {a.samples} samples of E and G0")
    fig.tight_layout()
    fig.savefig(os.path.join(a.out, "monte_carlo.png"), dpi=120)
    print("wrote", os.path.join(a.out, "monte_carlo.png"))


def first_tip_time(path):
    """The time of the first row of crack_tips.csv (nan without one)."""
    with open(path) as f:
        next(f)
        line = f.readline()
    return float(line.split(",")[0]) if line else float("nan")


if __name__ == "__main__":
    main()
