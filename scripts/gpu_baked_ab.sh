#!/usr/bin/env bash
# The baked PMB lattice loop (kernels/pmb_force_baked.cu) against the slot-table loop it
# replaces, on the GPU machine: the baked loop's GPU tests, then `peridot bench` of gpu-loop
# with PERIDOT_KERNEL_DEFINES=PD_BAKED=0 (slot table) and without (baked), interleaved, two
# rounds (f32 and f64, then f32), on the 3D block at 4,019,679 nodes (200 steps) and the 2D
# plate at 4 M nodes (1000 steps); node-steps/s go to $OUT/ab.txt. Then the full GPU suites.
#
#   here:  GPU_DIR=.gpu scripts/gpu_validate.sh prepare && cp scripts/gpu_baked_ab.sh .gpu/
#   there: ./.gpu/gpu_baked_ab.sh        (device tool, carry [".gpu"])
G=$(dirname "$0"); O=${OUT:-/tmp/o}; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $O/device.txt
PERIDOT_REQUIRE_GPU=1 timeout 120 $G/gpu_tests baked --test-threads 2 > $O/baked.log 2>&1; echo "baked tests exit $?"
grep -E '^test |result' $O/baked.log
for round in 1 2; do
P=f32,f64; [ $round = 2 ] && P=f32
for v in "PD_BAKED=0" ""; do
  for m in "pmb_block_3d.toml 4019679 200" "precracked_plate_2d.toml 4000000 1000"; do
    set -- $m; d=/tmp/b; rm -rf $d
    PERIDOT_KERNEL_DEFINES=$v timeout 120 $G/peridot bench $G/models/$1 --backends gpu-loop --precisions $P --sizes $2 --steps $3 --out $d >/dev/null 2>&1
    python3 - "$round" "${v:-baked}" "$1" "$d/bench.json" <<'PY' | tee -a $O/ab.txt
import json, sys
r, v, m, path = sys.argv[1:]
try: rows = json.load(open(path))
except OSError: print(r, v, m, "failed"); sys.exit()
for x in rows: print(r, v, m, x["precision"], x["nodes"], "%.3e" % x["node_steps_per_second"], x["broken_bonds"])
PY
  done
done
done
PERIDOT_REQUIRE_GPU=1 timeout 150 $G/gpu_tests --test-threads 2 > $O/tests.log 2>&1; echo "gpu_tests exit $?"
PERIDOT_REQUIRE_GPU=1 timeout 40 $G/agreement_tests > $O/agreement.log 2>&1; echo "agreement exit $?"
timeout 40 $G/kernels_compile > $O/kernels.log 2>&1; echo "kernels exit $?"
grep -hE 'FAILED|panicked|test result' $O/tests.log $O/agreement.log $O/kernels.log
