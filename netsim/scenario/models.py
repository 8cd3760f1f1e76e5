"""The scenario model: input, mesh, faults, expected result, and :class:`Scenario` itself."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BeforeValidator, Field, field_validator, model_validator

from netsim.algorithms.registry import ALGORITHMS, default_algorithm
from netsim.network import units
from netsim.network.calibration import CALIBRATIONS, NOMINAL, calibrate, check_calibration
from netsim.network.dcn import DCN
from netsim.network.device_mesh import AxisGroups, Mesh
from netsim.network.presets import is_slice_name, parse_slice, slice_hint
from netsim.network.slices import split_slices_name
from netsim.network.topology import Topology, UnreachableError
from netsim.scenario.collective_spec import CollectiveSpec
from netsim.scenario.errors import ScenarioError, clipped
from netsim.scenario.fields import Bytes, Duration, Strict
from netsim.scenario.suggestions import did_you_mean, dtype_name
from netsim.scenario.topology_spec import (
    DeviceSpec,
    LinkSpec,
    TopologyShape,
    TopologySpec,
    build_topology,
    find_topology,
    load_topology,
    topology_names,
    written_duration,
)
from netsim.scenario.yaml_files import read_yaml, validate
from netsim.semantics import ops as registry


def mesh_shorthand(value: Any) -> Any:
    """``mesh: {data: 4, model: 4}`` is short for ``mesh: {shape: {data: 4, model: 4}}``.

    Examples
    --------
    >>> mesh_shorthand({"data": 4, "model": 4}), mesh_shorthand({"shape": {"data": 4}})
    ({'shape': {'data': 4, 'model': 4}}, {'shape': {'data': 4}})
    """
    if isinstance(value, dict) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value.values()):
        return {"shape": value}
    return value


class MeshSpec(Strict):
    """Named mesh axes and how they lie on the topology (see :mod:`netsim.network.device_mesh`)."""

    shape: dict[str, Annotated[int, Field(ge=1)]] = Field(min_length=1)
    devices: list[int] | None = None
    axis_dims: dict[str, int | list[int]] | None = None


ML_FLOATS = ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e4m3b11fnuz", "float8_e4m3", "float8_e3m4")
"""Floating types JAX has beyond NumPy's, from ml_dtypes (as ``jnp.bfloat16``, ``jnp.float8_e4m3fn``, ...)."""


NUMPY_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
"""The numeric NumPy types a file may name."""


class InputSpec(Strict):
    """Per-device input: a shape, or a payload size for a 1-D array, and a dtype."""

    shape: list[Annotated[int, Field(ge=0, le=1 << 40)]] | None = Field(None, max_length=8)
    bytes_per_device: Bytes | None = None
    dtype: str = "float32"
    values: Literal["random", "arange"] = "random"

    @field_validator("dtype", mode="before")
    @classmethod
    def _xla_spelling(cls, value: Any) -> Any:
        return dtype_name(value)  # bf16, f32, s32, ... as JAX prints them

    @field_validator("dtype")
    @classmethod
    def _known_dtype(cls, value: str) -> str:
        if value in ML_FLOATS:
            import ml_dtypes  # noqa: F401  (registers bfloat16 and the float8 types with NumPy)

            return value
        try:
            dtype = np.dtype(value)
        except TypeError:
            hint = did_you_mean(value, (*NUMPY_DTYPES, *ML_FLOATS))
            raise ValueError(f"unknown dtype {value!r}{hint or ';'} use e.g. float32, int32, float16, bfloat16, float8_e4m3fn") from None
        if dtype.kind not in "iuf":
            raise ValueError(f"dtype {value!r} is not a numeric type; use an int, uint or float type")
        return dtype.name


Endpoint = Annotated[int, Field(ge=0)] | Annotated[list[Annotated[int, Field(ge=0)]], Field(min_length=1, max_length=3)]


class FaultSpec(Strict):
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

    @field_validator("bandwidth", mode="before")
    @classmethod
    def _has_a_unit(cls, value: Any) -> Any:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            raise ValueError(f"{value!r} has no unit: write a share of the link's bandwidth ('{value:g}%') or a bandwidth ('{value:g} GB/s')")
        return value

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
    return topology.index(end)


class ExpectedSpec(Strict):
    """What a bundled scenario is known to produce (checked by the test suite)."""

    time_s: float


