"""Operators as SciPy matrices against the Matrix Market exports, and the static solve."""

import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from scipy.sparse.linalg import spsolve

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


def solve_three_lines(k, s):
    """The sidecar's solve: prescribed values and supports held, K u = f on the rest."""
    held = np.r_[s["prescribed_dofs"], s["supports"]]
    u = np.zeros(s["f"].size)
    u[s["prescribed_dofs"]] = s["prescribed_values"]
    free = np.setdiff1d(np.arange(u.size), held)
    u[free] = spsolve(k[free][:, free].tocsc(), s["f"][free] - k[free][:, held] @ u[held])
    return u


@pytest.mark.parametrize("path, over", [
    # tractions only: a free body, 3 rigid modes removed by supports
    (TENSION, {"discretization.dx": 20e-3}),
    # a prescribed motion of the impact edge (y only): prescribed dofs and a rigid mode
    (os.path.join(MODELS, "kalthoff_winkler_2d.toml"), {"discretization.dx": 0.2e-3}),
])
def test_static_system_solved_in_scipy_gives_solve_static(path, over):
    # the same system solved by SciPy: solve-static's displacement up to a rigid motion
    # (removed by projecting the difference off the orthonormal modes), to the direct
    # solvers' round-off relative to the displacement (1e-9: condition of K times 1e-16)
    model = peridot.Model.from_file(path, overrides=over)
    s = peridot.static_system(model)
    k = peridot.operators(model)["K"].tocsr()
    u = solve_three_lines(k, s)
    u_engine = peridot.solve_static(model).reshape(-1)
    r = s["rigid_modes"]
    diff = u - u_engine
    diff -= r @ (r.T @ diff)
    assert np.abs(diff).max() <= 1e-9 * np.abs(u_engine).max()
    assert np.abs(u_engine).max() > 0


def test_static_system_files_equal_the_api(peridot_bin, tmp_path):
    over = {"discretization.dx": 20e-3}
    model = peridot.Model.from_file(TENSION, overrides=over)
    s = peridot.static_system(model)
    out = os.path.join(tmp_path, "export")
    cli(peridot_bin, "export-matrix", TENSION, "--what", "K", "--out", out, *sets(over))
    f = scipy.io.mmread(os.path.join(out, "f.mtx")).ravel()
    assert np.array_equal(f, s["f"])
    modes = scipy.io.mmread(os.path.join(out, "rigid_modes.mtx"))
    assert np.array_equal(modes, s["rigid_modes"])
    assert s["rigid_modes"].shape[1] == 3
    import json
    with open(os.path.join(out, "export.json")) as fh:
        assert json.load(fh)["static_system"]["supports"] == list(s["supports"])
