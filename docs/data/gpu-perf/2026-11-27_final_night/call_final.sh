#!/usr/bin/env bash
# Validation of the merged tree on one GPU, then a user's runs (base = the slot-table loop and
# the conditions' lists built every call) and the README's benchmarks.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/device.txt
export PERIDOT_CACHE_DIR=/tmp/kcache
{
PERIDOT_REQUIRE_GPU=1 timeout 300 ./gpu_tests --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED|failed|^test .*distributed_contact|ranks time"
PERIDOT_REQUIRE_GPU=1 timeout 150 ./agreement_tests gpu --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED|failed"
PERIDOT_REQUIRE_GPU=1 timeout 60 ./kernels_compile 2>&1 | grep -E "test result|panicked"
} 2>&1 | tee $OUT/tests.log
export PERIDOT_KERNEL_DEFINES="PD_HALF=0"
RUNS="block3d-f64 block3d-f32 plate2d-4M kw3d-1.4M" BENCH=1 timeout 420 ./gpu_user_runs.sh run > $OUT/user_runs.log 2>&1
cp /tmp/gpu-user-runs/*.log $OUT/ 2>/dev/null
{
./peridot bench models/lps_block_3d.toml --backends gpu-loop --precisions f64 --sizes 4M --steps 60 --out /tmp/bl 2>&1 | grep -E "gpu-loop|rror"
./peridot bench models/precracked_plate_2d.toml --backends gpu-loop --precisions f64,f32 --sizes 4M --steps 200 --out /tmp/bp 2>&1 | grep -E "gpu-loop|rror"
./peridot bench models/pmb_block_3d.toml --backends gpu-matrix --precisions f64 --sizes 1M --steps 60 --out /tmp/bm 2>&1 | grep -E "gpu-matrix|rror"
} 2>&1 | tee $OUT/bench_readme.log
