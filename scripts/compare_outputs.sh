#!/usr/bin/env bash
# Run the same short simulations with two peridot binaries and compare their outputs byte for
# byte (VTU snapshots, which hold displacements and damage in full precision, and probe CSV
# files) and their broken-bond counts. Used to check that a speed-up changed no result.
#
#   scripts/compare_outputs.sh OLD_BINARY NEW_BINARY [OUT_DIR]
#
# Cases: PMB (nonlinear and linearized), LPS, 2D and 3D, f64 and f32, explicit and ADR, with
# pre-cracks, no-fail zones and bonds breaking; the matrix scheme and subdomains. EXTRA_ARGS
# is added to every run (e.g. EXTRA_ARGS="--backend gpu-loop" on a GPU machine); a case that
# names a backend itself then runs its GPU counterpart (cpu-matrix -> gpu-matrix) instead.
set -uo pipefail
old=$1
new=$2
out=${3:-out/compare}
cases=(
  "block64|models/pmb_block_3d.toml|--set output.vtk_every=100"
  "block32|models/pmb_block_3d.toml|--precision f32 --set output.vtk_every=100"
  "pre64|models/precracked_plate_2d.toml|--set solver.steps=500 --set output.vtk_every=100"
  "pre32lin|models/precracked_plate_2d.toml|--precision f32 --set material.model=pmb-linear --set solver.steps=500 --set output.vtk_every=100"
  "kw2|models/kalthoff_winkler_2d.toml|--set solver.steps=400"
  "hole|models/plate_hole_2d.toml|--set solver.steps=300"
  "holelin|models/plate_hole_2d.toml|--set material.model=pmb-linear --set solver.steps=300"
  "torsion|models/brokenshire_torsion_3d.toml|--set solver.steps=600"
  "torsion32|models/brokenshire_torsion_3d.toml|--precision f32 --set solver.steps=600"
  "cantilever|models/cantilever_vibration_2d.toml|--set solver.steps=3000"
  "lps|models/lps_block_3d.toml|--set solver.steps=200"
  "matrix|models/precracked_plate_2d.toml|--backend cpu-matrix --set solver.steps=300"
  "matrixlps|models/lps_block_3d.toml|--backend cpu-matrix --set solver.steps=100"
  "sub|models/precracked_plate_2d.toml|--subdomains 3 --set solver.steps=300"
)
mkdir -p "$out"
status=0
for c in "${cases[@]}"; do
  IFS='|' read -r name model args <<<"$c"
  extra=${EXTRA_ARGS:-}
  if [[ "$extra" == *--backend* && "$args" == *--backend* ]]; then
    args=${args//cpu-/gpu-}
    extra=""
  fi
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    # shellcheck disable=SC2086
    "$bin" run "$model" $args $extra --out "$out/$side/$name" --quiet >"$out/$name.$side.log" 2>&1 \
      || { echo "$name: $side run failed"; status=1; }
  done
  same=yes
  for f in "$out/old/$name"/*.vtu "$out/old/$name"/probes.csv; do
    [ -f "$f" ] || continue
    cmp -s "$f" "$out/new/$name/$(basename "$f")" || { same=no; break; }
  done
  b_old=$(grep -o '"broken_bonds": [0-9]*' "$out/old/$name/summary.json" | grep -o '[0-9]*$')
  b_new=$(grep -o '"broken_bonds": [0-9]*' "$out/new/$name/summary.json" | grep -o '[0-9]*$')
  echo "$name: identical outputs: $same; broken bonds $b_old -> $b_new"
  [ "$same" = yes ] && [ "$b_old" = "$b_new" ] || status=1
done
exit $status
