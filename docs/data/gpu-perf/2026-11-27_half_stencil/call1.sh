#!/usr/bin/env bash
# The half-stencil measurement beside the engine's lattice loop, on one GPU.
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv | tee $OUT/device.txt
export PERIDOT_CACHE_DIR=/tmp/kcache
{
for r in 1 2; do
  echo "== round $r"
  timeout 120 ./half_stencil 160 30
  timeout 120 ./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32 --sizes 4M --steps 60 --out /tmp/b3 2>&1 | grep -E "gpu-loop|rror"
done
} 2>&1 | tee $OUT/half_stencil.log
