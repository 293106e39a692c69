#!/usr/bin/env bash
# gpu-matrix ranks overlapping the ghost exchange (the pairs that reach a ghost in the last
# rows; the rows before them enqueued while the displacements, LPS also the dilatations,
# travel): the GPU suite, tests/mpi.rs with GPU ranks, then `mpirun -n 2` on one H100 of the
# build before (peridot-old, 2196f35) and after, alternated twice, PMB and LPS 3D blocks.
# `call.sh tests` (the default) runs the suites, `call.sh ab` the runs.
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
for model in pmb_block_3d lps_block_3d; do for round in 1 2; do for v in peridot-old peridot; do
  d=/tmp/o_$v; rm -rf $d
  RAYON_NUM_THREADS=8 timeout 120 mpirun -n 2 $M/$v run models/$model.toml --backend gpu-matrix --quiet --out $d --set discretization.dx=4e-4 --set solver.steps=400 --set output.vtk=false --set 'output.probes=[]' --set output.image=false > $O/run_${model}_${v}_$round.log 2>&1
  python3 -c "
import json; s=json.load(open('$d/summary.json')); ph=s['phase_seconds']
print('$model', '$v', s['nodes'], 'forces %.3f' % ph['forces'], 'broken', s['broken_bonds'], [(r['rank'], round(r['exchange_seconds'],3), round(r['wait_seconds'],3), round(r['message_seconds'],3), round(r['forces_seconds'],3)) for r in s['ranks']])" 2>&1 | tee -a $O/overlap.txt
done; done; done
t done
