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
"""

from __future__ import annotations

import math
import re
import reprlib
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import networkx as nx
import numpy as np
import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator

from netsim import units
from netsim.device_mesh import AxisGroups, Mesh
from netsim.presets import is_slice_name, parse_slice, tpu_slice
from netsim.resources import MemoryLimitError, check_memory, estimate_memory, pieces_of
from netsim.schedules import ALGORITHMS, DEFAULT_AXES_ALGORITHM, check_algorithm, default_algorithm
from netsim.semantics import AllGatherLayout, AllReduceLayout, AllToAllLayout, PermuteLayout, ReduceScatterLayout
from netsim.topology import DEFAULT_BANDWIDTH_BPS, DEFAULT_LATENCY_S, Topology, UnreachableError, torus

__all__ = ["TOPOLOGY_DIRS", "Scenario", "ScenarioError", "TopologyShape", "load_scenario", "load_topology", "scenario_from_data", "topology_names"]


class ScenarioError(ValueError):
    """A scenario or topology file is wrong: names the file, the field and the fix."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source, self.field, self.problem = source, field, problem
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + problem)


def _package_root() -> Path:
    return Path(__file__).resolve().parent


TOPOLOGY_DIRS = (_package_root().parent / "topologies", _package_root() / "topologies")
"""Where named topologies are looked up: the project's ``topologies/`` (editable
installs) and the copy shipped inside the package (wheels)."""


def _unit(parse):
    def check(value: Any) -> Any:
        if isinstance(value, str):
            return parse(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"expected a string with a unit, got {value!r}")
        return value

    return BeforeValidator(check)


def _at_most(limit: float, what: str):
    def check(value: float) -> float:
        if value > limit:
            raise ValueError(f"{what} (got {value!r})")
        return value

    return AfterValidator(check)


def _at_least(limit: float, what: str):
    def check(value: float) -> float:
        if value < limit:
            raise ValueError(f"{what} (got {value!r})")
        return value

    return AfterValidator(check)


# The bounds keep every simulated time finite: a run moves at most 2**50 bytes per
# device at no less than 1 B/s, over hops of at most an hour.
Bytes = Annotated[int, _unit(units.parse_bytes), Field(gt=0), _at_most(2**50, "sizes above 1 PiB are not simulated")]
Bandwidth = Annotated[float, _unit(units.parse_bandwidth), Field(gt=0, allow_inf_nan=False), _at_least(1.0, "bandwidths below 1 B/s are not simulated")]
Duration = Annotated[float, _unit(units.parse_duration), Field(ge=0, allow_inf_nan=False), _at_most(3600.0, "durations above 1 h are not simulated")]


class _Strict(BaseModel):
    # strict: a YAML string is not a number, a number not a flag, bytes not text
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class LinkSpec(_Strict):
    """Link parameters: one-way bandwidth per direction and per-hop latency."""

    bandwidth: Bandwidth | None = None
    latency: Duration | None = None


@dataclass(frozen=True)
class TopologyShape:
    """A topology's axes and links without its graph: enough for closed-form estimates of any size.

    Examples
    --------
    >>> TopologyShape("pod", (16, 16, 16), (True, True, True), 45e9, 1e-6).n_devices
    4096
    """

    name: str
    dims: tuple[int, ...]
    wraparound: tuple[bool, ...]
    bandwidth_Bps: float
    latency_s: float

    @property
    def n_devices(self) -> int:
        """Number of devices."""
        return math.prod(self.dims)

    def as_spec(self) -> dict[str, Any]:
        """The topology as an inline scenario mapping (``kind: torus`` covers rings and meshes)."""
        return {
            "name": self.name,
            "kind": "torus",
            "dims": list(self.dims),
            "wraparound": list(self.wraparound),
            "link": {
                "bandwidth": _human(self.bandwidth_Bps, units.parse_bandwidth, ("GB/s", 1e9), ("MB/s", 1e6), ("B/s", 1.0)),
                "latency": _human(self.latency_s, units.parse_duration, ("us", 1e-6), ("ns", 1e-9), ("ms", 1e-3), ("s", 1.0)),
            },
        }


def _human(value: float, parse: Any, *candidates: tuple[str, float]) -> str | float:
    """``value`` written with a unit when that reads back exactly, else the number itself."""
    for unit, scale in candidates:
        text = f"{value / scale:.12g} {unit}"
        try:
            if parse(text) == value:
                return text
        except ValueError:
            continue
    return value


