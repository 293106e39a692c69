#!/usr/bin/env python3
"""Measure the seed problems' published quantities from the runs of
scripts/validate_published.sh and write docs/validation-published.md.

Reads, per run folder (one per problem, named as the model): summary.json, crack_tips.csv,
probes.csv and the .vtu snapshots (raw appended binary, parsed here with the standard
library). Copies each run's damage.png to docs/images/validation/<scale>/<problem>.png.
Published values are those the seed texts and ../shared/docs/benchmarks.md state; where a
paper shows only a figure, the table says the pattern in words. Units: SI (m, s, m/s, Pa);
angles in degrees.

Usage: validate_published.py --runs DIR --scale cpu|gpu --doc FILE --images DIR
       [--hardware TEXT] [--date TEXT] [--overrides FILE]
"""

import argparse
import csv
import glob
import json
import math
import os
import re
import shutil
import struct
import sys

# ---------------------------------------------------------------------------------------
# readers


def read_summary(run):
    try:
        with open(os.path.join(run, "summary.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def read_csv(path):
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def tip_rows(run):
    """crack_tips.csv as dicts with floats (speed None where empty)."""
    rows = []
    for r in read_csv(os.path.join(run, "crack_tips.csv")):
        row = {k: (float(v) if v not in ("", None) else None) for k, v in r.items()}
        row["tip_id"] = int(row["tip_id"])
        rows.append(row)
    return rows


def travelled(tips, delta, window=(12e-6, 16e-6)):
    """Of the tips that have moved at least `delta` along their path (speeds fitted over a
    horizon of travel, docs/crack-tips.md): the first such sample's time, the first time one
    ran at 1000 m/s or more, and their speeds within `window` (s)."""
    path, last, running, started, fast = {}, {}, [], None, None
    for r in tips:
        i = r["tip_id"]
        if i in last:
            path[i] = path.get(i, 0.0) + math.hypot(r["x"] - last[i][0], r["y"] - last[i][1])
        last[i] = (r["x"], r["y"])
        if path.get(i, 0.0) >= delta and r["speed"] is not None:
            if started is None:
                started = r["time"]
            if fast is None and r["speed"] >= 1000.0:
                fast = r["time"]
            if window[0] <= r["time"] <= window[1]:
                running.append(r["speed"])
    return started, fast, running


TYPES = {"Float64": ("d", 8), "Float32": ("f", 4), "Int64": ("q", 8), "UInt8": ("B", 1)}


def read_vtu(path):
    """(time, {name: list of tuples}) of one snapshot written by peridot."""
    with open(path, "rb") as f:
        data = f.read()
    start = data.index(b'<AppendedData encoding="raw">')
    base = data.index(b"_", start) + 1
    header = data[:start].decode()
    m = re.search(r'Name="TimeValue"[^>]*>([^<]+)<', header)
    time = float(m.group(1)) if m else float("nan")
    arrays = {}
    pattern = (r'<DataArray type="(\w+)" Name="(\w+)" NumberOfComponents="(\d+)" '
               r'format="appended" offset="(\d+)"')
    for kind, name, comps, offset in re.findall(pattern, header):
        if name not in ("Points", "displacement", "damage"):
            continue
        code, size = TYPES[kind]
        at = base + int(offset)
        nbytes = struct.unpack_from("<Q", data, at)[0]
        count = nbytes // size
        values = struct.unpack_from("<%d%s" % (count, code), data, at + 8)
        c = int(comps)
        arrays[name] = [values[i:i + c] for i in range(0, count, c)]
    return time, arrays


def snapshots(run):
    """The run's .vtu files in step order."""
    files = glob.glob(os.path.join(run, "*.vtu"))

    def step(p):
        m = re.search(r"(\d+)\.vtu$", p)
        return int(m.group(1)) if m else 0
    return sorted(files, key=step)


def last_snapshot(run):
    files = snapshots(run)
    return read_vtu(files[-1]) if files else None


def final_state(run):
    """(summary, arrays of the last snapshot), or None without either."""
    s = read_summary(run)
    snap = last_snapshot(run) if s else None
    return (s, snap[1]) if snap else None


# ---------------------------------------------------------------------------------------
# measures


def row(problem, quantity, published, measured, tolerance, verdict, note=""):
    return {"problem": problem, "quantity": quantity, "published": published,
            "measured": measured, "tolerance": tolerance, "verdict": verdict, "note": note}


def rayleigh_plane_stress(e, nu, rho):
    """Viktorov's c_R with the plane-stress ratio nu / (1 + nu) (as tests/crack_tips.rs)."""
    c_s = math.sqrt(e / (2.0 * (1.0 + nu) * rho))
    n = nu / (1.0 + nu)
    return c_s * (0.862 + 1.14 * n) / (1.0 + n)


def threshold_of(summary):
    return (summary or {}).get("crack_tips", {}).get("threshold", 0.38)


def crack_nodes(arrays, threshold):
    pts = arrays.get("Points", [])
    dmg = arrays.get("damage", [])
    return [p for p, d in zip(pts, dmg) if d[0] >= threshold]


def crack_angle(nodes, tip, axis, lo, hi):
    """Angle (deg) between the notch axis `axis` (unit, 2D) and the direction from the notch
    `tip` to the crack nodes at distances in [lo, hi] on the side `side` of the notch: the
    principal direction of those nodes about the tip (least squares through the tip)."""
    sxx = sxy = syy = 0.0
    count = 0
    for p in nodes:
        dx, dy = p[0] - tip[0], p[1] - tip[1]
        r = math.hypot(dx, dy)
        if lo <= r <= hi:
            sxx += dx * dx
            sxy += dx * dy
            syy += dy * dy
            count += 1
    if count < 3:
        return None, count
    # principal axis of the second moments about the tip
    theta = 0.5 * math.atan2(2 * sxy, sxx - syy)
    d = (math.cos(theta), math.sin(theta))
    cosang = abs(d[0] * axis[0] + d[1] * axis[1])
    return math.degrees(math.acos(min(1.0, cosang))), count


def fmt(x, digits=4):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    if x == 0:
        return "0"
    if abs(x) >= 1e4 or abs(x) < 1e-2:
        return "%.*e" % (digits - 1, x)
    return "%.*g" % (digits, x)


def not_run(problem, what):
    return [row(problem, what, "-", "no run found", "-", "not run")]


def precracked(run, problem, scale):
    s = read_summary(run)
    if not s:
        return not_run(problem, "crack path and tip speed")
    tips = tip_rows(run)
    ct = s.get("crack_tips", {})
    dx = s.get("dx") or 0.25e-3
    out = []
    branched = "first_branching_time" in ct
    off_line = max((abs(r["y"]) for r in tips), default=0.0)
    if problem.endswith("50ms"):
        when = ct.get("first_branching_time")
        out.append(row(problem, "crack pattern", "branches (seed 000, Fig. 17b)",
                       "branches at %.2f us" % (when * 1e6) if branched else
                       "no branching (longest crack %s m)" % fmt(ct.get("longest_crack")),
                       "branching seen", "match" if branched else "mismatch"))
        return out
    straight = not branched
    out.append(row(problem, "crack pattern", "straight mode-I crack (Fig. 17a)",
                   ("straight: no branching, tips within %.2f mm of y = 0" % (off_line * 1e3))
                   if straight else "branches at %.2f us" % (ct["first_branching_time"] * 1e6),
                   "no branching", "match" if straight else "mismatch"))
    started, fast, running = travelled(tips, 3.015 * dx)
    if running:
        mean = sum(running) / len(running)
        ok = abs(mean / 1750.0 - 1.0) <= 0.15
        out.append(row(problem, "tip speed over 12-16 us", "about 1750 m/s (Fig. 18)",
                       "%.0f m/s (mean of %d speeds fitted over a horizon of travel, %.0f-%.0f "
                       "m/s)" % (mean, len(running), min(running), max(running)),
                       "15%", "match" if ok else "mismatch",
                       "the tips have moved a horizon by %.1f us and first run at 1000 m/s or "
                       "more at %s; the mean over the window counts the slower part before"
                       % (started * 1e6, "%.1f us" % (fast * 1e6) if fast else "no time")))
    else:
        out.append(row(problem, "tip speed over 12-16 us", "about 1750 m/s (Fig. 18)",
                       "no tip travelled a horizon by 16 us" + (
                           " (it does from %.1f us)" % (started * 1e6) if started else ""),
                       "15%", "mismatch"))
    c_r = rayleigh_plane_stress(192e9, 1.0 / 3.0, 8000.0)
    fastest = ct.get("fastest_tip_speed")
    if fastest is not None:
        out.append(row(problem, "fastest tip vs Rayleigh speed",
                       "below c_R (2800 m/s, seed 000)",
                       "%.0f m/s (c_R = %.0f m/s by Viktorov)" % (fastest, c_r), "< c_R",
                       "match" if fastest < c_r else "mismatch"))
    return out


def kalthoff(run, problem, scale, dim):
    s = read_summary(run)
    if not s:
        return not_run(problem, "crack angle")
    snap = last_snapshot(run)
    if snap is None:
        return [row(problem, "crack angle", "-", "no snapshot", "-", "not measured")]
    thr = threshold_of(s)
    _, arrays = snap
    nodes = crack_nodes(arrays, thr)
    out = []
    if dim == 2:
        # notches from the top edge (y = 10 mm) down to y = 5 mm at x = 7.5 and 12.5 mm
        tips = [(0.0075, 0.005), (0.0125, 0.005)]
        axis = (0.0, -1.0)
        delta = 3.015 * (s.get("dx") or 1e-4)
        published = "about 70 deg (seed 001: 110 deg to the notches; experiment 70)"
        band = (65.0, 70.0)
        reach = 0.004
    else:
        # notches at x = -25 and +25 mm from the impacted edge (y = 0) to y = 50 mm
        tips = [(-0.025, 0.05), (0.025, 0.05)]
        axis = (0.0, 1.0)
        delta = 3.015 * (s.get("dx") or 2.5e-3)
        published = "about 68 deg (seed 000); 65.3 deg (seed 004)"
        band = (65.0, 70.0)
        reach = 0.04
    angles = []
    counts = []
    for tip in tips:
        # crack nodes beyond the notch tip's own damage, within `reach`, on the far side of
        # the tip along the notch axis
        near = [p for p in nodes
                if (p[0] - tip[0]) * axis[0] + (p[1] - tip[1]) * axis[1] > -delta]
        a, n = crack_angle(near, tip, axis, 2 * delta, reach)
        counts.append(n)
        if a is not None:
            angles.append(a)
    if angles:
        ok = all(band[0] <= a <= band[1] for a in angles)
        out.append(row(problem, "crack angle from the notch axis", published,
                       ", ".join("%.1f deg" % a for a in angles) +
                       " (%s crack nodes %.1f-%.0f mm from each tip)" % (
                           "/".join(str(c) for c in counts), 2 * delta * 1e3, reach * 1e3),
                       "%g-%g deg" % band, "match" if ok else "mismatch"))
    else:
        longest = s.get("crack_tips", {}).get("longest_crack")
        out.append(row(problem, "crack angle from the notch axis", published,
                       "no crack beyond 2 horizons of the notch tips (longest crack %s m)"
                       % fmt(longest), "%g-%g deg" % band,
                       "mismatch" if scale == "gpu" else "not reproduced at this scale"))
    if dim == 2:
        out.append(initiation_kw2d(run, problem, s, tips, delta))
    return out


def initiation_kw2d(run, problem, s, tips, delta):
    """The first snapshot with a node at or above the threshold within 2 horizons of a notch
    tip: when the crack started, to the snapshot interval. Seed 001: step 190 at 0.01 us."""
    thr = threshold_of(s)
    prev = 0.0
    for path in snapshots(run):
        t, arrays = read_vtu(path)
        hit = any(math.hypot(p[0] - x, p[1] - y) <= 2 * delta
                  for p in crack_nodes(arrays, thr) for (x, y) in tips)
        if hit:
            ok = 1.4e-6 <= t <= 2.4e-6 + 1e-12
            return row(problem, "crack start", "near step 190 of 0.01 us: 1.9 us (seed 001)",
                       "first seen at %.2f us (not yet at %.2f us)" % (t * 1e6, prev * 1e6),
                       "1.4-2.4 us (+-50 seed steps)", "match" if ok else "mismatch",
                       "a crack here: a node within 2 horizons of a notch tip at the tip "
                       "threshold %.3g, seen in snapshots" % thr)
        prev = t
    return row(problem, "crack start", "1.9 us (seed 001)", "no crack", "1.4-2.4 us",
               "mismatch")


def glass(run, problem, scale):
    s = read_summary(run)
    if not s:
        return not_run(problem, "branching")
    ct = s.get("crack_tips", {})
    tips = tip_rows(run)
    out = []
    when = ct.get("first_branching_time")
    if when is not None:
        at = [r for r in tips if abs(r["time"] - when) < 1e-12]
        xs = [r["x"] for r in at]
        out.append(row(problem, "branching", "straight, then branches before the right edge "
                       "(Ha and Bobaru, figure)",
                       "branches at %.1f us, children at x = %s mm (edge at 50 mm)" % (
                           when * 1e6, ", ".join("%.1f" % (x * 1e3) for x in xs)),
                       "branches inside the plate",
                       "match" if xs and max(xs) < 0.05 else "mismatch"))
    else:
        out.append(row(problem, "branching", "branches before the right edge", "no branching",
                       "branches inside the plate", "mismatch"))
    c_r = rayleigh_plane_stress(72e9, 1.0 / 3.0, 2440.0)
    fastest = ct.get("fastest_tip_speed")
    out.append(row(problem, "fastest tip vs Rayleigh speed", "below c_R",
                   "%s m/s (c_R = %.0f m/s: Viktorov, PMB nu = 1/3 plane stress)"
                   % (fmt(fastest), c_r), "< c_R",
                   "match" if fastest is not None and fastest < c_r else "mismatch",
                   "c_R from the model's E, rho and PMB's nu = 1/3 in plane stress"))
    return out


def cantilever(run, problem, scale):
    s = read_summary(run)
    rows_ = read_csv(os.path.join(run, "probes.csv"))
    if not s or not rows_:
        return not_run(problem, "first period")
    t = [float(r["time"]) for r in rows_]
    u = [float(r["tip_uy"]) for r in rows_]
    mean = sum(u) / len(u)
    # upward crossings of the mean, linearly interpolated
    ups = [t[i] + (mean - u[i]) * (t[i + 1] - t[i]) / (u[i + 1] - u[i])
           for i in range(len(u) - 1) if u[i] < mean <= u[i + 1]]
    # the free span: from the clamp's face (three node layers, 3 dx) to the free end
    dx = s.get("dx") or 1e-3
    e, rho, h, length = 200e9, 7850.0, 0.01, 0.05 - 3 * dx
    omega = 1.875104 ** 2 * math.sqrt(e * h ** 2 / 12.0 / (rho * length ** 4))
    beam = 2 * math.pi / omega
    if len(ups) < 2:
        return [row(problem, "first period", "%.4g ms (Euler-Bernoulli)" % (beam * 1e3),
                    "fewer than two oscillations", "10%", "mismatch")]
    period = (ups[-1] - ups[0]) / (len(ups) - 1)
    ok = abs(period / beam - 1.0) <= 0.10
    return [row(problem, "first period of the tip",
                "%.4g ms: Euler-Bernoulli, free span %.2f mm, h 10 mm (seed 002 compares with "
                "FEM in a figure)" % (beam * 1e3, length * 1e3),
                "%.4g ms (%+.1f%%, mean of %d periods)" % (
                    period * 1e3, 100 * (period / beam - 1), len(ups) - 1),
                "10%", "match" if ok else "mismatch",
                "the discretization error and the beam theory's own: Euler-Bernoulli neglects "
                "shear and rotary inertia, which lengthen the period of a beam this short "
                "(L/h about 5) by a few percent, and the lattice at delta = 3.015 dx is "
                "stiffer than the continuum (docs/validation.md)")]


def plate_hole(run, problem, scale):
    s = read_summary(run)
    if not s:
        return not_run(problem, "crack nucleation and path")
    thr = threshold_of(s)
    dx = s.get("dx") or 0.5e-3
    delta = 3.015 * dx
    start = None
    prev = 0
    last = None
    for path in snapshots(run):
        t, arrays = read_vtu(path)
        nodes = crack_nodes(arrays, thr)
        at_hole = [p for p in nodes if math.hypot(p[0], p[1]) <= 0.005 + 2 * delta]
        it = round(t)
        if start is None and at_hole:
            start = (prev, it)
        prev = it
        last = (it, nodes)
    out = []
    out.append(row(problem, "crack nucleation (ADR iteration)", "near 675 (seed 000, Fig. 15a)",
                   "between %d and %d" % start if start else "no crack at the hole",
                   "+-10% (608-743)",
                   "match" if start and start[1] >= 608 and start[0] <= 743 else "mismatch"))
    if last:
        it, nodes = last
        reach = max((abs(p[0]) for p in nodes), default=0.0)
        ok = reach >= 0.025 - 2 * delta
        out.append(row(problem, "crack reaches the vertical edges", "by iteration 1000 (Fig. 15d)",
                       "at iteration %d the crack spans |x| <= %.1f mm (edges at 25 mm)"
                       % (it, reach * 1e3), "within 2 horizons of the edges",
                       "match" if ok else "mismatch"))
    return out


def column(run, problem, scale):
    state = final_state(run)
    if not state:
        return not_run(problem, "largest displacement")
    s, a = state
    best = max(zip(a["Points"], a["displacement"]),
               key=lambda pu: math.hypot(pu[1][1], pu[1][2]))
    x, lateral = best[0][0], math.hypot(best[1][1], best[1][2])
    ok = abs(x - 0.005) <= 0.1 * 0.01
    return [row(problem, "place of the largest lateral displacement",
                "mid-column (seed 000, Fig. 20)",
                "x = %.2f mm of 10 mm (%.3g mm)" % (x * 1e3, lateral * 1e3),
                "within 1 mm of x = 5 mm", "match" if ok else "mismatch")]


def torsion(run, problem, scale):
    state = final_state(run)
    if not state:
        return not_run(problem, "crack surface")
    s, a = state
    thr = threshold_of(s)
    nodes = crack_nodes(a, thr)
    dx = s.get("dx") or 5e-3
    delta = 3.015 * dx
    # the notch: a 5 mm slot around (87.5, -1) -> (112.5, 25) mm through the height
    (ax, ay), (bx, by) = (0.0875, -0.001), (0.1125, 0.025)

    def from_notch(p):
        ux, uy = bx - ax, by - ay
        t = max(0.0, min(1.0, ((p[0] - ax) * ux + (p[1] - ay) * uy) / (ux * ux + uy * uy)))
        return math.hypot(p[0] - ax - t * ux, p[1] - ay - t * uy) - 0.0025
    crack = [p for p in nodes if from_notch(p) <= 2 * delta]
    elsewhere = len(nodes) - len(crack)
    published = "a curved, non-planar crack from the notch (seed 002, Fig. 16; no number)"
    if len(crack) < 4:
        return [row(problem, "crack surface", published,
                    "no crack from the notch: %d crack nodes within 2 horizons of it (%d "
                    "elsewhere, next to the loaded corner)" % (len(crack), elsewhere),
                    "a crack surface from the notch",
                    "mismatch" if scale == "gpu" else "not reproduced at this scale")]
    nodes = crack
    # plane through the crack nodes by the least-squares normal (smallest eigenvector of
    # the 3 x 3 scatter, by power iteration on trace - scatter), then RMS distance
    n = len(nodes)
    c = [sum(p[k] for p in nodes) / n for k in range(3)]
    m = [[sum((p[i] - c[i]) * (p[j] - c[j]) for p in nodes) / n for j in range(3)]
         for i in range(3)]
    tr = m[0][0] + m[1][1] + m[2][2]
    shifted = [[(tr if i == j else 0.0) - m[i][j] for j in range(3)] for i in range(3)]
    v = [1.0, 1.0, 1.0]
    for _ in range(200):
        w = [sum(shifted[i][j] * v[j] for j in range(3)) for i in range(3)]
        norm = math.sqrt(sum(x * x for x in w)) or 1.0
        v = [x / norm for x in w]
    rms = math.sqrt(sum(sum((p[k] - c[k]) * v[k] for k in range(3)) ** 2 for p in nodes) / n)
    return [row(problem, "crack surface", published,
                "%d crack nodes within 2 horizons of the notch (%d elsewhere), RMS distance "
                "from their best plane %.2f dx" % (n, elsewhere, rms / dx),
                "described, not scored", "see picture")]


def centre_slopes(arrays, dx):
    """Least-squares slopes (du_x/dx along y = 0 over |x| <= 0.25 m, du_y/dy along x = 0 over
    |y| <= 0.125 m) of a plate-in-tension snapshot: the axial and lateral strains of its
    middle, one row of nodes either side of the centre line."""
    def slope(pts):
        k = len(pts)
        mx = sum(x for x, _ in pts) / k
        my = sum(y for _, y in pts) / k
        sxx = sum((x - mx) ** 2 for x, _ in pts)
        return sum((x - mx) * (y - my) for x, y in pts) / sxx
    pu = list(zip(arrays["Points"], arrays["displacement"]))
    ax = slope([(p[0], u[0]) for p, u in pu if abs(p[1]) <= dx and abs(p[0]) <= 0.25])
    lat = slope([(p[1], u[1]) for p, u in pu if abs(p[0]) <= dx and abs(p[1]) <= 0.125])
    return ax, lat


def tension(run, problem, scale):
    state = final_state(run)
    if not state:
        return not_run(problem, "centreline strains")
    s, a = state
    dx = s.get("dx") or 5e-3
    p_, e, nu = 200e6, 200e9, 1.0 / 3.0
    ax, lat = centre_slopes(a, dx)
    out = []
    for name, got, want in [("u_x(x, 0) slope", ax, p_ / e), ("u_y(0, y) slope", lat, -nu * p_ / e)]:
        err = got / want - 1.0
        out.append(row(problem, name, "%s (analytic, seed 000)" % fmt(want), "%s (%+.1f%%)"
                       % (fmt(got), 100 * err), "5%",
                       "match" if abs(err) <= 0.05 else "mismatch",
                       "" if abs(err) <= 0.05 else
                       "the lattice at delta = 3.015 dx has E 4.9% high and a lateral ratio "
                       "0.318 instead of 1/3 (docs/tension-study.md: refinement converges to that lattice)"))
    return out


PROBLEMS = [
    ("precracked_plate_2d", "Pre-cracked plate, 20 m/s (seed 000, problem 3)", precracked),
    ("precracked_plate_2d_50ms", "Pre-cracked plate, 50 m/s (seed 000, problem 3)", precracked),
    ("kalthoff_winkler_2d", "Kalthoff-Winkler 2D (seed 001)",
     lambda r, p, s: kalthoff(r, p, s, 2)),
    ("kalthoff_winkler_3d", "Kalthoff-Winkler 3D (seed 000, problem 5; seed 004)",
     lambda r, p, s: kalthoff(r, p, s, 3)),
    ("branching_glass_2d", "Crack branching in glass (Ha and Bobaru)", glass),
    ("cantilever_vibration_2d", "Cantilever vibration (seed 002)", cantilever),
    ("plate_hole_2d", "Plate with a hole (seed 000, problem 2)", plate_hole),
    ("notched_column_3d", "Notched column (seed 000, problem 4)", column),
    ("brokenshire_torsion_3d", "Brokenshire torsion (seed 002)", torsion),
    ("plate_tension_2d", "Plate in tension (seed 000, problem 1)", tension),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", required=True)
    ap.add_argument("--scale", choices=["cpu", "gpu"], required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--images", required=True)
    ap.add_argument("--hardware", default="")
    ap.add_argument("--date", default="")
    ap.add_argument("--overrides", default="", help="file: NAME<TAB>--set lines per problem")
    args = ap.parse_args()

    overrides = {}
    if args.overrides and os.path.exists(args.overrides):
        for line in open(args.overrides):
            name, _, sets = line.rstrip("\n").partition("\t")
            overrides[name] = sets
    os.makedirs(args.images, exist_ok=True)
    doc_dir = os.path.dirname(os.path.abspath(args.doc))
    rows, runs = [], []
    for name, title, measure in PROBLEMS:
        run = os.path.join(args.runs, name)
        try:
            got = measure(run, name, args.scale)
        except Exception as err:  # a broken run is reported, not fatal
            got = [row(name, "measurement", "-", "failed: %s" % err, "-", "error")]
        for r in got:
            r["title"] = title
        rows.extend(got)
        s = read_summary(run) or {}
        image = None
        src = os.path.join(run, "damage.png")
        if os.path.exists(src):
            image = os.path.join(args.images, name + ".png")
            shutil.copyfile(src, image)
            image = os.path.relpath(image, doc_dir)
        runs.append((name, title, s, image, overrides.get(name, "")))

    write_doc(args, rows, runs)
    bad = [r for r in rows if r["verdict"] in ("error", "not run")]
    print("wrote %s: %d rows, %d match, %d mismatch, %d other" % (
        args.doc, len(rows), sum(r["verdict"] == "match" for r in rows),
        sum(r["verdict"] == "mismatch" for r in rows),
        sum(r["verdict"] not in ("match", "mismatch") for r in rows)))
    return 1 if bad else 0


def write_doc(args, rows, runs):
    scale = ("the published scale (or the largest the model header gives), on a GPU"
             if args.scale == "gpu" else
             "a reduced scale on the CPU: each model's default size, which the model header "
             "states next to the published one")
    lines = [
        "# Seed problems against their published results",
        "",
        "Generated by `scripts/validate_published.sh` (runs) and "
        "`scripts/validate_published.py` (measures, this page); do not edit by hand.",
        "",
        "- Scale: %s." % scale,
        "- Hardware: %s." % (args.hardware or "not stated"),
        "- Date: %s." % (args.date or "not stated"),
        "- Published values: the seed texts (`../shared/seeds/`) and "
        "`../shared/docs/benchmarks.md`; where a paper shows only a figure the pattern is "
        "said in words. Tolerances are this project's acceptance bands, stated per row.",
        "- Why the 20 m/s pre-cracked plate branches at the published dx: the study in dx, "
        "delta / dx and the fracture energy, `docs/plate-study.md`.",
        "- Why Kalthoff-Winkler 2D leaves its notches at a wider angle at the published dx: "
        "the same kind of study, `docs/kw2d-study.md` (at the default's fracture energy the "
        "refined model gives 68.8 deg).",
        "- Why Kalthoff-Winkler 3D shows no crack from its notches at dx = 1 mm within 18 us: "
        "`docs/kw3d-study.md` (the cracks start later there; over 36 us they run at 66-68 deg).",
        "- Why the plate in tension contracts 9 % less than the continuum: the lattice of "
        "delta = 3.015 dx itself (nu 0.318, E 4.9 % high), to which refinement converges; "
        "`docs/tension-study.md` (with linear partial volumes and delta = 6 dx, within 2 %).",
        "- Gregoire et al.'s concrete beams in three-point bending (seed 004, Example 2; the "
        "seed gives their load curves only as a figure, so they are not scored here): "
        "`docs/concrete-beam-study.md` (peak loads, first cracking and stiffness against beam "
        "theory, a study in dx).",
        "- Verdicts: `match` (within the tolerance), `mismatch` (outside it: the row says "
        "what was measured), `not reproduced at this scale` (the reduced model cannot show the "
        "quantity; the model header says why), `see picture` (a described pattern).",
        "",
        "| problem | quantity | published | measured | tolerance | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s |" % (
            r["problem"], r["quantity"], r["published"], r["measured"], r["tolerance"],
            r["verdict"]))
    notes = [r for r in rows if r["note"]]
    if notes:
        lines += ["", "Notes:", ""]
        for r in notes:
            lines.append("- %s, %s: %s." % (r["problem"], r["quantity"], r["note"]))
    lines += ["", "## Runs", ""]
    for name, title, s, image, sets in runs:
        lines.append("### %s" % title)
        lines.append("")
        cmd = "peridot run models/%s.toml%s" % (name, (" " + sets) if sets else "")
        lines.append("`%s`" % cmd.strip())
        lines.append("")
        if s:
            lines.append("%s nodes, %s steps, %s backend, %s, wall %.1f s, status %s." % (
                s.get("nodes"), s.get("steps"), s.get("backend"), s.get("precision"),
                s.get("wall_seconds", 0.0), s.get("status")))
            ct = s.get("crack_tips")
            if ct:
                lines.append("Crack tips: %d tip ids, longest crack %s m, fastest tip %s m/s%s."
                             % (ct.get("tips", 0), fmt(ct.get("longest_crack")),
                                fmt(ct.get("fastest_tip_speed")),
                                ", first branching at %s s" % fmt(ct["first_branching_time"])
                                if "first_branching_time" in ct else ""))
        else:
            lines.append("Not run.")
        lines.append("")
        if image:
            lines.append("![%s: damage](%s)" % (name, image))
            lines.append("")
    with open(args.doc, "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
