#!/usr/bin/env bash
# final validation on two GPUs: GPU tests, agreement, kernels, the MPI tests (one GPU per rank), 32 M on 2 ranks, 8 M with probe rows
set -u
cd "$(dirname "$0")/.."
R=$OUT/res; mkdir -p $R
export NCCL_NVLS_ENABLE=0 PERIDOT_REQUIRE_GPU=1
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv | tee $R/device.txt
G=.gpu; mkdir -p /work/target-final/release && cp .gpu-mpi/peridot /work/target-final/release/peridot
timeout 200 $G/gpu_tests --test-threads 4 > $R/gpu_tests.log 2>&1; echo "gpu_tests exit $?" | tee -a $R/gpu_tests.log
grep -E "test result|FAILED|panicked" $R/gpu_tests.log
timeout 150 $G/agreement_tests --test-threads 4 > $R/agreement.log 2>&1; echo "agreement exit $?" | tee -a $R/agreement.log
grep -E "test result|FAILED|panicked" $R/agreement.log
timeout 90 $G/kernels_compile > $R/kernels_compile.log 2>&1; echo "kernels_compile exit $?" | tee -a $R/kernels_compile.log
grep -E "test result|FAILED|panicked" $R/kernels_compile.log
M=$PWD/.gpu-mpi
source $M/mpich_bundle.sh unpack $M; set +e
mkdir -p /work/target-final/release && cp $M/peridot /work/target-final/release/peridot
timeout 120 $M/mpi_tests --test-threads 1 > $R/mpi_tests.log 2>&1; echo "mpi_tests exit $?" >> $R/mpi_tests.log
grep -E "^test |test result|exit" $R/mpi_tests.log
OFF="--set output.vtk=false --set output.image=false --set output.tips_every=0"
run() {
  local tag=$1 p=$2 prec=$3 dx=$4 lim=$5; shift 5
  d=$R/$tag
  /usr/bin/time -f "$tag: process %e s, host peak %M kB" timeout $lim mpirun -n $p $M/peridot run $M/models/pmb_block_3d.toml \
    --backend gpu-loop --precision $prec --set discretization.dx=$dx --set solver.steps=200 $OFF "$@" \
    --out $d --quiet > $d.log 2>&1
  tail -n 2 $d.log
  python3 - $d <<'PY'
import json, sys
try:
    s = json.load(open(sys.argv[1] + "/summary.json"))
except Exception as e:
    print("  no summary", e); sys.exit()
ph = s['phase_seconds']; st = s.get('setup', {})
print(f"  status {s.get('status')} nodes {s['nodes']} loop {ph.get('forces'):.3f} s nsps {s['node_steps_per_second']:.3e} to_first_step {st.get('to_first_step')} output {ph.get('output')}")
for r in s.get("ranks") or []:
    print("  rank", r["rank"], "device", r.get("device"), "forces %.3f exchange %.3f wait %.3f message %.3f" % (r["forces_seconds"], r["exchange_seconds"], r.get("wait_seconds", -1), r.get("message_seconds", -1)))
PY
}
run 8M-f32-2-probes 2 f32 2.4960e-4 60
run 32M-f32-2 2 f32 1.5724e-4 120 --set 'output.probes=[]'
run 32M-f64-2 2 f64 1.5724e-4 120 --set 'output.probes=[]'
cd $OUT && tar czf res.tgz res && rm -rf res
