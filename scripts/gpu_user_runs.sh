#!/usr/bin/env bash
# A user's `peridot run` on the GPU, timed from process start to exit, with the model's probes
# and snapshots on (docs/results.md, "A user's run"), before and after a change in one call.
#
#   GPU_DIR=.gpu scripts/gpu_user_runs.sh prepare [BASE_BINARY]   (here)
#       scripts/gpu_validate.sh prepare into GPU_DIR, plus this script and, if given, a
#       baseline peridot binary as GPU_DIR/base/peridot.
#   ./.gpu/gpu_user_runs.sh run                                    (GPU machine)
#       the runs below with the baseline (if present) and the new binary, interleaved
#       ROUNDS times (default 1), then `peridot bench` of the same models and steps; a
#       table of process wall, the summary's wall and phases, node-steps per second over
#       the loop and over the process wall, the summary's time to the first step, and host
#       peak memory; the new binary starts with an empty kernel cache. The table and one JSON line
#       per run (runs.jsonl: process wall, output bytes, summary) go to $OUT (or ./gpu-out).
#       RUNS selects runs by label (default: all); BENCH=0 leaves out the benchmarks.
set -euo pipefail

prepare() {
    cd "$(dirname "$0")/.."
    local common dest
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    dest="${GPU_ROOT:-$(cd "$common/.." && pwd)}/${GPU_DIR:-.gpu}"
    scripts/gpu_validate.sh prepare
    cp scripts/gpu_user_runs.sh "$dest/"
    if [ -n "${1:-}" ]; then
        mkdir -p "$dest/base" && cp "$1" "$dest/base/peridot" && strip "$dest/base/peridot"
    fi
    du -sh "$dest"
}

# label | backend | precision | model | --set arguments
RUN_TABLE=(
    "block3d-f64|gpu-loop|f64|pmb_block_3d.toml|discretization.dx=3.1447e-4"
    "block3d-f32|gpu-loop|f32|pmb_block_3d.toml|discretization.dx=3.1447e-4"
    "block3d-matrix|gpu-matrix|f64|pmb_block_3d.toml|discretization.dx=6.25e-4"
    "plate2d-4M|gpu-loop|f64|precracked_plate_2d.toml|discretization.dx=2.5e-5 solver.dt=3.34e-9 solver.steps=5000 output.vtk_every=1000"
    "kw3d-1.4M|gpu-loop|f64|kalthoff_winkler_3d.toml|discretization.dx=0.5e-3 solver.steps=2700"
    "plate2d-matrix|gpu-matrix|f64|precracked_plate_2d.toml|discretization.dx=5e-5 solver.dt=6.68e-9 solver.steps=2500 output.vtk_every=500"
)

# One timed run: binary, tag, then the fields of a RUN_TABLE line.
timed() {
    local bin=$1 tag=$2 label=$3 backend=$4 precision=$5 model=$6 sets=$7
    local dir="$WORK/$tag-$label" args=()
    for s in $sets; do args+=(--set "$s"); done
    rm -rf "$dir"
    local t0 t1
    t0=$(date +%s.%N)
    if timeout 300 "$bin" run "$G/models/$model" --backend "$backend" --precision "$precision" \
        --out "$dir" --quiet "${args[@]}" >"$WORK/$tag-$label.log" 2>&1; then
        t1=$(date +%s.%N)
        # one line per run: tag, label, process wall, output bytes, the summary
        printf '{"tag": "%s", "run": "%s", "process_wall": %s, "output_bytes": %s, "summary": %s}\n' \
            "$tag" "$label" "$(python3 -c "print($t1 - $t0)")" "$(du -sb "$dir" | cut -f1)" \
            "$(tr -d '\n' <"$dir/summary.json")" >>"$OUTDIR/runs.jsonl"
        python3 - "$tag" "$label" "$t0" "$t1" "$dir" >>"$OUTDIR/table.txt" <<'PY'
import json, os, sys
tag, label, t0, t1, d = sys.argv[1:]
s = json.load(open(os.path.join(d, "summary.json")))
p = s["phase_seconds"]
wall = float(t1) - float(t0)
work = s["nodes"] * s["steps"]
first = s.get("setup", {}).get("to_first_step", 0)
print(f"{tag:5s} {label:15s} {s['nodes']:>9d} {s['steps']:>5d} {wall:8.2f} {s['wall_seconds']:8.2f} "
      f"{first:8.2f} {p.get('forces', 0):7.2f} {p.get('transfers', 0):7.2f} "
      f"{p.get('output', 0):7.2f} {s['node_steps_per_second']:10.3e} {work / wall:10.3e} "
      f"{s['peak_rss_bytes'] / 2**30:6.2f}")
PY
    else
        echo "$tag $label FAILED: $(tail -c 300 "$WORK/$tag-$label.log")" | tee -a "$OUTDIR/table.txt"
    fi
}

