"""peridot from Python: peridynamic fracture simulation with NumPy state and SciPy operators.

    import peridot
    model = peridot.Model.from_file("models/plate_tension_2d.toml",
                                    overrides={"discretization.dx": 1e-3})
    sim = peridot.Simulation(model, backend="cpu-loop")
    sim.run(callback=lambda s: print(s.step, s.damage.max()), every=100)
    print(sim.summary()["broken_bonds"])
    ops = peridot.operators(model)          # {"B": csr_matrix, "K": csr_matrix, ...}
    u = peridot.solve_static(model)         # (nodes, dim) displacement, m

Units are SI (m, kg, s, Pa, N). Arrays are copies in float64, shaped (nodes, dim) for
vectors. Errors are Python exceptions carrying the engine's message: ValueError for bad
input, MemoryError for the memory guard, OSError for files, UnstableError (a RuntimeError)
for an unstable run, RuntimeError for GPU failures.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Mapping, Optional, Union

import numpy as np

from . import _native
from ._native import UnstableError

__all__ = [
    "Model",
    "Simulation",
    "UnstableError",
    "gpu_available",
    "operators",
    "run",
    "solve_static",
    "static_system",
]

PathLike = Union[str, "os.PathLike[str]"]


def _toml_value(value: Any) -> str:
    """A Python value as a TOML literal, for an override `key=value`."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value)) if isinstance(value, (float, np.floating)) else str(int(value))
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"override value {value!r}: use a bool, number, string or list of them")


class Model:
    """A validated model: the TOML file's tables with their checks (`docs/` of the engine)."""

    def __init__(self, native: "_native.Model") -> None:
        self._native = native

    @classmethod
    def from_file(cls, path: PathLike, overrides: Optional[Mapping[str, Any]] = None) -> "Model":
        """The model of a TOML file with `overrides` ({"dotted.key": value}, as the command
        line's `--set`) applied in order."""
        sets = [f"{k}={_toml_value(v)}" for k, v in (overrides or {}).items()]
        return cls(_native.Model.from_file(os.fspath(path), sets))

    @classmethod
    def from_dict(cls, tables: Mapping[str, Any], base_dir: PathLike = ".") -> "Model":
        """The model of a dict shaped like the TOML file (`{"material": {...}, ...}`);
        relative file names are read from `base_dir`."""
        return cls(_native.Model.from_json(json.dumps(tables), os.fspath(base_dir)))

    def to_toml(self) -> str:
        """The model as TOML text; `Model.from_dict(tomllib.loads(text))` gives it back."""
        return self._native.to_toml()

    @property
    def dim(self) -> int:
        """The spatial dimension (2 or 3)."""
        return self._native.dim

    @property
    def name(self) -> Optional[str]:
        """The model's `name` key, if set."""
        return self._native.name

    def info(self) -> Dict[str, Any]:
        """What `peridot info` says: nodes, bonds, family sizes, dx, delta, material, the
        time step, the regions' node counts."""
        return json.loads(self._native.info_json())


