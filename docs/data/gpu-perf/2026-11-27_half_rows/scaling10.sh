#!/usr/bin/env bash
# gpu-matrix across ranks, the 3D block at 2 M nodes, 200 steps: one process, 1 and 2 ranks
set -u; R=$OUT/res; M=$PWD/.gpu-mpi
OFF="--set output.vtk=false --set output.image=false --set output.tips_every=0 --set output.probes=[]"
run() {
  local tag=$1 p=$2 prec=$3 dx=$4 lim=$5; shift 5
  d=$R/$tag
  local launch="mpirun -n $p"; [ "$p" = 0 ] && launch=""
  /usr/bin/time -f "$tag: process %e s, host peak %M kB" timeout $lim $launch $M/peridot run $M/models/pmb_block_3d.toml \
    --backend gpu-matrix --precision $prec --set discretization.dx=$dx --set solver.steps=200 $OFF "$@" \
    --out $d --quiet > $d.log 2>&1
  tail -n 2 $d.log
  python3 - $d <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1] + "/summary.json"))
except Exception as e:
    print("  no summary", e); sys.exit()
ph = s['phase_seconds']; st = s.get('setup', {})
print(f"  {s['backend']} status {s.get('status')} nodes {s['nodes']} loop {ph.get('forces'):.3f} s nsps {s['node_steps_per_second']:.3e} to_first_step {st.get('to_first_step')} peak_gpu {s.get('peak_gpu_bytes',0)/2**30:.2f} GiB")
for r in s.get("ranks") or []:
    print("  rank", r["rank"], "device", r.get("device"), "forces %.3f exchange %.3f wait %.3f message %.3f" % (r["forces_seconds"], r["exchange_seconds"], r.get("wait_seconds", -1), r.get("message_seconds", -1)))
PY
}
run 2M-f64-core 0 f64 3.962e-4 150
run 2M-f64-1 1 f64 3.962e-4 150
run 2M-f64-2 2 f64 3.962e-4 150
run 2M-f32-1 1 f32 3.962e-4 150
run 2M-f32-2 2 f32 3.962e-4 150
