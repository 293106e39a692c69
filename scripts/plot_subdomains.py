#!/usr/bin/env python3
"""Plot where the time of a subdomain run goes (docs/results.md, "Subdomains").

Usage:
    python3 scripts/plot_subdomains.py [--out PNG] [--bandwidth GBPS] LABEL=SUMMARY [...]

Each SUMMARY is the `summary.json` of a `peridot run --gpu-memory-budget ...` (its
`subdomains` report and `phase_seconds`). For each run one group of bars, milliseconds per
step: the kernels, the copies in and out (copy-engine time), the host's gather, scatter and
update, the bound max(kernels, bytes in / bandwidth, bytes out / bandwidth), the measured
force evaluation and the whole step (forces + update phases over the steps). `--bandwidth`
(GB/s) replaces the bandwidth the run measured, for runs whose probe read low. Needs
matplotlib.
"""

import argparse
import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def bars(summary, bandwidth):
    r = summary["subdomains"]
    p = summary["phase_seconds"]
    bw_in = bandwidth or r["pinned_h2d_bytes_per_second"]
    bw_out = bandwidth or r["pinned_d2h_bytes_per_second"]
    bound = max(
        r["compute_seconds_per_evaluation"],
        r["bytes_in_per_evaluation"] / bw_in,
        r["bytes_out_per_evaluation"] / bw_out,
    )
    step = (p["forces"] + p["update"]) / summary["steps"]
    return [
        ("kernels", r["compute_seconds_per_evaluation"]),
        ("copies in", r["copy_in_seconds_per_evaluation"]),
        ("copies out", r["copy_out_seconds_per_evaluation"]),
        ("host", r["host_seconds_per_evaluation"]),
        ("PCIe bound", bound),
        ("evaluation", r["seconds_per_evaluation"]),
        ("step", step),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="docs/images/subdomains_time.png")
    ap.add_argument("--bandwidth", type=float, default=None, help="GB/s")
    ap.add_argument("runs", nargs="+")
    a = ap.parse_args()
    bw = a.bandwidth * 1e9 if a.bandwidth else None
    fig, axes = plt.subplots(1, len(a.runs), figsize=(5.2 * len(a.runs), 3.6), squeeze=False)
    colours = ["#4c72b0", "#dd8452", "#c44e52", "#8172b3", "#222222", "#55a868", "#2d6a4f"]
    for ax, item in zip(axes[0], a.runs):
        label, path = item.split("=", 1)
        s = json.load(open(path))
        data = bars(s, bw)
        names = [n for n, _ in data]
        ms = [1e3 * v for _, v in data]
        ax.barh(names[::-1], ms[::-1], color=colours[::-1])
        for y, v in enumerate(ms[::-1]):
            ax.text(v, y, f" {v:.1f}", va="center", fontsize=8)
        r = s["subdomains"]
        ax.set_title(
            f"{label}: {s['nodes'] / 1e6:.1f} M nodes, {r['count']} subdomains,\n"
            f"{100 * r['allocated_bytes'] / r['in_core_bytes']:.1f} % of the in-core memory",
            fontsize=9,
        )
        ax.set_xlabel("ms per step (H100, f64, PCIe)")
        ax.set_xlim(0, max(ms) * 1.25)
    fig.tight_layout()
    fig.savefig(a.out, dpi=130)
    print(a.out)


if __name__ == "__main__":
    main()
