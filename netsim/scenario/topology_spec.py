"""Topology files and inline topologies: their model, their shape, and finding them by name."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from netsim.network import units
from netsim.network.calibration import NOMINAL, Calibration
from netsim.network.chiplets import DEVICES_PER_CHIP, chip_torus
from netsim.network.presets import is_slice_name, slice_hint, tpu_slice
from netsim.network.topology import DEFAULT_BANDWIDTH_BPS, DEFAULT_LATENCY_S, Topology, torus
from netsim.scenario.errors import ScenarioError, clipped
from netsim.scenario.fields import Bandwidth, Bytes, Duration, Flops, Strict
from netsim.scenario.suggestions import did_you_mean
from netsim.scenario.yaml_files import read_yaml, validate


def _package_root() -> Path:
    """The ``netsim`` package's folder (this module lives in ``netsim/scenario/``)."""
    return Path(__file__).resolve().parent.parent


TOPOLOGY_DIRS = (_package_root().parent / "topologies", _package_root() / "topologies")
"""Where named topologies are looked up: the project's ``topologies/`` (editable
installs) and the copy shipped inside the package (wheels)."""


class LinkSpec(Strict):
    """Link parameters: one-way bandwidth per direction and per-hop latency."""

    bandwidth: Bandwidth | None = None
    latency: Duration | None = None


class CalibrationSpec(Strict):
    """Measured terms a topology offers to ``calibration: calibrated`` runs (:mod:`netsim.network.calibration`).

    Examples
    --------
    >>> CalibrationSpec(link_efficiency=0.95, collective_overhead="2 us").values().collective_overhead_s
    2e-06
    """

    link_efficiency: Annotated[float, Field(gt=0, le=1)] = 1.0
    collective_overhead: Duration = 0.0
    compute_efficiency: Annotated[float, Field(gt=0, le=1)] = 1.0
    source: str = "the topology file"
    derived_from: list[str] = Field(default_factory=list)

    def values(self) -> Calibration:
        """The terms as :class:`~netsim.network.calibration.Calibration`."""
        return Calibration(self.link_efficiency, self.collective_overhead, self.compute_efficiency, self.source, tuple(self.derived_from))


class DeviceSpec(Strict):
    """A chip's compute facts, each optional: peak FLOP/s, HBM bandwidth and HBM capacity.

    Examples
    --------
    >>> DeviceSpec(peak_flops="197 TFLOP/s", hbm_capacity="16 GB").facts()
    {'peak_flops': 197000000000000.0, 'hbm_bandwidth_Bps': None, 'hbm_capacity_bytes': 16000000000}
    """

    peak_flops: Flops | None = None
    hbm_bandwidth: Bandwidth | None = None
    hbm_capacity: Bytes | None = None

    def facts(self) -> dict[str, float | int | None]:
        """The facts keyed as :meth:`Topology.device <netsim.network.topology.Topology.device>` gives them."""
        return {"peak_flops": self.peak_flops, "hbm_bandwidth_Bps": self.hbm_bandwidth, "hbm_capacity_bytes": self.hbm_capacity}


