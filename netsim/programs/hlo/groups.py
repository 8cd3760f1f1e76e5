"""Device groups of HLO collectives, in all three spellings, and the ids they name.

``replica_groups`` is written one of three ways:

- explicit lists, ``{{0,1,2,3},{4,5,6,7}}``; ``{}`` means one group of everyone;
- iota, ``[2,4]<=[8]`` or ``[4,2]<=[2,4]T(1,0)``: ``arange`` of the right-hand size,
  reshaped to the right-hand dims, transposed by ``T(...)``, reshaped to the left-hand
  ``[groups, group size]``: the rows are the groups;
- mesh axes, ``mesh['x'=2,'y'=4] {'y'}``, optionally with ``device_ids=(...)`` (a list, or
  an iota ``[2,4]T(1,0)``) laying the mesh over the ids: the groups are the devices that
  differ only along the named axes (a sub-axis is written ``'x':(pre)size``).

Which ids the numbers are depends on the collective's mode (XLA's
``CollectiveOpGroupMode``): without ``channel_id`` they are replica ids (each group repeated
in every partition); with ``channel_id`` they are partition ids (repeated in every
replica), and with ``use_global_device_ids=true`` as well (what JAX emits) they are
already global device ids, ``replica * num_partitions + partition``, i.e. positions in
``mesh.devices.flat`` of the mesh the module was compiled for.
"""

from __future__ import annotations

import functools
import itertools
import re

import numpy as np

from netsim.programs.hlo.text import split_top_level
from netsim.scenario.topology_spec import MAX_DEVICES

__all__ = ["global_groups", "group_mode", "parse_pairs", "parse_replica_groups"]

_IOTA = re.compile(r"\[([\d,\s]+)\]<=\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?$")
_TILE_IOTA = re.compile(r"\[([\d,\s]+)\](?:T\(([\d,\s]+)\))?$")
_MESH = re.compile(r"mesh\[(.*?)\]\s*(?:,\s*device_ids=\((.*)\))?\s*\{(.*)\}$")
_AXIS = re.compile(r"'?([^'=:]+)'?\s*(?::\((\d+)\)(\d+))?$")


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.replace(" ", "").split(",") if x]


def _no_more_than_devices(dims: list[int], written: str) -> int:
    """How many ids ``dims`` hold, refused past :data:`~netsim.scenario.topology_spec.MAX_DEVICES` (before NumPy sets them out)."""
    total = 1
    for dim in dims:
        total *= dim
    if total > MAX_DEVICES:
        raise ValueError(f"{written} names {total} device ids, more than the {MAX_DEVICES} devices a module may have")
    return total


def _iota(dims: list[int], perm: list[int] | None) -> np.ndarray:
    ids = np.arange(_no_more_than_devices(dims, f"[{','.join(map(str, dims))}]")).reshape(dims)
    if perm is not None:
        if sorted(perm) != list(range(len(dims))):
            raise ValueError(f"T({','.join(map(str, perm))}) is not a permutation of the {len(dims)} dims {dims}")
        ids = ids.transpose(perm)
    return ids


def _lists(text: str) -> list[list[int]]:
    inner = text.strip()[1:-1].strip()
    if not inner:
        return []
    groups = []
    for part in split_top_level(inner):
        if not (part.startswith("{") and part.endswith("}")):
            raise ValueError(f"expected a group such as {{0,1}}, got {part!r}")
        groups.append(_ints(part[1:-1]))
    return groups


def _mesh_axes(axes_text: str) -> tuple[list[str], list[int]]:
    """The names and sizes of ``'x'=2,'y'=4``: each named once, each of at least one device."""
    names, sizes = [], []
    for part in split_top_level(axes_text):
        name, sep, size = part.rpartition("=")
        if not sep or not size.strip().isdigit():
            raise ValueError(f"expected a mesh axis such as 'x'=4, got {part!r}")
        name = name.strip().strip("'\"")
        if int(size) < 1:
            raise ValueError(f"mesh axis {part.strip()} has no device; every axis has a size of at least 1")
        if name in names:
            raise ValueError(f"mesh axis {name!r} is named twice in mesh[{axes_text}]")
        names.append(name)
        sizes.append(int(size))
    return names, sizes