class TopologySpec(_Strict):
    """A ring, torus or mesh, as written in a topology file or inline in a scenario."""

    name: str | None = None
    description: str | None = None
    kind: Literal["ring", "torus", "mesh"]
    dims: list[Annotated[int, Field(ge=1, le=1 << 16)]] = Field(min_length=1, max_length=3)
    wraparound: bool | list[bool] = True
    link: LinkSpec = LinkSpec()

    def build(self, default_name: str) -> Topology:
        shape = self.shape(default_name)
        return torus(shape.dims, shape.wraparound, shape.bandwidth_Bps, shape.latency_s, name=shape.name)

    def shape(self, default_name: str) -> TopologyShape:
        """The checked axes and links, without building the graph."""
        if math.prod(self.dims) > MAX_DEVICES:
            raise ValueError(f"{math.prod(self.dims)} devices is more than netsim simulates ({MAX_DEVICES})")
        if self.kind == "ring" and len(self.dims) != 1:
            raise ValueError(f"a ring has one axis; got dims {self.dims}")
        if self.kind == "mesh" and self.wraparound not in (False, True) and any(self.wraparound):
            raise ValueError("a mesh has no wraparound; use kind: torus for wrapped axes")
        wraps = False if self.kind == "mesh" else self.wraparound
        if isinstance(wraps, list) and len(wraps) != len(self.dims):
            raise ValueError(f"wraparound has {len(wraps)} flags for {len(self.dims)} axes")
        return TopologyShape(
            self.name or default_name,
            tuple(self.dims),
            tuple(wraps) if isinstance(wraps, list) else (wraps,) * len(self.dims),
            self.link.bandwidth if self.link.bandwidth is not None else DEFAULT_BANDWIDTH_BPS,
            self.link.latency if self.link.latency is not None else DEFAULT_LATENCY_S,
        )


MAX_DEVICES = 1 << 16
"""The most devices a topology may have."""

Groups = list[list[int]] | None


def _check_axes(value: str | list[str] | None) -> str | list[str] | None:
    if value is not None and (not value or any(not name for name in ([value] if isinstance(value, str) else value))):
        raise ValueError("name one or more mesh axes, e.g. model or [data, model]")
    return value


Axes = Annotated[str | list[str] | None, AfterValidator(_check_axes)]


class AllGatherSpec(_Strict):
    op: Literal["all_gather"]
    axis: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None
    axes: Axes = None


class PsumScatterSpec(_Strict):
    op: Literal["psum_scatter"]
    scatter_dimension: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None
    axes: Axes = None


class PsumSpec(_Strict):
    op: Literal["psum"]
    axis_index_groups: Groups = None
    axes: Axes = None


def _mesh_shorthand(value: Any) -> Any:
    """``mesh: {data: 4, model: 4}`` is short for ``mesh: {shape: {data: 4, model: 4}}``."""
    if isinstance(value, dict) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
        return {"shape": value}
    return value


class MeshSpec(_Strict):
    """Named mesh axes and how they lie on the topology (see :mod:`netsim.device_mesh`)."""

    shape: dict[str, Annotated[int, Field(ge=1)]] = Field(min_length=1)
    devices: list[int] | None = None
    axis_dims: dict[str, int | list[int]] | None = None


class AllToAllSpec(_Strict):
    op: Literal["all_to_all"]
    split_axis: int = 0
    concat_axis: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None
    axes: Axes = None


class PpermuteSpec(_Strict):
    op: Literal["ppermute"]
    perm: list[list[int]]


class InputSpec(_Strict):
    """Per-device input: a shape, or a payload size for a 1-D array, and a dtype."""

    shape: list[Annotated[int, Field(ge=0, le=1 << 40)]] | None = Field(None, max_length=8)
    bytes_per_device: Bytes | None = None
    dtype: str = "float32"
    values: Literal["random", "arange"] = "random"

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        try:
            dtype = np.dtype(value)
        except TypeError:
            raise ValueError(f"unknown dtype {value!r}; use e.g. float32, int32, float16") from None
        if dtype.kind not in "iuf":
            raise ValueError(f"dtype {value!r} is not a numeric type; use an int, uint or float type")
        return dtype.name


