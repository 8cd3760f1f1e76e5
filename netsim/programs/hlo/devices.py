"""The device map beside an HLO module: which chip each device id of the module runs on.

A module names devices by id (positions in ``mesh.devices.flat`` of the mesh it was
compiled for). Where they sit on the slice is not in the module, so
:func:`netsim.programs.hlo.export` writes it beside the text, as ``NAME.devices.json``::

    {"devices": [{"id": 0, "coords": [0, 0, 0], "core_on_chip": 0}, ...],
     "mesh": {"x": 2, "y": 4}}

``coords`` are the chip's coordinates on the slice as JAX gives them for TPU devices
(``null`` for devices without a place, such as CPU devices); ``core_on_chip`` the device's
core (TPU7x chips show two devices); ``mesh`` is the mesh's axis names and sizes,
row-major over the ids; ``compiler`` (optional) says what compiled the module, e.g.
``{"platform": "tpu", "libtpu": "0.0.42.1", "jax": "0.10.2", "topology": "v5e:4x4"}``.
Without a device map, on a TPU slice, id ``i`` runs where the TPU's own device order puts
it (:func:`netsim.network.device_order.tpu_device_order`: hosts of 2x2 chips, x first);
with devices without coordinates (CPU devices) or on another topology, id ``i`` runs on
the slice's chip ``i`` in row-major order.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from netsim.network.device_order import tpu_device_order
from netsim.network.presets import GENERATIONS, is_slice_name, parse_slice
from netsim.network.slices import split_slices_name
from netsim.scenario.errors import ScenarioError

__all__ = ["CPU_CAVEAT", "DeviceMap", "default_device_map", "device_map_from_data", "load_device_map", "sidecar_path"]

MAX_SIDECAR_BYTES = 16 * 2**20

CPU_CAVEAT = "XLA's CPU compiler (CPU-compiled: dtypes as it left them, no async overlap, no compiler algorithms)"
"""What a module compiled by XLA's CPU compiler lacks next to the TPU's, said in the result and the table."""


@dataclass(frozen=True)
class DeviceMap:
    """Where each device id of a module runs, and the mesh it was compiled for.

    Attributes
    ----------
    coords : tuple of (tuple of int or None)
        Per device id, its chip's coordinates (None: not known).
    cores : tuple of int
        Per device id, its core on the chip.
    mesh : dict of str to int
        The mesh's axes (empty when not known).
    source : str
        The file it was read from, ``"row-major"``, or the TPU's own order it follows.
    compiler : dict of str to str
        What compiled the module, when its device map says (``platform``, ``libtpu``, ...).
    slices : tuple of int
        Per device id, the slice it is on (JAX's ``slice_index``) when the module runs on
        several slices; empty: ids fill the slices in order, one slice's chips after another's.
    """

    coords: tuple[tuple[int, ...] | None, ...]
    cores: tuple[int, ...]
    mesh: dict[str, int]
    source: str
    compiler: dict[str, str] = field(default_factory=dict)
    slices: tuple[int, ...] = ()

    @property
    def row_major(self) -> bool:
        """Whether ids are laid row-major over the slice (no coordinates known)."""
        return all(c is None for c in self.coords)

    def nodes(self, topology_dims: tuple[int, ...], n_nodes: int, n_slices: int = 1) -> list[int]:
        """Per device id, the topology node it runs on: the row-major index of its coordinates (in its slice, after the slices before it).

        ``topology_dims`` of a topology of ``n_slices > 1`` slices starts with the slices
        (:mod:`netsim.network.slices`); the coordinates are then those in one slice.

        Raises
        ------
        ValueError
            If the ids do not fit the slice, two ids share a chip, or coordinates fall outside it.

        Examples
        --------
        >>> DeviceMap(((1, 0, 0), (0, 0, 0)), (0, 0), {}, "m.devices.json").nodes((2, 1), 2)
        [1, 0]
        >>> DeviceMap(((1, 0), (0, 0), (1, 0), (0, 0)), (0,) * 4, {}, "m.devices.json").nodes((2, 2, 1), 4, n_slices=2)
        [1, 0, 3, 2]
        """
        n = len(self.coords)
        if n != n_nodes:
            raise ValueError(f"{self.source}: the module runs on {n} devices but the topology has {n_nodes} chips; simulate it on a slice of {n} chips")
        if self.row_major:
            return list(range(n))
        if any(c is None for c in self.coords):
            raise ValueError(f"{self.source}: some devices have coordinates and some do not; give all or none")
        dims = topology_dims[1:] if n_slices > 1 else topology_dims
        per_slice = n // n_slices
        slices = self.slices or tuple(device // per_slice for device in range(n))
        if any(not 0 <= s < n_slices for s in slices):
            bad = next(s for s in slices if not 0 <= s < n_slices)
            raise ValueError(f"{self.source}: a device on slice {bad}, but the topology has {n_slices} slice(s)")
        cores_axis = any(self.cores) and all(c is not None and len(c) < len(dims) for c in self.coords)
        if any(self.cores) and not cores_axis:
            raise ValueError(f"{self.source}: devices on a second core of a chip (core_on_chip > 0) need a slice with two devices per chip (tpu7x)")
        written_for = f" (it was written for {self.compiler['topology']})" if self.compiler.get("topology") else ""
        nodes = []
        for device, coord in enumerate(self.coords):
            assert coord is not None
            if cores_axis:  # the chip's coordinates, then its core: the last axis of a two-device-per-chip slice
                coord = (*coord, *[0] * (len(dims) - 1 - len(coord)), self.cores[device])
            extra = coord[len(dims) :]
            place = coord[: len(dims)]
            if any(extra) or len(place) != len(dims) or any(not 0 <= c < d for c, d in zip(place, dims, strict=True)):
                where = f"a slice {'x'.join(map(str, dims))} of {n_slices}" if n_slices > 1 else f"the slice {'x'.join(map(str, dims))}"
                raise ValueError(f"{self.source}: device {device} at {list(coord)} is outside {where}{written_for}")
            nodes.append(slices[device] * per_slice + sum(c * math.prod(dims[i + 1 :]) for i, c in enumerate(place)))
        if len(set(nodes)) != n:
            raise ValueError(f"{self.source}: two devices have the same coordinates" + (" and slice" if n_slices > 1 else ""))
        return nodes


def sidecar_path(hlo_path: str | Path) -> Path:
    """Where the device map of the module at ``hlo_path`` lives: ``NAME.devices.json`` beside it.

    Examples
    --------
    >>> sidecar_path("runs/step.txt").as_posix(), sidecar_path("runs/16b.txt.gz").as_posix()
    ('runs/step.devices.json', 'runs/16b.devices.json')
    """
    path = Path(hlo_path)
    name = path.name.removesuffix(".gz")
    return path.with_name(name.rsplit(".", 1)[0] + ".devices.json" if "." in name else name + ".devices.json")


def default_device_map(n_devices: int, topology_name: str = "") -> DeviceMap:
    """Where ids run without a device map: the TPU's own order on a TPU slice of that many devices, else row-major.

    Examples
    --------
    >>> m = default_device_map(16, "tpu-v5e:4x4")
    >>> m.coords[:4], m.source
    (((0, 0), (1, 0), (0, 1), (1, 1)), "the TPU's own device order for tpu-v5e:4x4 (hosts of 2x2 chips, x first)")
    >>> default_device_map(8, "ring8").row_major
    True
    >>> default_device_map(4, "tpu-v5e:2x2x2slices").coords  # one slice's module on several slices: the slice's own order
    ((0, 0), (1, 0), (0, 1), (1, 1))
    """
    several = split_slices_name(topology_name) if is_slice_name(topology_name) else None
    one, n_slices = several or (topology_name, 1)
    if is_slice_name(one) and one.partition(":")[0] in GENERATIONS:
        generation, dims = parse_slice(one)
        order = tpu_device_order(dims, generation.devices_per_chip)
        if len(order) == n_devices:  # one slice's module (compiled for one, or for several and played on each): that slice's order
            n_slices = 1
        order = order * n_slices
        if len(order) == n_devices:
            slices = tuple(i // (n_devices // n_slices) for i in range(n_devices)) if n_slices > 1 else ()
            each = " in each slice, one slice after another" if n_slices > 1 else ""
            source = f"the TPU's own device order for {topology_name} (hosts of 2x2 chips, x first{each})"
            return DeviceMap(tuple(c for c, _ in order), tuple(core for _, core in order), {}, source, slices=slices)
    return DeviceMap((None,) * n_devices, (0,) * n_devices, {}, "row-major")


def load_device_map(hlo_path: str | Path, n_devices: int, topology_name: str = "") -> DeviceMap:
    """The device map beside the module at ``hlo_path``, or :func:`default_device_map` when there is none.

    Raises
    ------
    ScenarioError
        If the file is there but malformed, naming the field.

    Examples
    --------
    >>> placed = load_device_map("scenarios/programs/hlo/psum.txt", 8)
    >>> placed.mesh, placed.row_major
    ({'x': 2, 'y': 4}, True)
    """
    path = sidecar_path(hlo_path)
    if not path.is_file():
        return default_device_map(n_devices, topology_name)
    source = str(path)
    if path.stat().st_size > MAX_SIDECAR_BYTES:
        raise ScenarioError(source, "", f"larger than {MAX_SIDECAR_BYTES // 2**20} MiB")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ScenarioError(source, "", f"not JSON ({error})") from None
    return device_map_from_data(data, n_devices, source)


def device_map_from_data(data: Any, n_devices: int, source: str = "<device map>") -> DeviceMap:
    """A device map given as the mapping its file holds (``{"devices": [...], "mesh": {...}}``).

    Examples
    --------
    >>> m = device_map_from_data({"devices": [{"id": 1, "coords": [1, 0]}, {"id": 0, "coords": [0, 0]}], "mesh": {"x": 2}}, 2)
    >>> m.coords, m.mesh
    (((0, 0), (1, 0)), {'x': 2})
    >>> device_map_from_data({"devices": [{"id": 0}]}, 2, "d.json")
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: d.json: devices: must list ids 0..1 once each (the module has 2 devices), got 1 ids
    """
    if not isinstance(data, dict) or not isinstance(data.get("devices"), list):
        raise ScenarioError(source, "devices", 'expected {"devices": [{"id": 0, "coords": [0, 0, 0], "core_on_chip": 0}, ...]}')
    unknown = set(data) - {"devices", "mesh", "compiler"}
    if unknown:
        raise ScenarioError(source, sorted(unknown)[0], "unknown key; expected devices, mesh and compiler")
    compiler = data.get("compiler", {})
    if not isinstance(compiler, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in compiler.items()):
        raise ScenarioError(source, "compiler", f'expected names and versions such as {{"platform": "tpu", "libtpu": "0.0.42.1"}}, got {compiler!r}')
    coords: dict[int, tuple[int, ...] | None] = {}
    cores: dict[int, int] = {}
    slices: dict[int, int] = {}
    platforms: set[object] = set()
    for i, entry in enumerate(data["devices"]):
        where = f"devices[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), int) or isinstance(entry.get("id"), bool):
            raise ScenarioError(source, where, 'expected {"id": <int>, "coords": [x, y, z] or null, "core_on_chip": <int>}')
        device = entry["id"]
        if device in coords:
            raise ScenarioError(source, f"{where}.id", f"device {device} is listed twice")
        value = entry.get("coords")
        if value is not None and (not isinstance(value, list) or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value)):
            raise ScenarioError(source, f"{where}.coords", f"expected a list of non-negative ints or null, got {value!r}")
        core = entry.get("core_on_chip", 0)
        if not isinstance(core, int) or isinstance(core, bool) or core < 0:
            raise ScenarioError(source, f"{where}.core_on_chip", f"expected a non-negative int, got {core!r}")
        if "slice_index" in entry:
            index = entry["slice_index"]
            if not isinstance(index, int) or isinstance(index, bool) or index < 0:
                raise ScenarioError(source, f"{where}.slice_index", f"expected the slice the device is on, a non-negative int, got {index!r}")
            slices[device] = index
        platforms.add(entry.get("platform"))
        coords[device] = tuple(value) if value is not None else None
        cores[device] = core
    if sorted(coords) != list(range(n_devices)):
        raise ScenarioError(source, "devices", f"must list ids 0..{n_devices - 1} once each (the module has {n_devices} devices), got {len(coords)} ids")
    mesh = data.get("mesh", {})
    if not isinstance(mesh, dict) or not all(isinstance(k, str) and isinstance(v, int) and v > 0 for k, v in mesh.items()):
        raise ScenarioError(source, "mesh", f"expected axis names and sizes such as {{'x': 2, 'y': 4}}, got {mesh!r}")
    if mesh and math.prod(mesh.values()) != n_devices:
        raise ScenarioError(source, "mesh", f"the axes {mesh} make {math.prod(mesh.values())} devices, the module has {n_devices}")
    if not compiler and platforms == {"cpu"}:  # written by export() from a mesh of CPU devices
        compiler = {"platform": "cpu"}
    if slices and len(slices) != n_devices:
        raise ScenarioError(source, "devices", f"slice_index is given for {len(slices)} of the {n_devices} devices; give it for all or none")
    in_slices = tuple(slices[i] for i in range(n_devices)) if slices else ()
    return DeviceMap(tuple(coords[i] for i in range(n_devices)), tuple(cores[i] for i in range(n_devices)), dict(mesh), source, dict(compiler), in_slices)
