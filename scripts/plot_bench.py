#!/usr/bin/env python3
"""Plot and tabulate `peridot bench` results (docs/results.md), with the standard library only.

Usage:
    python3 scripts/plot_bench.py [--model NAME] [--out PNG] LABEL=DIR [LABEL=DIR ...]

Each DIR (a glob pattern is fine: `out/bench/before_*`) holds one or more runs,
`DIR/*/bench.json` (as scripts/run_benchmarks.sh writes them) or `DIR/bench.json`. Records of the same label, model, backend, precision and node count are pooled over
the runs: the table gives the median of the runs' node-steps per second (each run's figure is
already nodes / median seconds per step), the best run, and the CPU share (CPU time of the
process over threads x wall time, median of the runs: below 100% other processes shared the
cores). The PNG plots the medians against
the node count, with the 3.8e6 target and the LAMMPS peri/pmb reference (1.27e6 node-steps/s
on this machine with 2 OpenMP threads) as dashed lines. A markdown table goes to stdout.
"""

import argparse
import glob
import json
import os
import statistics
import struct
import zlib

TARGET = 3.8e6
LAMMPS = 1.27e6

# A 5 x 7 bitmap font: one row per byte, bit 4 is the leftmost pixel.
FONT = {
    "0": [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
    "1": [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
    "2": [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
    "3": [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
    "4": [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
    "5": [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
    "6": [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
    "7": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
    "8": [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
    "9": [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
    "A": [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
    "B": [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
    "C": [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
    "D": [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
    "E": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
    "F": [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
    "G": [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
    "H": [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
    "I": [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
    "J": [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
    "K": [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
    "L": [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
    "M": [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
    "N": [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
    "O": [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
    "P": [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
    "Q": [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
    "R": [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
    "S": [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
    "T": [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
    "U": [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
    "V": [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
    "W": [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
    "X": [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
    "Y": [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04],
    "Z": [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
    ".": [0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C],
    ",": [0x00, 0x00, 0x00, 0x00, 0x0C, 0x04, 0x08],
    "-": [0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00],
    "+": [0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00],
    "/": [0x01, 0x01, 0x02, 0x04, 0x08, 0x10, 0x10],
    "(": [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
    ")": [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
    "=": [0x00, 0x00, 0x1F, 0x00, 0x1F, 0x00, 0x00],
    ":": [0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00],
    " ": [0x00] * 7,
}

COLOURS = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (23, 190, 207),
    (188, 189, 34),
]


class Canvas:
    def __init__(self, width, height):
        self.w, self.h = width, height
        self.px = bytearray([255] * (width * height * 3))

    def set(self, x, y, c):
        if 0 <= x < self.w and 0 <= y < self.h:
            k = 3 * (y * self.w + x)
            self.px[k : k + 3] = bytes(c)

    def rect(self, x, y, w, h, c):
        for yy in range(y, y + h):
            for xx in range(x, x + w):
                self.set(xx, yy, c)

    def line(self, x0, y0, x1, y1, c, width=2, dash=0):
        n = max(abs(x1 - x0), abs(y1 - y0), 1)
        for k in range(n + 1):
            if dash and (k // dash) % 2 == 1:
                continue
            x = round(x0 + (x1 - x0) * k / n)
            y = round(y0 + (y1 - y0) * k / n)
            self.rect(x - width // 2, y - width // 2, width, width, c)

    def text(self, x, y, s, c=(0, 0, 0), scale=2):
        for ch in s.upper():
            rows = FONT.get(ch, FONT[" "])
            for r, bits in enumerate(rows):
                for col in range(5):
                    if bits & (0x10 >> col):
                        self.rect(x + col * scale, y + r * scale, scale, scale, c)
            x += 6 * scale

    def save(self, path):
        raw = b"".join(
            b"\x00" + bytes(self.px[3 * self.w * y : 3 * self.w * (y + 1)])
            for y in range(self.h)
        )

        def chunk(kind, data):
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.w, self.h, 8, 2, 0, 0, 0)
        png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
        png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
        with open(path, "wb") as f:
            f.write(png)


def text_width(s, scale=2):
    return 6 * scale * len(s)


def si(x):
    """Short label: 200000 -> 200K, 3.8e6 -> 3.8M, 2.5e9 -> 2.5G."""
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if x >= div:
            v = x / div
            return (f"{v:.0f}" if v == int(v) else f"{v:.1f}") + suffix
    return f"{x:.0f}"


def load(specs):
    """{(label, model, backend, precision, nodes): [records]} from LABEL=DIR arguments."""
    pooled = {}
    for spec in specs:
        label, folder = spec.split("=", 1)
        files = sorted(glob.glob(os.path.join(folder, "*", "bench.json")))
        files += sorted(glob.glob(os.path.join(folder, "bench.json")))
        if not files:
            raise SystemExit(f"{folder}: no bench.json found")
        for path in files:
            with open(path) as f:
                for r in json.load(f):
                    key = (label, r["model"], r["backend"], r["precision"], r["nodes"])
                    pooled.setdefault(key, []).append(r)
    return pooled


def table(pooled):
    print(
        "| label | model | backend | precision | dim | nodes | bonds | runs "
        "| node-steps/s (median of runs) | best run | GB/s (median) | CPU share |"
    )
    print("|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for key in sorted(pooled, key=lambda k: (k[0], k[1], k[2], k[3], k[4])):
        rs = pooled[key]
        nsps = [r["node_steps_per_second"] for r in rs]
        gbs = statistics.median(r["achieved_gb_per_s"] for r in rs)
        share = [
            r["cpu_seconds_per_step"] / (r["threads"] * r["mean_seconds_per_step"])
            for r in rs
            if r.get("cpu_seconds_per_step") is not None
        ]
        share = f"{100 * statistics.median(share):.0f}%" if share else "-"
        label, model, backend, precision, nodes = key
        print(
            f"| {label} | {model} | {backend} | {precision} | {rs[0]['dim']} | {nodes:,} "
            f"| {rs[0]['bonds']:,} | {len(rs)} | {statistics.median(nsps):.3e} "
            f"| {max(nsps):.3e} | {gbs:.2f} | {share} |"
        )


def plot(pooled, path, title, references=True):
    series = {}
    for (label, model, backend, precision, nodes), rs in pooled.items():
        med = statistics.median(r["node_steps_per_second"] for r in rs)
        series.setdefault((label, model, backend, precision), []).append((nodes, med))
    W, H = 1100, 620
    left, right, top, bottom = 110, 400, 60, 80
    cv = Canvas(W, H)
    pw, ph = W - left - right, H - top - bottom
    xs = [n for pts in series.values() for n, _ in pts]
    ys = [v for pts in series.values() for _, v in pts] + ([TARGET, LAMMPS] if references else [])
    import math

    lx0 = math.floor(math.log10(min(xs)) - 0.1)
    lx1 = math.ceil(math.log10(max(xs)) + 0.1)
    # a round tick step giving 4 to 10 ticks (1e6 for the CPU figures, 1e9 on a GPU)
    top_value = max(ys) * 1.1
    step = 10 ** math.floor(math.log10(top_value))
    for factor in (0.2, 0.5, 1.0):
        if top_value / (step * factor) <= 10:
            step *= factor
            break
    ymax = math.ceil(top_value / step) * step

    def X(n):
        return round(left + (math.log10(n) - lx0) / (lx1 - lx0) * pw)

    def Y(v):
        return round(top + ph - v / ymax * ph)

    grey, black = (200, 200, 200), (0, 0, 0)
    for d in range(lx0, lx1 + 1):
        x = X(10**d)
        cv.line(x, top, x, top + ph, grey, width=1)
        s = si(10**d)
        cv.text(x - text_width(s) // 2, top + ph + 10, s)
    v = 0.0
    while v <= ymax + 1:
        y = Y(v)
        cv.line(left, y, left + pw, y, grey, width=1)
        s = si(v) if v else "0"
        cv.text(left - 10 - text_width(s), y - 7, s)
        v += step
    cv.line(left, top, left, top + ph, black)
    cv.line(left, top + ph, left + pw, top + ph, black)
    cv.text(left + pw // 2 - text_width("NODES") // 2, top + ph + 40, "NODES")
    cv.text(10, top - 28, "NODE-STEPS PER SECOND")
    cv.text(left, 8, title)
    red, dark = (214, 39, 40), (90, 90, 90)
    legend_x, legend_y = left + pw + 20, top - 24
    if references:
        cv.line(left, Y(TARGET), left + pw, Y(TARGET), red, width=2, dash=8)
        cv.line(left, Y(LAMMPS), left + pw, Y(LAMMPS), dark, width=2, dash=8)
        legend_y += 24
        cv.line(legend_x, legend_y + 7, legend_x + 30, legend_y + 7, red, dash=8)
        cv.text(legend_x + 40, legend_y, "TARGET 3.8M")
        legend_y += 24
        cv.line(legend_x, legend_y + 7, legend_x + 30, legend_y + 7, dark, dash=8)
        cv.text(legend_x + 40, legend_y, "LAMMPS PERI/PMB 1.27M")
    for k, key in enumerate(sorted(series)):
        c = COLOURS[k % len(COLOURS)]
        pts = sorted(series[key])
        for (n0, v0), (n1, v1) in zip(pts, pts[1:]):
            cv.line(X(n0), Y(v0), X(n1), Y(v1), c, width=3)
        for n, val in pts:
            cv.rect(X(n) - 4, Y(val) - 4, 9, 9, c)
        label, model, backend, precision = key
        legend_y += 24
        cv.rect(legend_x + 10, legend_y + 2, 10, 10, c)
        kind = backend.split("-")[-1]
        cv.text(legend_x + 40, legend_y, f"{label} {kind} {precision}")
    cv.save(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="LABEL=DIR")
    ap.add_argument("--out", help="PNG to write")
    ap.add_argument("--title", default="2 CORES, DAMAGE CHECK ON")
    ap.add_argument("--model", help="only records whose model name contains this")
    ap.add_argument(
        "--no-references",
        action="store_true",
        help="leave out the 3.8e6 target and the LAMMPS line (they concern the 3D block)",
    )
    args = ap.parse_args()
    pooled = load(args.runs)
    if args.model:
        pooled = {k: v for k, v in pooled.items() if args.model in k[1]}
    table(pooled)
    if args.out:
        plot(pooled, args.out, args.title, references=not args.no_references)


if __name__ == "__main__":
    main()