def _mesh(axes_text: str, device_ids: str | None, grouped_text: str) -> list[list[int]]:
    names, sizes = _mesh_axes(axes_text)
    total = _no_more_than_devices(sizes, f"mesh[{axes_text}]")
    if device_ids is None:
        ids = np.arange(total)
    elif (tile := _TILE_IOTA.match(device_ids.strip())) is not None:
        ids = _iota(_ints(tile.group(1)), _ints(tile.group(2)) if tile.group(2) else None).reshape(-1)
    else:
        ids = np.array(_ints(device_ids))
    if ids.size != total or sorted(ids.tolist()) != list(range(total)):
        raise ValueError(f"device_ids must be a permutation of 0..{total - 1} for the mesh {dict(zip(names, sizes, strict=True))}")
    # Split every axis into the pieces its sub-axes name, then group the named pieces.
    # An axis (or sub-axis) of size 1 is no piece: it groups nothing.
    cuts: dict[int, set[int]] = {i: {1, size} for i, size in enumerate(sizes)}
    grouped: list[tuple[int, int, int]] = []
    for part in split_top_level(grouped_text):
        axis = _AXIS.match(part.strip())
        if axis is None or axis.group(1) not in names:
            raise ValueError(f"unknown mesh axis {part!r}; the mesh has {', '.join(names)}")
        index = names.index(axis.group(1))
        pre, size = (int(axis.group(2)), int(axis.group(3))) if axis.group(2) else (1, sizes[index])
        if pre < 1 or size < 1:
            raise ValueError(f"sub-axis {part.strip()} has a pre-size or size of 0; both are at least 1")
        if sizes[index] % (pre * size):
            raise ValueError(f"sub-axis {part!r} does not divide the axis of size {sizes[index]}")
        cuts[index] |= {pre, pre * size}
        grouped.append((index, pre, size))
    pieces: list[tuple[int, int, int]] = []  # (axis, pre, size): a sub-axis with a larger pre-size is more minor
    for index in range(len(sizes)):
        points = sorted(cuts[index])
        for low, high in itertools.pairwise(points):
            pieces.append((index, low, high // low))
    array = ids.reshape([p[2] for p in pieces]) if pieces else ids
    chosen: list[int] = []
    for index, pre, size in grouped:  # the pieces a (sub-)axis spans, in order
        for k, (axis, low, _) in enumerate(pieces):
            if axis == index and pre <= low < pre * size:
                if k in chosen:
                    raise ValueError(f"mesh axes {{{grouped_text.strip()}}} name part of an axis twice")
                chosen.append(k)
    order = [i for i in range(len(pieces)) if i not in chosen] + chosen
    group_size = int(np.prod([pieces[i][2] for i in chosen])) if chosen else 1
    return array.transpose(order).reshape(-1, group_size).tolist()


def parse_replica_groups(text: str) -> list[list[int]]:
    """The groups a ``replica_groups`` value names (``[]`` for ``{}``: everyone).

    Raises
    ------
    ValueError
        If the text is none of the three spellings, or does not hold together.

    Examples
    --------
    >>> parse_replica_groups("{{0,1},{2,3}}")
    [[0, 1], [2, 3]]
    >>> parse_replica_groups("[4,2]<=[2,4]T(1,0)")
    [[0, 4], [1, 5], [2, 6], [3, 7]]
    >>> parse_replica_groups("mesh['x'=2,'y'=4] {'x'}")
    [[0, 4], [1, 5], [2, 6], [3, 7]]
    >>> parse_replica_groups("mesh['x'=4,'y'=1] {'x','y'}")  # an axis of size 1 groups nothing
    [[0, 1, 2, 3]]
    """
    value = text.strip()
    if value.startswith("{"):
        return _lists(value)
    iota = _IOTA.match(value)
    if iota is not None:
        shape, dims = _ints(iota.group(1)), _ints(iota.group(2))
        ids = _iota(dims, _ints(iota.group(3)) if iota.group(3) else None)
        if len(shape) != 2 or shape[0] * shape[1] != ids.size:
            raise ValueError(f"iota groups {value!r}: [groups,size] must have {ids.size} elements")
        return ids.reshape(shape).tolist()
    mesh = _MESH.match(value)
    if mesh is not None:
        return _mesh(mesh.group(1), mesh.group(2), mesh.group(3))
    raise ValueError(f"replica_groups={value!r} is none of {{{{0,1}},...}}, [2,4]<=[8] or mesh['x'=2] {{'x'}}")


def parse_pairs(text: str) -> list[tuple[int, int]]:
    """``source_target_pairs={{0,1},{1,2}}`` read into (source, target) pairs.

    Examples
    --------
    >>> parse_pairs("{{0,1},{1,0}}")
    [(0, 1), (1, 0)]
    """
    return list(_pairs(text))


@functools.lru_cache(maxsize=4096)
def _pairs(text: str) -> tuple[tuple[int, int], ...]:
    """:func:`parse_pairs`, read once per text (a loop's permutes are read again on every trip played)."""
    pairs = []
    for group in _lists(text):
        if len(group) != 2:
            raise ValueError(f"a source-target pair has two ids, got {group}")
        pairs.append((group[0], group[1]))
    return tuple(pairs)


def group_mode(opcode: str, attrs: dict[str, str]) -> str:
    """The ids' meaning: ``"replica"``, ``"partition"`` or ``"global"`` (flattened ids).

    Examples
    --------
    >>> group_mode("all-gather", {"channel_id": "1", "use_global_device_ids": "true"})
    'global'
    >>> group_mode("all-reduce", {})
    'replica'
    """
    has_channel = "channel_id" in attrs
    if attrs.get("use_global_device_ids") == "true":
        if not has_channel:
            raise ValueError("use_global_device_ids=true needs a channel_id")
        return "global"
    return "partition" if has_channel else "replica"


def global_groups(groups: list[list[int]], mode: str, replicas: int, partitions: int) -> list[list[int]]:
    """The groups as global device ids (``replica * partitions + partition``), every device in one.

    ``groups == []`` means one group of all the ids of the mode.

    Examples
    --------
    >>> global_groups([[0, 1]], "partition", replicas=2, partitions=2)
    [[0, 1], [2, 3]]
    >>> global_groups([], "replica", replicas=2, partitions=2)
    [[0, 2], [1, 3]]
    """
    total = replicas * partitions
    if mode == "global":
        result = groups or [list(range(total))]
    elif mode == "partition":
        inner = groups or [list(range(partitions))]
        result = [[r * partitions + p for p in g] for r in range(replicas) for g in inner]
    elif mode == "replica":
        inner = groups or [list(range(replicas))]
        result = [[r * partitions + p for r in g] for p in range(partitions) for g in inner]
    else:
        raise ValueError(f"unknown group mode {mode!r}")
    seen = sorted(i for g in result for i in g)
    if seen != list(range(total)):
        raise ValueError(f"groups {groups} do not cover the {total} devices once each ({mode} ids)")
    return result