@dataclass(frozen=True)
class TopologyShape:
    """A topology's axes, links and chip facts without its graph: enough for closed-form estimates of any size.

    Examples
    --------
    >>> TopologyShape("pod", (16, 16, 16), (True, True, True), 45e9, 1e-6).n_devices
    4096

    With two devices per chip (TPU7x) ``dims`` and ``wraparound`` are the devices'
    grid, the chips' axes and then the core axis, and the ``chip_link_*`` fields the
    link between a chip's two devices:

    >>> TopologyShape("tpu7x:4x4x4", (4, 4, 4, 2), (True,) * 3 + (False,), 45e9, 1e-6, chip_link_bandwidth_Bps=90e9, chip_link_latency_s=1e-6).n_devices
    128
    """

    name: str
    dims: tuple[int, ...]
    wraparound: tuple[bool, ...]
    bandwidth_Bps: float
    latency_s: float
    peak_flops: float | None = None
    hbm_bandwidth_Bps: float | None = None
    hbm_capacity_bytes: int | None = None
    chip_link_bandwidth_Bps: float | None = None
    chip_link_latency_s: float | None = None
    slices: int = 1
    """Slices joined by the DCN (``tpu-v5e:4x4x2slices``); then ``dims[0]`` is the slice axis."""
    link_efficiency: float = 1.0
    collective_overhead_s: float = 0.0
    compute_efficiency: float = 1.0
    calibration_terms: str = "none"
    """Whose terms are in force: ``measured``, ``borrowed from GENERATION`` or ``none``."""

    def calibrated(self, values: Calibration) -> TopologyShape:
        """A copy whose calibration in force is ``values`` (:data:`~netsim.network.calibration.NOMINAL`: none)."""
        return replace(
            self,
            link_efficiency=values.link_efficiency,
            collective_overhead_s=values.collective_overhead_s,
            compute_efficiency=values.compute_efficiency,
            calibration_terms=values.label,
        )

    @property
    def chip_axis(self) -> int | None:
        """The core axis (the last) when each chip shows two devices, else None."""
        return len(self.dims) - 1 if self.chip_link_bandwidth_Bps is not None else None

    @property
    def n_devices(self) -> int:
        """Number of devices."""
        return math.prod(self.dims)

    @property
    def device(self) -> dict[str, float | int | None]:
        """Every device's compute facts, None where unknown (as :meth:`Topology.device <netsim.network.topology.Topology.device>`)."""
        return {"peak_flops": self.peak_flops, "hbm_bandwidth_Bps": self.hbm_bandwidth_Bps, "hbm_capacity_bytes": self.hbm_capacity_bytes}

    def with_device(self, device: dict[str, float | int | None]) -> TopologyShape:
        """A copy with the given compute facts; fields left out or None keep their value."""
        return replace(self, **{field: value for field, value in device.items() if value is not None})

    def as_spec(self) -> dict[str, Any]:
        """The topology as an inline scenario mapping (``kind: torus`` covers rings and meshes)."""
        chips = slice(None, self.chip_axis)
        spec = {
            "name": self.name,
            "kind": "torus",
            "dims": list(self.dims[chips]),
            "wraparound": list(self.wraparound[chips]),
            **({"cables": 2} if any(d == 2 and w for d, w in zip(self.dims, self.wraparound, strict=True)) else {}),
            "link": _link_spec(self.bandwidth_Bps, self.latency_s),
        }
        if self.chip_axis is not None:
            spec["devices_per_chip"] = DEVICES_PER_CHIP
            spec["chip_link"] = _link_spec(self.chip_link_bandwidth_Bps, self.chip_link_latency_s)
        device = {
            "peak_flops": None if self.peak_flops is None else _human(self.peak_flops, units.parse_flops, ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("FLOP/s", 1.0)),
            "hbm_bandwidth": None if self.hbm_bandwidth_Bps is None else _human(self.hbm_bandwidth_Bps, units.parse_bandwidth, ("GB/s", 1e9), ("B/s", 1.0)),
            "hbm_capacity": None
            if self.hbm_capacity_bytes is None
            else _human(self.hbm_capacity_bytes, units.parse_bytes, ("GiB", 2**30), ("GB", 1e9), ("B", 1)),
        }
        if any(value is not None for value in device.values()):
            spec["device"] = {field: value for field, value in device.items() if value is not None}
        if (self.link_efficiency, self.collective_overhead_s, self.compute_efficiency) != (1.0, 0.0, 1.0):  # the terms in force
            overhead = _human(self.collective_overhead_s, units.parse_duration, ("us", 1e-6), ("ns", 1e-9), ("s", 1.0))
            terms = {"link_efficiency": self.link_efficiency, "collective_overhead": overhead, "compute_efficiency": self.compute_efficiency}
            spec["calibration"] = {**terms, "source": "as run"}
        return spec


