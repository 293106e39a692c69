#!/usr/bin/env bash
# two GPUs: where a step's time goes (device per rank, wait for the device, messages)
set -u
cd "$(dirname "$0")"
G=$PWD
R=$OUT/res
mkdir -p $R
source ./mpich_bundle.sh unpack $G; set +e
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,memory.total --format=csv | tee $R/device.txt
OFF="--set output.vtk=false --set output.image=false --set output.tips_every=0"
run() {
  local tag=$1 p=$2 prec=$3; shift 3
  d=$R/$tag
  /usr/bin/time -f "$tag: process %e s, host peak %M kB" timeout 200 mpirun -n $p ./peridot run models/pmb_block_3d.toml \
    --backend gpu-loop --precision $prec --set discretization.dx=2.4960e-4 --set solver.steps=200 $OFF "$@" \
    --out $d --quiet > $d.log 2>&1
  tail -n 1 $d.log
  python3 - $d <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1] + "/summary.json"))
except Exception as e:
    print("no summary", e); sys.exit()
print(f"  steps {s['steps']} wall {s['wall_seconds']:.3f} loop nsps {s['node_steps_per_second']:.3e} phases {json.dumps(s['phase_seconds'])}")
for r in s.get("ranks") or []:
    print("  rank", r["rank"], "device", r.get("device"), "forces %.3f exchange %.3f wait %.3f message %.3f exchanges %d" % (r["forces_seconds"], r["exchange_seconds"], r.get("wait_seconds", -1), r.get("message_seconds", -1), r["exchanges"]))
PY
}
run f32-2-probes 2 f32
run f32-2-noprobes 2 f32 --set 'output.probes=[]'
run f32-1-noprobes 1 f32 --set 'output.probes=[]'
cd $OUT && tar czf res.tgz res && rm -rf res
