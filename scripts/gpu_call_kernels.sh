#!/usr/bin/env bash
# Kernel variants of the plain PMB lattice loop on the GPU machine, timed by `peridot bench`
# with PERIDOT_KERNEL_DEFINES (no rebuild): the slot table off and on, its unroll depth, and
# the register budget (PD_MIN_BLOCKS). One line per variant and precision to $OUT/variants.txt.
#
#   GPU_DIR=.gpu scripts/gpu_user_runs.sh prepare && cp scripts/gpu_call_kernels.sh .gpu/
#   ./.gpu/gpu_call_kernels.sh          (GPU machine; ROUNDS, default 2)
set -uo pipefail
G=$(dirname "$0")
OUT=${OUT:-$PWD/gpu-out}
mkdir -p "$OUT"
for round in $(seq "${ROUNDS:-2}"); do
    for v in "PD_TABLE=0" "" "PD_TABLE_UNROLL=1" "PD_TABLE_UNROLL=2" "PD_TABLE_UNROLL=8" \
        "PD_MIN_BLOCKS=4" "PD_MIN_BLOCKS=3"; do
        for m in "pmb_block_3d.toml 4019679 500" "precracked_plate_2d.toml 4000000 1000"; do
            set -- $m
            dir=/tmp/variant-bench
            rm -rf "$dir"
            PERIDOT_KERNEL_DEFINES=$v timeout 120 "$G/peridot" bench "$G/models/$1" \
                --backends gpu-loop --precisions f32,f64 --sizes "$2" --steps "$3" \
                --out "$dir" >/dev/null 2>&1
            python3 - "$round" "${v:-default}" "$1" "$dir/bench.json" <<'PY' | tee -a "$OUT/variants.txt"
import json, sys
r, v, m, path = sys.argv[1:]
try:
    rows = json.load(open(path))
except OSError:
    print(r, v, m, "failed"); sys.exit()
for x in rows:
    print(r, v, m, x["precision"], x["nodes"], "%.3e" % x["node_steps_per_second"], x["broken_bonds"])
PY
        done
    done
done
