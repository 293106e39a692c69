#!/usr/bin/env bash
# The sparsity pictures of docs/matrix-formulation.md: the global stiffness K of the plate in
# tension (models/plate_tension_2d.toml) at dx = 50 mm (20 x 10 nodes, 400 dofs), bond-based
# PMB next to state-based LPS (nu = 0.3). Run from the repository root after
# `cargo build --release`.
set -euo pipefail
peridot=${PERIDOT:-target/release/peridot}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
coarse=(--set discretization.dx=50e-3)
"$peridot" export-matrix models/plate_tension_2d.toml "${coarse[@]}" \
    --what K --format png --out "$tmp/pmb"
"$peridot" export-matrix models/plate_tension_2d.toml "${coarse[@]}" \
    --set material.model=lps --set material.poisson_ratio=0.3 \
    --what K --format png --out "$tmp/lps"
cp "$tmp/pmb/sparsity.png" docs/images/sparsity_pmb_K.png
cp "$tmp/lps/sparsity.png" docs/images/sparsity_lps_K.png
echo "wrote docs/images/sparsity_pmb_K.png and docs/images/sparsity_lps_K.png"
