#!/usr/bin/env bash
# Kernel variants of the slot-table loop: bench 3D PMB 4M f64/f32 and 2D plate 1M f32, agreement tests per variant.
G=.gpu-perf
W=/tmp/kw; mkdir -p $W $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/device.txt
export PERIDOT_CACHE_DIR=/tmp/kcache
one() {
  echo "== variant ${PERIDOT_KERNEL_DEFINES:-default}"
  timeout 100 $G/peridot bench $G/models/pmb_block_3d.toml --backends gpu-loop --precisions f64,f32 --sizes 4M --steps 40 --out $W/b3 2>&1 | grep -E "gpu-loop|rror"
  timeout 50 $G/peridot bench $G/models/precracked_plate_2d.toml --backends gpu-loop --precisions f32,f64 --sizes 1M --steps 400 --out $W/b2 2>&1 | grep -E "gpu-loop|rror"
  if [ "${1:-}" = test ]; then
    PERIDOT_REQUIRE_GPU=1 timeout 100 $G/agreement_tests gpu_loop --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED"
  fi
}
{
one
for v in "PD_TABLE_SHARED=1" "PD_TABLE_PAIR=1" "PD_TABLE_PAIR=1 PD_MIN_BLOCKS=4" "PD_TABLE_PAIR=1 PD_MIN_BLOCKS=3" "PD_TABLE_PAIR=1 PD_TABLE_SHARED=1 PD_MIN_BLOCKS=4"; do
  export PERIDOT_KERNEL_DEFINES="$v"; one test; unset PERIDOT_KERNEL_DEFINES
done
unset PERIDOT_KERNEL_DEFINES
one
} 2>&1 | tee $OUT/variants.log
