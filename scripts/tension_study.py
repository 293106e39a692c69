#!/usr/bin/env python3
"""Why the plate in tension's lateral slope is 9 % below the continuum's at delta = 3.015 dx:
a study in dx at a fixed delta / dx, in delta / dx, and with partial volumes, on
`models/plate_tension_2d.toml` (seed 000, problem 1), solved statically (`peridot
solve-static`: K u = f by sparse Cholesky, no relaxation left unconverged).

    python3 scripts/tension_study.py run --peridot BIN --out DIR [--only A,M,L]
    python3 scripts/tension_study.py report DIR > table.md

Groups:
  A  delta = 3.015 dx, dx = 10, 5, 2.5 and 1.25 mm (refinement at a fixed delta / dx);
  M  dx = 5 mm, delta / dx = 4.015 and 6.015 (and 3.015 from A);
  L  `partial_volume = "linear"`, dx = 5 mm, delta / dx = 3.015, 4.015 and 6.015.

The report gives per run the axial and lateral slopes of the plate's middle (as the
validation page measures them), their errors against the continuum (u_x = P x / E,
u_y = -nu P y / E with PMB's nu = 1/3), and the effective constants of the infinite lattice
(an independent lattice sum written here: C_ijkl = 1/2 sum_j c |xi| e_i e_j e_k e_l V_j over
a bulk node's family, with the engine's micromodulus c = 9 E / (pi t delta^3) and partial
volume rule), which the slopes should equal where the lattice, not the plate's edges or its
size, sets the error.
"""

import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kw2d_study import run_one, study_main  # noqa: E402
from validate_published import centre_slopes, final_state  # noqa: E402

E, P, NU, T = 200e9, 200e6, 1.0 / 3.0, 1e-3


def runs():
    """(group, label, dx, delta / dx, partial volume) of every run."""
    out = [("A", f"A-dx{dx * 1e5:.0f}-m3", dx, 3.015, "none") for dx in [10e-3, 5e-3, 2.5e-3, 1.25e-3]]
    out += [("M", f"M-dx500-m{m:.0f}", 5e-3, m, "none") for m in [4.015, 6.015]]
    out += [("L", f"L-dx500-m{m:.0f}", 5e-3, m, "linear") for m in [3.015, 4.015, 6.015]]
    return out


def lattice_constants(m, partial):
    """(E_lattice / E, nu_lattice) of the square lattice's bulk node in plane stress, for
    delta = m dx and the partial volume rule `partial` ("none" or "linear")."""
    dx = 1.0
    delta = m * dx
    c = 9.0 * E / (math.pi * T * delta ** 3)
    reach = int(math.ceil(delta + dx))
    c11 = c12 = 0.0
    for i in range(-reach, reach + 1):
        for j in range(-reach, reach + 1):
            r = math.hypot(i, j)
            if r == 0.0:
                continue
            if partial == "none":
                w = 1.0 if r <= delta else 0.0
            else:
                w = 1.0 if r <= delta - 0.5 * dx else min(max((delta + 0.5 * dx - r) / dx, 0.0), 1.0)
            if w == 0.0:
                continue
            ex, ey = i / r, j / r
            k = 0.5 * c * r * w * dx * dx * T
            c11 += k * ex ** 4
            c12 += k * ex * ex * ey * ey
    return (c11 * c11 - c12 * c12) / c11 / E, c12 / c11


def run(args):
    only = set(args.only.split(",")) if args.only else None
    models = args.models or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                         "models")
    model = os.path.join(models, "plate_tension_2d.toml")
    for group, label, dx, m, partial in runs():
        if only and group not in only:
            continue
        sets = [f"discretization.dx={dx!r}", f"discretization.horizon_factor={m!r}",
                f'discretization.partial_volume="{partial}"']
        run_one(args, model, label, os.path.join(args.out, label), sets, "solve-static")


def describe(folder, row):
    state = final_state(folder)
    if not state:
        return None
    s, arrays = state
    _, label, dx, m, partial = row
    ax, lat = centre_slopes(arrays, dx)
    e_ratio, nu_lat = lattice_constants(m, partial)
    ax_want, lat_want = P / E, -NU * P / E
    return {
        "label": label, "nodes": s["nodes"], "dx": dx, "m": m, "partial": partial,
        "axial": ax, "lateral": lat,
        "axial_err": ax / ax_want - 1.0, "lateral_err": lat / lat_want - 1.0,
        "lattice_E": e_ratio, "lattice_nu": nu_lat,
        "lattice_axial_err": 1.0 / e_ratio - 1.0,
        "lattice_lateral_err": nu_lat / e_ratio / NU - 1.0,
        "residual": s.get("static_residual"),
    }


def report(args):
    rows = []
    for row in runs():
        d = describe(os.path.join(args.dir, row[1]), row)
        if d:
            rows.append(d)
    pct = lambda v: f"{100 * v:+.2f}%"
    print("| run | nodes | dx (mm) | delta/dx | partial volume | axial slope | error | lattice "
          "predicts | lateral slope | error | lattice predicts | E_lattice / E | nu_lattice |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for d in rows:
        print(f"| {d['label']} | {d['nodes']:,} | {d['dx'] * 1e3:.3g} | {d['m']:.3f} | "
              f"{d['partial']} | {d['axial']:.4e} | {pct(d['axial_err'])} | "
              f"{pct(d['lattice_axial_err'])} | {d['lateral']:.4e} | {pct(d['lateral_err'])} | "
              f"{pct(d['lattice_lateral_err'])} | {d['lattice_E']:.4f} | {d['lattice_nu']:.4f} |")
    with open(os.path.join(args.dir, "study.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    study_main(__doc__, run, report)
