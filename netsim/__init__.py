"""netsim: a discrete-event simulator of collective communication on TPU-style interconnects.

Run a collective with JAX's semantics on a simulated ring or torus and get both
the output JAX would return and the time the interconnect would take:

>>> import numpy as np, netsim
>>> r = netsim.all_gather(np.arange(8, dtype=np.int32))
>>> r.output[3].tolist()
[0, 1, 2, 3, 4, 5, 6, 7]
>>> r.time > 0
True
"""

from netsim import mlx
from netsim.collectives import all_gather, all_to_all, ppermute, psum, psum_scatter, simulate
from netsim.device_mesh import AxisGroups, Mesh
from netsim.engine import EngineError
from netsim.invariants import InvariantError
from netsim.presets import tpu_slice
from netsim.result import Result
from netsim.scenario import ScenarioError, load_scenario, load_topology
from netsim.schedules import ALGORITHMS, Schedule, build_schedule
from netsim.study import Study, load_study
from netsim.sweep import sweep
from netsim.topology import Topology, UnreachableError, mesh, ring, torus

__version__ = "0.1.0"

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
    "build_schedule",
    "load_scenario",
    "load_study",
    "load_topology",
    "mesh",
    "mlx",
    "ppermute",
    "psum",
    "psum_scatter",
    "ring",
    "simulate",
    "sweep",
    "torus",
    "tpu_slice",
]