class Simulation:
    """A run of a model stepped from Python: the same steps as `peridot run` on the same
    model (bit for bit on the same backend and precision), with the state readable and the
    displacement and velocity writable between steps. Explicit models only (run an ADR
    model with `peridot.run`)."""

    def __init__(
        self,
        model: Model,
        backend: str = "auto",
        precision: str = "f64",
        out: Optional[PathLike] = None,
        quiet: bool = True,
    ) -> None:
        """Set up the run (time step, backend, outputs of step 0 into `out` if given)."""
        self._native = _native.Simulation(
            model._native, backend, precision, None if out is None else os.fspath(out), quiet
        )
        self._dim = self._native.dim

    def step(self, n: int = 1) -> int:
        """Advance `n` steps (fewer at the model's last step); returns the steps taken."""
        if n < 0:
            raise ValueError(f"n: {n} steps; give 0 or more")
        return self._native.step(n)

    def run(
        self,
        callback: Optional[Callable[["Simulation"], Optional[bool]]] = None,
        every: int = 100,
    ) -> Dict[str, Any]:
        """Step to the model's last step; every `every` steps call `callback(self)`, which
        stops the run early by returning True. Returns the summary."""
        if every < 1:
            raise ValueError(f"every: {every}; give 1 or more")
        while not self._native.finished:
            self._native.step(every)
            if callback is not None and callback(self):
                break
        return self.summary()

    def summary(self) -> Dict[str, Any]:
        """The run's summary so far (`summary.json`'s keys; `status` is `running` until the
        last step)."""
        return json.loads(self._native.summary_json())

    def finish(self) -> Dict[str, Any]:
        """End the run as `peridot run` ends it (damage picture, last snapshot and
        `summary.json` in `out`); returns the summary. No step after this."""
        return json.loads(self._native.finish_json())

    def _vectors(self, flat: np.ndarray) -> np.ndarray:
        return flat.reshape(-1, self._dim)

    @property
    def step_count(self) -> int:
        """Steps done so far."""
        return self._native.steps_done

    @property
    def steps(self) -> int:
        """The model's number of steps (`solver.steps`)."""
        return self._native.steps_total

    @property
    def finished(self) -> bool:
        """Whether the run is at its last step."""
        return self._native.finished

    @property
    def time(self) -> float:
        """The time, s."""
        return self._native.time

    @property
    def dt(self) -> float:
        """The time step, s."""
        return self._native.dt

    @property
    def dim(self) -> int:
        """The spatial dimension."""
        return self._dim

    @property
    def positions(self) -> np.ndarray:
        """Reference positions, m, shape (nodes, dim)."""
        return self._native.positions().reshape(-1, 3)[:, : self._dim]

    def region(self, name: str) -> np.ndarray:
        """The node indices of the model's region `name`."""
        return self._native.region(name)

    @property
    def volumes(self) -> np.ndarray:
        """Node volumes, m^3 (2D: area times thickness)."""
        return self._native.volumes()

    @property
    def displacement(self) -> np.ndarray:
        """Displacement, m, shape (nodes, dim). Assign to change it between steps."""
        return self._vectors(self._native.displacement())

    @displacement.setter
    def displacement(self, value: np.ndarray) -> None:
        flat = np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
        self._native.set_state(displacement=flat)

    @property
    def velocity(self) -> np.ndarray:
        """Velocity, m/s, shape (nodes, dim). Assign to change it between steps."""
        return self._vectors(self._native.velocity())

    @velocity.setter
    def velocity(self, value: np.ndarray) -> None:
        flat = np.ascontiguousarray(value, dtype=np.float64).reshape(-1)
        self._native.set_state(velocity=flat)

    @property
    def force_density(self) -> np.ndarray:
        """Internal force density at the current displacement, N/m^3, shape (nodes, dim)."""
        return self._vectors(self._native.force_density())

    @property
    def damage(self) -> np.ndarray:
        """Local damage per node (0..1, the beta V-weighted fraction of its bonds lost)."""
        return self._native.damage()

    @property
    def bond_status(self) -> np.ndarray:
        """Per bond, in the CSR order of `families`: 1 intact, 0 broken (uint8)."""
        return self._native.bond_status()

    @property
    def families(self) -> "tuple[np.ndarray, np.ndarray]":
        """`(offsets, neighbours)`: node i's neighbours are neighbours[offsets[i]:offsets[i+1]]."""
        return self._native.families()


def operators(model: Model) -> Dict[str, Any]:
    """The sparse operators of the matrix form at the model's initial bond status, as
    `scipy.sparse.csr_matrix`: "B" (extensions, one row per directed bond), "Theta" (LPS
    only, dilatation) and "K" (global stiffness, N/m, both triangles; f_int = -K u): the
    matrices and dof ordering (dim * node + component) of `peridot export-matrix`."""
    import scipy.sparse as sp

    out = {}
    for name, indptr, indices, data, shape in _native.operators(model._native):
        out[name] = sp.csr_matrix((data, indices, indptr), shape=shape)
    return out


def static_system(model: Model) -> Dict[str, np.ndarray]:
    """The static system `K u = f` as `peridot solve-static` sets it up (the files
    `export-matrix` writes beside K.mtx): "f" the load (N, dof order of K), "prescribed_dofs"
    and "prescribed_values" (m), "rigid_modes" the free rigid-body modes as orthonormal
    columns (dofs x k), "supports" the dofs solve-static holds at zero to remove them.

        s = peridot.static_system(model); K = peridot.operators(model)["K"]
        held = np.r_[s["prescribed_dofs"], s["supports"]]; u = np.zeros(s["f"].size)
        u[s["prescribed_dofs"]] = s["prescribed_values"]; free = np.setdiff1d(np.arange(u.size), held)
        u[free] = spsolve(K[free][:, free], s["f"][free] - K[free][:, held] @ u[held])

    gives solve-static's displacement up to a rigid motion along "rigid_modes"."""
    f, dofs, values, modes, k, supports = _native.static_system(model._native)
    return {
        "f": f,
        "prescribed_dofs": dofs.astype(np.int64),
        "prescribed_values": values,
        "rigid_modes": modes.reshape(k, f.size).T,
        "supports": supports.astype(np.int64),
    }


def solve_static(model: Model, out: Optional[PathLike] = None) -> np.ndarray:
    """The static displacement (m, shape (nodes, dim)) as `peridot solve-static` computes
    it; with `out`, its outputs written there."""
    u = _native.solve_static(model._native, None if out is None else os.fspath(out))
    return u.reshape(-1, model._native.dim)


def run(
    model: Model,
    out: Optional[PathLike] = None,
    backend: str = "auto",
    precision: str = "f64",
    quiet: bool = True,
) -> Dict[str, Any]:
    """Run a model to its end as `peridot run` does (explicit or ADR), writing its outputs
    into `out` if given; returns the summary. Ctrl-C stops it at a step boundary (outputs
    and a checkpoint written, status "interrupted") and raises KeyboardInterrupt."""
    text = _native.run(
        model._native, None if out is None else os.fspath(out), backend, precision, quiet
    )
    return json.loads(text)


def gpu_available() -> bool:
    """Whether the GPU backends can run here."""
    return _native.gpu_available()
