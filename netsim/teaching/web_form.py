"""What the teaching page may ask for: its choices, and a request turned into a checked scenario.

A request is a small mapping of the page's fields (``topology``, ``n``, ``dims``,
``preset``, ``op``, ``algorithm``, ``bytes``, ``axes``, ``calibration``). :func:`scenario_of`
reads each field strictly (type, range, a listed choice), writes the scenario a file
would hold, and validates it with :func:`netsim.scenario.loading.scenario_from_data`,
exactly as ``netsim run`` validates a file: the same one-line errors, naming ``page`` as
the file. :func:`check_limits` then refuses, before anything runs, a run bigger than the
page serves (devices, transfers, link crossings), saying what to use instead.

Examples
--------
>>> s = scenario_of({"topology": "torus", "dims": "4x4", "op": "psum", "bytes": 65536})
>>> s.topology_obj.n_devices, s.collective.op, s.groups[0][:4]
(16, 'psum', (0, 1, 2, 3))
>>> scenario_of({"topology": "ring", "n": 8, "op": "psum", "bytes": -5})
Traceback (most recent call last):
...
netsim.scenario.ScenarioError: page: input.bytes_per_device: -5 is not a size from 1 KiB to 1 GiB (1024 to 1073741824 bytes)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from netsim.algorithms.registry import ALGORITHMS
from netsim.checks.memory import mean_hops, pieces_of, transfers_of
from netsim.scenario.errors import ScenarioError
from netsim.scenario.loading import scenario_from_data
from netsim.scenario.models import Scenario
from netsim.semantics.patterns import PATTERNS

__all__ = ["LIMITS", "MAX_BYTES", "MIN_BYTES", "OPS", "PRESETS", "SLICES", "applicable", "check_limits", "options", "scenario_data", "scenario_of", "work_of"]

SOURCE = "page"
"""What errors name as the file."""

MIN_BYTES, MAX_BYTES = 1024, 1 << 30
OPS = ("all_gather", "psum_scatter", "psum", "all_to_all", "ppermute")
PRESETS = ("tpu-v5e:4x4", "tpu-v5e:8x8", "tpu-v4:4x4x4", "tpu-v5p:4x4x4", "tpu-v3:4x4", "tpu-v5e:16x16")
SLICES = ("tpu-v5e:2x2x2slices", "tpu-v5e:4x4x2slices", "tpu-v4:4x4x4x2slices")
TOPOLOGIES = ("ring", "torus", "mesh", "tpu", "slices")
LIMITS = {"devices": 256, "transfers": 40_000, "crossings": 120_000}
"""The most a page's run may have: devices, transfers, and transfers x links each crosses (the engine's work)."""
VERIFIED_BYTES = 4 << 20
"""Up to this many input bytes in all, a page's run moves real values and checks them against JAX's semantics; beyond, timing only."""
_KNOWN_FIELDS = ("topology", "n", "dims", "preset", "slices", "op", "algorithm", "bytes", "axes", "calibration")
_AXIS_NAMES = ("x", "y", "z")
_MULTIPATH = "ppermute: a pair's payload over disjoint routes, at once"


def _fail(field: str, problem: str) -> ScenarioError:
    return ScenarioError(SOURCE, field, problem)


def _choice(params: Mapping[str, Any], name: str, choices: tuple[str, ...], default: str, field: str) -> str:
    value = params.get(name, default)
    if not isinstance(value, str) or value not in choices:
        return_text = repr(value)[:40]
        raise _fail(field, f"{return_text} is not one of {', '.join(choices)}")
    return value


def _integer(params: Mapping[str, Any], name: str, low: int, high: int, default: int, field: str, what: str) -> int:
    value = params.get(name, default)
    if isinstance(value, str) and value.strip().isdigit() and len(value) < 12:
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(field, f"{repr(value)[:40]} is not {what}")
    return value


def _dims(params: Mapping[str, Any]) -> list[int]:
    text = params.get("dims", "4x4")
    parts = text.lower().split("x") if isinstance(text, str) and len(text) <= 20 else []
    if not 1 <= len(parts) <= 3 or not all(p.isdigit() and 2 <= int(p) <= 16 for p in parts):
        raise _fail("topology.dims", f"{repr(text)[:40]} is not 1 to 3 axes of 2 to 16 devices, e.g. 4x4 or 4x4x4")
    return [int(p) for p in parts]


def _topology(params: Mapping[str, Any]) -> tuple[Any, dict[str, int]]:
    """The scenario's topology field and the mesh the page names its axes by (x, y, z; dcn first across slices)."""
    kind = _choice(params, "topology", TOPOLOGIES, "torus", "topology")
    if kind == "ring":
        n = _integer(params, "n", 2, 64, 8, "topology.dims", "a ring of 2 to 64 devices")
        return {"name": f"ring{n}", "kind": "ring", "dims": [n], "link": {"bandwidth": "45 GB/s", "latency": "1 us"}}, {"x": n}
    if kind in ("torus", "mesh"):
        dims = _dims(params)
        spec = {"name": kind + "x".join(map(str, dims)), "kind": kind, "dims": dims, "link": {"bandwidth": "45 GB/s", "latency": "1 us"}}
        return spec, dict(zip(_AXIS_NAMES, dims, strict=False))
    if kind == "tpu":
        name = _choice(params, "preset", PRESETS, PRESETS[0], "topology")
        dims = [int(d) for d in name.split(":")[1].split("x")]
        return name, dict(zip(_AXIS_NAMES, dims, strict=False))
    name = _choice(params, "slices", SLICES, SLICES[0], "topology")
    parts = name.split(":")[1].split("x")
    dims = [int(d) for d in parts[:-1]]
    return name, {"dcn": int(parts[-1].removesuffix("slices")), **dict(zip(_AXIS_NAMES, dims, strict=False))}


