"""Scenario and topology files: YAML in, validated objects out.

This is the only module that knows the file formats. Files are read with
YAML's safe loader (no Python objects can be constructed from a file; a key given
twice is an error rather than silently the last one) and
validated with pydantic: unknown keys are rejected, sizes, bandwidths and
durations are written in human units, and every mistake becomes a
:class:`ScenarioError` naming the file, the field and what was expected.

A scenario::

    name: allgather_ring8
    topology: ring8                 # a file in topologies/, a path, a mapping, or a TPU slice (tpu-v5e:8x16)
    collective:
      op: all_gather                # all_gather | psum_scatter | psum | all_to_all | ppermute
      axis: 0
      tiled: false
      axis_index_groups: null       # or [[0, 2], [1, 3]], ...
      axes: null                    # or mesh axes: model, or [data, model] (instead of groups)
      # all_to_all: split_axis, concat_axis, tiled, axis_index_groups
      # ppermute: perm: [[0, 1], [1, 2], ...]  (source, destination) pairs
    input:
      shape: [1024, 256]            # per device; or bytes_per_device: 4 MiB
      dtype: float32
    algorithm: bidirectional_ring   # any name in netsim.ALGORITHMS; default per op
    link: {bandwidth: 45 GB/s, latency: 1 us}   # optional: override every link
    forwarding: cut_through         # or store_and_forward
    engine: auto                    # or processes (the SimPy process model) or fast (the fast player): same numbers
    seed: 0                         # input data
    mesh: {data: 2, model: 4}       # optional: named axes, row-major on the devices; or
                                    # {shape: {...}, devices: [...]} or {shape: {...}, axis_dims: {data: 1, model: 0}}
    faults:                         # optional what-ifs: links down or degraded
      - {link: [3, 4], bandwidth: 10%}          # or "4.5 GB/s"; latency: 5 us
      - {link: [5, 6], state: down, direction: one-way}   # only 5->6
    stragglers: {2: 20 us}          # devices that start late
    data: values                    # or none: chunks carry sizes only (same timings, no output)

A topology::

    name: torus4x4
    kind: torus                     # ring | torus | mesh
    dims: [4, 4]
    wraparound: true                # or one flag per axis
    link: {bandwidth: 45 GB/s, latency: 1 us}

The package, a module per job:

- :mod:`~netsim.scenario.errors`: :class:`ScenarioError`.
- :mod:`~netsim.scenario.yaml_files`: safe reading within size and nesting limits;
  pydantic's errors made into a line per mistake naming the file and the field.
- :mod:`~netsim.scenario.suggestions`: "did you mean", other libraries' names for ops
  (``all_reduce`` is ``psum``) and XLA's dtype names (``bf16``).
- :mod:`~netsim.scenario.fields`: fields in human units (``Bytes``, ``Bandwidth``,
  ``Duration``: bandwidths and latencies need their unit) and the strict base model.
- :mod:`~netsim.scenario.topology_spec`: topology files (``TopologySpec``,
  :class:`TopologyShape`, :func:`load_topology`, :func:`topology_names`, ``TOPOLOGY_DIRS``).
- :mod:`~netsim.scenario.collective_spec`: the ``collective:`` section, one model per op.
- :mod:`~netsim.scenario.models`: the rest of a scenario and :class:`Scenario`.
- :mod:`~netsim.scenario.loading`: :func:`load_scenario`, :func:`scenario_from_data` and
  the checks that need no simulation.

Program files (arrays sharded on a mesh and the ops on them) are read by
:mod:`netsim.programs.files`, beside the rest of what makes a program.
"""

from __future__ import annotations

from netsim.scenario.collective_spec import SPECS as SPECS
from netsim.scenario.collective_spec import Axes as Axes
from netsim.scenario.collective_spec import CollectiveSpec as CollectiveSpec
from netsim.scenario.collective_spec import Groups as Groups
from netsim.scenario.errors import ScenarioError as ScenarioError
from netsim.scenario.fields import Bandwidth as Bandwidth
from netsim.scenario.fields import Bytes as Bytes
from netsim.scenario.fields import Duration as Duration
from netsim.scenario.fields import Strict as Strict
from netsim.scenario.loading import load_scenario as load_scenario
from netsim.scenario.loading import scenario_from_data as scenario_from_data
from netsim.scenario.models import Endpoint as Endpoint
from netsim.scenario.models import ExpectedSpec as ExpectedSpec
from netsim.scenario.models import FaultSpec as FaultSpec
from netsim.scenario.models import InputSpec as InputSpec
from netsim.scenario.models import MeshSpec as MeshSpec
from netsim.scenario.models import Scenario as Scenario
from netsim.scenario.topology_spec import MAX_DEVICES as MAX_DEVICES
from netsim.scenario.topology_spec import TOPOLOGY_DIRS as TOPOLOGY_DIRS
from netsim.scenario.topology_spec import LinkSpec as LinkSpec
from netsim.scenario.topology_spec import TopologyShape as TopologyShape
from netsim.scenario.topology_spec import TopologySpec as TopologySpec
from netsim.scenario.topology_spec import load_topology as load_topology
from netsim.scenario.topology_spec import topology_names as topology_names
from netsim.scenario.yaml_files import MAX_FILE_BYTES as MAX_FILE_BYTES
from netsim.scenario.yaml_files import MAX_NESTING as MAX_NESTING
from netsim.scenario.yaml_files import read_yaml as read_yaml
from netsim.scenario.yaml_files import validate as validate

__all__ = ["TOPOLOGY_DIRS", "Scenario", "ScenarioError", "TopologyShape", "load_scenario", "load_topology", "scenario_from_data", "topology_names"]
