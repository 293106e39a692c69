#!/usr/bin/env python3
"""Why Kalthoff-Winkler 2D leaves its notches at a wider angle when refined: a study in dx,
delta / dx and the fracture energy, on `models/kalthoff_winkler_2d.toml` (seed 001).

    python3 scripts/kw2d_study.py run --peridot BIN --backend gpu-loop --out DIR [--only A,D]
    python3 scripts/kw2d_study.py report DIR > table.md

All runs cover the seed's 10 us with dt = 1e-8 s x dx / 0.1 mm (the seed's step at its dx,
scaled as the stable step scales with the spacing). Groups:
  A  the model's parameters (critical stretch 0.005, delta = 3.015 dx) as dx shrinks: the
     fracture energy G0 = 12 E delta s0^2 / (5 pi) (plane-strain PMB) shrinks with
     delta, so a finer model is more brittle;
  D  G0 held at its value at the default dx = 0.1 mm (delta = 3.015 dx): the critical
     stretch s0 = 0.005 sqrt(0.1 mm / dx) (delta-convergence at fixed G0);
  C  the default's horizon (0.3015 mm) held, dx refined (delta / dx = 6.03, 9.045): the
     nonlocal model converging at fixed G0 (m-convergence).

Each run writes `summary.json`, `crack_tips.csv`, `damage.png` and its last snapshot. The
report gives per run: nodes, delta, s0, G0, when the first crack tip was seen, the angle of
each crack from the notch axis near the tip (crack nodes 2 horizons to 1 mm from the tip) and
over 4 mm (the validation page's measure), the first branching and the tips at the end.
"""

import argparse
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from validate_published import (  # noqa: E402
    crack_angle, crack_nodes, last_snapshot, read_summary, threshold_of, tip_rows)

E, S_MODEL, DX_DEFAULT, DT_DEFAULT, T_END = 190e9, 0.005, 0.1e-3, 1e-8, 10e-6
DELTA_DEFAULT = 3.015 * DX_DEFAULT
# notches from the top edge down to y = 5 mm at x = 7.5 and 12.5 mm
NOTCH_TIPS = [(0.0075, 0.005), (0.0125, 0.005)]
AXIS = (0.0, -1.0)


def g0(delta, s0):
    """Plane-strain PMB fracture energy, J/m^2: theory.md's s0 = sqrt(5 pi G0 / (12 E delta))
    solved for G0."""
    return 12.0 * E * delta * s0 * s0 / (5.0 * math.pi)


def runs():
    """(group, label, dx, horizon factor, critical stretch) of every run."""
    out = []
    for dx in [0.1e-3, 0.05e-3, 0.04e-3, 0.02e-3]:
        out.append(("A", f"A-dx{dx * 1e6:.0f}um", dx, 3.015, S_MODEL))
    for dx in [0.05e-3, 0.02e-3]:
        out.append(("D", f"D-dx{dx * 1e6:.0f}um", dx, 3.015,
                    S_MODEL * math.sqrt(DX_DEFAULT / dx)))
    for m in [6.03, 9.045]:
        out.append(("C", f"C-m{m:.3f}", DELTA_DEFAULT / m, m, S_MODEL))
    return out


