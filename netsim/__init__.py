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

from netsim.collectives import all_gather, psum, psum_scatter, simulate
from netsim.engine import EngineError
from netsim.result import Result
from netsim.scenario import ScenarioError, load_scenario, load_topology
from netsim.schedules import ALGORITHMS, Schedule, build_schedule
from netsim.study import Study, load_study
from netsim.sweep import sweep
from netsim.topology import Topology, mesh, ring, torus

__version__ = "0.1.0"

__all__ = [
    "ALGORITHMS",
    "EngineError",
    "Result",
    "ScenarioError",
    "Schedule",
    "Study",
    "Topology",
    "__version__",
    "all_gather",
    "build_schedule",
    "load_scenario",
    "load_study",
    "load_topology",
    "mesh",
    "psum",
    "psum_scatter",
    "ring",
    "simulate",
    "sweep",
    "torus",
]
