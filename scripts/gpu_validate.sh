#!/usr/bin/env bash
# GPU validation of the GPU backends (gpu-loop, gpu-matrix), in two halves.
#
#   [GPU_DIR=.gpu-x] scripts/gpu_validate.sh prepare   (here, on a machine without GPU)
#       builds the release binaries and copies them, stripped, into .gpu/ of the repository
#       root that the device tool sends (default: the main checkout, GPU_ROOT overrides):
#       peridot, gpu_tests (tests/gpu.rs), agreement_tests (tests/agreement.rs),
#       kernels_compile (tests/kernels_compile.rs), gpu_spmv (examples/gpu_spmv.rs), the
#       models, and this script.
#
#   ./.gpu/gpu_validate.sh run           (on the GPU machine, from the repository root)
#       device facts, the GPU tests with PERIDOT_REQUIRE_GPU=1 (a missing GPU fails), the
#       kernel compile test, then timings of `peridot run` on seed models with outputs off:
#       gpu-loop f64 and f32, and cpu-loop f64 for scale. Logs and summaries go to $OUT
#       (or ./gpu-out), and a table of node-steps per second is printed last.
#
#   ./.gpu/gpu_validate.sh matrix        (on the GPU machine; a shorter run for gpu-matrix)
#       device facts and the libraries found, the GPU tests and the GPU pairs of the
#       agreement tests with PERIDOT_REQUIRE_GPU=1, the kernel compile test, then
#       `peridot bench` of gpu-loop against gpu-matrix (f64, f32) on models/pmb_block_3d.toml
#       at MATRIX_NODES nodes (default 1000000) and the SpMV timings of examples/gpu_spmv.rs
#       on the same model and size.
#
# The device tool's command for the second half:
#   ./.gpu/gpu_validate.sh run        with carry: [".gpu"]
set -euo pipefail

prepare() {
    cd "$(dirname "$0")/.."
    local common
    common=$(git rev-parse --path-format=absolute --git-common-dir)
    local root="${GPU_ROOT:-$(cd "$common/.." && pwd)}"
    local dest="$root/${GPU_DIR:-.gpu}"
    export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"
    cargo build --release
    local tests
    cargo build --release --example gpu_spmv
    tests=$(cargo test --release --no-run --test gpu --test agreement --test kernels_compile \
        --message-format=json 2>/dev/null | python3 -c '
import json, sys
for line in sys.stdin:
    d = json.loads(line)
    if d.get("reason") == "compiler-artifact" and d.get("executable") and d["target"]["kind"] == ["test"]:
        print(d["target"]["name"], d["executable"])')
    rm -rf "$dest" && mkdir -p "$dest/models"
    cp "$CARGO_TARGET_DIR/release/peridot" "$dest/peridot"
    while read -r name exe; do
        case "$name" in
            gpu) cp "$exe" "$dest/gpu_tests" ;;
            agreement) cp "$exe" "$dest/agreement_tests" ;;
            kernels_compile) cp "$exe" "$dest/kernels_compile" ;;
        esac
    done <<<"$tests"
    cp "$CARGO_TARGET_DIR/release/examples/gpu_spmv" "$dest/gpu_spmv"
    strip "$dest/peridot" "$dest/gpu_tests" "$dest/agreement_tests" "$dest/kernels_compile" \
        "$dest/gpu_spmv"
    cp models/*.toml "$dest/models/"
    cp -r models/meshes "$dest/models/"
    cp scripts/gpu_validate.sh "$dest/"
    mkdir -p "$common/info"
    grep -qx '/.gpu*/' "$common/info/exclude" 2>/dev/null || echo '/.gpu*/' >>"$common/info/exclude"
    du -sh "$dest"
}

# One timed run: label, backend, precision, model, extra --set arguments.
timed() {
    local label=$1 backend=$2 precision=$3 model=$4
    shift 4
    local dir="$OUTDIR/$label"
    if timeout 150 "$G/peridot" run "$G/models/$model" --backend "$backend" --precision "$precision" \
        --out "$dir" --quiet --set output.vtk=false --set 'output.probes=[]' \
        --set output.image=false "$@" >"$dir.log" 2>&1; then
        python3 - "$label" "$backend" "$precision" "$dir/summary.json" >>"$OUTDIR/table.txt" <<'PY'
import json, sys
label, backend, precision, path = sys.argv[1:]
s = json.load(open(path))
p = s["phase_seconds"]
print(f"{label:28s} {backend:9s} {precision:4s} {s['nodes']:>9d} {s['bonds']:>11d} {s['steps']:>5d} "
      f"{s['node_steps_per_second']:>11.3e} {p.get('forces', 0):>8.3f} {p.get('transfers', 0):>7.3f} "
      f"{s.get('peak_gpu_bytes', 0) / 2**20:>9.1f} {s['broken_bonds']:>9d}")
PY
    else
        echo "$label $backend $precision FAILED (see $label.log)" >>"$OUTDIR/table.txt"
        tail -3 "$dir.log" >>"$OUTDIR/table.txt"
    fi
}

