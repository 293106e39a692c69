#!/usr/bin/env python3
"""Why Kalthoff-Winkler 3D shows no crack from its notches at the published dx = 1 mm within
the seed's 18 us: a study in dx, run time and the fracture energy, on
`models/kalthoff_winkler_3d.toml` (seed 000, problem 5).

    python3 scripts/kw3d_study.py run --peridot BIN --backend gpu-loop --out DIR [--only A,D]
    python3 scripts/kw3d_study.py report DIR > table.md

dt = 1.3367e-8 s x dx / 1 mm (the seed's step at its dx, scaled as the stable step). Groups:
  A  the model's critical stretch 0.01 with delta = 3.015 dx, dx = 1, 0.75, 0.5 mm, over the
     seed's 18 us; the fracture energy G0 = 6 E delta s0^2 / 5 (3D PMB) grows with dx;
  T  dx = 1 mm over 36 us: does the crack start later;
  D  dx = 1 mm with G0 held at its value at dx = 0.5 mm (s0 = 0.01 sqrt(0.5)), 18 and 36 us.

The report gives per run: nodes, s0, G0, the first crack-tip sample, the angle of each crack
from the notch axis (crack nodes 2 horizons to 10 mm and to 40 mm from each notch tip,
through the thickness), the tips and the longest crack.
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kw2d_study import angles, run_one, study_main  # noqa: E402
from validate_published import read_summary, tip_rows  # noqa: E402

E, S_MODEL, DT_1MM, T_SEED = 192e9, 0.01, 1.3367e-8, 18.045e-6
# notches from the impacted edge (y = 0) to y = 50 mm at x = -25 and +25 mm
TIPS = [(-0.025, 0.05), (0.025, 0.05)]
AXIS = (0.0, 1.0)


def g0(delta, s0):
    """3D PMB fracture energy, J/m^2: theory.md's s0 = sqrt(5 G0 / (6 E delta)) for G0."""
    return 6.0 * E * delta * s0 * s0 / 5.0


def runs():
    """(group, label, dx, critical stretch, time) of every run."""
    out = [("A", f"A-dx{dx * 1e6:.0f}um", dx, S_MODEL, T_SEED) for dx in [1e-3, 0.75e-3, 0.5e-3]]
    out.append(("T", "T-dx1000um-36us", 1e-3, S_MODEL, 2 * T_SEED))
    s_held = S_MODEL * math.sqrt(0.5)
    out.append(("D", "D-dx1000um", 1e-3, s_held, T_SEED))
    out.append(("D", "D-dx1000um-36us", 1e-3, s_held, 2 * T_SEED))
    return out


def run(args):
    only = set(args.only.split(",")) if args.only else None
    models = args.models or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "models")
    model = os.path.join(models, "kalthoff_winkler_3d.toml")
    for group, label, dx, s0, t_end in runs():
        if only and group not in only:
            continue
        dt = DT_1MM * dx / 1e-3
        steps = round(t_end / dt)
        sets = [f"discretization.dx={dx!r}", f"material.critical_stretch={s0!r}",
                f"solver.dt={dt!r}", f"solver.steps={steps}", "output.vtk_every=0",
                "output.tips_every=" + str(max(1, steps // 200))]
        run_one(args, model, label, os.path.join(args.out, label), sets)


def describe(folder):
    s = read_summary(folder)
    if not s:
        return None
    tips = tip_rows(folder)
    delta = s["delta"]
    ct = s.get("crack_tips", {})
    row = next(r for r in runs() if r[1] == os.path.basename(folder))
    return {
        "label": row[1], "nodes": s["nodes"], "dx": s["dx"], "s0": row[3],
        "G0": g0(delta, row[3]), "time": s.get("final_time"),
        "first_tip": min((r["time"] for r in tips), default=None),
        "angle_10mm": angles(folder, s, delta, 10e-3, TIPS, AXIS),
        "angle_40mm": angles(folder, s, delta, 40e-3, TIPS, AXIS),
        "tips": ct.get("tips"), "longest": ct.get("longest_crack"),
        "broken_bonds": s.get("broken_bonds"),
    }


def report(args):
    rows = [d for d in (describe(os.path.join(args.dir, r[1])) for r in runs()) if d]
    us = lambda t: "-" if t is None else f"{t * 1e6:.1f}"
    deg = lambda pair: ", ".join("-" if a is None else f"{a:.1f}" for a in pair)
    print("| run | nodes | dx (mm) | s0 | G0 (kJ/m^2) | time (us) | first tip (us) | angle, "
          "2 delta-10 mm (deg) | angle, 2 delta-40 mm (deg) | tips | longest crack (mm) | "
          "broken bonds |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in rows:
        longest = "-" if d["longest"] is None else f"{d['longest'] * 1e3:.1f}"
        print(f"| {d['label']} | {d['nodes']:,} | {d['dx'] * 1e3:.3g} | {d['s0']:.4g} | "
              f"{d['G0'] / 1e3:.1f} | {us(d['time'])} | {us(d['first_tip'])} | "
              f"{deg(d['angle_10mm'])} | {deg(d['angle_40mm'])} | {d['tips']} | {longest} | "
              f"{d['broken_bonds']:,} |")
    with open(os.path.join(args.dir, "study.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    study_main(__doc__, run, report)
