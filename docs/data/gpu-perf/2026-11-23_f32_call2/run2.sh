#!/bin/bash
# Final call: benches of the final binary, GPU tests, the PD_PREFETCH=2 variant, f64 bitwise
# check against the base binary, ncu of the f32 plain PMB kernel.
G=$(dirname "$0")
O=${OUT:-/tmp/o}; mkdir -p $O
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
M3=$G/models/pmb_block_3d.toml
bench() { local bin=$1; shift; timeout 100 $bin bench "$@" --backends gpu-loop --out /tmp/bo 2>&1 | grep -E "^gpu-loop|copy bandwidth|FAIL|rror|panic"; }
echo "== new pmb3d"; bench $G/peridot $M3 --precisions f64,f32 --sizes 4M --steps 60 | tee $O/bench.log; echo "t=$SECONDS"
PERIDOT_REQUIRE_GPU=1 timeout 100 $G/gpu_tests --test-threads 4 >$O/gpu_tests.log 2>&1; echo "gpu_tests exit $? t=$SECONDS" | tee -a $O/gpu_tests.log
grep -E "test result|panicked|FAILED" $O/gpu_tests.log
{
echo "== variant PD_PREFETCH=2"
PERIDOT_KERNEL_DEFINES=PD_PREFETCH=2 bench $G/peridot $M3 --precisions f32 --sizes 4M --steps 60
PERIDOT_KERNEL_DEFINES=PD_PREFETCH=2 bench $G/peridot $G/models/precracked_plate_2d.toml --precisions f32 --sizes 1M --steps 200
echo "t=$SECONDS"
PERIDOT_KERNEL_DEFINES=PD_PREFETCH=2 PERIDOT_REQUIRE_GPU=1 timeout 60 $G/gpu_tests --test-threads 4 f32_forces f32_runs --skip gpu_matrix 2>&1 | grep -E "^test |test result|agree|panicked"
echo "t=$SECONDS"
} 2>&1 | tee $O/variant.log
{
for b in base new; do
  bin=$G/peridot; [ $b = base ] && bin=$G/base/peridot
  timeout 30 $bin run $M3 --backend gpu-loop --precision f64 --out /tmp/r-$b-plain --quiet --set output.image=false | tail -1
  timeout 30 $bin run $M3 --backend gpu-loop --precision f64 --out /tmp/r-$b-pv --quiet --set output.image=false --set 'discretization.partial_volume="linear"' --set material.surface_correction=true | tail -1
done
for c in plain pv; do for f in /tmp/r-base-$c/*.vtu /tmp/r-base-$c/probes.csv; do
  if cmp -s $f /tmp/r-new-$c/$(basename $f); then echo "f64 $c $(basename $f): identical"; else echo "f64 $c $(basename $f): DIFFER"; fi
done; done
echo "t=$SECONDS"
} 2>&1 | tee $O/bitwise.log
{
echo "== new lps3d"; bench $G/peridot $G/models/lps_block_3d.toml --precisions f64 --sizes 4M --steps 60
echo "== new plate2d"; bench $G/peridot $G/models/precracked_plate_2d.toml --precisions f32,f64 --sizes 1M --steps 200
echo "t=$SECONDS"
} 2>&1 | tee $O/bench2.log
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$ncu" ]; then
  timeout 75 "$ncu" --clock-control none -k regex:pmb_force -s 5 -c 1 \
    --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
    --section LaunchStats --section WarpStateStats --section InstructionStats \
    "$G/peridot" bench "$M3" --backends gpu-loop --precisions f32 --sizes 1M --steps 2 --warmup 1 --out /tmp/ncu >$O/ncu.log 2>&1
  grep -E "pmb_force|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|L1/TEX Hit|L2 Hit|Compute \(SM\)|Executed Instructions  |Issued Ipc|Warp Cycles Per Issued|Theoretical Occupancy" $O/ncu.log | head -30
fi
echo "t=$SECONDS"
echo "== base pmb3d"; bench $G/base/peridot $M3 --precisions f64,f32 --sizes 4M --steps 60 | tee $O/bench_base.log; echo "t=$SECONDS"
