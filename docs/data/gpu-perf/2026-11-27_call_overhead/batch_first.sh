#!/usr/bin/env bash
# Where the bench's step goes beyond the force kernel: steps per call, and a timeline.
cd "$(dirname "$0")"
export PERIDOT_CACHE_DIR=/tmp/kcache PERIDOT_KERNEL_DEFINES="PD_HALF=0"
{
for b in 10 60 1 10 60; do
  echo "== batch $b"
  timeout 100 ./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32 --sizes 4M --steps 120 --batch $b --out /tmp/b3 2>&1 | grep -E "gpu-loop|rror"
done
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS"
if [ -n "$NSYS" ]; then
  $NSYS profile -o /tmp/tl --force-overwrite true ./peridot bench models/pmb_block_3d.toml --backends gpu-loop --precisions f32 --sizes 4M --steps 40 --out /tmp/b3 > /dev/null 2>&1
  $NSYS stats --report cuda_gpu_kern_sum,cuda_api_sum,cuda_gpu_mem_time_sum /tmp/tl.nsys-rep 2>&1 | head -70
fi
} 2>&1 | tee $OUT/batch.log
