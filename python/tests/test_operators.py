"""Operators as SciPy matrices against the Matrix Market exports, and the static solve."""

import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import peridot
from conftest import MODELS, cli, read_vtu, sets

LPS_BLOCK = os.path.join(MODELS, "lps_block_3d.toml")
TENSION = os.path.join(MODELS, "plate_tension_2d.toml")


def test_operators_equal_the_matrix_market_exports(peridot_bin, tmp_path):
    # the same assembly, written with 17 significant digits: equal entry for entry
    over = {"discretization.dx": 2.5e-3}
    model = peridot.Model.from_file(LPS_BLOCK, overrides=over)
    ops = peridot.operators(model)
    assert set(ops) == {"B", "Theta", "K"}
    out = os.path.join(tmp_path, "export")
    cli(peridot_bin, "export-matrix", LPS_BLOCK, "--what", "K,B,Theta", "--out", out,
        *sets(over))
    for name in ["B", "Theta"]:
        ref = sp.csr_matrix(scipy.io.mmread(os.path.join(out, f"{name}.mtx")))
        assert ops[name].shape == ref.shape
        assert abs(ops[name] - ref).max() == 0.0
    # K is written as its lower triangle (symmetric format)
    k_ref = sp.tril(sp.csr_matrix(scipy.io.mmread(os.path.join(out, "K.mtx"))))
    assert abs(sp.tril(ops["K"]) - k_ref).max() == 0.0
    # and K is symmetric to round-off (theory.md section 4)
    k = ops["K"]
    assert abs(k - k.T).max() <= 1e-12 * abs(k).max()


def test_static_solve_balances_k(tmp_path):
    # the plate in tension: K u equals the applied traction's nodal forces, so away from
    # the loaded edges (where the load acts) K u vanishes to the solver's tolerance
    model = peridot.Model.from_file(TENSION, overrides={"discretization.dx": 20e-3})
    out = os.path.join(tmp_path, "static")
    u = peridot.solve_static(model, out=out)
    k = peridot.operators(model)["K"]
    r = (k @ u.reshape(-1)).reshape(u.shape)
    vtu = [f for f in os.listdir(out) if f.endswith(".vtu")]
    x = read_vtu(os.path.join(out, sorted(vtu)[-1]))["Points"]
    # the written displacement is the returned one
    assert np.array_equal(read_vtu(os.path.join(out, sorted(vtu)[-1]))["displacement"][:, :2], u)
    interior = np.abs(x[:, 0]) < 0.5 - 4 * 20e-3
    scale = np.abs(r).max()
    assert scale > 0
    assert np.abs(r[interior]).max() <= 1e-8 * scale
    # the plate stretches along x: the right edge moves right of the left edge
    assert u[x[:, 0] > 0.45, 0].mean() > u[x[:, 0] < -0.45, 0].mean()


def test_memory_guard_is_a_memory_error():
    # a billion-node block needs far more host memory than any test machine has
    model = peridot.Model.from_file(LPS_BLOCK, overrides={"discretization.dx": 5e-5})
    with pytest.raises(MemoryError, match="host memory"):
        peridot.Simulation(model, backend="cpu-loop")


def test_unstable_run_is_an_unstable_error():
    model = peridot.Model.from_file(
        os.path.join(MODELS, "kalthoff_winkler_2d.toml"),
        overrides={"discretization.dx": 0.2e-3, "solver.dt": 1e-6, "solver.force_dt": True,
                   "solver.steps": 200})
    with pytest.raises(peridot.UnstableError, match="step"):
        peridot.run(model, backend="cpu-loop")
    assert issubclass(peridot.UnstableError, RuntimeError)


def test_bad_backend_is_a_value_error():
    model = peridot.Model.from_file(os.path.join(MODELS, "kalthoff_winkler_2d.toml"))
    with pytest.raises(ValueError, match="backend"):
        peridot.Simulation(model, backend="quantum")


@pytest.mark.skipif(peridot.gpu_available(), reason="this machine has a GPU")
def test_gpu_backend_without_gpu_is_a_runtime_error():
    model = peridot.Model.from_file(os.path.join(MODELS, "kalthoff_winkler_2d.toml"))
    with pytest.raises(RuntimeError, match="gpu-loop"):
        peridot.Simulation(model, backend="gpu-loop")