run() {
    G=$(dirname "$0")
    OUTDIR="${OUT:-$PWD/gpu-out}"
    mkdir -p "$OUTDIR"
    {
        date -u
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
        nproc
    } >"$OUTDIR/device.txt" 2>&1
    cat "$OUTDIR/device.txt"
    set +e
    PERIDOT_REQUIRE_GPU=1 timeout 180 "$G/gpu_tests" --test-threads 4 >"$OUTDIR/gpu_tests.log" 2>&1
    echo "gpu_tests exit $?" | tee -a "$OUTDIR/gpu_tests.log"
    timeout 60 "$G/kernels_compile" >"$OUTDIR/kernels_compile.log" 2>&1
    echo "kernels_compile exit $?" | tee -a "$OUTDIR/kernels_compile.log"
    set -e
    grep -E "^test |test result|agree|broken|skipped|panicked|relative" "$OUTDIR/gpu_tests.log" || true
    printf '%-28s %-9s %-4s %9s %11s %5s %11s %8s %7s %9s %9s\n' label backend prec nodes bonds \
        steps node-step/s forces_s xfer_s gpu_MiB broken >"$OUTDIR/table.txt"
    # Kalthoff-Winkler 3D (seed 000 problem 5) at the published dx = 1 mm (179,100 nodes).
    timed kw3d_1mm gpu-loop f64 kalthoff_winkler_3d.toml --set discretization.dx=1e-3
    timed kw3d_1mm gpu-loop f32 kalthoff_winkler_3d.toml --set discretization.dx=1e-3
    timed kw3d_1mm_cpu cpu-loop f64 kalthoff_winkler_3d.toml --set discretization.dx=1e-3 \
        --set solver.steps=100
    # The same at dx = 0.5 mm (about 1.4 M nodes), 400 steps.
    timed kw3d_0.5mm gpu-loop f64 kalthoff_winkler_3d.toml --set discretization.dx=0.5e-3 \
        --set solver.dt=6e-9 --set solver.steps=400
    timed kw3d_0.5mm gpu-loop f32 kalthoff_winkler_3d.toml --set discretization.dx=0.5e-3 \
        --set solver.dt=6e-9 --set solver.steps=400
    # gpu-matrix (cuSPARSE) on the same model and size
    timed kw3d_0.5mm_matrix gpu-matrix f64 kalthoff_winkler_3d.toml \
        --set discretization.dx=0.5e-3 --set solver.dt=6e-9 --set solver.steps=400
    timed kw3d_0.5mm_matrix gpu-matrix f32 kalthoff_winkler_3d.toml \
        --set discretization.dx=0.5e-3 --set solver.dt=6e-9 --set solver.steps=400
    # Pre-cracked plate 2D (seed 000 problem 3) at 1 M nodes, 1000 steps.
    timed plate2d_1M gpu-loop f64 precracked_plate_2d.toml --set discretization.dx=0.05e-3 \
        --set solver.dt=6.68e-9 --set solver.steps=1000
    timed plate2d_1M gpu-loop f32 precracked_plate_2d.toml --set discretization.dx=0.05e-3 \
        --set solver.dt=6.68e-9 --set solver.steps=1000
    timed plate2d_1M_cpu cpu-loop f64 precracked_plate_2d.toml --set discretization.dx=0.05e-3 \
        --set solver.dt=6.68e-9 --set solver.steps=20
    cat "$OUTDIR/table.txt"
}

matrix() {
    G=$(dirname "$0")
    OUTDIR="${OUT:-$PWD/gpu-out}"
    local nodes="${MATRIX_NODES:-1000000}"
    mkdir -p "$OUTDIR"
    {
        date -u
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
        nproc
        ldconfig -p | grep -E "cusparse|nvJitLink|nvrtc" || echo "no cusparse in ldconfig"
    } >"$OUTDIR/device.txt" 2>&1
    cat "$OUTDIR/device.txt"
    set +e
    PERIDOT_REQUIRE_GPU=1 timeout 180 "$G/gpu_tests" --test-threads 4 >"$OUTDIR/gpu_tests.log" 2>&1
    echo "gpu_tests exit $?" | tee -a "$OUTDIR/gpu_tests.log"
    PERIDOT_REQUIRE_GPU=1 timeout 90 "$G/agreement_tests" gpu_matrix --test-threads 4 --nocapture \
        >"$OUTDIR/agreement.log" 2>&1
    echo "agreement_tests exit $?" | tee -a "$OUTDIR/agreement.log"
    timeout 30 "$G/kernels_compile" >"$OUTDIR/kernels_compile.log" 2>&1
    echo "kernels_compile exit $?" | tee -a "$OUTDIR/kernels_compile.log"
    grep -E "^test |test result|agree|broken|skipp|panicked|relative|largest|bytes" \
        "$OUTDIR/gpu_tests.log" "$OUTDIR/agreement.log" || true
    timeout 180 "$G/peridot" bench "$G/models/pmb_block_3d.toml" --backends gpu-loop,gpu-matrix \
        --precisions f64,f32 --sizes "$nodes" --steps 30 --warmup 5 --out "$OUTDIR/bench" \
        >"$OUTDIR/bench.log" 2>&1
    echo "bench exit $?" | tee -a "$OUTDIR/bench.log"
    timeout 150 "$G/gpu_spmv" "$G/models/pmb_block_3d.toml" "$nodes" 10 >"$OUTDIR/spmv.log" 2>&1
    echo "gpu_spmv exit $?" | tee -a "$OUTDIR/spmv.log"
    set -e
    cat "$OUTDIR/bench.log" "$OUTDIR/spmv.log"
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    matrix) matrix ;;
    *)
        echo "usage: $0 prepare|run|matrix" >&2
        exit 2
        ;;
esac
