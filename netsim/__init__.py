"""netsim: a discrete-event simulator of collective communication on TPU-style interconnects.

Run a collective with JAX's semantics on a simulated ring or torus and get both
the output JAX would return and the time the interconnect would take:

>>> import numpy as np, netsim
>>> r = netsim.all_gather(np.arange(8, dtype=np.int32))
>>> r.output[3].tolist()
[0, 1, 2, 3, 4, 5, 6, 7]
>>> r.time > 0
True

A :class:`Result` is data; functions read it: :func:`stats` (per link, device and
step), :func:`analyse` (the closed form beside the time, and why they differ),
:func:`animate` (the run drawn step by step).

:func:`run_program` runs a whole program on a sharded mesh: collectives and
matmuls, overlapped where the data allows, checked against NumPy's unsharded
computation (:mod:`netsim.programs.model` has the model).

The package's folders follow the data's way, each importing only from those before it:
``network`` (topologies, presets, meshes), ``semantics`` (JAX's layouts, NumPy
references), ``algorithms`` (schedules as data), ``engine`` (the SimPy model and the
fast player), ``checks`` (invariants, memory), ``result`` (frozen data of a run),
``analysis`` (closed forms, statistics, critical paths), ``scenario`` (file formats),
the runs (``pipeline``, ``programs``, ``hlo``) and the public API (``collectives``,
``mlx``), ``studies`` (sweeps), ``teaching`` (explanations, animations) and ``cli``.
docs/architecture.md has the table of layers, which tests/test_layout.py holds.
"""

import importlib
from typing import TYPE_CHECKING, Any

from netsim.version import __version__

_PUBLIC = {
    "ALGORITHMS": "netsim.algorithms",
    "Schedule": "netsim.algorithms",
    "build_schedule": "netsim.algorithms",
    "analyse": "netsim.analysis.why",
    "InvariantError": "netsim.checks.errors",
    "all_gather": "netsim.collectives",
    "all_to_all": "netsim.collectives",
    "ppermute": "netsim.collectives",
    "psum": "netsim.collectives",
    "psum_scatter": "netsim.collectives",
    "simulate": "netsim.collectives",
    "EngineError": "netsim.engine",
    "AxisGroups": "netsim.network.device_mesh",
    "Mesh": "netsim.network.device_mesh",
    "tpu_slice": "netsim.network.presets",
    "Topology": "netsim.network.topology",
    "UnreachableError": "netsim.network.topology",
    "mesh": "netsim.network.topology",
    "ring": "netsim.network.topology",
    "torus": "netsim.network.topology",
    "Result": "netsim.result",
    "ScenarioError": "netsim.scenario",
    "load_scenario": "netsim.scenario",
    "load_topology": "netsim.scenario",
    "Study": "netsim.studies.files",
    "load_study": "netsim.studies.files",
    "sweep": "netsim.studies.sweep",
    "read_results": "netsim.studies.sweep",
    "run_program": "netsim.programs.run",
    "from_jax": "netsim.programs.hlo.from_jax",
}
"""Public name -> the module that defines it, imported when the name is first used.

``import netsim`` imports none of them: NumPy, NetworkX, pydantic and SimPy load
with the first function called, so a script or a command that needs little starts fast.
"""

if TYPE_CHECKING:
    from netsim import mlx
    from netsim.algorithms import ALGORITHMS, Schedule, build_schedule
    from netsim.analysis.stats import run_stats as stats
    from netsim.analysis.step_report import step_report as report
    from netsim.analysis.why import analyse
    from netsim.checks.errors import InvariantError
    from netsim.collectives import all_gather, all_to_all, ppermute, psum, psum_scatter, simulate
    from netsim.engine import EngineError
    from netsim.network.device_mesh import AxisGroups, Mesh
    from netsim.network.presets import tpu_slice
    from netsim.network.topology import Topology, UnreachableError, mesh, ring, torus
    from netsim.programs.hlo.from_jax import from_jax
    from netsim.programs.run import run_program
    from netsim.result import Result
    from netsim.scenario import ScenarioError, load_scenario, load_topology
    from netsim.studies.files import Study, load_study
    from netsim.studies.sweep import read_results, sweep


def __getattr__(name: str) -> Any:
    """A public name or a subpackage, imported on first use (then kept as an attribute)."""
    if name == "stats":
        value: Any = importlib.import_module("netsim.analysis.stats").run_stats
    elif name == "report":
        value = importlib.import_module("netsim.analysis.step_report").step_report
    elif name in _PUBLIC:
        value = getattr(importlib.import_module(_PUBLIC[name]), name)
        if name == "sweep":  # netsim.sweep.read_results(path), beside netsim.sweep(study)
            value.read_results = importlib.import_module(_PUBLIC[name]).read_results
    else:
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


def animate(result: "Result", frames: int = 40, leaf: int = 0, fps: float = 4.0) -> Any:
    """The run as an animation that shows itself inline in Jupyter.

    Needs matplotlib (the ``teaching`` extra), imported on first use. The returned
    object has ``_repr_html_`` and ``save(path)``; see :func:`netsim.teaching.animate.animate`
    (device by device) and :func:`netsim.teaching.animate_axes.animate_axes` (one ring per
    axis, beyond a few dozen devices or on a 3D torus).
    """
    from netsim.teaching.animate_axes import animation

    return animation(result, frames=frames, leaf=leaf, fps=fps)  # beyond a few dozen devices: a ring per axis


__all__ = [
    "ALGORITHMS",
    "AxisGroups",
    "EngineError",
    "InvariantError",
    "Mesh",
    "Result",
    "ScenarioError",
    "Schedule",
    "Study",
    "Topology",
    "UnreachableError",
    "__version__",
    "all_gather",
    "all_to_all",
    "analyse",
    "animate",
    "build_schedule",
    "from_jax",
    "load_scenario",
    "load_study",
    "load_topology",
    "mesh",
    "mlx",
    "ppermute",
    "psum",
    "psum_scatter",
    "read_results",
    "report",
    "ring",
    "run_program",
    "simulate",
    "stats",
    "sweep",
    "torus",
    "tpu_slice",
]
