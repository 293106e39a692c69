#!/usr/bin/env bash
# two GPUs (issue 22 items 2-4): strong scaling 8 M and 32 M f32/f64 1 vs 2 ranks, weak 16 M per GPU, a large model
set -u
cd "$(dirname "$0")"
G=$PWD
R=$OUT/res
mkdir -p $R
source ./mpich_bundle.sh unpack $G; set +e
export NCCL_NVLS_ENABLE=0
T0=$(date +%s)
nvidia-smi --query-gpu=index,name,memory.total --format=csv | tee $R/device.txt
nproc | tee -a $R/device.txt; free -g | tee -a $R/device.txt
OFF="--set output.vtk=false --set output.image=false --set output.tips_every=0 --set output.probes=[]"
run() {
  local tag=$1 p=$2 prec=$3 dx=$4 lim=$5
  local left=$(( 530 - ($(date +%s) - T0) ))
  if [ $left -lt 30 ]; then echo "$tag: skipped (time)"; return; fi
  [ $lim -gt $left ] && lim=$left
  d=$R/$tag
  /usr/bin/time -f "$tag: process %e s, host peak %M kB" timeout $lim mpirun -n $p ./peridot run models/pmb_block_3d.toml \
    --backend gpu-loop --precision $prec --set discretization.dx=$dx --set solver.steps=200 $OFF \
    --out $d --quiet > $d.log 2>&1
  tail -n 1 $d.log
  python3 - $d <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1] + "/summary.json"))
except Exception as e:
    print("  no summary", e); sys.exit()
ph = s['phase_seconds']; st = s.get('setup', {})
print(f"  nodes {s['nodes']} bonds {s['bonds']} loop {ph.get('forces'):.3f} s nsps {s['node_steps_per_second']:.3e} to_first_step {st.get('to_first_step')} peak_gpu {s.get('peak_gpu_bytes',0)/2**30:.1f} GiB")
for r in s.get("ranks") or []:
    print("  rank", r["rank"], "device", r.get("device"), "nodes", r["nodes"], "ghosts", r["ghosts"], "forces %.3f exchange %.3f wait %.3f message %.3f" % (r["forces_seconds"], r["exchange_seconds"], r.get("wait_seconds", -1), r.get("message_seconds", -1)))
PY
}
run 8M-f32-1 1 f32 2.4960e-4 90
run 8M-f32-2 2 f32 2.4960e-4 90
run 8M-f64-1 1 f64 2.4960e-4 90
run 8M-f64-2 2 f64 2.4960e-4 90
run 32M-f32-2 2 f32 1.5724e-4 150
run 32M-f32-1 1 f32 1.5724e-4 150
run 16M-f32-1 1 f32 1.98413e-4 100
run 32M-f64-2 2 f64 1.5724e-4 150
run 32M-f64-1 1 f64 1.5724e-4 150
run 128M-f32-2 2 f32 9.9206e-5 400
cd $OUT && tar czf res.tgz res && rm -rf res
