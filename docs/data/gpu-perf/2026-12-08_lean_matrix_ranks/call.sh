#!/usr/bin/env bash
# gpu-matrix ranks set up lean (their rows from the part's own bonds, no stored problem of
# the whole body on every rank): the GPU suite, tests/mpi.rs with GPU ranks, then
# `mpirun -n 2` gpu-matrix on one H100, the build before (peridot-old, 4ed571f) and after,
# each rank's peak resident memory (the wrapper's children's maxrss) and the summary.
# `call.sh tests` (the default) runs the suites, `call.sh mem` the runs.
set -u
cd "$(dirname "$0")/.."  # (run as .gpu-mpi/call.sh: the repository root)
G=$PWD/.gpu; M=$PWD/.gpu-mpi; O=$OUT
for f in $G/gpu_tests.xz $M/peridot.xz $M/peridot-old.xz $M/mpi_tests.xz; do [ -f $f ] && xz -d -f $f; done
chmod +x $G/gpu_tests $M/peridot $M/peridot-old $M/mpi_tests
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $O/device.txt
# (tests/mpi.rs runs the peridot its build named)
mkdir -p /work/main/target/release && cp $M/peridot /work/main/target/release/peridot
source $M/mpich_bundle.sh unpack $M >/dev/null
S=$(date +%s); t() { echo "[$(( $(date +%s) - S )) s] $*"; }
if [ "${1:-tests}" = tests ]; then
PERIDOT_REQUIRE_GPU=1 timeout 300 $G/gpu_tests --test-threads 4 > $O/gpu_tests.log 2>&1; t "gpu_tests exit $?"
grep -hE 'FAILED|panicked|test result' $O/gpu_tests.log
PERIDOT_REQUIRE_GPU=1 timeout 200 $M/mpi_tests --test-threads 1 > $O/mpi_tests.log 2>&1; t "mpi_tests exit $?"
grep -E "^test |test result|panicked" $O/mpi_tests.log
exit 0
fi
W='import os,resource,subprocess,sys; r=subprocess.call(sys.argv[1:], close_fds=False); print("rank", os.environ.get("PMI_RANK"), "maxrss_kb", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True); sys.exit(r)'
for round in 1 2; do for v in peridot-old peridot; do
  d=/tmp/o_$v; rm -rf $d
  RAYON_NUM_THREADS=8 timeout 150 mpirun -n 2 python3 -c "$W" $M/$v run models/pmb_block_3d.toml --backend gpu-matrix --quiet --out $d --set discretization.dx=4e-4 --set solver.steps=20 --set output.vtk=false --set 'output.probes=[]' --set output.image=false > $O/mem_${v}_$round.log 2>&1
  echo "$v round $round: $(grep -h maxrss $O/mem_${v}_$round.log | tr '\n' ' ')" | tee -a $O/memory.txt
  python3 -c "
import json; s=json.load(open('$d/summary.json'))
print('  ', s['nodes'], 'bonds', s['bonds'], 'to_first_step %.2f' % s['setup']['to_first_step'], 'forces %.3f' % s['phase_seconds']['forces'], 'broken', s['broken_bonds'], 'max_damage', s['max_damage'])" 2>&1 | tee -a $O/memory.txt
done; done
t done