def _axes(params: Mapping[str, Any], mesh: dict[str, int]) -> list[str]:
    axes = params.get("axes", list(mesh))
    if isinstance(axes, str):
        axes = [a for a in axes.split(",") if a]
    if not isinstance(axes, list) or not axes or len(axes) > 4 or not all(isinstance(a, str) and a in mesh for a in axes) or len(set(axes)) != len(axes):
        raise _fail("collective.axes", f"{repr(axes)[:60]} is not one or more of the mesh's axes {', '.join(mesh)}, each once")
    return [a for a in mesh if a in axes]  # in the mesh's order


def _shift(mesh: dict[str, int], axes: list[str]) -> list[list[int]]:
    """ppermute pairs: every device to the next member of its group over ``axes`` (devices numbered row-major over the mesh).

    Examples
    --------
    >>> _shift({"x": 2, "y": 3}, ["y"])
    [[0, 1], [1, 2], [2, 0], [3, 4], [4, 5], [5, 3]]
    """
    import numpy as np

    ids = np.arange(math.prod(mesh.values())).reshape(tuple(mesh.values()))
    groups = math.prod(mesh[a] for a in axes)
    moved = np.moveaxis(ids, [list(mesh).index(a) for a in axes], range(len(mesh) - len(axes), len(mesh))).reshape(-1, groups)
    return [[int(a), int(b)] for row in moved for a, b in zip(row, np.roll(row, -1), strict=True)] if groups > 1 else [[int(d), int(d)] for d in ids.flat]


