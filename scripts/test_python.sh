#!/usr/bin/env bash
# The Python package's tests (python/tests): a virtual environment ($PERIDOT_VENV, default
# .venv-python) with maturin, NumPy, SciPy and pytest from PyPI; the package built from
# python/ in release and installed there (`maturin develop`); the command line of this tree
# built, which the tests compare with (results bit for bit, Matrix Market exports).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=$(realpath -m "${PERIDOT_VENV:-.venv-python}")
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check maturin numpy scipy pytest
cargo build --release --bin peridot
(cd python && VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" maturin develop --release --quiet)
PERIDOT_BIN="$(realpath "${CARGO_TARGET_DIR:-$ROOT/target}")/release/peridot" \
    "$VENV/bin/python" -m pytest python/tests -q -p no:cacheprovider