def _link_spec(bandwidth_Bps: float, latency_s: float) -> dict[str, str]:
    return {"bandwidth": _human(bandwidth_Bps, units.parse_bandwidth, ("GB/s", 1e9), ("MB/s", 1e6), ("B/s", 1.0)), "latency": written_duration(latency_s)}


def written_duration(seconds: float) -> str:
    """A duration as a file writes it, with a unit, reading back to exactly ``seconds``.

    Examples
    --------
    >>> written_duration(1e-6), written_duration(2.5e-3), written_duration(1.0000000000001e-6)
    ('1 us', '2500 us', '1.0000000000001e-06 s')
    """
    return _human(seconds, units.parse_duration, ("us", 1e-6), ("ns", 1e-9), ("ms", 1e-3), ("s", 1.0))


def _human(value: float, parse: Any, *candidates: tuple[str, float]) -> str:
    """``value`` written with the first unit that reads back exactly; the last candidate (the base unit) with every digit."""
    for unit, scale in candidates:
        text = f"{value / scale:.12g} {unit}"
        try:
            if parse(text) == value:
                return text
        except ValueError:
            continue
    return f"{value!r} {candidates[-1][0]}"


class TopologySpec(Strict):
    """A ring, torus or mesh, as written in a topology file or inline in a scenario."""

    name: str | None = None
    description: str | None = None
    kind: Literal["ring", "torus", "mesh"]
    dims: list[Annotated[int, Field(ge=1, le=1 << 16)]] = Field(min_length=1, max_length=3)
    wraparound: bool | list[bool] = True
    cables: Literal[1, 2] = 1
    """Links between the two chips of an axis of 2 that wraps: one cable (each way) unless the file says 2."""
    link: LinkSpec = LinkSpec()
    devices_per_chip: Literal[1, 2] = 1
    """2: each chip shows two devices joined on the chip (TPU7x); ``dims`` count chips and ``link`` is one core's lane."""
    chip_link: LinkSpec | None = None
    """The link between a chip's two devices; left out, as ``link``."""
    device: DeviceSpec | None = None
    calibration: CalibrationSpec | None = None
    """Measured terms (a fixed cost per collective, link and compute efficiency) that ``calibration: calibrated`` runs apply."""

    def offered(self) -> Calibration:
        """The measured terms the file offers (none: :data:`~netsim.network.calibration.NOMINAL`)."""
        return self.calibration.values() if self.calibration is not None else NOMINAL

    def build(self, default_name: str) -> Topology:
        s = self.shape(default_name)
        if s.chip_axis is not None:
            chips = s.dims[: s.chip_axis], s.wraparound[: s.chip_axis]
            topology = chip_torus(*chips, s.bandwidth_Bps, s.chip_link_bandwidth_Bps, s.latency_s, s.chip_link_latency_s, name=s.name, device=s.device)
        else:
            topology = torus(s.dims, s.wraparound, s.bandwidth_Bps, s.latency_s, name=s.name, device=s.device)
        if self.calibration is not None:
            topology.graph.graph["calibration_offered"] = self.offered()
        return topology

    def shape(self, default_name: str) -> TopologyShape:
        """The checked axes and links, without building the graph."""
        if math.prod(self.dims) * self.devices_per_chip > MAX_DEVICES:
            raise ValueError(f"{math.prod(self.dims) * self.devices_per_chip} devices is more than netsim simulates ({MAX_DEVICES})")
        if self.chip_link is not None and self.devices_per_chip == 1:
            raise ValueError("chip_link joins the two devices of a chip; give devices_per_chip: 2 or leave chip_link out")
        if self.kind == "ring" and len(self.dims) != 1:
            raise ValueError(f"a ring has one axis; got dims {self.dims}")
        if self.kind == "mesh" and self.wraparound not in (False, True) and any(self.wraparound):
            raise ValueError("a mesh has no wraparound; use kind: torus for wrapped axes")
        wraps = False if self.kind == "mesh" else self.wraparound
        if isinstance(wraps, list) and len(wraps) != len(self.dims):
            raise ValueError(f"wraparound has {len(wraps)} flags for {len(self.dims)} axes")
        flags = tuple(wraps) if isinstance(wraps, list) else (wraps,) * len(self.dims)
        if self.cables == 2 and not any(d == 2 and w for d, w in zip(self.dims, flags, strict=True)):
            raise ValueError("cables: 2 joins the two chips of a wrapped axis of 2; this topology has no such axis")
        bandwidth = self.link.bandwidth if self.link.bandwidth is not None else DEFAULT_BANDWIDTH_BPS
        latency = self.link.latency if self.link.latency is not None else DEFAULT_LATENCY_S
        wraps = tuple(w and (d != 2 or self.cables == 2) for d, w in zip(self.dims, flags, strict=True))
        shape = TopologyShape(self.name or default_name, tuple(self.dims), wraps, bandwidth, latency)
        if self.devices_per_chip == 2:
            chip = self.chip_link or LinkSpec()
            shape = replace(
                shape,
                dims=(*shape.dims, DEVICES_PER_CHIP),
                wraparound=(*wraps, False),
                chip_link_bandwidth_Bps=chip.bandwidth if chip.bandwidth is not None else bandwidth,
                chip_link_latency_s=chip.latency if chip.latency is not None else latency,
            )
        return shape if self.device is None else shape.with_device(self.device.facts())