class Scenario(Strict):
    """A validated scenario. Build one with :func:`load_scenario`."""

    name: str
    description: str | None = None
    topology: str | TopologySpec
    collective: CollectiveSpec
    input: InputSpec
    algorithm: str | None = None
    link: LinkSpec | None = None
    device: DeviceSpec | None = None
    forwarding: Literal["cut_through", "store_and_forward"] = "cut_through"
    engine: Literal["auto", "processes", "fast"] = "auto"
    calibration: Literal["nominal", "calibrated"] = "nominal"
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
    expected: ExpectedSpec | None = None
    mesh: Annotated[MeshSpec | None, BeforeValidator(mesh_shorthand)] = None
    faults: list[FaultSpec] = Field(default_factory=list, max_length=1 << 16)
    stragglers: dict[Annotated[int, Field(ge=0, strict=False)], Duration] = Field(default_factory=dict)  # "2" as well: JSON keys are text
    data: Literal["values", "none"] = "values"
    source: str = Field("<scenario>", exclude=True)
    base_dir: Path | None = Field(None, exclude=True)

    @field_validator("name", "description")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        """Control characters (terminal escape sequences) written out as ``\\x1b``, so printing a name cannot drive the terminal."""
        return clipped(value, 10_000) if value is not None else None

    @field_validator("stragglers", mode="before")
    @classmethod
    def _devices_once(cls, value: Any) -> Any:
        if isinstance(value, dict):
            seen: dict[int, Any] = {}
            for key in value:
                try:
                    device = int(str(key).strip()) if not isinstance(key, (bool, float)) else None
                except ValueError:
                    continue  # not a device number: the field's own check says so
                if device is not None and device in seen:
                    raise ValueError(
                        f"device {device} is given twice (as {clipped(repr(seen[device]), 40)} and {clipped(repr(key), 40)}); give each device once"
                    )
                if device is not None:
                    seen[device] = key
        return value

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str | None) -> str | None:
        if value is not None and value not in ALGORITHMS and value != "multipath":
            hint = did_you_mean(value, [*ALGORITHMS, "multipath"])
            raise ValueError(f"unknown algorithm {value!r}{hint or ';'} expected one of {', '.join(ALGORITHMS)}, or multipath (ppermute only)")
        return value

    @cached_property
    def topology_obj(self) -> Topology:
        """The topology with the scenario's link and device overrides applied."""
        if isinstance(self.topology, TopologySpec):
            topo = build_topology(self.topology, self.source, "topology", self.name)
        else:
            try:
                topo = load_topology(self.topology, base_dir=self.base_dir)
            except ScenarioError as error:
                if error.source != self.topology:
                    raise  # the topology file itself is malformed: name that file
                raise ScenarioError(self.source, "topology", error.problem) from None
        if self.link is not None:
            topo = topo.with_links(self.link.bandwidth, self.link.latency)
        if self.device is not None:
            topo = topo.with_device(self.device.facts())
        for index, fault in enumerate(self.faults):
            try:
                topo = fault.apply(topo)
            except ValueError as error:
                field = "bandwidth" if "(the floor)" in str(error) else "link"
                raise ScenarioError(self.source, f"faults.{index}.{field}", str(error)) from None
        return calibrate(topo, self.calibration)

    def with_calibration(self, mode: str) -> Scenario:
        """The same scenario run with ``calibration: mode`` (what ``--calibration`` asks for).

        Examples
        --------
        >>> from netsim.scenario import load_scenario
        >>> s = load_scenario("scenarios/allgather_tpu_v5e_8x4_line.yaml").with_calibration("calibrated")
        >>> s.calibration, s.topology_shape.link_efficiency
        ('calibrated', 0.95)
        """
        copy = self.model_copy(update={"calibration": check_calibration(mode)})
        for cached in ("topology_obj", "topology_shape", "mesh_obj", "groups"):  # built from the topology: built again
            copy.__dict__.pop(cached, None)
        return copy

    @cached_property
    def topology_shape(self) -> TopologyShape:
        """The topology's axes, links and chip facts (with the overrides), without building its graph."""
        if isinstance(self.topology, TopologySpec):
            spec, source, field, stem = self.topology, self.source, "topology", self.name
        elif is_slice_name(self.topology) and not (Path(self.topology).is_file() or (self.base_dir and (self.base_dir / self.topology).is_file())):
            several = split_slices_name(self.topology)  # several slices joined by the DCN (netsim.network.slices)
            try:
                generation, dims = parse_slice(several[0] if several else self.topology)
                if several and generation.name not in DCN:
                    raise ValueError(f"{self.topology!r}: slices join over the DCN from tpu-v4 on ({', '.join(DCN)}); write e.g. tpu-v5e:4x4x2slices")
            except ValueError as error:
                raise ScenarioError(self.source, "topology", str(error)) from None
            shape = TopologyShape(self.topology, dims, generation.wraps(dims), generation.bandwidth_Bps, generation.latency_s, **generation.device)
            shape = shape.calibrated(CALIBRATIONS.get(generation.name, NOMINAL) if self.calibration == "calibrated" else NOMINAL)
            if generation.devices_per_chip == 2:
                chip = {"chip_link_bandwidth_Bps": generation.chip_link_bandwidth_Bps, "chip_link_latency_s": generation.chip_link_latency_s}
                shape = replace(shape, dims=(*dims, 2), wraparound=(*shape.wraparound, False), **chip)
            if several:
                shape = replace(shape, dims=(several[1], *shape.dims), wraparound=(True, *shape.wraparound), slices=several[1])
            return self._with_link_overrides(shape)
        else:
            try:
                path = find_topology(self.topology, self.base_dir)
            except FileNotFoundError:
                hint = slice_hint(self.topology) or did_you_mean(self.topology, topology_names(), other_sizes=False)
                problem = f"no topology file {clipped(self.topology)!r}{hint or ';'} bundled ones are: {', '.join(topology_names())}"
                raise ScenarioError(self.source, "topology", problem) from None
            spec, source, field, stem = validate(TopologySpec, read_yaml(path), str(path)), str(path), "", path.stem
        try:
            shape = spec.shape(stem)
        except ValueError as error:
            raise ScenarioError(source, field or "dims", str(error)) from None
        return self._with_link_overrides(shape.calibrated(spec.offered() if self.calibration == "calibrated" else NOMINAL))

    def _with_link_overrides(self, shape: TopologyShape) -> TopologyShape:
        if self.device is not None:
            shape = shape.with_device(self.device.facts())
        if self.link is None:
            return shape
        bandwidth = self.link.bandwidth if self.link.bandwidth is not None else shape.bandwidth_Bps
        latency = self.link.latency if self.link.latency is not None else shape.latency_s
        shape = replace(shape, bandwidth_Bps=bandwidth, latency_s=latency)
        if shape.chip_axis is None:
            return shape
        # the scenario's link section sets every link, the one between a chip's two devices too
        chip_bandwidth = self.link.bandwidth if self.link.bandwidth is not None else shape.chip_link_bandwidth_Bps
        chip_latency = self.link.latency if self.link.latency is not None else shape.chip_link_latency_s
        return replace(shape, chip_link_bandwidth_Bps=chip_bandwidth, chip_link_latency_s=chip_latency)

    def as_run(self) -> dict[str, Any]:
        """The scenario as it runs, self-contained: defaults filled in, the topology inline.

        Written back as YAML it loads to the same scenario and gives the same numbers.

        Examples
        --------
        >>> from netsim.scenario import load_scenario
        >>> load_scenario("scenarios/allgather_ring8.yaml").as_run()["topology"]["link"]
        {'bandwidth': '45 GB/s', 'latency': '1 us'}
        """
        data = self.model_dump(mode="json", exclude_none=True)
        if self.topology_shape.slices > 1:  # several slices: by name (the link override, if any, stays beside it)
            return data
        data["topology"] = self.topology_shape.as_spec()
        data.pop("link", None)  # folded into the inline topology
        data.pop("device", None)
        if self.stragglers:  # durations carry their unit in files
            data["stragglers"] = {str(device): written_duration(delay) for device, delay in self.stragglers.items()}
        for fault in data.get("faults", ()):
            if fault.get("latency") is not None:
                fault["latency"] = written_duration(fault["latency"])
        if self.calibration == "nominal":
            data.pop("calibration")  # the default, as files written before it existed say
        return data

    @property
    def resolved_algorithm(self) -> str:
        """The algorithm that runs: the one named, or the collective's default."""
        if self.algorithm is not None:
            return self.algorithm
        return default_algorithm(self.layout().pattern, over_mesh_axes=getattr(self.collective, "axes", None) is not None or self.whole_torus)

    @property
    def whole_torus(self) -> bool:
        """One group of every device of a torus of several axes: it runs over the physical axes."""
        shape, groups = self.topology_shape, getattr(self.collective, "axis_index_groups", None)
        every = groups is None or [list(g) for g in groups] == [list(range(shape.n_devices))]
        return getattr(self.collective, "axes", None) is None and len(shape.dims) > 1 and every and self.layout().pattern != "all_to_all"

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
        return registry.COLLECTIVES[self.collective.op].untiled_rows and not self.collective.tiled

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
        collective = registry.COLLECTIVES[spec.op]
        return collective.check(proxy, self.groups, **{name: getattr(spec, name) for name in collective.arguments})
