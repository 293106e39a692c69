#!/usr/bin/env bash
# gpu-matrix in core and streamed under a budget, 2D plate (f64), after the matrix GPU tests.
# Prints the device, each run's timing lines and its `subdomains` report; logs and summaries
# go to $OUT.
G=$(dirname "$0"); O="${OUT:-$PWD/gpu-out}"; mkdir -p "$O"
{ date -u; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; } | tee "$O/device.txt"
if [ "${TESTS:-1}" = 1 ]; then
  PERIDOT_REQUIRE_GPU=1 timeout "${TEST_LIMIT:-150}" "$G/gpu_tests" ${FILTER:-} --test-threads 4 >"$O/gpu_tests.log" 2>&1
  echo "gpu_tests exit $?"; grep -E "^test |test result|FAILED|panicked" "$O/gpu_tests.log" | head -20
fi
dx=${DX:-3.5e-5}; dt=$(python3 -c "print('%.4e' % (1.3367e-8 * $dx / 0.25e-3 * 0.95))")
for mode in ${MODES:-incore budget}; do
  extra=(); [ $mode = budget ] && extra=(--gpu-memory-budget "${BUDGET:-30%}")
  /usr/bin/time -v "$G/peridot" run "$G/models/precracked_plate_2d.toml" --backend gpu-matrix --quiet \
    --out "/tmp/m-$mode" --set "discretization.dx=$dx" --set "solver.steps=${STEPS:-20}" \
    --set output.vtk=false --set 'output.probes=[]' --set output.image=false --set "solver.dt=$dt" \
    "${extra[@]}" >"$O/matrix-$mode.log" 2>&1
  echo "== matrix $mode: exit $?"; grep -E "node-steps|Maximum resident|Elapsed|User time|System time" "$O/matrix-$mode.log"
  cp "/tmp/m-$mode/summary.json" "$O/matrix-$mode.summary.json" 2>/dev/null
  python3 - "$O/matrix-$mode.summary.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no summary:", e); sys.exit()
print({k: d.get(k) for k in ("wall_seconds", "peak_gpu_bytes", "broken_bonds", "phase_seconds")})
for k, v in (d.get("subdomains") or {}).items():
    print(f"  {k}: {v}")
PY
done
