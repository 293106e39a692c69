#!/usr/bin/env bash
# After the crack-tip change (damage to rank 0 alone) and the lattice loops' shared node and
# bond-end helpers (kernels/bonds.cuh): the baked loop's test and a short A/B bench, the GPU
# suite, and tests/mpi.rs with GPU ranks.
set -u
cd "$(dirname "$0")/.."
G=$PWD/.gpu; M=$PWD/.gpu-mpi; O=$OUT; export NCCL_NVLS_ENABLE=0
for f in $G/gpu_tests.xz $M/peridot.xz $M/mpi_tests.xz; do [ -f $f ] && xz -d -f $f; done; chmod +x $G/gpu_tests $M/peridot $M/mpi_tests
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $O/device.txt
mkdir -p /tmp/tgt-gpu/release && cp $M/peridot /tmp/tgt-gpu/release/peridot
source $M/mpich_bundle.sh unpack $M >/dev/null
S=$(date +%s); t() { echo "[$(( $(date +%s) - S )) s] $*"; }
PERIDOT_REQUIRE_GPU=1 timeout 100 $G/gpu_tests baked --test-threads 2 > $O/baked.log 2>&1; t "baked exit $?"
grep -E '^baked|test result' $O/baked.log
for v in "PD_BAKED=0" "" "PD_BAKED=0" ""; do
  for m in "pmb_block_3d.toml 4019679 200" "precracked_plate_2d.toml 4000000 1000"; do
    set -- $m; d=/tmp/b; rm -rf $d
    PERIDOT_KERNEL_DEFINES=$v timeout 100 $M/peridot bench $G/models/$1 --backends gpu-loop --precisions f32 --sizes $2 --steps $3 --out $d > /dev/null 2>&1
    python3 -c "import json,sys; r=json.load(open('$d/bench.json')); [print('${v:-baked}', '$1', x['precision'], x['nodes'], '%.3e' % x['node_steps_per_second'], x['broken_bonds']) for x in r]" 2>/dev/null | tee -a $O/ab.txt || echo "${v:-baked} $1 failed"
  done
done
t "ab done"
PERIDOT_REQUIRE_GPU=1 timeout 200 $G/gpu_tests --test-threads 4 > $O/gpu_tests.log 2>&1; t "gpu_tests exit $?"
grep -hE 'FAILED|panicked|test result' $O/gpu_tests.log
PERIDOT_REQUIRE_GPU=1 timeout 200 $M/mpi_tests --test-threads 1 > $O/mpi_tests.log 2>&1; t "mpi_tests exit $?"
grep -E "^test |test result|panicked" $O/mpi_tests.log
