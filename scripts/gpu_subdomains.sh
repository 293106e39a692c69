#!/usr/bin/env bash
# Subdomain execution on the GPU machine (issue 5; docs/subdomains.md, docs/results.md):
#
#   GPU_DIR=.gpu-sub scripts/gpu_subdomains.sh prepare      (here: build, copy, strip)
#   ./.gpu-sub/gpu_subdomains.sh run                        (GPU machine; carry [".gpu-sub"])
#
# run: the GPU tests with PERIDOT_REQUIRE_GPU=1 (TESTS=0 skips them), then `peridot run` of
# the 2D pre-cracked plate and the 3D PMB block at PLATE_NODES and BLOCK_NODES nodes (default
# the seed's largest cases, 18 M and 12.8 M), each in core and with a GPU memory budget of
# BUDGET (default 15%) of the in-core footprint, STEPS explicit steps (default 20), outputs
# off (INCORE=0 skips the in-core runs). Prints each run's subdomain report; summaries go to
# $OUT.
#
#   ./.gpu-sub/gpu_subdomains.sh huge                       (GPU machine)
#
# huge: the 3D block with an in-core footprint larger than the GPU (HUGE_NODES, default 100 M
# nodes, about 90 GB in core) under a 20 GiB budget (HUGE_BUDGET), HUGE_STEPS steps (default
# 5); the host's free memory is sampled every 5 s into huge-memory.log.
#
#   ./.gpu-sub/gpu_subdomains.sh largest                    (GPU machine)
#
# largest: the largest in-core model (docs/results.md, "Largest in-core model"): the GPU
# tests named `lean` (TESTS=0 skips them), `peridot info` of the 2D plate at INFO_NODES
# (default 1 M; its gpu-loop line gives the bytes per node and how many nodes fit), then the
# in-core `gpu-loop` f32 run of the 2D plate at LARGEST_NODES (default 282,240,000: about
# 76 GiB at 289 B/node) for LARGEST_STEPS steps (default 20), which builds a lean problem
# (its stored bonds would not fit the host), under /usr/bin/time -v; free memory sampled
# every 5 s into largest-memory.log.
set -uo pipefail

prepare() {
    cd "$(dirname "$0")/.."
    export GPU_DIR="${GPU_DIR:-.gpu-sub}"
    scripts/gpu_validate.sh prepare || exit 1
    local common root
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    root="${GPU_ROOT:-$(cd "$common/.." && pwd)}"
    cp scripts/gpu_subdomains.sh "$root/$GPU_DIR/"
}

# dx of a square plate (50 mm) or cube (50 mm) with about `nodes` nodes
dx_for() {
    python3 -c "import sys; n=float(sys.argv[1]); d=int(sys.argv[2]); print('%.6e' % (0.05 / round(n ** (1.0 / d))))" "$1" "$2"
}

one() {
    local name=$1 model=$2 dim=$3 nodes=$4 steps=$5
    shift 5
    local dx
    dx=$(dx_for "$nodes" "$dim")
    local extra=()
    [ "$dim" = 2 ] && extra=(--set "solver.dt=$(python3 -c "print('%.4e' % (1.3367e-8 * $dx / 0.25e-3 * 0.95))")")
    /usr/bin/time -v "$G/peridot" run "$G/models/$model" --backend gpu-loop --quiet \
        --out "$W/$name" --set "discretization.dx=$dx" --set "solver.steps=$steps" \
        --set output.vtk=false --set 'output.probes=[]' --set output.image=false \
        "${extra[@]}" "$@" >"$O/$name.log" 2>&1
    echo "== $name ($nodes nodes, dx $dx, $*): exit $?"
    grep -E "subdomains:|node-steps|Maximum resident" "$O/$name.log"
    cp "$W/$name/summary.json" "$O/$name.summary.json" 2>/dev/null
}

