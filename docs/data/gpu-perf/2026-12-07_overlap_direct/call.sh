#!/usr/bin/env bash
# After the history pass's overlap on GPU ranks (each failure kernel over the interior while
# the pending exchanges complete) and the halo through device buffers (CUDA-aware MPI, and
# thread ranks that stage device buffers themselves): the GPU suite, tests/mpi.rs with GPU
# ranks, and what the carried MPICH reports (summary.json ranks[].device_buffers).
set -u
cd "$(dirname "$0")/.."  # (run as .gpu-mpi/call.sh: the repository root)
G=$PWD/.gpu; M=$PWD/.gpu-mpi; O=$OUT; export NCCL_NVLS_ENABLE=0
for f in $G/gpu_tests.xz $M/peridot.xz $M/mpi_tests.xz; do [ -f $f ] && xz -d -f $f; done; chmod +x $G/gpu_tests $M/peridot $M/mpi_tests
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $O/device.txt
mkdir -p /tmp/tgt-gpu/release && cp $M/peridot /tmp/tgt-gpu/release/peridot
source $M/mpich_bundle.sh unpack $M >/dev/null
S=$(date +%s); t() { echo "[$(( $(date +%s) - S )) s] $*"; }
PERIDOT_REQUIRE_GPU=1 timeout 120 $G/gpu_tests distributed --test-threads 2 > $O/distributed.log 2>&1; t "distributed exit $?"
grep -hE '^test |FAILED|panicked|test result' $O/distributed.log
for p in 2; do
  d=/tmp/r$p; rm -rf $d
  timeout 60 mpirun -n $p $M/peridot run $PWD/models/precracked_plate_2d.toml --backend gpu-loop --quiet --out $d --set solver.steps=200 --set output.vtk=false --set output.image=false > $O/run$p.log 2>&1; t "mpirun -n $p exit $?"
  python3 -c "import json; s=json.load(open('$d/summary.json')); print('ranks', [(r['rank'], r['device'], r['device_buffers']) for r in s['ranks']])" | tee -a $O/direct.txt
done
PERIDOT_REQUIRE_GPU=1 timeout 240 $G/gpu_tests --test-threads 4 > $O/gpu_tests.log 2>&1; t "gpu_tests exit $?"
grep -hE 'FAILED|panicked|test result' $O/gpu_tests.log
PERIDOT_REQUIRE_GPU=1 timeout 200 $M/mpi_tests --test-threads 1 > $O/mpi_tests.log 2>&1; t "mpi_tests exit $?"
grep -E "^test |test result|panicked" $O/mpi_tests.log