def scenario_data(params: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario a request describes, as a scenario file would hold it (not yet validated).

    Raises
    ------
    ScenarioError
        For a field of the wrong type, out of range or not among the choices.
    """
    if not isinstance(params, Mapping):
        raise _fail("", "the request must be a JSON object of the page's fields")
    unknown = [str(k)[:30] for k in params if k not in _KNOWN_FIELDS]
    if unknown:
        raise _fail(unknown[0], f"unknown field; the page sends {', '.join(_KNOWN_FIELDS)}")
    topology, mesh = _topology(params)
    op = _choice(params, "op", OPS, "psum", "collective.op")
    algorithm = params.get("algorithm") or None
    if algorithm is not None and (not isinstance(algorithm, str) or len(algorithm) > 40):
        raise _fail("algorithm", f"{repr(algorithm)[:40]} is not an algorithm's name")
    size = params.get("bytes", 65536)
    if isinstance(size, str) and size.strip().isdigit() and len(size) < 12:
        size = int(size)
    if isinstance(size, bool) or not isinstance(size, (int, float)) or not (isinstance(size, int) or math.isfinite(size)) or not MIN_BYTES <= size <= MAX_BYTES:
        raise _fail("input.bytes_per_device", f"{repr(size)[:40]} is not a size from 1 KiB to 1 GiB ({MIN_BYTES} to {MAX_BYTES} bytes)")
    calibration = _choice(params, "calibration", ("nominal", "calibrated"), "nominal", "calibration")
    axes = _axes(params, mesh)
    groups = math.prod(mesh[a] for a in axes)
    element = 4
    whole = max(element * groups, element * 2)  # every collective splits the input into group-sized blocks
    size = max(whole, int(size) // whole * whole)
    collective: dict[str, Any] = {"op": op, "axes": axes}
    if op == "ppermute":  # a shift by one within each group of the chosen axes: each member sends to the next
        collective = {"op": op, "perm": _shift(mesh, axes)}
    data: dict[str, Any] = {
        "name": f"{op} on {topology['name'] if isinstance(topology, dict) else topology}",
        "topology": topology,
        "mesh": mesh,
        "collective": collective,
        "input": {"bytes_per_device": size, "dtype": "float32"},
        "calibration": calibration,
        "engine": "fast",
        "data": "values" if size * math.prod(mesh.values()) <= VERIFIED_BYTES else "none",
    }
    if isinstance(topology, dict) and topology["kind"] == "ring":  # one group of every device, in ring order: no mesh axes
        del data["mesh"]
        collective.pop("axes", None)
    elif op == "ppermute":  # pairs of devices: no mesh axes
        del data["mesh"]
    if algorithm is not None:
        data["algorithm"] = algorithm
    return data


def scenario_of(params: Mapping[str, Any], build_topology: bool = True) -> Scenario:
    """A request as a validated scenario (as :func:`netsim.scenario.load_scenario` validates a file).

    Raises
    ------
    ScenarioError
        One line per mistake, naming ``page``, the field and the fix.
    """
    return scenario_from_data(scenario_data(params), SOURCE, build_topology=build_topology)


def work_of(scenario: Scenario) -> dict[str, int]:
    """What a run would do: devices, transfers and link crossings, counted from the schedule without simulating."""
    from netsim.algorithms.schedule import build_schedule

    layout = scenario.layout()
    topology = scenario.topology_shape
    devices = topology.n_devices
    if devices > LIMITS["devices"]:
        return {"devices": devices, "transfers": 0, "crossings": 0, "about": 0}
    algorithm = ALGORITHMS.get(scenario.resolved_algorithm)
    count = transfers_of(algorithm, devices, getattr(layout, "group_shape", None))
    size = len(layout.groups[0]) if layout.groups else 1
    rough = devices * max(size - 1, 0) * pieces_of(algorithm) * (len(PATTERNS[layout.pattern].phases) or 1)  # (a permute's pairs: one phase)
    if count is None and rough > 2 * LIMITS["transfers"]:  # far over: refused on the count of a ring-like plan, without building it
        return {"devices": devices, "transfers": rough, "crossings": rough, "about": 1}
    elif count is None:
        count = (
            len(build_schedule(layout.pattern, layout.groups, scenario.resolved_algorithm).transfers)
            if not PATTERNS[layout.pattern].pairs
            else len(layout.groups)
        )
    hops = mean_hops(scenario.resolved_algorithm, tuple(topology.dims), tuple(topology.wraparound))
    return {"devices": devices, "transfers": count, "crossings": int(count * hops), "about": 0}


def check_limits(scenario: Scenario) -> dict[str, int]:
    """The run's work (:func:`work_of`), or a ScenarioError when it is over :data:`LIMITS`, before anything runs.

    Examples
    --------
    >>> check_limits(scenario_of({"topology": "tpu", "preset": "tpu-v5e:16x16", "op": "psum"}, build_topology=False))
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: page: topology: 256 devices in groups of 256 need about 783,360 transfers, more than the page runs (40,000); ...
    """
    work = work_of(scenario)
    what = {"devices": "devices", "transfers": "transfers", "crossings": "link crossings"}
    for key, limit in LIMITS.items():
        if work[key] > limit:
            size = len(scenario.groups[0]) if scenario.groups else work["devices"]
            raise _fail(
                "topology",
                f"{work['devices']} devices in groups of {size} need {'about ' if work['about'] else ''}{work[key]:,} {what[key]},"
                f" more than the page runs ({limit:,});"
                " pick fewer devices or mesh axes, or run it with `netsim run` and see it with `netsim explain` / `netsim timeline`",
            )
    return work


def options() -> dict[str, Any]:
    """The page's choices: topologies, collectives, algorithms with one line each, sizes and limits."""
    return {
        "topologies": list(TOPOLOGIES),
        "presets": list(PRESETS),
        "slices": list(SLICES),
        "ops": list(OPS),
        "algorithms": {name: getattr(a, "description", "") for name, a in ALGORITHMS.items()} | {"multipath": _MULTIPATH},
        "bytes": [MIN_BYTES, MAX_BYTES],
        "limits": dict(LIMITS),
    }


def applicable(params: Mapping[str, Any]) -> dict[str, Any]:
    """The algorithms that run the request's collective on its groups (each checked as a scenario would be), with one line each.

    Examples
    --------
    >>> sorted(applicable({"topology": "ring", "n": 8, "op": "all_gather"})["algorithms"])[:3]
    ['bidirectional_halfway', 'bidirectional_ring', 'dimension_ordered']
    """
    data = scenario_data({k: v for k, v in params.items() if k != "algorithm"})
    default = scenario_from_data(data, SOURCE, build_topology=False).resolved_algorithm
    found = {}
    for name, algorithm in [*ALGORITHMS.items(), ("multipath", None)]:
        try:
            scenario_from_data({**data, "algorithm": name}, SOURCE, build_topology=False)
        except ValueError:
            continue
        found[name] = getattr(algorithm, "description", "") or _MULTIPATH
    return {"default": default, "algorithms": found}
