#!/usr/bin/env bash
# Timings of the gpu-loop force/update kernels on the GPU machine (docs/results.md, GPU
# section), before and after a change, from the same machine in one call.
#
#   GPU_DIR=.gpu-perf scripts/gpu_perf.sh prepare [BASE_BINARY]   (here)
#       scripts/gpu_validate.sh prepare into GPU_DIR, plus this script and, if given, a
#       baseline peridot binary as GPU_DIR/base/peridot.
#   ./.gpu-perf/gpu_perf.sh run                                   (GPU machine)
#       bench of the block models (PMB f64 and f32, LPS f64, 4 M nodes), the 2D plate
#       (1 M nodes) and gpu-matrix (PMB block f64, 1 M nodes) with the baseline (if present)
#       and the new binary, interleaved ROUNDS times (default 1); with VARIANTS (words
#       of comma-separated kernel defines, e.g. VARIANTS="PD_PREFETCH=0 PD_MIN_BLOCKS=3"),
#       the 3D block, the plate and the agreement tests named by VFILTER (default gpu_loop)
#       once per variant; then the GPU tests
#       (PERIDOT_REQUIRE_GPU=1) and Nsight Compute on the PMB force kernel (3D, 1 M nodes).
#       STEPS (default 20) and STEPS2D (default 200: a 2D step is short) set the timed steps;
#       NCU=0 skips Nsight Compute, TESTS=0 the GPU tests. Logs go to $OUT (or ./gpu-out).
set -euo pipefail

prepare() {
    cd "$(dirname "$0")/.."
    local common dest
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    dest="${GPU_ROOT:-$(cd "$common/.." && pwd)}/${GPU_DIR:-.gpu}"
    scripts/gpu_validate.sh prepare
    cp scripts/gpu_perf.sh "$dest/"
    if [ -n "${1:-}" ]; then
        mkdir -p "$dest/base" && cp "$1" "$dest/base/peridot" && strip "$dest/base/peridot"
    fi
    du -sh "$dest"
}

benches() {
    local bin=$1 tag=$2
    echo "== $tag: $bin"
    timeout 200 "$bin" bench "$G/models/pmb_block_3d.toml" --backends gpu-loop \
        --precisions f64,f32 --sizes 4M --steps "${STEPS:-20}" --out "$WORK/$tag-pmb3d" || echo "pmb3d FAILED"
    timeout 150 "$bin" bench "$G/models/lps_block_3d.toml" --backends gpu-loop \
        --precisions f64 --sizes 4M --steps "${STEPS:-20}" --out "$WORK/$tag-lps3d" || echo "lps3d FAILED"
    timeout 60 "$bin" bench "$G/models/precracked_plate_2d.toml" --backends gpu-loop \
        --precisions f32,f64 --sizes 1M --steps "${STEPS2D:-200}" --out "$WORK/$tag-plate2d" || echo "plate2d FAILED"
    timeout 120 "$bin" bench "$G/models/pmb_block_3d.toml" --backends gpu-matrix \
        --precisions f64 --sizes 1M --steps "${STEPS:-20}" --out "$WORK/$tag-matrix" || echo "matrix FAILED"
}

run() {
    G=$(dirname "$0")
    OUTDIR="${OUT:-$PWD/gpu-out}"
    WORK=/tmp/gpu-perf
    mkdir -p "$OUTDIR" "$WORK"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
    set +e
    for round in $(seq "${ROUNDS:-1}"); do
        if [ -x "$G/base/peridot" ]; then
            benches "$G/base/peridot" base 2>&1 | tee -a "$OUTDIR/bench_base.log"
        fi
        benches "$G/peridot" new 2>&1 | tee -a "$OUTDIR/bench_new.log"
    done
    # Kernel variants (PERIDOT_KERNEL_DEFINES, src/gpu/kernels.rs): the 3D PMB block and the
    # 2D plate, and the GPU tests under each.
    for v in ${VARIANTS:-}; do
        echo "== variant $v"
        export PERIDOT_KERNEL_DEFINES="${v//,/ }"
        timeout 200 "$G/peridot" bench "$G/models/pmb_block_3d.toml" --backends gpu-loop \
            --precisions f64,f32 --sizes 4M --out "$WORK/v-pmb3d" 2>&1 | grep gpu-loop
        timeout 60 "$G/peridot" bench "$G/models/precracked_plate_2d.toml" --backends gpu-loop \
            --precisions f32 --sizes 1M --out "$WORK/v-plate2d" 2>&1 | grep gpu-loop
        PERIDOT_REQUIRE_GPU=1 timeout 120 "$G/agreement_tests" ${VFILTER:-gpu_loop} \
            --test-threads 4 2>&1 | grep -E "test result|panicked|FAILED"
        unset PERIDOT_KERNEL_DEFINES
    done 2>&1 | tee "$OUTDIR/variants.log"
    if [ "${TESTS:-1}" = 1 ]; then
        PERIDOT_REQUIRE_GPU=1 timeout 180 "$G/gpu_tests" --test-threads 4 >"$OUTDIR/gpu_tests.log" 2>&1
        echo "gpu_tests exit $?" | tee -a "$OUTDIR/gpu_tests.log"
        grep -E "^test |test result|panicked" "$OUTDIR/gpu_tests.log"
    fi
    local ncu
    ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
    if [ -n "$ncu" ] && [ "${NCU:-1}" = 1 ]; then
        for prec in f64 f32; do
            timeout 120 "$ncu" --clock-control none -k regex:pmb_force -s 5 -c 1 \
                --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis \
                --section LaunchStats --section WarpStateStats --section InstructionStats \
                "$G/peridot" bench "$G/models/pmb_block_3d.toml" --backends gpu-loop \
                --precisions "$prec" --sizes 1M --steps 2 --warmup 1 --out "$WORK/ncu-$prec"
        done >"$OUTDIR/ncu.log" 2>&1
        grep -E "Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|L1/TEX Hit|L2 Hit|Compute \(SM\)|Block Limit Reg|Executed Instructions  |Issued Ipc" "$OUTDIR/ncu.log" | head -60
    fi
}

case "${1:-}" in
    prepare) shift; prepare "$@" ;;
    run) run ;;
    *)
        echo "usage: $0 prepare [BASE_BINARY] | run" >&2
        exit 2
        ;;
esac