def run(args):
    only = set(args.only.split(",")) if args.only else None
    models = args.models or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "models")
    model = os.path.join(models, "kalthoff_winkler_2d.toml")
    for group, label, dx, m, s0 in runs():
        if only and group not in only:
            continue
        dt = DT_DEFAULT * dx / DX_DEFAULT
        steps = round(T_END / dt)
        out = os.path.join(args.out, label)
        sets = [f"discretization.dx={dx!r}", f"discretization.horizon_factor={m}",
                f"material.critical_stretch={s0!r}", f"solver.dt={dt!r}",
                f"solver.steps={steps}", "output.vtk_every=0",
                "output.tips_every=" + str(max(1, steps // 200))]
        run_one(args, model, label, out, sets)


def run_one(args, model, label, out, sets, command="run"):
    """`peridot run` (or `command`, e.g. `solve-static`, which takes no backend) of `model`
    into `out` with the `--set` arguments `sets`; prints ok or the error's end."""
    cmd = [args.peridot, command, model, "--out", out]
    if command == "run":
        cmd += ["--backend", args.backend, "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    done = subprocess.run(cmd, capture_output=True, text=True)
    print(f"{label}: {'ok' if done.returncode == 0 else done.stderr.strip()[-300:]}",
          flush=True)


def angles(folder, s, delta, reach, tips=NOTCH_TIPS, axis=AXIS):
    """The crack angle from the notch axis at each notch tip (None where no crack), from
    the crack nodes of the last snapshot between 2 horizons and `reach` of the tip, ahead of
    it along `axis` (x and y only: a 3D plate's nodes are read through its thickness)."""
    snap = last_snapshot(folder)
    if snap is None:
        return [None] * len(tips)
    nodes = crack_nodes(snap[1], threshold_of(s))
    out = []
    for tip in tips:
        ahead = [p for p in nodes
                 if (p[0] - tip[0]) * axis[0] + (p[1] - tip[1]) * axis[1] > -delta]
        out.append(crack_angle(ahead, tip, axis, 2 * delta, reach)[0])
    return out


def describe(folder):
    s = read_summary(folder)
    if not s:
        return None
    tips = tip_rows(folder)
    delta, dx = s["delta"], s["dx"]
    ct = s.get("crack_tips", {})
    s0 = next((r[4] for r in runs() if r[1] == os.path.basename(folder)), None)
    return {
        "label": os.path.basename(folder), "nodes": s["nodes"], "dx": dx, "m": delta / dx,
        "delta": delta, "s0": s0, "G0": g0(delta, s0) if s0 else None,
        "first_tip": min((r["time"] for r in tips), default=None),
        "angle_near": angles(folder, s, delta, 1e-3),
        "angle_4mm": angles(folder, s, delta, 4e-3),
        "branching": ct.get("first_branching_time"), "tips_at_end": ct.get("tips_at_end"),
        "status": s.get("status"), "backend": s.get("backend"),
    }


def report(args):
    rows = []
    for _, label, *_ in runs():
        d = describe(os.path.join(args.dir, label))
        if d:
            rows.append(d)
    us = lambda t: "-" if t is None else f"{t * 1e6:.2f}"
    deg = lambda pair: ", ".join("-" if a is None else f"{a:.1f}" for a in pair)
    print("| run | nodes | dx (mm) | delta/dx | delta (mm) | s0 | G0 (kJ/m^2) | first tip "
          "(us) | angle, 2 delta-1 mm (deg) | angle, 2 delta-4 mm (deg) | first branching "
          "(us) | tips at end |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in rows:
        print(f"| {d['label']} | {d['nodes']:,} | {d['dx'] * 1e3:.4g} | {d['m']:.3f} | "
              f"{d['delta'] * 1e3:.4g} | {d['s0']:.4g} | {d['G0'] / 1e3:.2f} | "
              f"{us(d['first_tip'])} | {deg(d['angle_near'])} | {deg(d['angle_4mm'])} | "
              f"{us(d['branching'])} | {d['tips_at_end']} |")
    with open(os.path.join(args.dir, "study.json"), "w") as f:
        json.dump(rows, f, indent=1)


def study_main(doc, run_study, report_study):
    """The command line every study script shares: `run --peridot BIN [--backend B] --out
    DIR [--only GROUPS] [--models DIR]` and `report DIR`."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--peridot", required=True)
    r.add_argument("--backend", default="gpu-loop")
    r.add_argument("--out", required=True)
    r.add_argument("--only", default=None, help="groups, e.g. A,D")
    r.add_argument("--models", default=None, help="folder of the model files")
    p = sub.add_parser("report")
    p.add_argument("dir")
    a = ap.parse_args()
    run_study(a) if a.cmd == "run" else report_study(a)


if __name__ == "__main__":
    study_main(__doc__, run, report)
