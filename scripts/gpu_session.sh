#!/usr/bin/env bash
# Everything one GPU session checks and measures, in one call of the device tool:
#
#   GPU_DIR=.gpu-final scripts/gpu_session.sh prepare     (here: build, copy, strip)
#   ./.gpu-final/gpu_session.sh run                       (GPU machine; carry [".gpu-final"])
#
# run: the GPU tests with PERIDOT_REQUIRE_GPU=1 (gpu-loop, gpu-matrix, ADR on the device, the
# device neighbour search), the kernel compile test, the device neighbour search at 10 M
# nodes 3D (timed, and compared with the CPU search), then `peridot bench` of both GPU
# backends on the 3D PMB and LPS blocks and the 2D plate, and ADR on the 2D plate in
# tension. Logs to $OUT; the bench.json files in $OUT/bench.tar.
#
#   ./.gpu-final/gpu_session.sh sweep                     (GPU machine)
#
# sweep: both GPU backends over node counts from 20 k to the largest the time allows, 3D PMB
# block and 2D plate, f64 and f32 (the figures and plots of docs/results.md); the matrix
# backend, which holds 10 to 20 times the loop's memory, up to 2 M (3D) and 10 M (2D) nodes.
set -uo pipefail

prepare() {
    cd "$(dirname "$0")/.."
    export GPU_DIR="${GPU_DIR:-.gpu-final}"
    scripts/gpu_validate.sh prepare || exit 1
    local common root
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    root="${GPU_ROOT:-$(cd "$common/.." && pwd)}"
    cp scripts/gpu_session.sh "$root/$GPU_DIR/"
}

bench() {
    local name=$1 model=$2 backends=$3 precisions=$4 sizes=$5 steps=$6
    timeout "${BENCH_TIMEOUT:-240}" "$G/peridot" bench "$G/models/$model" --backends "$backends" \
        --precisions "$precisions" --sizes "$sizes" --steps "$steps" --out "$W/$name" 2>&1 |
        grep -vE "^\s*$" | tee -a "$O/bench.log"
    [ "${COPY_JSON:-0}" = 1 ] && cp "$W/$name/bench.json" "$O/$name.json"
    return 0
}

run() {
    G=$(dirname "$0")
    O="${OUT:-$PWD/gpu-out}"
    W=/tmp/gpu-session
    mkdir -p "$O" "$W"
    { date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } |
        tee "$O/device.txt"
    PERIDOT_REQUIRE_GPU=1 timeout 300 "$G/gpu_tests" --test-threads 4 >"$O/gpu_tests.log" 2>&1
    echo "gpu_tests exit $?" | tee -a "$O/gpu_tests.log"
    grep -E "^test |test result|panicked" "$O/gpu_tests.log"
    timeout 60 "$G/kernels_compile" >"$O/kernels_compile.log" 2>&1
    echo "kernels_compile exit $?"
    timeout 150 "$G/peridot" neighbors "$G/models/pmb_block_3d.toml" \
        --set discretization.dx=2.32e-4 --search device,cpu 2>&1 | tee "$O/neighbors.txt"
    bench pmb3d pmb_block_3d.toml gpu-loop f64,f32 1M,4M 40
    bench pmb3d_m pmb_block_3d.toml gpu-matrix f64,f32 1M,2M 20
    bench lps3d lps_block_3d.toml gpu-loop f64 4M 40
    bench lps3d_m lps_block_3d.toml gpu-matrix f64 1M 20
    bench plate2d precracked_plate_2d.toml gpu-loop,gpu-matrix f32,f64 1M 200
    for b in gpu-loop gpu-matrix; do
        timeout 120 "$G/peridot" run "$G/models/plate_tension_2d.toml" --backend "$b" --quiet \
            --out "$W/adr-$b" --set discretization.dx=1e-3 --set output.vtk=false \
            --set 'output.probes=[]' --set output.image=false >/dev/null 2>&1
        python3 -c "
import json, sys
s = json.load(open('$W/adr-$b/summary.json'))
print('ADR plate 2D $b f64', s['nodes'], 'nodes', s['steps'], 'iterations, converged',
      s.get('converged'), 'residual %.2e' % s.get('static_residual', 0),
      'node-steps/s %.3e' % s['node_steps_per_second'], s['phase_seconds'])
" | tee -a "$O/bench.log"
    done
    (cd "$W" && tar cf "$O/bench.tar" */bench.json adr-*/summary.json)
}

sweep() {
    export COPY_JSON=1
    G=$(dirname "$0")
    O="${OUT:-$PWD/gpu-out}"
    W=/tmp/gpu-sweep
    mkdir -p "$O" "$W"
    bench loop3d pmb_block_3d.toml gpu-loop f64,f32 20k,100k,500k,2M,8M 40
    bench matrix3d pmb_block_3d.toml gpu-matrix f64,f32 20k,100k,500k,2M 20
    bench loop2d precracked_plate_2d.toml gpu-loop f64,f32 20k,100k,1M,4M,20M 100
    bench matrix2d precracked_plate_2d.toml gpu-matrix f64,f32 20k,100k,1M,10M 40
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    sweep) sweep ;;
    *)
        echo "usage: $0 prepare|run" >&2
        exit 2
        ;;
esac