Endpoint = Annotated[int, Field(ge=0)] | Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1, max_length=3)]


class FaultSpec(_Strict):
    """A link that is down or degraded: ``{link: [3, 4], bandwidth: 10%}``, ``{link: [5, 6], state: down}``.

    ``link`` names the two neighbours it joins, by device index or, on a torus,
    by coordinates (``[[0, 1], [0, 2]]``). ``bandwidth`` is a percentage of the
    link's own or a bandwidth; ``latency`` replaces its latency. Both directions
    change unless ``direction: one-way`` (then only first -> second).
    """

    link: Annotated[list[Endpoint], Field(min_length=2, max_length=2)]
    state: Literal["up", "down"] = "up"
    bandwidth: str | None = None
    latency: Duration | None = None
    direction: Literal["both", "one-way"] = "both"

    @field_validator("bandwidth")
    @classmethod
    def _bandwidth_or_percent(cls, value: str | None) -> str | None:
        if value is None:
            return value
        if value.strip().endswith("%"):
            fraction = units.parse_percent(value)
            if fraction <= 0:
                raise ValueError(f"a link at {value} carries nothing; write state: down instead")
            if fraction > 1e6:
                raise ValueError(f"{value} is not a plausible change of bandwidth")
        else:
            bandwidth = units.parse_bandwidth(value)
            if bandwidth < 1:
                raise ValueError(f"{value} is below 1 B/s; write state: down for a dead link")
        return value

    @model_validator(mode="after")
    def _something_changes(self) -> FaultSpec:
        if self.state == "down" and (self.bandwidth is not None or self.latency is not None):
            raise ValueError("a link that is down has no bandwidth or latency; give state: down alone")
        if self.state == "up" and self.bandwidth is None and self.latency is None:
            raise ValueError("nothing changes: give bandwidth (e.g. 10% or '4.5 GB/s'), latency, or state: down")
        return self

    def apply(self, topology: Topology) -> Topology:
        """The topology with this fault (ValueError naming the link if it does not fit)."""
        src, dst = (_device(topology, end) for end in self.link)
        both = self.direction == "both"
        if self.state == "down":
            return topology.fail_link(src, dst, both_ways=both)
        factor = bandwidth = None
        if self.bandwidth is not None and self.bandwidth.strip().endswith("%"):
            factor = units.parse_percent(self.bandwidth)
        elif self.bandwidth is not None:
            bandwidth = units.parse_bandwidth(self.bandwidth)
        return topology.degrade_link(src, dst, bandwidth_factor=factor, bandwidth_Bps=bandwidth, latency_s=self.latency, both_ways=both)


def _device(topology: Topology, end: int | list[int]) -> int:
    if isinstance(end, int):
        if end >= topology.n_devices:
            raise ValueError(f"device {end} is not on {topology.name} (devices 0..{topology.n_devices - 1})")
        return end
    if len(end) != len(topology.dims) or any(c >= size for c, size in zip(end, topology.dims, strict=True)):
        raise ValueError(f"coordinates {end} are not on {topology.name} (dims {list(topology.dims)})")
    return topology.device(end)


class ExpectedSpec(_Strict):
    """What a bundled scenario is known to produce (checked by the test suite)."""

    time_s: float