run() {
    G=$(dirname "$0")
    O="${OUT:-$PWD/gpu-out}"
    W=/tmp/gpu-sub
    mkdir -p "$O" "$W"
    { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } |
        tee "$O/device.txt"
    if [ "${TESTS:-1}" = 1 ]; then
        PERIDOT_REQUIRE_GPU=1 timeout 300 "$G/gpu_tests" --test-threads 4 >"$O/gpu_tests.log" 2>&1
        echo "gpu_tests exit $?" | tee -a "$O/gpu_tests.log"
        grep -E "^test |test result|panicked" "$O/gpu_tests.log"
    fi
    local plate=${PLATE_NODES:-18000000} block=${BLOCK_NODES:-12800000} steps=${STEPS:-20}
    local budget=${BUDGET:-15%}
    [ "${INCORE:-1}" = 1 ] && one plate-incore precracked_plate_2d.toml 2 "$plate" "$steps"
    one plate-budget precracked_plate_2d.toml 2 "$plate" "$steps" --gpu-memory-budget "$budget"
    [ "${INCORE:-1}" = 1 ] && one block-incore pmb_block_3d.toml 3 "$block" "$steps"
    one block-budget pmb_block_3d.toml 3 "$block" "$steps" --gpu-memory-budget "$budget"
    [ -n "${RESIDENT_COUNT:-}" ] &&
        one block-resident pmb_block_3d.toml 3 "$block" "$steps" --subdomains "$RESIDENT_COUNT"
    return 0
}

huge() {
    G=$(dirname "$0")
    O="${OUT:-$PWD/gpu-out}"
    W=/tmp/gpu-sub
    mkdir -p "$O" "$W"
    { date -u; free -g; } >"$O/huge-memory.log"
    (while sleep 5; do date -u +%T; free -g | sed -n 2p; done >>"$O/huge-memory.log") &
    local sampler=$!
    one block-huge pmb_block_3d.toml 3 "${HUGE_NODES:-100000000}" "${HUGE_STEPS:-5}" \
        --gpu-memory-budget "${HUGE_BUDGET:-20GiB}"
    kill "$sampler"
    tail -40 "$O/block-huge.log"
}

largest() {
    G=$(dirname "$0")
    O="${OUT:-$PWD/gpu-out}"
    W=/tmp/gpu-sub
    mkdir -p "$O" "$W"
    { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free \
        --format=csv,noheader; nproc; free -g; } | tee "$O/largest-device.txt"
    if [ "${TESTS:-1}" = 1 ]; then
        PERIDOT_REQUIRE_GPU=1 timeout 60 "$G/gpu_tests" lean --test-threads 2 \
            >"$O/gpu_tests_lean.log" 2>&1
        echo "gpu_tests lean exit $?" | tee -a "$O/gpu_tests_lean.log"
        grep -E "^test |test result|panicked" "$O/gpu_tests_lean.log"
    fi
    timeout 60 "$G/peridot" info "$G/models/precracked_plate_2d.toml" \
        --set "discretization.dx=$(dx_for "${INFO_NODES:-1000000}" 2)" 2>&1 |
        tee "$O/largest-info.txt" | grep -E "nodes |bonds |gpu-loop"
    { date -u; free -g; } >"$O/largest-memory.log"
    (while sleep 5; do date -u +%T; free -g | sed -n 2p; nvidia-smi \
        --query-gpu=memory.used --format=csv,noheader; done >>"$O/largest-memory.log") &
    local sampler=$!
    one plate-largest precracked_plate_2d.toml 2 "${LARGEST_NODES:-282240000}" \
        "${LARGEST_STEPS:-20}" --precision f32
    # (should it not fit, once more at FALLBACK_NODES, default 250 M)
    [ -f "$O/plate-largest.summary.json" ] ||
        one plate-largest-fallback precracked_plate_2d.toml 2 "${FALLBACK_NODES:-249640000}" \
            "${LARGEST_STEPS:-20}" --precision f32
    kill "$sampler"
    grep -vE "^\s*(Page size|Exit status|Socket|File system|Signals|Swaps|Average)" \
        "$O/plate-largest.log" | tail -30
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    huge) huge ;;
    largest) largest ;;
    *) echo "usage: $0 prepare|run|huge|largest" >&2; exit 2 ;;
esac
