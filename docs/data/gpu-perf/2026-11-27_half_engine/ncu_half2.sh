#!/usr/bin/env bash
cd "$(dirname "$0")"
export PERIDOT_CACHE_DIR=/tmp/kcache
NCU=/usr/local/cuda/bin/ncu
M=gpu__time_duration.sum,smsp__inst_executed.sum
{
for v in "PD_HALF=0"; do
echo "=== ${v:-half}"
PERIDOT_KERNEL_DEFINES="$v" $NCU --launch-skip 20 --launch-count 8 --metrics $M ./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32 --sizes 4M --steps 8 --out /tmp/b3 2>&1 | grep -E "^\s+[a-z_0-9]+_f(32|64) \(|gpu__time|inst_exec" 
done
} 2>&1 | tee $OUT/ncu2.log
