#!/usr/bin/env bash
# four GPUs: gpu-loop across 1, 2 and 4 ranks on the 3D block at 32 M nodes (f32, 200 steps),
# the 4 ranks cut in slabs (4 x 1 x 1) and in blocks (2 x 2 x 1)
set -u
cd "$(dirname "$0")/.."
R=$OUT/res; mkdir -p $R
M=$PWD/.gpu-mpi
source $M/mpich_bundle.sh unpack $M; set +e
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
nvidia-smi --query-gpu=index,name,memory.total --format=csv | tee $R/device.txt
OFF="--set output.vtk=false --set output.image=false --set output.tips_every=0 --set output.probes=[]"
run() {
  local tag=$1 p=$2 part=$3 lim=$4
  local left=$(( 560 - ($(date +%s) - T0) ))
  if [ $left -lt 30 ]; then echo "$tag: skipped (time)"; return; fi
  [ $lim -gt $left ] && lim=$left
  d=$R/$tag
  $M/peridot info $M/models/pmb_block_3d.toml --set discretization.dx=1.5724e-4 --ranks $p --partition $part > $d.info 2>&1
  /usr/bin/time -f "$tag: process %e s, host peak %M kB" timeout $lim mpirun -n $p $M/peridot run $M/models/pmb_block_3d.toml \
    --backend gpu-loop --precision f32 --set discretization.dx=1.5724e-4 --set solver.steps=200 $OFF \
    --partition $part --out $d --quiet > $d.log 2>&1
  tail -n 1 $d.log
  python3 - $d <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1] + "/summary.json"))
except Exception as e:
    print("  no summary", e); sys.exit()
ph = s['phase_seconds']; st = s.get('setup', {})
print(f"  nodes {s['nodes']} loop {ph.get('forces'):.3f} s nsps {s['node_steps_per_second']:.3e} to_first_step {st.get('to_first_step')}")
for r in s.get("ranks") or []:
    print("  rank", r["rank"], "device", r.get("device"), "nodes", r["nodes"], "ghosts", r["ghosts"], "forces %.3f exchange %.3f wait %.3f message %.3f" % (r["forces_seconds"], r["exchange_seconds"], r.get("wait_seconds", -1), r.get("message_seconds", -1)))
PY
}
run 32M-4-blocks 4 blocks 150
run 32M-4-slabs 4 slabs 150
run 32M-2 2 auto 150
run 32M-1 1 auto 150
cd $OUT && tar czf res.tgz res && rm -rf res
