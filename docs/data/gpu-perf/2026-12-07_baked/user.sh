#!/usr/bin/env bash
# A user's `peridot run` with the slot-table loop (PD_BAKED=0) and the baked loop, process
# start to exit, a fresh kernel cache: round 1 compiles each variant's programs, round 2 reads them.
set -u
cd "$(dirname "$0")/.."
G=$PWD/.gpu; [ -f $G/peridot.xz ] && xz -d $G/peridot.xz; chmod +x $G/peridot
export PERIDOT_CACHE_DIR=/tmp/kc; rm -rf /tmp/kc
for round in 1 2; do
for v in "PD_BAKED=0" ""; do
for r in "block3d-f32|f32|pmb_block_3d.toml|discretization.dx=3.1447e-4" "block3d-f64|f64|pmb_block_3d.toml|discretization.dx=3.1447e-4" "plate2d-4M-f32|f32|precracked_plate_2d.toml|discretization.dx=2.5e-5 solver.dt=3.34e-9 solver.steps=5000 output.vtk_every=1000"; do
  IFS='|' read -r label p model sets <<<"$r"; args=(); for s in $sets; do args+=(--set "$s"); done
  rm -rf /tmp/r; t0=$(date +%s.%N)
  PERIDOT_KERNEL_DEFINES=$v timeout 120 $G/peridot run $G/models/$model --backend gpu-loop --precision $p --out /tmp/r --quiet "${args[@]}" > /tmp/r.log 2>&1 || { echo "$round ${v:-baked} $label FAILED $(tail -c 300 /tmp/r.log)"; continue; }
  t1=$(date +%s.%N)
  python3 - $round "${v:-baked}" $label $t0 $t1 <<'PY' | tee -a $OUT/user.txt
import json, sys
r, v, label, t0, t1 = sys.argv[1:]
s = json.load(open("/tmp/r/summary.json")); p = s["phase_seconds"]
print(f"{r} {v:10s} {label:15s} {s['nodes']:>9d} {s['steps']:>5d} wall {float(t1)-float(t0):6.2f} first {s.get('setup',{}).get('to_first_step',0):5.2f} forces {p.get('forces',0):5.2f} output {p.get('output',0):5.2f} loop {s['node_steps_per_second']:.3e} broken {s.get('broken_bonds','?')}")
PY
done; done; done
