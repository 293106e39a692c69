#!/usr/bin/env python3
"""Why the pre-cracked plate at 20 m/s branches when refined: a study in dx, delta / dx and the
fracture energy, on `models/precracked_plate_2d.toml` (seed 000, problem 3).

    python3 scripts/plate_study.py run --peridot BIN --backend gpu-loop --out DIR [--only A,B]
    python3 scripts/plate_study.py report DIR > table.md

Groups of runs (all 16.7 us of the seed, dt = 1.3367e-8 s x dx / 0.1 mm, which is the seed's
step at its dx and scales with the horizon as the stable step does):
  A  the seed's parameters (critical stretch 0.04472, delta = 3.015 dx) as dx shrinks: the
     fracture energy G0 = 9 E delta s0^2 / (4 pi) (plane stress PMB) shrinks with delta;
  B  dx = 0.1 mm, delta / dx = 3.015, 4.015, 5.015: a larger horizon, a larger G0;
  C  the default's horizon (0.754 mm) held, dx refined (delta / dx = 3.015, 6.03, 9.045): the
     nonlocal model converging at fixed G0 (m-convergence);
  D  G0 held at the seed's value at dx = 0.1 mm (8.3e4 J/m^2) with delta = 3.015 dx: the
     critical stretch s0 = 0.04472 sqrt(0.1 mm / dx) (delta-convergence at fixed G0).

Each run writes `summary.json`, `crack_tips.csv` and `damage.png` (no snapshots). The report
gives per run: nodes, delta, s0, G0, when the tips had moved a horizon (initiation), their mean
fitted speed over 12-16 us, the first branching, the tips at the end and how far a tip left
the crack line (|y|).
"""

import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kw2d_study import study_main  # noqa: E402
from validate_published import read_summary, tip_rows, travelled  # noqa: E402

E, S_SEED, DX_SEED, DT_SEED, T_END = 192e9, 0.04472, 0.1e-3, 1.3367e-8, 16.7e-6
DELTA_DEFAULT = 3.015 * 0.25e-3


def g0(delta, s0):
    """Plane-stress PMB fracture energy, J/m^2 (theory.md section 2)."""
    return 9.0 * E * delta * s0 * s0 / (4.0 * math.pi)


def runs():
    """(group, label, dx, horizon factor, critical stretch) of every run."""
    out = []
    for dx in [0.25e-3, 0.2e-3, 0.15e-3, 0.1e-3, 0.075e-3, 0.05e-3]:
        out.append(("A", f"A-dx{dx * 1e6:.0f}um", dx, 3.015, S_SEED))
    for m in [4.015, 5.015]:
        out.append(("B", f"B-m{m:.3f}", 0.1e-3, m, S_SEED))
    for m in [6.03, 9.045]:
        out.append(("C", f"C-m{m:.3f}", DELTA_DEFAULT / m, m, S_SEED))
    for dx in [0.25e-3, 0.05e-3]:
        out.append(("D", f"D-dx{dx * 1e6:.0f}um", dx, 3.015, S_SEED * math.sqrt(DX_SEED / dx)))
    return out


def run(args):
    only = set(args.only.split(",")) if args.only else None
    model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models",
                         "precracked_plate_2d.toml")
    if args.models:
        model = os.path.join(args.models, "precracked_plate_2d.toml")
    for group, label, dx, m, s0 in runs():
        if only and group not in only:
            continue
        dt = DT_SEED * dx / DX_SEED
        steps = round(T_END / dt)
        out = os.path.join(args.out, label)
        sets = [f"discretization.dx={dx!r}", f"discretization.horizon_factor={m}",
                f"material.critical_stretch={s0!r}", f"solver.dt={dt!r}",
                f"solver.steps={steps}", "output.vtk=false", "output.tips_every=" +
                str(max(1, steps // 200))]
        cmd = [args.peridot, "run", model, "--backend", args.backend, "--out", out, "--quiet"]
        for s in sets:
            cmd += ["--set", s]
        done = subprocess.run(cmd, capture_output=True, text=True)
        print(f"{label}: {'ok' if done.returncode == 0 else done.stderr.strip()[-300:]}",
              flush=True)


def describe(folder):
    s = read_summary(folder)
    if not s:
        return None
    tips = tip_rows(folder)
    delta, dx = s["delta"], s["dx"]
    started, _, running = travelled(tips, delta)
    ct = s.get("crack_tips", {})
    s0 = next((r[4] for r in runs() if r[1] == os.path.basename(folder)), None)
    return {
        "label": os.path.basename(folder), "nodes": s["nodes"], "dx": dx, "m": delta / dx,
        "delta": delta, "s0": s0, "G0": g0(delta, s0) if s0 else None,
        "initiation": started, "speed": sum(running) / len(running) if running else None,
        "branching": ct.get("first_branching_time"), "tips_at_end": ct.get("tips_at_end"),
        "off_line": max((abs(r["y"]) for r in tips), default=0.0),
        "status": s.get("status"), "backend": s.get("backend"),
    }


def report(args):
    rows = []
    for group, label, *_ in runs():
        d = describe(os.path.join(args.dir, label))
        if d:
            rows.append(d)
    us = lambda t: "-" if t is None else f"{t * 1e6:.1f}"
    print("| run | nodes | dx (mm) | delta/dx | delta (mm) | s0 | G0 (kJ/m^2) | tips moved "
          "a horizon (us) | mean tip speed 12-16 us (m/s) | first branching (us) | tips at "
          "end | largest tip |y| (mm) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in rows:
        speed = "-" if d["speed"] is None else f"{d['speed']:.0f}"
        print(f"| {d['label']} | {d['nodes']:,} | {d['dx'] * 1e3:.4g} | {d['m']:.3f} | "
              f"{d['delta'] * 1e3:.4g} | {d['s0']:.4g} | {d['G0'] / 1e3:.1f} | "
              f"{us(d['initiation'])} | {speed} | {us(d['branching'])} | "
              f"{d['tips_at_end']} | {d['off_line'] * 1e3:.2f} |")
    with open(os.path.join(args.dir, "study.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    study_main(__doc__, run, report)
