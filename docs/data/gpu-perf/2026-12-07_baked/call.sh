#!/usr/bin/env bash
# One call: the baked loop's GPU test and A/B (interleaved `peridot bench`, PD_BAKED=0 against the baked loop), the full GPU
# suites on the merged tree, then tests/mpi.rs under the carried MPICH with GPU ranks.
set -u
cd "$(dirname "$0")/.."
G=$PWD/.gpu; M=$PWD/.gpu-mpi; O=$OUT; export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee $O/device.txt
for f in $G/*.xz $M/peridot.xz $M/mpi_tests.xz; do xz -d $f; done; chmod +x $G/* $M/*
S=$(date +%s); t() { echo "[$(( $(date +%s) - S )) s] $*"; }
PERIDOT_REQUIRE_GPU=1 timeout 120 $G/gpu_tests baked --test-threads 2 > $O/baked.log 2>&1; t "baked tests exit $?"
grep -E '^test |result' $O/baked.log
for round in 1 2; do
P=f32,f64; [ $round = 2 ] && P=f32
for v in "PD_BAKED=0" ""; do
  for m in "pmb_block_3d.toml 4019679 200" "precracked_plate_2d.toml 4000000 1000"; do
    set -- $m; d=/tmp/b; rm -rf $d
    PERIDOT_KERNEL_DEFINES=$v timeout 120 $G/peridot bench $G/models/$1 --backends gpu-loop --precisions $P --sizes $2 --steps $3 --out $d > $O/bench_${round}_${v:-baked}_$1.log 2>&1
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
t "ab done"
PERIDOT_REQUIRE_GPU=1 timeout 200 $G/gpu_tests --test-threads 4 > $O/tests.log 2>&1; t "gpu_tests exit $?"
grep -hE 'FAILED|panicked|test result' $O/tests.log
mkdir -p /work/main/target/release && cp $M/peridot /work/main/target/release/peridot
( source $M/mpich_bundle.sh unpack $M
  PERIDOT_REQUIRE_GPU=1 timeout 150 $M/mpi_tests --test-threads 1 > $O/mpi_tests.log 2>&1; t "mpi_tests exit $?" )
grep -E "^test |test result|panicked" $O/mpi_tests.log
PERIDOT_REQUIRE_GPU=1 timeout 60 $G/agreement_tests > $O/agreement.log 2>&1; t "agreement exit $?"
mkdir -p /work/baked && cp -r $G/kernels /work/baked/ ; timeout 40 $G/kernels_compile > $O/kernels.log 2>&1; t "kernels exit $?"
grep -hE 'FAILED|panicked|test result' $O/agreement.log $O/kernels.log
