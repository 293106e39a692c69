#!/usr/bin/env python3
"""Load-deflection curves of the three-point bending beams.

Reads a run's probes.csv (the "load" probe: mean displacement load_uy, m, and summed force
load_fy, N) and plots the load (kN) against the deflection of the load point (mm), with the
elastic beam's stiffness and the beam-theory load at which the bottom fibre reaches f_t,
2 f_t b D^2 / (3 S). `--beam` picks the beam's constants:

- `concrete_beam_3pt_2d` (default; models/concrete_beam_3pt_2d.toml): the bending stiffness
  48 E I / S^3;
- `gregoire` (models/gregoire_beam_3pt_3d.toml and its notched twin): Timoshenko's stiffness,
  bending and shear, 1 / (S^3 / (48 E I) + S / (4 k G A)), k = 5/6, G = E / (2 (1 + 1/4)).

Each `--also CSV:LABEL` adds another run's curve (the notched beam beside the unnotched one).
Where the run has the probes `cmod_left` and `cmod_right`, `--cmod PNG` also plots the load
against the crack mouth opening (cmod_right_ux - cmod_left_ux). For each curve it prints the
peak, the deflection at the peak, the secant stiffness at 40% of the peak, and, where the run
has the probes `mid_bottom`, `left_seat` and `right_seat` (the beam's own bottom nodes at
midspan and over the supports), the stiffness of the beam's own deflection
mid_bottom_uy - (left_seat_uy + right_seat_uy) / 2, which leaves out the indentation of the
load point and the supports.

    /work/pyenv/bin/python scripts/plot_beam_3pt.py out/concrete_beam_3pt_2d/probes.csv \
        docs/images/concrete_beam_3pt_2d_load.png
    /work/pyenv/bin/python scripts/plot_beam_3pt.py --beam gregoire \
        out/gregoire_beam_3pt_3d/probes.csv docs/images/gregoire_beam_3pt_3d_load.png \
        --label unnotched --also out/gregoire_beam_3pt_3d_notched/probes.csv:notched \
        --cmod docs/images/gregoire_beam_3pt_3d_cmod.png
"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# E (Pa), f_t (Pa), b, D, S (m), Poisson ratio (None: bending only), title
BEAMS = {
    "concrete_beam_3pt_2d": (30e9, 3e6, 0.05, 0.05, 0.18, None,
                             "Concrete beam in three-point bending, bilinear softening"),
    "gregoire": (37e9, 3.9e6, 0.05, 0.05, 0.125, 0.25,
                 "Gregoire et al.'s beam (seed 004), trilinear softening"),
}


def beam_theory(beam):
    """(stiffness N/m, first-cracking load N, label) of the elastic beam."""
    e, ft, b, d, s, nu, _ = BEAMS[beam]
    inertia = b * d**3 / 12
    compliance = s**3 / (48 * e * inertia)
    label = "elastic beam 48EI/S^3"
    if nu is not None:
        compliance += s / (4 * (5 / 6) * e / (2 * (1 + nu)) * b * d)
        label = "elastic beam, bending + shear"
    return 1 / compliance, 2 * ft * b * d**2 / (3 * s), label


def read(path):
    rows = list(csv.DictReader(open(path)))
    col = lambda name: [float(r[name]) for r in rows]  # noqa: E731
    run = {"w": [-u for u in col("load_uy")], "p": col("load_fy")}
    if "cmod_left_ux" in rows[0]:
        run["cmod"] = [r - l for l, r in zip(col("cmod_left_ux"), col("cmod_right_ux"))]
    if "mid_bottom_uy" in rows[0]:
        seats = [(a + b) / 2 for a, b in zip(col("left_seat_uy"), col("right_seat_uy"))]
        run["w_beam"] = [s - m for m, s in zip(col("mid_bottom_uy"), seats)]
    return run


def secant(w, p, peak):
    """The secant stiffness (N/m) at the first row above 40% of the peak."""
    i = next(k for k, v in enumerate(p) if v > 0.4 * peak)
    return p[i] / w[i]


def report(label, run, k_beam):
    w, p = run["w"], run["p"]
    i = max(range(len(p)), key=p.__getitem__)
    k = secant(w, p, p[i])
    line = (f"{label}: peak {p[i] / 1e3:.3f} kN at {w[i] * 1e6:.2f} um, load-point secant "
            f"stiffness {k * 1e-6:.1f} N/um ({k / k_beam:.2f} of the beam's {k_beam * 1e-6:.1f})")
    if "w_beam" in run:
        kb = secant(run["w_beam"], p, p[i])
        line += f", beam's own deflection {kb * 1e-6:.1f} N/um ({kb / k_beam:.2f})"
    if "cmod" in run:
        line += f", CMOD at the peak {run['cmod'][i] * 1e6:.2f} um"
    print(line)
    return i


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("probes")
    ap.add_argument("png")
    ap.add_argument("--beam", choices=sorted(BEAMS), default="concrete_beam_3pt_2d")
    ap.add_argument("--label", default="peridot (load probe)")
    ap.add_argument("--also", action="append", default=[], metavar="CSV:LABEL")
    ap.add_argument("--cmod", metavar="PNG")
    args = ap.parse_args()
    runs = [(args.label, read(args.probes))]
    runs += [(a.rsplit(":", 1)[1], read(a.rsplit(":", 1)[0])) for a in args.also]
    k_beam, p_crack, k_label = beam_theory(args.beam)
    fig, ax = plt.subplots(figsize=(6, 4))
    top = 0.0
    for n, (label, run) in enumerate(runs):
        i = report(label, run, k_beam)
        w, p = [x * 1e3 for x in run["w"]], [x / 1e3 for x in run["p"]]
        ax.plot(w, p, ("k-", "b-", "g-", "m-")[n % 4], label=label)
        ax.plot([w[i]], [p[i]], "ro")
        ax.annotate(f"{p[i]:.2f} kN", (w[i], p[i]), textcoords="offset points",
                    xytext=(6, 4 + 8 * (n % 2)))
        top = max(top, p[i])
    w_line = 1.1 * top / (k_beam * 1e-6)  # mm at 1.1 times the highest peak
    ax.plot([0, w_line], [0, 1.1 * top], "c--", label=k_label)
    ax.axhline(p_crack / 1e3, color="r", ls=":", label="beam theory cracking 2 f_t b D^2/(3S)")
    ax.set_xlabel("deflection of the load point (mm)")
    ax.set_ylabel("load (kN)")
    ax.set_title(BEAMS[args.beam][6], fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.png, dpi=120)
    print(f"beam theory: stiffness {k_beam * 1e-6:.1f} N/um, cracking load "
          f"{p_crack / 1e3:.3f} kN")
    if args.cmod:
        fig, ax = plt.subplots(figsize=(6, 4))
        for n, (label, run) in enumerate(runs):
            if "cmod" in run:
                ax.plot([c * 1e3 for c in run["cmod"]], [x / 1e3 for x in run["p"]],
                        ("k-", "b-", "g-", "m-")[n % 4], label=label)
        ax.set_xlabel("crack mouth opening, 50 mm gauge (mm)")
        ax.set_ylabel("load (kN)")
        ax.set_title(BEAMS[args.beam][6], fontsize=10)
        ax.legend(loc="upper right", fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        fig.savefig(args.cmod, dpi=120)


if __name__ == "__main__":
    main()