MAX_DEVICES = 1 << 16
"""The most devices a topology may have."""


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


def find_topology(name: str, base_dir: Path | None) -> Path:
    """The file a topology name means: a path relative to ``base_dir`` (the folder of the
    file that names it; the current folder without one), else a bundled topology.

    Parameters
    ----------
    name : str
        A path, or the name of a file in ``topologies/`` (with or without ``.yaml``).
    base_dir : pathlib.Path or None

    Returns
    -------
    pathlib.Path

    Raises
    ------
    FileNotFoundError
        If no such file exists.

    Examples
    --------
    >>> find_topology("torus4x4", None).name
    'torus4x4.yaml'
    """
    candidates = [base_dir / name if base_dir is not None else Path(name)]
    stem = name[:-5] if name.endswith(".yaml") else name
    candidates += [d / f"{stem}.yaml" for d in TOPOLOGY_DIRS]
    for path in candidates:
        try:
            if path.is_file():
                return path
        except (OSError, ValueError):  # a name too long for the file system, or with a NUL byte
            continue
    raise FileNotFoundError(name)


def load_topology(name: str | Path, *, base_dir: Path | None = None) -> Topology:
    """Read a topology file, by name (from ``topologies/``) or by path.

    A name ``GENERATION:SHAPE`` such as ``tpu-v5e:8x16`` is a TPU slice
    (:mod:`netsim.network.presets`), built without a file.

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
        path = find_topology(str(name), base_dir)
    except FileNotFoundError:
        hint = slice_hint(str(name)) or did_you_mean(str(name), topology_names(), other_sizes=False)
        problem = f"no topology file {clipped(str(name))!r}{hint or ';'} bundled ones are: {', '.join(topology_names())}"
        raise ScenarioError(str(name), "topology", problem) from None
    data = read_yaml(path)
    spec = validate(TopologySpec, data, str(path))
    return build_topology(spec, str(path), "", path.stem)


def build_topology(spec: TopologySpec, source: str, field: str, default_name: str) -> Topology:
    """The topology a validated ``topology:`` mapping describes; a bad one is a :class:`ScenarioError` naming ``source`` and ``field``.

    Examples
    --------
    >>> spec = validate(TopologySpec, {"kind": "ring", "dims": [4]}, "t.yaml")
    >>> build_topology(spec, "t.yaml", "topology", "t").n_devices
    4
    """
    try:
        return spec.build(default_name)
    except ValueError as error:
        raise ScenarioError(source, field or "dims", str(error)) from None
