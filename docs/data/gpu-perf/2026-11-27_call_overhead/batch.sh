#!/usr/bin/env bash
# The device loop's cost per call: steps per call 1, 10, 60, before (conditions' lists built
# and compared each call) and after (kept while the conditions are the same), alternating.
cd "$(dirname "$0")"
export PERIDOT_CACHE_DIR=/tmp/kcache PERIDOT_KERNEL_DEFINES="PD_HALF=0"
{
for r in 1 2; do
for bin in peridot_base peridot; do
for b in 1 10 60; do
  echo "== $bin batch $b"
  timeout 100 ./$bin bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32,f64 --sizes 4M --steps 120 --batch $b --out /tmp/b3 2>&1 | grep -E "gpu-loop|rror"
done; done; done
for bin in peridot_base peridot; do
  echo "== $bin plate 1M"
  timeout 100 ./$bin bench models/precracked_plate_2d.toml --backends gpu-loop --precisions f32,f64 --sizes 1M --steps 400 --out /tmp/b2 2>&1 | grep -E "gpu-loop|rror"
done
} 2>&1 | tee $OUT/batch.log
