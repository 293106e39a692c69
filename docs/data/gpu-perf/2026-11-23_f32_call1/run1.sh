#!/bin/bash
# Variant call: base vs new, kernel variants, f64 bitwise check, GPU tests.
G=$(dirname "$0")
O=${OUT:-/tmp/o}; mkdir -p $O
SECONDS=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
M3=$G/models/pmb_block_3d.toml
bench() { local bin=$1; shift; timeout 100 $bin bench "$@" --backends gpu-loop --out /tmp/bo 2>&1 | grep -E "^gpu-loop|FAIL|rror|panic"; }
{
echo "== new pmb3d"; bench $G/peridot $M3 --precisions f64,f32 --sizes 4M; echo "t=$SECONDS"
echo "== base pmb3d"; bench $G/base/peridot $M3 --precisions f64,f32 --sizes 4M; echo "t=$SECONDS"
for v in PD_F32_RECORDS=0 PD_MIN_BLOCKS=8 PD_MIN_BLOCKS=4 PD_PREFETCH=0; do
  echo "== variant $v"; PERIDOT_KERNEL_DEFINES=$v bench $G/peridot $M3 --precisions f32 --sizes 4M; echo "t=$SECONDS"
done
} 2>&1 | tee $O/bench.log
{
for b in base new; do
  bin=$G/peridot; [ $b = base ] && bin=$G/base/peridot
  for prec in f64 f32; do
    timeout 30 $bin run $M3 --backend gpu-loop --precision $prec --out /tmp/r-$b-plain-$prec --quiet --set output.image=false | tail -1
    timeout 30 $bin run $M3 --backend gpu-loop --precision $prec --out /tmp/r-$b-pv-$prec --quiet --set output.image=false --set 'discretization.partial_volume="linear"' --set material.surface_correction=true | tail -1
  done
done
for c in plain-f64 pv-f64 plain-f32 pv-f32; do
  for f in /tmp/r-base-$c/*.vtu /tmp/r-base-$c/probes.csv; do
    n=/tmp/r-new-$c/$(basename $f)
    if cmp -s $f $n; then echo "$c $(basename $f): identical"; else echo "$c $(basename $f): DIFFER"; fi
  done
done
echo "t=$SECONDS"
} 2>&1 | tee $O/bitwise.log
PERIDOT_REQUIRE_GPU=1 timeout 100 $G/gpu_tests --test-threads 4 >$O/gpu_tests.log 2>&1; echo "gpu_tests exit $? t=$SECONDS" | tee -a $O/gpu_tests.log
grep -E "^test |test result|agree|panicked" $O/gpu_tests.log | head -60
{
echo "== new lps3d"; bench $G/peridot $G/models/lps_block_3d.toml --precisions f64 --sizes 4M; echo "t=$SECONDS"
echo "== base lps3d"; bench $G/base/peridot $G/models/lps_block_3d.toml --precisions f64 --sizes 4M; echo "t=$SECONDS"
echo "== new plate2d"; bench $G/peridot $G/models/precracked_plate_2d.toml --precisions f32,f64 --sizes 1M --steps 200; echo "t=$SECONDS"
echo "== base plate2d"; bench $G/base/peridot $G/models/precracked_plate_2d.toml --precisions f32,f64 --sizes 1M --steps 200; echo "t=$SECONDS"
} 2>&1 | tee $O/bench2.log
