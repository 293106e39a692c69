#!/usr/bin/env python3
"""Load-deflection curve of the three-point bending beam (models/concrete_beam_3pt_2d.toml).

Reads the run's probes.csv (the "load" probe: mean displacement load_uy, m, and summed
force load_fy, N) and plots the load (kN) against the midspan deflection (mm), with the
elastic beam's stiffness 48 E I / S^3 and the beam-theory peak 2 f_t b D^2 / (3 S).

    /work/pyenv/bin/python scripts/plot_beam_3pt.py out/concrete_beam_3pt_2d/probes.csv \
        docs/images/concrete_beam_3pt_2d_load.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

E, FT, B, D, S = 30e9, 3e6, 0.05, 0.05, 0.18  # Pa, Pa, m, m, m (the model's values)


def main(probes, png):
    rows = list(csv.DictReader(open(probes)))
    w = [-float(r["load_uy"]) * 1e3 for r in rows]
    p = [float(r["load_fy"]) / 1e3 for r in rows]
    inertia = B * D**3 / 12
    k = 48 * E * inertia / S**3 / 1e3 * 1e-3  # kN per mm
    peak = 2 * FT * B * D**2 / (3 * S) / 1e3
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(w, p, "k-", label="peridot (load probe)")
    ax.plot([0, peak / k * 1.3], [0, peak * 1.3], "b--", label="elastic beam 48EI/S^3")
    ax.axhline(peak, color="r", ls=":", label="beam theory peak 2 f_t b D^2/(3S)")
    i = max(range(len(p)), key=p.__getitem__)
    ax.plot([w[i]], [p[i]], "ro")
    ax.annotate(f"peak {p[i]:.2f} kN", (w[i], p[i]), textcoords="offset points", xytext=(8, 4))
    ax.set_xlabel("midspan deflection (mm)")
    ax.set_ylabel("load (kN)")
    ax.set_title("Concrete beam in three-point bending, bilinear softening")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"peak {p[i]:.3f} kN at {w[i]:.4f} mm; beam theory {peak:.3f} kN; "
          f"elastic stiffness {k:.1f} kN/mm")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
