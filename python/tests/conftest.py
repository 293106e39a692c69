"""Shared helpers of the Python package's tests: the repository's models, the command-line
binary the results are compared with, and a reader of the `.vtu` snapshots it writes."""

import os
import re
import shutil
import subprocess

import numpy as np
import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(REPO, "models")

# A small explicit model that cracks within its steps: Kalthoff-Winkler 2D at 0.2 mm
# (about 5,000 nodes, 600 steps of 10 ns: the notch tips crack near 3 us).
KW2D = os.path.join(MODELS, "kalthoff_winkler_2d.toml")
KW2D_SMALL = {"discretization.dx": 0.2e-3, "solver.steps": 600, "output.vtk_every": 200}


def cli_binary():
    """The `peridot` command line: $PERIDOT_BIN, else the release build of this tree."""
    candidates = [os.environ.get("PERIDOT_BIN")]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(REPO, "target"))
    candidates.append(os.path.join(target, "release", "peridot"))
    candidates.append(shutil.which("peridot"))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture(scope="session")
def peridot_bin():
    """The command line to compare with; a test needing it fails without it (set
    PERIDOT_BIN or build with `cargo build --release`)."""
    path = cli_binary()
    if path is None:
        pytest.fail("no peridot binary: set PERIDOT_BIN or run `cargo build --release`")
    return path


def cli(binary, *args):
    """Run the command line; its stdout, or a failure with its stderr."""
    done = subprocess.run([binary, *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def sets(overrides):
    """`--set key=value` arguments of an overrides dict."""
    out = []
    for k, v in overrides.items():
        out += ["--set", f"{k}={v!r}" if isinstance(v, float) else f"{k}={v}"]
    return out


TYPES = {"Float64": np.float64, "Float32": np.float32, "Int64": np.int64, "UInt8": np.uint8}


def read_vtu(path):
    """{name: array} of a `.vtu` snapshot with raw appended data (the engine's format):
    vectors as (nodes, 3)."""
    with open(path, "rb") as f:
        data = f.read()
    start = data.index(b'<AppendedData encoding="raw">')
    base = data.index(b"_", start) + 1
    header = data[:start].decode()
    pattern = (r'<DataArray type="(\w+)" Name="(\w+)" NumberOfComponents="(\d+)" '
               r'format="appended" offset="(\d+)"')
    arrays = {}
    for kind, name, comps, offset in re.findall(pattern, header):
        at = base + int(offset)
        nbytes = int(np.frombuffer(data, np.uint64, 1, at)[0])
        dtype = np.dtype(TYPES[kind])
        values = np.frombuffer(data, dtype, nbytes // dtype.itemsize, at + 8)
        arrays[name] = values.reshape(-1, int(comps)) if int(comps) > 1 else values
    return arrays
