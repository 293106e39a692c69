#!/usr/bin/env bash
# device: base vs new benches, kernel variants, GPU tests
G=$(dirname "$0"); OUTDIR="${OUT:-$PWD/gpu-out}"; WORK=/tmp/gpu-perf; mkdir -p "$OUTDIR" "$WORK"
S=${STEPS:-60}
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
b() { # bin tag
  local bin=$1 tag=$2
  echo "== $tag"
  timeout 200 $bin bench $G/models/pmb_block_3d.toml --backends gpu-loop --precisions ${P3:-f64,f32} --sizes 4M --steps $S --out $WORK/$tag-pmb3d 2>&1 | grep -E "gpu-loop|copy|rror"
  [ "${LPS:-1}" = 1 ] && timeout 150 $bin bench $G/models/lps_block_3d.toml --backends gpu-loop --precisions f64 --sizes 4M --steps $S --out $WORK/$tag-lps3d 2>&1 | grep -E "gpu-loop|rror"
  [ "${P2:-}" != "" ] && timeout 60 $bin bench $G/models/precracked_plate_2d.toml --backends gpu-loop --precisions $P2 --sizes 1M --steps 200 --out $WORK/$tag-plate2d 2>&1 | grep -E "gpu-loop|rror"
  true
}
{
[ -x $G/base/peridot ] && P2=f32,f64 b $G/base/peridot base
P2=f32,f64 b $G/peridot new
for v in ${VARIANTS:-}; do
  export PERIDOT_KERNEL_DEFINES="${v//,/ }"
  P3=f32 P2=${VP2:-} b $G/peridot "v:$v"
  unset PERIDOT_KERNEL_DEFINES
done
} 2>&1 | tee $OUTDIR/bench.log
if [ "${TESTS:-1}" = 1 ]; then
PERIDOT_REQUIRE_GPU=1 timeout 180 $G/gpu_tests --test-threads 4 >$OUTDIR/gpu_tests.log 2>&1
echo "gpu_tests exit $?" | tee -a $OUTDIR/gpu_tests.log
grep -E "test result|panicked|FAILED" $OUTDIR/gpu_tests.log
fi
# f64 bitwise: base vs new, peridot run of the PMB block (plain, partial volumes + surface correction) and the LPS block
if [ -x $G/base/peridot ]; then
{
for b in base new; do
  bin=$G/peridot; [ $b = base ] && bin=$G/base/peridot
  timeout 30 $bin run $G/models/pmb_block_3d.toml --backend gpu-loop --precision f64 --out /tmp/r-$b-plain --quiet --set output.image=false | tail -1
  timeout 30 $bin run $G/models/pmb_block_3d.toml --backend gpu-loop --precision f64 --out /tmp/r-$b-pv --quiet --set output.image=false --set 'discretization.partial_volume="linear"' --set material.surface_correction=true | tail -1
  timeout 30 $bin run $G/models/lps_block_3d.toml --backend gpu-loop --precision f64 --out /tmp/r-$b-lps --quiet --set output.image=false | tail -1
done
for c in plain pv lps; do for f in /tmp/r-base-$c/*; do
  if cmp -s $f /tmp/r-new-$c/$(basename $f); then echo "f64 $c $(basename $f): identical"; else echo "f64 $c $(basename $f): DIFFER"; fi
done; done
} 2>&1 | tee $OUTDIR/bitwise.log
fi
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$ncu" ] && [ "${NCU:-0}" = 1 ]; then
  timeout 75 "$ncu" --clock-control none -k regex:pmb_force -s 5 -c 1 --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats --section WarpStateStats --section InstructionStats \
    $G/peridot bench $G/models/pmb_block_3d.toml --backends gpu-loop --precisions f32 --sizes 1M --steps 2 --warmup 1 --out /tmp/ncu >$OUTDIR/ncu.log 2>&1
  grep -E "pmb_force|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|L1/TEX Hit|L2 Hit|Compute \(SM\)|Executed Instructions  |Warp Cycles Per Issued|Theoretical Occupancy" $OUTDIR/ncu.log | head -30
fi
echo "t=$SECONDS"
