#!/usr/bin/env bash
# Reproduce the figures of docs/results.md: `peridot bench` on the 3D PMB block and the 2D
# pre-cracked plate, cpu-loop and cpu-matrix (a binary without cpu-matrix prints a skip line)
# in f64 and f32, REPEATS times each, with the machine's load recorded before and after every
# run. Usage:
#
#   scripts/run_benchmarks.sh [PERIDOT_BINARY] [OUT_DIR] [REPEATS]
#
# Defaults: target/release/peridot (build it first with `cargo build --release`),
# out/bench/<short commit>, 3. Each run writes OUT_DIR/<case>_<k>/bench.json and appends the
# load to OUT_DIR/load.txt. BLOCK_SIZES, PLATE_SIZES and BACKENDS override the defaults.
# Then: python3 scripts/plot_bench.py LABEL=OUT_DIR ...
set -euo pipefail
bin=${1:-target/release/peridot}
out=${2:-out/bench/$(git rev-parse --short HEAD)}
repeats=${3:-3}
mkdir -p "$out"
cases=(
  "block3d models/pmb_block_3d.toml ${BLOCK_SIZES:-8k,50k,200k,500k}"
  "plate2d models/precracked_plate_2d.toml ${PLATE_SIZES:-40k,250k}"
)
backends=${BACKENDS:-cpu-loop,cpu-matrix}
for k in $(seq 1 "$repeats"); do
  for c in "${cases[@]}"; do
    read -r name model sizes <<<"$c"
    dir="$out/${name}_$k"
    echo "$name $k before: $(uptime)" >>"$out/load.txt"
    "$bin" bench "$model" --backends "$backends" --precisions f64,f32 --sizes "$sizes" \
      --steps 20 --out "$dir" | tee "$dir.txt"
    echo "$name $k after:  $(uptime)" >>"$out/load.txt"
  done
done
