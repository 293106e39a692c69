#!/usr/bin/env bash
# The half-stencil loop in the engine: GPU tests, then the lattice loop with and without it.
cd "$(dirname "$0")"
G=.
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/device.txt
export PERIDOT_CACHE_DIR=/tmp/kcache
{
PERIDOT_REQUIRE_GPU=1 timeout 250 ./gpu_tests --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED|failed|slot table"
PERIDOT_REQUIRE_GPU=1 timeout 120 ./agreement_tests gpu --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED|failed"
PERIDOT_REQUIRE_GPU=1 timeout 60 ./kernels_compile 2>&1 | grep -E "test result|panicked"
} 2>&1 | tee $OUT/tests.log
{
for r in 1 2; do
  for v in "" "PD_HALF=0"; do
    export PERIDOT_KERNEL_DEFINES="$v"; echo "== round $r ${v:-half}"
    timeout 100 ./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32,f64 --sizes 4M --steps 60 --out /tmp/b3 2>&1 | grep -E "gpu-loop|rror"
    timeout 60 ./peridot bench models/precracked_plate_2d.toml --backends gpu-loop --precisions f32,f64 --sizes 1M --steps 400 --out /tmp/b2 2>&1 | grep -E "gpu-loop|rror"
  done
done
unset PERIDOT_KERNEL_DEFINES
} 2>&1 | tee $OUT/bench.log
