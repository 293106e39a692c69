#!/usr/bin/env bash
cd "$(dirname "$0")"
export PERIDOT_CACHE_DIR=/tmp/kcache
{
PERIDOT_REQUIRE_GPU=1 timeout 300 ./gpu_tests --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED|failed"
PERIDOT_REQUIRE_GPU=1 timeout 150 ./agreement_tests --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED|failed"
PERIDOT_REQUIRE_GPU=1 timeout 60 ./kernels_compile 2>&1 | grep -E "test result|panicked"
./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f64,f32 --sizes 4M --steps 60 --out /tmp/b3 2>&1 | grep -E "gpu-loop|rror"
./peridot bench models/precracked_plate_2d.toml --backends gpu-loop --precisions f64,f32 --sizes 1M --steps 400 --out /tmp/b2 2>&1 | grep -E "gpu-loop|rror"
} 2>&1 | tee $OUT/tests.log
