#!/usr/bin/env bash
cd "$(dirname "$0")"
export PERIDOT_CACHE_DIR=/tmp/kcache
{
for r in 1 2; do
  for v in "" "PD_HALF=0"; do
    export PERIDOT_KERNEL_DEFINES="$v"; echo "== round $r ${v:-half}"
    timeout 100 ./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32,f64 --sizes 4M --steps 60 --out /tmp/b3 2>&1 | grep -E "gpu-loop|rror"
    timeout 60 ./peridot bench models/precracked_plate_2d.toml --backends gpu-loop --precisions f32,f64 --sizes 1M --steps 400 --out /tmp/b2 2>&1 | grep -E "gpu-loop|rror"
  done
done
} 2>&1 | tee $OUT/bench.log