run() {
    G=$(dirname "$0")
    OUTDIR="${OUT:-$PWD/gpu-out}"
    WORK=/tmp/gpu-user-runs
    mkdir -p "$OUTDIR" "$WORK"
    # A fresh kernel cache: the first run of the new binary compiles, the later ones load.
    export PERIDOT_CACHE_DIR="$WORK/kernel-cache"
    rm -rf "$PERIDOT_CACHE_DIR"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    # The disk's write speed where the runs write (2 GB through the page cache, then synced):
    # what a snapshot costs at the least.
    dd if=/dev/zero of="$WORK/dd.bin" bs=1M count=2000 conv=fsync 2>&1 | tail -1 | sed 's/^/disk: /'
    rm -f "$WORK/dd.bin"
    echo "tag   run               nodes steps  process  summary  1ststep  forces  transf  output  nsps(loop) nsps(proc) rss(GiB)" \
        >"$OUTDIR/table.txt"
    set +e
    for round in $(seq "${ROUNDS:-1}"); do
        for line in "${RUN_TABLE[@]}"; do
            IFS='|' read -r label backend precision model sets <<<"$line"
            if [ -n "${RUNS:-}" ] && [[ " $RUNS " != *" $label "* ]]; then continue; fi
            if [ -x "$G/base/peridot" ]; then
                timed "$G/base/peridot" base "$label" "$backend" "$precision" "$model" "$sets"
            fi
            timed "$G/peridot" new "$label" "$backend" "$precision" "$model" "$sets"
        done
    done
    # The benchmark of the same steps, for the target "process wall <= setup + 1.15 x bench"
    # (BENCH=0 leaves it out).
    if [ "${BENCH:-1}" = 0 ]; then cat "$OUTDIR/table.txt"; return; fi
    timeout 200 "$G/peridot" bench "$G/models/pmb_block_3d.toml" --backends gpu-loop \
        --precisions f64,f32 --sizes 4019679 --steps 500 --out "$OUTDIR/bench-block3d" 2>&1 | tail -6
    timeout 200 "$G/peridot" bench "$G/models/precracked_plate_2d.toml" --backends gpu-loop \
        --precisions f64 --sizes 4000000 --steps 5000 --out "$OUTDIR/bench-plate2d" 2>&1 | tail -4
    timeout 200 "$G/peridot" bench "$G/models/pmb_block_3d.toml" --backends gpu-matrix \
        --precisions f64 --sizes 512000 --steps 500 --out "$OUTDIR/bench-block3d-matrix" 2>&1 | tail -4
    timeout 200 "$G/peridot" bench "$G/models/precracked_plate_2d.toml" --backends gpu-matrix \
        --precisions f64 --sizes 1000000 --steps 2500 --out "$OUTDIR/bench-plate2d-matrix" 2>&1 | tail -4
    cat "$OUTDIR/table.txt"
}

case "${1:-}" in
    prepare) shift; prepare "$@" ;;
    run) run ;;
    *) echo "usage: $0 prepare [BASE_BINARY] | run" >&2; exit 2 ;;
esac
