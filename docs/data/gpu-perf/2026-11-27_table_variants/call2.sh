#!/usr/bin/env bash
# Slot-table loop: base (offset as a value) vs new (offset bits), and variants; SASS of the table kernels.
G=.gpu-perf
W=/tmp/kw; mkdir -p $W $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/device.txt
export PERIDOT_CACHE_DIR=/tmp/kcache
one() {
  local bin=$1 tag=$2
  echo "== $tag ${PERIDOT_KERNEL_DEFINES:-}"
  timeout 100 $bin bench $G/models/pmb_block_3d.toml --backends gpu-loop --precisions f64,f32 --sizes 4M --steps 40 --out $W/b3 2>&1 | grep -E "gpu-loop|rror"
  timeout 50 $bin bench $G/models/precracked_plate_2d.toml --backends gpu-loop --precisions f32,f64 --sizes 1M --steps 400 --out $W/b2 2>&1 | grep -E "gpu-loop|rror"
}
{
for r in 1 2; do
  one $G/base/peridot base
  one $G/peridot new
  export PERIDOT_KERNEL_DEFINES="PD_TABLE_PAIR=1"; one $G/peridot new; unset PERIDOT_KERNEL_DEFINES
  export PERIDOT_KERNEL_DEFINES="PD_TABLE_SHARED=1"; one $G/peridot new; unset PERIDOT_KERNEL_DEFINES
done
PERIDOT_REQUIRE_GPU=1 timeout 100 $G/agreement_tests gpu_loop --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED"
PERIDOT_KERNEL_DEFINES="PD_TABLE_PAIR=1" PERIDOT_REQUIRE_GPU=1 timeout 100 $G/agreement_tests gpu_loop --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED"
} 2>&1 | tee $OUT/variants.log
CUO=$(ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1); echo "cuobjdump: $CUO"
ls -la /tmp/kcache | head
if [ -n "$CUO" ]; then
  for f in $(find /tmp/kcache -type f); do
    $CUO -sass $f 2>/dev/null | awk '/Function : /{p = ($0 ~ /lattice_table/)} p' >> $OUT/sass_table.txt
  done
  grep -c "" $OUT/sass_table.txt; grep "Function" $OUT/sass_table.txt | sort | uniq -c
fi
