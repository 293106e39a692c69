#!/usr/bin/env bash
# Runs every seed problem of models/ and regenerates docs/validation-published.md (GPU,
# published scale) or docs/validation-published-cpu.md (CPU, reduced scale): a table of
# the published quantities (problem, quantity, published, measured, tolerance, verdict) and
# each run's damage picture (docs/images/validation/<scale>/<problem>.png).
#
#   scripts/validate_published.sh            GPU scale when a GPU is present, else CPU scale
#   PERIDOT_GPU=1 scripts/validate_published.sh   the published scale on the GPU (gpu-loop)
#   PERIDOT_GPU=0 scripts/validate_published.sh   the reduced scale on the CPU (cpu-loop)
#   ONLY="kalthoff_winkler_2d plate_hole_2d" scripts/validate_published.sh   a subset (the
#       page then lists the others as not run unless their folders are already there)
#   MEASURE_ONLY=1 scripts/validate_published.sh   no runs: measure the folders already there
#
# Scales (what each model header gives):
#   gpu: the published scale of each header's `--set` lines (dx 0.1 mm pre-cracked plates,
#        dx 1 mm Kalthoff-Winkler 3D, ...); the glass plate's default is already published.
#   cpu: each model's default size (all ten in about 5 minutes on 2 cores). At that size
#        kalthoff_winkler_3d (dx 2.5 mm, as at 1.25 mm) breaks only the first bonds at the
#        notch tips in 18 us: its angle needs the published dx of 1 mm or finer.
# Environment: PERIDOT_BIN (a built binary; else `cargo build --release`), OUT (run folders;
# default out/validation-published/<scale>), DOC (default docs/validation-published.md on the GPU, -cpu.md on the CPU),
# HARDWARE (text for the page; default from /proc/cpuinfo and nvidia-smi), RUN_TIMEOUT
# (seconds a run may take before it is stopped; default none).
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ "${PERIDOT_GPU:-}" == "1" ]]; then
    scale=gpu
elif [[ "${PERIDOT_GPU:-}" == "0" ]]; then
    scale=cpu
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    scale=gpu
else
    scale=cpu
fi

if [[ -n "${PERIDOT_BIN:-}" ]]; then
    bin="$PERIDOT_BIN"
elif [[ -n "${MEASURE_ONLY:-}" ]]; then
    bin=""
else
    cargo build --release --quiet
    bin="${CARGO_TARGET_DIR:-target}/release/peridot"
fi

out="${OUT:-out/validation-published/$scale}"
# the published scale's page is the main one; the reduced CPU scale has its own
if [[ $scale == gpu ]]; then default_doc=docs/validation-published.md; else default_doc=docs/validation-published-cpu.md; fi
doc="${DOC:-$default_doc}"
images="docs/images/validation/$scale"
mkdir -p "$out"

if [[ $scale == gpu ]]; then
    backend=gpu-loop
    hardware="${HARDWARE:-$(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1), $(nproc) CPU cores}"
else
    backend=cpu-loop
    hardware="${HARDWARE:-$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores used}"
fi

# name <TAB> overrides at this scale (the crack-start and nucleation measures need snapshots
# often enough: every 25 steps or iterations)
declare -A sets
if [[ $scale == gpu ]]; then
    sets[precracked_plate_2d]="--set discretization.dx=0.1e-3"
    sets[precracked_plate_2d_50ms]="--set discretization.dx=0.1e-3"
    sets[kalthoff_winkler_2d]="--set discretization.dx=0.02e-3 --set solver.dt=2e-9 --set solver.steps=5000 --set output.vtk_every=125"
    sets[kalthoff_winkler_3d]="--set discretization.dx=1e-3"
    sets[branching_glass_2d]=""
    sets[cantilever_vibration_2d]="--set discretization.dx=0.25e-3 --set solver.steps=240000 --set output.probe_every=200"
    sets[plate_hole_2d]="--set discretization.dx=0.05e-3 --set output.vtk_every=50"
    sets[notched_column_3d]="--set discretization.dx=0.00875e-3"
    sets[brokenshire_torsion_3d]="--set discretization.dx=1.15e-3 --set solver.steps=8000"
    sets[plate_tension_2d]="--set discretization.dx=0.5e-3 --set solver.steps=40000"
else
    sets[precracked_plate_2d]=""
    sets[precracked_plate_2d_50ms]=""
    sets[kalthoff_winkler_2d]="--set output.vtk_every=10"
    sets[kalthoff_winkler_3d]=""
    sets[branching_glass_2d]=""
    sets[cantilever_vibration_2d]=""
    sets[plate_hole_2d]="--set output.vtk_every=25"
    sets[notched_column_3d]=""
    sets[brokenshire_torsion_3d]=""
    sets[plate_tension_2d]=""
fi
order="precracked_plate_2d precracked_plate_2d_50ms kalthoff_winkler_2d kalthoff_winkler_3d
branching_glass_2d cantilever_vibration_2d plate_hole_2d notched_column_3d
brokenshire_torsion_3d plate_tension_2d"

: > "$out/overrides.tsv"
for name in $order; do
    printf '%s\t%s\n' "$name" "${sets[$name]}" >> "$out/overrides.tsv"
done

start=$(date +%s)
[[ -n "${MEASURE_ONLY:-}" ]] && order="" && ONLY=" "
for name in ${ONLY:-$order}; do
    dir="$out/$name"
    rm -rf "$dir"
    echo "== $name (${sets[$name]:-defaults}) -> $dir"
    t0=$(date +%s)
    # shellcheck disable=SC2086 # the overrides are separate words
    if ! ${RUN_TIMEOUT:+timeout "$RUN_TIMEOUT"} "$bin" run "models/$name.toml" --backend "$backend" \
        --quiet --out "$dir" ${sets[$name]} > "$out/$name.log" 2>&1; then
        echo "   failed (see $out/$name.log)"
    fi
    echo "   $(( $(date +%s) - t0 )) s"
done
echo "all runs: $(( $(date +%s) - start )) s"

when="$(date -u '+%Y-%m-%d %H:%M UTC'), commit ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
if [[ -n "${MEASURE_ONLY:-}" ]]; then
    newest=$(ls -t "$out"/*/summary.json 2>/dev/null | head -1)
    [[ -n "$newest" ]] && when="runs of $(date -u -r "$newest" '+%Y-%m-%d %H:%M UTC'), measured $when"
fi
python3 scripts/validate_published.py --runs "$out" --scale "$scale" --doc "$doc" \
    --images "$images" --hardware "$hardware, backend $backend f64" \
    --date "$when" \
    --overrides "$out/overrides.tsv"