class Scenario(_Strict):
    """A validated scenario. Build one with :func:`load_scenario`."""

    name: str
    description: str | None = None
    topology: str | TopologySpec
    collective: Annotated[AllGatherSpec | PsumScatterSpec | PsumSpec | AllToAllSpec | PpermuteSpec, Field(discriminator="op")]
    input: InputSpec
    algorithm: str | None = None
    link: LinkSpec | None = None
    forwarding: Literal["cut_through", "store_and_forward"] = "cut_through"
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
    expected: ExpectedSpec | None = None
    mesh: Annotated[MeshSpec | None, BeforeValidator(_mesh_shorthand)] = None
    faults: list[FaultSpec] = Field(default_factory=list, max_length=1 << 16)
    stragglers: dict[Annotated[int, Field(ge=0, strict=False)], Duration] = Field(default_factory=dict)  # "2" as well: JSON keys are text
    data: Literal["values", "none"] = "values"
    source: str = Field("<scenario>", exclude=True)
    base_dir: Path | None = Field(None, exclude=True)

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str | None) -> str | None:
        if value is not None and value not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {value!r}; expected one of {', '.join(ALGORITHMS)}")
        return value

    @cached_property
    def topology_obj(self) -> Topology:
        """The topology with the scenario's link overrides applied."""
        if isinstance(self.topology, TopologySpec):
            topo = _build_topology(self.topology, self.source, "topology", self.name)
        else:
            try:
                topo = load_topology(self.topology, base_dir=self.base_dir)
            except ScenarioError as error:
                if error.source != self.topology:
                    raise  # the topology file itself is malformed: name that file
                raise ScenarioError(self.source, "topology", error.problem) from None
        if self.link is not None:
            topo = topo.with_links(self.link.bandwidth, self.link.latency)
        for index, fault in enumerate(self.faults):
            try:
                topo = fault.apply(topo)
            except ValueError as error:
                raise ScenarioError(self.source, f"faults.{index}.link", str(error)) from None
        return topo

    @cached_property
    def topology_shape(self) -> TopologyShape:
        """The topology's axes and links (with the link overrides), without building its graph."""
        if isinstance(self.topology, TopologySpec):
            spec, source, field, stem = self.topology, self.source, "topology", self.name
        elif is_slice_name(self.topology) and not (Path(self.topology).is_file() or (self.base_dir and (self.base_dir / self.topology).is_file())):
            try:
                generation, dims = parse_slice(self.topology)
            except ValueError as error:
                raise ScenarioError(self.source, "topology", str(error)) from None
            shape = TopologyShape(self.topology, dims, generation.wraps(dims), generation.bandwidth_Bps, generation.latency_s)
            return self._with_link_overrides(shape)
        else:
            try:
                path = _find_topology(self.topology, self.base_dir)
            except FileNotFoundError:
                problem = f"no topology file {self.topology!r}; bundled ones are: {', '.join(topology_names())}"
                raise ScenarioError(self.source, "topology", problem) from None
            spec, source, field, stem = _validate(TopologySpec, _read_yaml(path), str(path)), str(path), "", path.stem
        try:
            shape = spec.shape(stem)
        except ValueError as error:
            raise ScenarioError(source, field or "dims", str(error)) from None
        return self._with_link_overrides(shape)

    def _with_link_overrides(self, shape: TopologyShape) -> TopologyShape:
        if self.link is None:
            return shape
        bandwidth = self.link.bandwidth if self.link.bandwidth is not None else shape.bandwidth_Bps
        latency = self.link.latency if self.link.latency is not None else shape.latency_s
        return TopologyShape(shape.name, shape.dims, shape.wraparound, bandwidth, latency)

    def as_run(self) -> dict[str, Any]:
        """The scenario as it runs, self-contained: defaults filled in, the topology inline.

        Written back as YAML it loads to the same scenario and gives the same numbers.

        Examples
        --------
        >>> load_scenario("scenarios/allgather_ring8.yaml").as_run()["topology"]["link"]
        {'bandwidth': '45 GB/s', 'latency': '1 us'}
        """
        data = self.model_dump(mode="json", exclude_none=True)
        data["topology"] = self.topology_shape.as_spec()
        data.pop("link", None)  # folded into the inline topology
        return data

    @property
    def resolved_algorithm(self) -> str:
        """The algorithm that runs: the one named, or the collective's default."""
        if self.algorithm is not None:
            return self.algorithm
        pattern = self.layout().pattern
        if pattern == "permute":
            return "direct"
        if getattr(self.collective, "axes", None) is not None and ALGORITHMS[DEFAULT_AXES_ALGORITHM].runs(pattern):
            return DEFAULT_AXES_ALGORITHM
        return default_algorithm(pattern)

    @cached_property
    def mesh_obj(self) -> Mesh | None:
        """The mesh laid on the topology, or None without ``mesh``."""
        if self.mesh is None:
            return None
        try:
            return Mesh(self.mesh.shape, self.topology_obj, devices=self.mesh.devices, axis_dims=self.mesh.axis_dims)
        except ValueError as error:
            message = str(error)
            field = next((f"mesh.{f}" for f in ("devices", "axis_dims") if message.startswith(f)), "mesh")
            raise ScenarioError(self.source, "faults" if isinstance(error, UnreachableError) else field, message) from None

    @cached_property
    def groups(self) -> AxisGroups | list[list[int]] | None:
        """The collective's groups: from its mesh axes, or its axis_index_groups."""
        spec = self.collective
        if getattr(spec, "axes", None) is None:
            return getattr(spec, "axis_index_groups", None)
        if spec.axis_index_groups is not None:
            raise ScenarioError(self.source, "collective.axes", "give axes or axis_index_groups, not both")
        mesh = self.mesh_obj
        if mesh is None:
            raise ScenarioError(self.source, "collective.axes", "naming mesh axes needs a mesh: add e.g. mesh: {data: 4, model: 4} to the scenario")
        try:
            return mesh.groups(spec.axes)
        except ValueError as error:
            raise ScenarioError(self.source, "faults" if isinstance(error, UnreachableError) else "collective.axes", str(error)) from None

    @property
    def shape(self) -> tuple[int, ...]:
        """Per-device input shape."""
        if self.input.shape is not None:
            return tuple(self.input.shape)
        count = self.input.bytes_per_device // np.dtype(self.input.dtype).itemsize
        if self._splits_into_group_rows:
            return (self._group_size, count // self._group_size)
        return (count,)

    @property
    def _splits_into_group_rows(self) -> bool:
        """An untiled psum_scatter or all_to_all: bytes_per_device becomes [group size, rest]."""
        return isinstance(self.collective, (PsumScatterSpec, AllToAllSpec)) and not self.collective.tiled

    @property
    def _group_size(self) -> int:
        groups = self.groups
        return len(groups[0]) if groups else self.topology_shape.n_devices

    def make_input(self) -> np.ndarray:
        """The stacked input ``[n_devices, *shape]``, drawn from the scenario's seed.

        ``values: random``: integers uniform in [-100, 100) (or [0, 100) unsigned)
        so sums stay exact, floats standard normal. ``values: arange``:
        ``np.arange`` over the whole stacked array, as in the jax.lax docs examples.
        """
        rng = np.random.default_rng(self.seed)
        shape = (self.topology_obj.n_devices, *self.shape)
        dtype = np.dtype(self.input.dtype)
        if self.input.values == "arange":
            return np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape)
        if dtype.kind in "iu":
            low = 0 if dtype.kind == "u" else max(-100, int(np.iinfo(dtype).min))
            return rng.integers(low, min(100, int(np.iinfo(dtype).max)), size=shape, dtype=dtype)
        native = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
        return rng.standard_normal(shape, dtype=native).astype(dtype, copy=False)

    def layout(self):
        """Check the collective's arguments against the input shape; return its layout."""
        proxy = np.broadcast_to(np.zeros((), self.input.dtype), (self.topology_shape.n_devices, *self.shape))
        spec = self.collective
        if isinstance(spec, AllGatherSpec):
            return AllGatherLayout.check(proxy, spec.axis, spec.tiled, self.groups)
        if isinstance(spec, PsumScatterSpec):
            return ReduceScatterLayout.check(proxy, spec.scatter_dimension, spec.tiled, self.groups)
        if isinstance(spec, AllToAllSpec):
            return AllToAllLayout.check(proxy, spec.split_axis, spec.concat_axis, spec.tiled, self.groups)
        if isinstance(spec, PpermuteSpec):
            return PermuteLayout.check(proxy, spec.perm)
        return AllReduceLayout.check(proxy, self.groups)


