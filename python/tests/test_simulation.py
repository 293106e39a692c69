"""Runs stepped from Python against the command line, the state between steps, callbacks
and interrupts."""

import glob
import os
import signal
import threading

import numpy as np
import pytest

import peridot
from conftest import KW2D, KW2D_SMALL, cli, read_vtu, sets


def last_vtu(folder):
    return sorted(glob.glob(os.path.join(folder, "*.vtu")))[-1]


def small_model():
    return peridot.Model.from_file(KW2D, overrides=KW2D_SMALL)


def test_stepped_run_equals_the_command_line_bit_for_bit(peridot_bin, tmp_path):
    # the same model, backend and precision: the same IEEE operations in the same order,
    # so the final displacement, damage and broken bonds are identical (no tolerance)
    out_cli = os.path.join(tmp_path, "cli")
    cli(peridot_bin, "run", KW2D, "--backend", "cpu-loop", "--out", out_cli, "--quiet",
        *sets(KW2D_SMALL))
    sim = peridot.Simulation(small_model(), backend="cpu-loop")
    # uneven chunks: the steps do not depend on how the caller splits them
    for n in [1, 7, 92, 500]:
        sim.step(n)
    assert sim.step_count == 600 and sim.finished
    ref = read_vtu(last_vtu(out_cli))
    u = sim.displacement
    assert np.array_equal(ref["displacement"][:, :2], u)
    assert np.array_equal(ref["damage"], sim.damage)
    summary = sim.summary()
    assert summary["status"] == "completed"
    import json
    with open(os.path.join(out_cli, "summary.json")) as f:
        cli_summary = json.load(f)
    assert summary["broken_bonds"] == cli_summary["broken_bonds"] > 0
    assert summary["max_damage"] == cli_summary["max_damage"]


def test_whole_run_writes_what_the_command_line_writes(peridot_bin, tmp_path):
    out_py = os.path.join(tmp_path, "py")
    out_cli = os.path.join(tmp_path, "cli")
    summary = peridot.run(small_model(), out=out_py, backend="cpu-loop")
    cli(peridot_bin, "run", KW2D, "--backend", "cpu-loop", "--out", out_cli, "--quiet",
        *sets(KW2D_SMALL))
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(out_py, "*")))
    assert names == sorted(os.path.basename(p) for p in glob.glob(os.path.join(out_cli, "*")))
    a, b = read_vtu(last_vtu(out_py)), read_vtu(last_vtu(out_cli))
    assert np.array_equal(a["displacement"], b["displacement"])
    assert summary["status"] == "completed" and summary["steps"] == 600


def test_callback_stops_the_run():
    sim = peridot.Simulation(small_model(), backend="cpu-loop")
    seen = []

    def stop_after_50(s):
        seen.append(s.step_count)
        return s.step_count >= 50

    summary = sim.run(callback=stop_after_50, every=10)
    assert seen == [10, 20, 30, 40, 50]
    assert sim.step_count == 50 and not sim.finished
    assert summary["status"] == "running" and summary["steps"] == 50
    # it goes on where it stopped
    assert sim.step(10) == 10 and sim.step_count == 60


def free_plate():
    """A 2D plate with no condition at all, 400 nodes."""
    return peridot.Model.from_dict({
        "material": {"model": "pmb", "youngs_modulus": 70e9, "density": 2700.0,
                     "critical_stretch": 0.01},
        "discretization": {"dimension": "plane-stress", "thickness": 1e-3, "dx": 1e-3,
                           "horizon_factor": 3.015},
        "geometry": {"box": [{"min": [0.0, 0.0], "max": [0.02, 0.02]}]},
        "solver": {"kind": "explicit", "steps": 100},
    })


def test_written_velocity_moves_a_free_body_rigidly():
    # a uniform velocity strains no bond: the force stays zero and each step drifts every
    # node by v dt; after 20 steps u = 20 v dt up to the round-off of 20 additions
    sim = peridot.Simulation(free_plate(), backend="cpu-loop")
    v = np.zeros_like(sim.velocity)
    v[:, 0], v[:, 1] = 3.0, -1.0
    sim.velocity = v
    sim.step(20)
    expected = v * 20 * sim.dt
    assert np.allclose(sim.displacement, expected, rtol=1e-13, atol=0)
    assert np.abs(sim.force_density).max() == 0.0


def test_written_displacement_gives_its_forces():
    # a uniform stretch e along x strains every bond: the interior force density is zero
    # (equilibrium of a homogeneous field) and the boundary pulls back, so the force
    # density summed over the body vanishes (Newton's third law, to round-off)
    sim = peridot.Simulation(free_plate(), backend="cpu-loop")
    x = sim.positions
    u = np.zeros_like(x)
    u[:, 0] = 1e-4 * x[:, 0]
    sim.displacement = u
    f = sim.force_density
    total = (f * sim.volumes[:, None]).sum(axis=0)
    scale = np.abs(f * sim.volumes[:, None]).sum()
    assert scale > 0
    assert np.abs(total).max() <= 1e-12 * scale
    assert np.array_equal(sim.displacement, u)


def test_state_arrays_and_families():
    sim = peridot.Simulation(small_model(), backend="cpu-loop")
    n = sim.positions.shape[0]
    offsets, neighbours = sim.families
    assert offsets.shape == (n + 1,) and offsets[-1] == neighbours.size
    assert sim.bond_status.shape == neighbours.shape
    # no bond is broken at t = 0 beyond the pre-cracks (none here)
    assert sim.bond_status.min() == 1
    assert sim.volumes.shape == (n,) and sim.damage.shape == (n,)


def test_ctrl_c_interrupts_a_step_and_keeps_the_run():
    model = peridot.Model.from_file(KW2D, overrides={**KW2D_SMALL, "solver.steps": 10**6})
    sim = peridot.Simulation(model, backend="cpu-loop")
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        sim.step(10**6)
    timer.join()
    done = sim.step_count
    assert 0 < done < 10**6
    assert sim.step(5) == 5 and sim.step_count == done + 5
