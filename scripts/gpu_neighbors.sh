#!/usr/bin/env bash
# GPU validation of the device neighbour search (src/gpu/neighbors.rs), in two halves.
#
#   [GPU_DIR=.gpu-nbr] scripts/gpu_neighbors.sh prepare   (here, on a machine without GPU)
#       scripts/gpu_validate.sh prepare into GPU_DIR (default .gpu-nbr) of the repository root
#       the device tool sends, plus this script.
#
#   ./.gpu-nbr/gpu_neighbors.sh run     (on the GPU machine; the device tool's carry: [".gpu-nbr"])
#       device facts; the neighbour tests of tests/gpu.rs (tests/gpu/neighbors.rs) with
#       PERIDOT_REQUIRE_GPU=1; the kernel compile test; `peridot neighbors` on 10 M nodes 3D
#       (models/pmb_block_3d.toml at dx 0.232 mm: 216^3 = 10,077,696 nodes, delta 3.015 dx):
#       the device search three times (staged download), once with the pageable download
#       (PAGEABLE=0 leaves it out), then
#       the device and the CPU search with their families compared; and a one-step gpu-loop
#       run of 1.95 M nodes, timed whole, whose summary names the search that ran. Logs go to
#       $OUT (or ./gpu-out).
set -uo pipefail

prepare() {
    cd "$(dirname "$0")/.."
    export GPU_DIR="${GPU_DIR:-.gpu-nbr}"
    scripts/gpu_validate.sh prepare || exit 1
    local common root
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    root="${GPU_ROOT:-$(cd "$common/.." && pwd)}"
    cp scripts/gpu_neighbors.sh "$root/$GPU_DIR/"
}

run() {
    local G O M
    G=$(dirname "$0")
    O="${OUT:-$PWD/gpu-out}"
    M="$G/models/pmb_block_3d.toml"
    mkdir -p "$O"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    echo "$(nproc) cores, $(grep MemTotal /proc/meminfo)"
    echo "transparent huge pages: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>&1)"
    PERIDOT_REQUIRE_GPU=1 timeout 150 "$G/gpu_tests" neighbors:: --test-threads 1 \
        >"$O/tests.log" 2>&1
    echo "neighbour tests exit $?"
    grep -E "^test |test result|==|panicked|differ" "$O/tests.log"
    PERIDOT_REQUIRE_GPU=1 timeout 150 "$G/gpu_tests" --skip neighbors:: >>"$O/tests.log" 2>&1
    echo "other gpu tests exit $?"
    tail -3 "$O/tests.log"
    timeout 60 "$G/kernels_compile" >"$O/kernels_compile.log" 2>&1
    echo "kernels_compile exit $?"
    grep -E "(neighbor|cell_|scan_).*_f64" "$O/kernels_compile.log"
    local big=(--set discretization.dx=2.32e-4)
    timeout 120 "$G/peridot" neighbors "$M" "${big[@]}" --search device --repeat 3 2>&1 |
        tee "$O/bench_staged.txt"
    if [ "${PAGEABLE:-1}" = 1 ]; then
        timeout 60 "$G/peridot" neighbors "$M" "${big[@]}" --search device --download pageable \
            2>&1 | tee "$O/bench_pageable.txt"
    fi
    timeout 150 "$G/peridot" neighbors "$M" "${big[@]}" --search device,cpu 2>&1 |
        tee "$O/bench_equal.txt"
    local t0 t1
    t0=$(date +%s.%N)
    timeout 120 "$G/peridot" run "$M" --backend gpu-loop --out /tmp/run2M --quiet \
        --set discretization.dx=4e-4 --set solver.steps=1 --set output.vtk=false \
        --set 'output.probes=[]' --set output.image=false 2>&1 | tee "$O/run2M.txt"
    t1=$(date +%s.%N)
    echo "gpu-loop run of 1 step, whole process: $(awk "BEGIN { printf \"%.2f\", $t1 - $t0 }") s" | tee -a "$O/run2M.txt"
    grep -E '"(neighbors|neighbor_search|forces|transfers|wall_seconds|nodes|bonds)"' \
        /tmp/run2M/summary.json | tee -a "$O/run2M.txt"
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    *)
        echo "usage: $0 prepare|run" >&2
        exit 2
        ;;
esac
