"""Models from files and dicts, their TOML text and their info."""

import os
import sys

import pytest

import peridot
from conftest import KW2D, KW2D_SMALL, MODELS, cli, sets


def test_overrides_apply_like_set(peridot_bin):
    # the node count of `peridot info` with --set equals the model's info with overrides:
    # both discretize the same model
    model = peridot.Model.from_file(KW2D, overrides=KW2D_SMALL)
    info = model.info()
    text = cli(peridot_bin, "info", KW2D, *sets(KW2D_SMALL))
    nodes = int(next(l.split()[1] for l in text.splitlines() if l.startswith("nodes")))
    assert info["nodes"] == nodes
    assert info["dx"] == 0.2e-3
    # delta = horizon_factor dx exactly as the model states it
    assert info["delta"] == pytest.approx(3.015 * 0.2e-3, rel=1e-15)
    assert info["dt"] <= info["stable_dt"]
    assert info["regions"]["impact"] > 0


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_toml_round_trip():
    import tomllib

    model = peridot.Model.from_file(KW2D, overrides=KW2D_SMALL)
    text = model.to_toml()
    again = peridot.Model.from_dict(tomllib.loads(text), base_dir=MODELS)
    assert again.to_toml() == text
    assert again.info()["nodes"] == model.info()["nodes"]


def test_bad_override_names_the_field():
    with pytest.raises(ValueError, match="material.youngs_modulus"):
        peridot.Model.from_file(KW2D, overrides={"material.youngs_modulus": -1.0})


def test_bad_dict_names_the_field():
    tables = {
        "material": {"model": "pmb", "youngs_modulus": 1e9, "density": -5.0,
                     "critical_stretch": 0.01},
        "discretization": {"dimension": "plane-stress", "thickness": 1e-3, "dx": 1e-3,
                           "horizon_factor": 3.015},
        "geometry": {"box": [{"min": [0.0, 0.0], "max": [0.01, 0.01]}]},
        "solver": {"kind": "explicit", "steps": 10},
    }
    with pytest.raises(ValueError, match="material.density"):
        peridot.Model.from_dict(tables)


def test_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        peridot.Model.from_file(os.path.join(tmp_path, "absent.toml"))