def topology_names() -> list[str]:
    """Names of the bundled topologies.

    Examples
    --------
    >>> "ring8" in topology_names()
    True
    """
    names = set()
    for directory in TOPOLOGY_DIRS:
        if directory.is_dir():
            names.update(p.stem for p in directory.glob("*.yaml"))
    return sorted(names)


def _find_topology(name: str, base_dir: Path | None) -> Path:
    candidates = [Path(name)]
    if base_dir is not None:
        candidates.append(base_dir / name)
    stem = name[:-5] if name.endswith(".yaml") else name
    candidates += [d / f"{stem}.yaml" for d in TOPOLOGY_DIRS]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(name)


def load_topology(name: str | Path, *, base_dir: Path | None = None) -> Topology:
    """Read a topology file, by name (from ``topologies/``) or by path.

    A name ``GENERATION:SHAPE`` such as ``tpu-v5e:8x16`` is a TPU slice
    (:mod:`netsim.presets`), built without a file.

    Raises
    ------
    ScenarioError
        If there is no such topology, or the file is malformed.

    Examples
    --------
    >>> load_topology("torus4x4").dims
    (4, 4)
    >>> load_topology("tpu-v4:4x4x4").wraparound
    (True, True, True)
    """
    if isinstance(name, str) and is_slice_name(name) and not Path(name).is_file():
        try:
            return tpu_slice(name)
        except ValueError as error:
            raise ScenarioError(name, "topology", str(error)) from None
    try:
        path = _find_topology(str(name), base_dir)
    except FileNotFoundError:
        raise ScenarioError(str(name), "topology", f"no topology file {str(name)!r}; bundled ones are: {', '.join(topology_names())}") from None
    data = _read_yaml(path)
    spec = _validate(TopologySpec, data, str(path))
    return _build_topology(spec, str(path), "", path.stem)


