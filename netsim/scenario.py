"""Scenario and topology files: YAML in, validated objects out.

This is the only module that knows the file formats. Files are read with
``yaml.safe_load`` (no Python objects can be constructed from a file) and
validated with pydantic: unknown keys are rejected, sizes, bandwidths and
durations are written in human units, and every mistake becomes a
:class:`ScenarioError` naming the file, the field and what was expected.

A scenario::

    name: allgather_ring8
    topology: ring8                 # a file in topologies/, a path, or a mapping
    collective:
      op: all_gather                # all_gather | psum_scatter | psum
      axis: 0
      tiled: false
      axis_index_groups: null       # or [[0, 2], [1, 3]], ...
    input:
      shape: [1024, 256]            # per device; or bytes_per_device: 4 MiB
      dtype: float32
    algorithm: bidirectional_ring   # ring | bidirectional_ring | bidirectional_halfway
    link: {bandwidth: 45 GB/s, latency: 1 us}   # optional: override every link
    forwarding: cut_through         # or store_and_forward
    seed: 0                         # input data
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
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import yaml
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator

from netsim import units
from netsim.schedules import ALGORITHMS, DEFAULT_ALGORITHM
from netsim.semantics import AllGatherLayout, AllReduceLayout, ReduceScatterLayout
from netsim.topology import DEFAULT_BANDWIDTH_BPS, DEFAULT_LATENCY_S, Topology, torus

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


Bytes = Annotated[int, _unit(units.parse_bytes), Field(gt=0)]
Bandwidth = Annotated[float, _unit(units.parse_bandwidth), Field(gt=0, allow_inf_nan=False)]
Duration = Annotated[float, _unit(units.parse_duration), Field(ge=0, allow_inf_nan=False)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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


Groups = list[list[int]] | None


class AllGatherSpec(_Strict):
    op: Literal["all_gather"]
    axis: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None


class PsumScatterSpec(_Strict):
    op: Literal["psum_scatter"]
    scatter_dimension: int = 0
    tiled: bool = False
    axis_index_groups: Groups = None


class PsumSpec(_Strict):
    op: Literal["psum"]
    axis_index_groups: Groups = None


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


class ExpectedSpec(_Strict):
    """What a bundled scenario is known to produce (checked by the test suite)."""

    time_s: float


class Scenario(_Strict):
    """A validated scenario. Build one with :func:`load_scenario`."""

    name: str
    description: str | None = None
    topology: str | TopologySpec
    collective: Annotated[AllGatherSpec | PsumScatterSpec | PsumSpec, Field(discriminator="op")]
    input: InputSpec
    algorithm: str = DEFAULT_ALGORITHM
    link: LinkSpec | None = None
    forwarding: Literal["cut_through", "store_and_forward"] = "cut_through"
    seed: Annotated[int, Field(ge=0, lt=2**63)] = 0
    expected: ExpectedSpec | None = None
    data: Literal["values", "none"] = "values"
    source: str = Field("<scenario>", exclude=True)
    base_dir: Path | None = Field(None, exclude=True)

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str) -> str:
        if value not in ALGORITHMS:
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
        return topo

    @cached_property
    def topology_shape(self) -> TopologyShape:
        """The topology's axes and links (with the link overrides), without building its graph."""
        if isinstance(self.topology, TopologySpec):
            spec, source, field, stem = self.topology, self.source, "topology", self.name
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
        if self.link is not None:
            bandwidth = self.link.bandwidth if self.link.bandwidth is not None else shape.bandwidth_Bps
            latency = self.link.latency if self.link.latency is not None else shape.latency_s
            shape = TopologyShape(shape.name, shape.dims, shape.wraparound, bandwidth, latency)
        return shape

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
    def shape(self) -> tuple[int, ...]:
        """Per-device input shape."""
        if self.input.shape is not None:
            return tuple(self.input.shape)
        count = self.input.bytes_per_device // np.dtype(self.input.dtype).itemsize
        spec = self.collective
        if isinstance(spec, PsumScatterSpec) and not spec.tiled:
            return (self._group_size, count // self._group_size)
        return (count,)

    @property
    def _group_size(self) -> int:
        groups = self.collective.axis_index_groups
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
            return AllGatherLayout.check(proxy, spec.axis, spec.tiled, spec.axis_index_groups)
        if isinstance(spec, PsumScatterSpec):
            return ReduceScatterLayout.check(proxy, spec.scatter_dimension, spec.tiled, spec.axis_index_groups)
        return AllReduceLayout.check(proxy, spec.axis_index_groups)


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

    Raises
    ------
    ScenarioError
        If there is no such topology, or the file is malformed.

    Examples
    --------
    >>> load_topology("torus4x4").dims
    (4, 4)
    """
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


def _read_yaml(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(str(path), "", "no such file") from None
    except UnicodeDecodeError:
        raise ScenarioError(str(path), "", "not a text file (expected UTF-8 YAML)") from None
    except OSError as error:
        raise ScenarioError(str(path), "", f"cannot read: {error.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(str(path), "", f"invalid YAML{where}: {error.problem}") from None
    except (yaml.YAMLError, RecursionError) as error:
        raise ScenarioError(str(path), "", f"invalid YAML: {type(error).__name__}") from None


_UNION_TAGS = {"all_gather", "psum_scatter", "psum"}


def _validate(model: type[BaseModel], data: Any, source: str, extra: dict[str, Any] | None = None) -> Any:
    if not isinstance(data, dict):
        raise ScenarioError(source, "", f"expected a mapping of fields at the top level, got {type(data).__name__}")
    try:
        return model.model_validate({**data, **(extra or {})})
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        loc = [str(p) for p in first["loc"] if p not in _UNION_TAGS and not str(p).startswith(("function-", "list[", "int", "str", "bool"))]
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("op")
            message = "expected one of all_gather, psum_scatter, psum"
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


def _short(value: Any) -> str:
    text = repr(value)
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
            model = {"all_gather": AllGatherSpec, "psum_scatter": PsumScatterSpec, "psum": PsumSpec}.get(op)
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
)


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
    if topology.n_devices > 1 << 16:
        raise ScenarioError(source, "topology", f"{topology.n_devices} devices is more than netsim simulates (65536)")
    if build_topology:
        scenario.topology_obj  # noqa: B018  (builds the graph now)
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
        spec = scenario.collective
        if isinstance(spec, PsumScatterSpec) and not spec.tiled and count % scenario._group_size:
            raise ScenarioError(
                source,
                "input.bytes_per_device",
                f"{count} elements do not split into {scenario._group_size} equal blocks; pick a multiple of {scenario._group_size * itemsize} bytes",
            )
    try:
        scenario.layout()
    except ValueError as error:
        message = str(error).replace("input has", "topology has room for")
        field = next((f for prefix, f in _ARGUMENT_FIELDS if message.startswith(prefix)), "input.shape")
        raise ScenarioError(source, field, message) from None
    return scenario