def _build_topology(spec: TopologySpec, source: str, field: str, default_name: str) -> Topology:
    try:
        return spec.build(default_name)
    except ValueError as error:
        raise ScenarioError(source, field or "dims", str(error)) from None


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # an unhashable key: SafeLoader itself says so
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"found the key {key!r} twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


MAX_FILE_BYTES = 16 * 2**20
"""The largest scenario or topology file read."""
MAX_NESTING = 64
"""The deepest nesting of YAML flow collections read (PyYAML's scanner is quadratic in it)."""
_QUOTED_OR_COMMENT = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'|(?:^|(?<=\s))#[^\n]*", re.MULTILINE)


def _read_yaml(path: Path) -> Any:
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ScenarioError(str(path), "", "not a regular file")
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ScenarioError(str(path), "", "no such file") from None
    except OSError as error:
        raise ScenarioError(str(path), "", f"cannot read: {error.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(str(path), "", f"larger than {MAX_FILE_BYTES // 2**20} MiB; a scenario or topology file is a few lines of YAML")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(str(path), "", "not a text file (expected UTF-8 YAML)") from None
    if _nesting(text) > MAX_NESTING:
        raise ScenarioError(str(path), "", f"invalid YAML: the document is nested too deeply (more than {MAX_NESTING} levels of [ ] or {{ }})")
    try:
        return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader: no Python objects
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(str(path), "", f"invalid YAML{where}: {error.problem}") from None
    except RecursionError:
        raise ScenarioError(str(path), "", "invalid YAML: the document is nested too deeply") from None
    except yaml.YAMLError as error:
        raise ScenarioError(str(path), "", f"invalid YAML: {type(error).__name__}") from None


def _nesting(text: str) -> int:
    """How deep ``[`` and ``{`` nest outside quotes and comments (an upper bound is enough)."""
    codes = np.frombuffer(_QUOTED_OR_COMMENT.sub("", text).encode("utf-8"), np.uint8)
    step = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(step).max(initial=0))


_OPS = {"all_gather": AllGatherSpec, "psum_scatter": PsumScatterSpec, "psum": PsumSpec, "all_to_all": AllToAllSpec, "ppermute": PpermuteSpec}
_UNION_TAGS = set(_OPS)
_TYPE_TAG = re.compile(r"(function-[a-z-]+|constrained-[a-z]+|list|int|str|bool|float|dict|tuple|union|nullable)(\[.*\])?|\[key\]")
"""Pydantic's names for the member of a union or validator that failed: not fields, left out of paths."""


def _validate(model: type[BaseModel], data: Any, source: str, extra: dict[str, Any] | None = None) -> Any:
    if not isinstance(data, dict):
        raise ScenarioError(source, "", f"expected a mapping of fields at the top level, got {type(data).__name__}")
    try:
        return model.model_validate({**data, **(extra or {})})
    except ValidationError as error:
        errors = error.errors(include_url=False)
        first = errors[0]
        if first["type"].endswith("_type"):
            # A union (e.g. a topology name or mapping): when the value has the other
            # member's type, that member's error says what is wrong inside it.
            deeper = [e for e in errors if len(_field_path(e)) > len(_field_path(first)) and _field_path(e)[: len(_field_path(first))] == _field_path(first)]
            first = deeper[0] if deeper else first
        loc = _field_path(first)
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("op")
            message = f"expected one of {', '.join(_OPS)}"
        if first["type"] == "extra_forbidden":
            allowed = _allowed_fields(model, loc[:-1], data)
            message = f"unknown field; allowed here: {', '.join(allowed)}" if allowed else "unknown field"
        elif first["type"] == "missing":
            message = "required field is missing"
        elif "input" in first and "op" not in loc[-1:]:
            message = f"{message} (got {_short(first['input'])})"
        raise ScenarioError(source, ".".join(loc), message) from None
    except RecursionError:
        raise ScenarioError(source, "", "document is nested too deeply") from None


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, 4, 4, 50, 50, 40


def _field_path(error: Any) -> list[str]:
    """The fields an error's location goes through, without pydantic's union and validator tags."""
    return [str(p) for p in error["loc"] if p not in _UNION_TAGS and not _TYPE_TAG.fullmatch(str(p))]


def _short(value: Any) -> str:
    """A short repr, bounded however big the value (YAML aliases can make it huge)."""
    text = _REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed_fields(model: type[BaseModel], path: list[str], data: Any) -> list[str]:
    for part in path:
        if part.isdigit() or model is None:
            return []
        info = model.model_fields.get(part)
        if info is None:
            return []
        annotation = info.annotation
        if part == "collective" and isinstance(data, dict) and isinstance(data.get("collective"), dict):
            op = data["collective"].get("op")
            model = _OPS.get(op)
            continue
        candidates = [a for a in getattr(annotation, "__args__", (annotation,)) if isinstance(a, type) and issubclass(a, BaseModel)]
        model = candidates[0] if candidates else None
    if model is None:
        return []
    return [name for name, info in model.model_fields.items() if not info.exclude]


_ARGUMENT_FIELDS = (
    ("axis_index_groups", "collective.axis_index_groups"),
    ("scatter_dimension", "collective.scatter_dimension"),
    ("axis", "collective.axis"),
    ("all_gather with tiled", "collective.tiled"),
    ("split_axis", "collective.split_axis"),
    ("concat_axis", "collective.concat_axis"),
    ("perm", "collective.perm"),
)


def _check_scenario_algorithm(scenario: Scenario, layout: Any) -> None:
    """The algorithm runs the collective on these groups (ppermute always sends directly)."""
    if layout.pattern == "permute":
        if scenario.algorithm not in (None, "direct"):
            problem = f"ppermute sends every pair directly; leave algorithm out or write direct (got {scenario.algorithm!r})"
            raise ScenarioError(scenario.source, "algorithm", problem)
        return
    try:
        check_algorithm(layout.pattern, len(layout.groups[0]), scenario.algorithm)
    except ValueError as error:
        raise ScenarioError(scenario.source, "algorithm", str(error)) from None


def load_scenario(path: str | Path, *, build_topology: bool = True) -> Scenario:
    """Read and validate a scenario file.

    Everything that can be checked without simulating is checked here: the file's
    fields and units, the topology, the algorithm, and the collective's arguments
    against the input shape and the group layout. With ``build_topology=False`` the
    topology's graph is not built (closed-form estimates need only its shape).

    Raises
    ------
    ScenarioError
        Naming the file, the field and what is expected.

    Examples
    --------
    >>> s = load_scenario("scenarios/allgather_ring8.yaml")
    >>> s.collective.op, s.topology_obj.n_devices
    ('all_gather', 8)
    """
    path = Path(path)
    return scenario_from_data(_read_yaml(path), str(path), path.parent, build_topology=build_topology)


def scenario_from_data(data: Any, source: str, base_dir: Path | None = None, *, build_topology: bool = True) -> Scenario:
    """Validate a scenario given as parsed data (a mapping), as :func:`load_scenario` does.

    Sweeps use it to check each point of a study without writing a file.

    Parameters
    ----------
    data : dict
        The scenario's fields, as a YAML scenario file holds them.
    source : str
        What error messages name as the file, e.g. ``"studies/x.yaml point 3"``.
    base_dir : pathlib.Path, optional
        Where relative topology paths are looked up.
    build_topology : bool, default True
        Build the topology's graph now (closed-form estimates need only its shape).

    Raises
    ------
    ScenarioError
        Naming ``source``, the field and what is expected.

    Examples
    --------
    >>> data = {"name": "t", "topology": "ring4", "collective": {"op": "psum"}, "input": {"shape": [2]}}
    >>> scenario_from_data(data, "inline").topology_obj.n_devices
    4
    """
    scenario = _validate(Scenario, data, source, {"source": source, "base_dir": base_dir})
    topology = scenario.topology_shape  # resolves files and link overrides now
    if topology.n_devices > MAX_DEVICES:
        raise ScenarioError(source, "topology", f"{topology.n_devices} devices is more than netsim simulates ({MAX_DEVICES})")
    if build_topology:
        scenario.topology_obj  # noqa: B018  (builds the graph now)
    _ = scenario.mesh_obj, scenario.groups  # checks the mesh and the axes now
    if scenario.input.shape is None and scenario.input.bytes_per_device is None:
        raise ScenarioError(source, "input", "give either shape (a list of sizes) or bytes_per_device (e.g. '4 MiB')")
    if scenario.input.shape is not None and scenario.input.bytes_per_device is not None:
        raise ScenarioError(source, "input", "give shape or bytes_per_device, not both")
    if scenario.input.bytes_per_device is not None:
        itemsize = np.dtype(scenario.input.dtype).itemsize
        count, rest = divmod(scenario.input.bytes_per_device, itemsize)
        if rest:
            raise ScenarioError(
                source,
                "input.bytes_per_device",
                f"{scenario.input.bytes_per_device} bytes is not a whole number of {scenario.input.dtype} elements ({itemsize} bytes each)",
            )
        if scenario._splits_into_group_rows and count % scenario._group_size:
            raise ScenarioError(
                source,
                "input.bytes_per_device",
                f"{count} elements do not split into {scenario._group_size} equal blocks; pick a multiple of {scenario._group_size * itemsize} bytes",
            )
    for device in scenario.stragglers:
        if device >= topology.n_devices:
            raise ScenarioError(source, f"stragglers.{device}", f"device {device} is not on {topology.name} (devices 0..{topology.n_devices - 1})")
    if build_topology:  # about to simulate (estimates alone need no memory for data)
        _check_memory(scenario, source)
    try:
        layout = scenario.layout()
    except ValueError as error:
        message = str(error).replace("input has", "topology has room for")
        field = next((f for prefix, f in _ARGUMENT_FIELDS if message.startswith(prefix)), "input.shape")
        raise ScenarioError(source, field, message) from None
    _check_scenario_algorithm(scenario, layout)
    if build_topology and scenario.faults:
        _check_reachable(scenario.topology_obj, layout.groups, source)
    return scenario


def _check_memory(scenario: Scenario, source: str) -> None:
    """Refuse, before anything is allocated, a scenario the machine has no memory for.

    A timing-only run (``data: none``) allocates no data, so it is never refused.
    """
    if scenario.data == "none":
        return
    from netsim.collectives import MATERIALISE_LIMIT_BYTES

    itemsize = np.dtype(scenario.input.dtype).itemsize
    input_bytes = math.prod(scenario.shape) * itemsize
    n_devices = scenario.topology_shape.n_devices
    materialised = n_devices * math.prod(scenario.layout().output_shape) * itemsize <= MATERIALISE_LIMIT_BYTES  # bigger outputs stay lazy
    pieces = pieces_of(ALGORITHMS.get(scenario.algorithm))
    estimate = estimate_memory(scenario.collective.op, n_devices, scenario._group_size, input_bytes, pieces, materialised=materialised)
    try:
        check_memory(estimate)
    except MemoryLimitError as error:
        raise ScenarioError(source, "input", str(error)) from None


def _check_reachable(topology: Topology, groups: tuple[tuple[int, ...], ...], source: str) -> None:
    """With links down, every member of a group must still reach every other one."""
    if not topology.down_links:
        return
    component = {d: c for c, members in enumerate(nx.strongly_connected_components(topology.graph)) for d in members}
    for group in groups:
        for member in group[1:]:
            if component[member] != component[group[0]]:
                a, b = (group[0], member) if not nx.has_path(topology.graph, group[0], member) else (member, group[0])
                down = ", ".join(topology.link_name(link) for link in topology.down_links[:6])
                raise ScenarioError(
                    source,
                    "faults",
                    f"with links {down}{', ...' if len(topology.down_links) > 6 else ''} down, device {a} cannot reach device {b} "
                    f"of its group {list(group)}; bring a link back up or change the groups",
                )
