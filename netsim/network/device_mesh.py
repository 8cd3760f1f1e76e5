"""Logical device meshes with named axes, laid on a physical topology.

A :class:`Mesh` is what :class:`jax.sharding.Mesh` is to a JAX program: the
devices arranged in an array whose axes have names, e.g. ``{"data": 4, "model":
4}``. A collective over some of those axes runs in groups: the devices that
differ only in the named axes. :meth:`Mesh.groups` derives those groups (the
``axis_index_groups`` a ``pmap`` program would spell out by hand), together with
the group's shape over the named axes, which multi-axis algorithms need.

Member order
    Within a group, members are ordered row-major over the named axes *in the
    order given*: over ``("data", "model")`` member ``i * n_model + j`` sits at
    data index i and model index j; over ``("model", "data")`` the model index
    varies slowest. This is JAX's ``axis_index`` over several axis names, and so
    the order of blocks in an all_gather and of shards in a psum_scatter.

Placement on the topology
    By default the mesh lies row-major on the devices, which are numbered
    row-major over the torus coordinates: a ``{data: 4, model: 4}`` mesh on a
    4x4 torus puts ``data`` along physical axis 0 and ``model`` along axis 1.
    ``devices`` gives an explicit order instead (mesh position ``p``, row-major,
    is device ``devices[p]``), and ``axis_dims`` maps each mesh axis onto one or
    more whole physical axes (``{"data": 1, "model": 0}`` transposes it;
    ``{"x": 0, "yz": [1, 2]}`` folds two physical axes into one mesh axis).

Rings and lines
    Along a mesh axis the group's members follow one another. If each member's
    successor, and the last member's successor the first, is one hop away on
    distinct links both ways round, the axis is a *ring*; if only the open chain
    is, it is a *line* (an axis without wraparound). Algorithms run a ring
    algorithm on a ring and a line algorithm on a line; an axis laid out in any
    other way counts as a ring whose messages take several hops.

Axes over several physical axes
    A mesh axis that netsim lays over several whole physical axes (by default, as
    ``fsdp: 256`` over the first two axes of a 16x16x16 torus; or with ``axis_dims``)
    is no ring: from the end of one row to the start of the next is more than a hop.
    Its groups run along those physical axes instead, as a TPU's collectives run
    on a sub-torus: the group's ``shape`` lists them (``(16, 16)``), each a ring or
    a line of its own, and ``multiaxis`` works on all of them at once. The members'
    order, and so which block each holds, is the mesh axis's, row-major over the
    physical axes. A mesh laid out by an explicit ``devices`` list keeps its axes
    whole.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from netsim.network.hops import one_hop
from netsim.network.topology import Topology

__all__ = ["AxisGroups", "Mesh", "group_sizes", "physical_axes"]


@dataclass(frozen=True)
class AxisGroups(Sequence):
    """The groups of a collective over named mesh axes.

    Behaves as the tuple of groups (so it can be passed as ``axis_index_groups``)
    and also carries what an algorithm needs to know about the axes.

    Attributes
    ----------
    groups : tuple of tuple of int
        Device indices of each group, members row-major over ``axes``.
    axes : tuple of str
        The named axes, in the order given.
    shape : tuple of int
        The axes a group runs along, in that order: each named axis's size, or, for
        one that netsim lays over several physical axes (see the module docstring), those
        physical axes' sizes. Their product is the group size.
    wraparound : tuple of bool
        Per entry of ``shape``: True if it runs as a ring, False if it is a line.
    topology : Topology
        The topology the mesh lies on.
    """

    groups: tuple[tuple[int, ...], ...]
    axes: tuple[str, ...]
    shape: tuple[int, ...]
    wraparound: tuple[bool, ...]
    topology: Topology = field(repr=False)

    def __len__(self) -> int:
        return len(self.groups)

    def __getitem__(self, index):  # type: ignore[override]
        return self.groups[index]

    def __iter__(self) -> Iterator[tuple[int, ...]]:
        return iter(self.groups)


class Mesh:
    """Named axes over the devices of a topology, like :class:`jax.sharding.Mesh`.

    Parameters
    ----------
    shape : mapping of str to int
        Axis name -> size, in order (e.g. ``{"data": 4, "model": 4}``); the
        sizes multiply to the number of devices.
    topology : Topology
        Where the devices are.
    devices : sequence of int, optional
        Explicit placement: mesh position p (row-major over ``shape``) is device
        ``devices[p]``. A permutation of the device indices; nested lists are
        flattened.
    axis_dims : mapping of str to int or sequence of int, optional
        Placement by physical axes: each mesh axis takes one or more whole axes
        of the topology (row-major over them in the order listed), each
        physical axis used once. Not together with ``devices``.

    Raises
    ------
    ValueError
        If the axis names or sizes are bad, the sizes do not multiply to the
        number of devices, or the placement is not a valid one.

    Examples
    --------
    >>> from netsim.network.topology import torus
    >>> m = Mesh({"data": 2, "model": 4}, torus((2, 4)))
    >>> m.devices
    array([[0, 1, 2, 3],
           [4, 5, 6, 7]])
    >>> [list(g) for g in m.groups("model")]
    [[0, 1, 2, 3], [4, 5, 6, 7]]
    >>> [list(g) for g in m.groups("data")]
    [[0, 4], [1, 5], [2, 6], [3, 7]]
    >>> Mesh({"x": 4, "y": 2}, torus((2, 4)), axis_dims={"x": 1, "y": 0}).devices
    array([[0, 4],
           [1, 5],
           [2, 6],
           [3, 7]])
    """

    def __init__(
        self,
        shape: Mapping[str, int],
        topology: Topology,
        *,
        devices: Sequence[int] | np.ndarray | None = None,
        axis_dims: Mapping[str, int | Sequence[int]] | None = None,
    ) -> None:
        if not isinstance(topology, Topology):
            raise ValueError(f"topology must be a Topology, got {topology!r}")
        if not isinstance(shape, Mapping) or not shape:
            raise ValueError(f"shape must be a non-empty mapping of axis name to size, e.g. {{'data': 4, 'model': 4}}; got {shape!r}")
        for name, size in shape.items():
            if not isinstance(name, str) or not name:
                raise ValueError(f"mesh axis names must be non-empty strings, got {name!r}")
            if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
                raise ValueError(f"mesh axis {name!r} must have a positive integer size, got {size!r}")
        self.shape: dict[str, int] = {name: int(size) for name, size in shape.items()}
        self.topology = topology
        sizes = tuple(self.shape.values())
        n = topology.n_devices
        if math.prod(sizes) != n:
            product = " x ".join(map(str, sizes))
            raise ValueError(f"mesh {self._shape_text()} has {product} = {math.prod(sizes)} devices but topology {topology.name} has {n}")
        if devices is not None and axis_dims is not None:
            raise ValueError("give devices or axis_dims, not both")
        # the physical axes each mesh axis is laid over, where netsim lays it (None: an explicit devices list)
        self._physical: dict[str, tuple[int, ...]] | None = None
        if devices is not None:
            order = self._check_devices(devices, n)
        elif axis_dims is not None:
            order = self._order_from_dims(axis_dims)
        else:
            order = np.arange(n)
            self._physical = physical_axes(self.shape, tuple(topology.dims))
        self.devices: np.ndarray = order.reshape(sizes)
        self.devices.flags.writeable = False

    @property
    def axis_names(self) -> tuple[str, ...]:
        """The axis names, in order."""
        return tuple(self.shape)

    def __repr__(self) -> str:
        return f"Mesh({self._shape_text()}, topology={self.topology.name})"

    def _shape_text(self) -> str:
        return "{" + ", ".join(f"{k}: {v}" for k, v in self.shape.items()) + "}"

    @staticmethod
    def _check_devices(devices: Sequence[int] | np.ndarray, n: int) -> np.ndarray:
        try:
            flat = np.asarray(devices).reshape(-1)
        except ValueError:
            raise ValueError(f"devices must be a list of device indices, got {devices!r}") from None
        if flat.dtype.kind not in "iu" and flat.size:
            raise ValueError(f"devices must be integers, got {devices!r}")
        if flat.size != n:
            raise ValueError(f"devices lists {flat.size} devices but the topology has {n}")
        bad = sorted({int(d) for d in flat if not 0 <= d < n})
        if bad:
            raise ValueError(f"devices: index {bad[0]} is out of range for {n} devices (valid: 0..{n - 1})")
        values, counts = np.unique(flat, return_counts=True)
        if (counts > 1).any():
            raise ValueError(f"devices must list every device exactly once; device {int(values[counts > 1][0])} appears more than once")
        return flat.astype(np.int64)

    def _order_from_dims(self, axis_dims: Mapping[str, int | Sequence[int]]) -> np.ndarray:
        dims = self.topology.dims
        if not isinstance(axis_dims, Mapping):
            raise ValueError(f"axis_dims must map each mesh axis to physical axes, e.g. {{'data': 0, 'model': 1}}; got {axis_dims!r}")
        unknown = [a for a in axis_dims if a not in self.shape]
        if unknown:
            raise ValueError(f"axis_dims names {unknown[0]!r}, which is not a mesh axis ({', '.join(self.shape)})")
        missing = [a for a in self.shape if a not in axis_dims]
        if missing:
            raise ValueError(f"axis_dims gives no physical axes for mesh axis {missing[0]!r}")
        by_axis: dict[str, list[int]] = {}
        for name, given in axis_dims.items():
            physical = [given] if isinstance(given, (int, np.integer)) and not isinstance(given, bool) else list(given) if isinstance(given, Sequence) else None
            if not physical or any(isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 0 <= d < len(dims) for d in physical):
                raise ValueError(f"axis_dims[{name!r}] must be a physical axis 0..{len(dims) - 1} or a list of them, got {given!r}")
            size = math.prod(dims[d] for d in physical)
            if size != self.shape[name]:
                spans = " x ".join(str(dims[d]) for d in physical)
                raise ValueError(f"axis_dims[{name!r}] spans physical axes {physical} of {spans} = {size} devices; mesh axis {name!r} has {self.shape[name]}")
            by_axis[name] = [int(d) for d in physical]
        order = [d for physical in by_axis.values() for d in physical]
        if sorted(order) != list(range(len(dims))):
            repeated = sorted({d for d in order if order.count(d) > 1})
            problem = f"physical axis {repeated[0]} is used twice" if repeated else f"physical axis {sorted(set(range(len(dims))) - set(order))[0]} is unused"
            raise ValueError(f"axis_dims must use every physical axis of {self.topology.name} exactly once; {problem}")
        # The mapping may list the mesh axes in any order; the mesh's own order counts.
        self._physical = physical_axes(self.shape, dims, by_axis)
        perm = [d for name in self.shape for d in by_axis[name]]
        return np.arange(self.topology.n_devices).reshape(dims).transpose(perm).reshape(-1)

    def _axis_indices(self, axes: str | Sequence[str]) -> list[int]:
        names = [axes] if isinstance(axes, str) else list(axes) if isinstance(axes, Sequence) else None
        if not names:
            raise ValueError(f"axes must name one or more mesh axes ({', '.join(self.shape)}), got {axes!r}")
        for name in names:
            if name not in self.shape:
                close = difflib.get_close_matches(str(name), [str(a) for a in self.shape], n=1)
                raise ValueError(f"no mesh axis {name!r}{f'; did you mean {close[0]}?' if close else ''}; the mesh has {', '.join(self.shape)}")
        repeated = [a for a in names if names.count(a) > 1]
        if repeated:
            raise ValueError(f"mesh axis {repeated[0]!r} is named twice in {names!r}")
        return [self.axis_names.index(a) for a in names]

    def groups(self, axes: str | Sequence[str]) -> AxisGroups:
        """The groups of a collective over the named axes.

        Parameters
        ----------
        axes : str or sequence of str
            One axis name, or several; their order fixes the member order.

        Returns
        -------
        AxisGroups
            One group per combination of the other axes (row-major in mesh
            order), members row-major over ``axes`` in the order given.

        Raises
        ------
        ValueError
            If an axis is unknown or named twice.

        Examples
        --------
        >>> from netsim.network.topology import torus
        >>> m = Mesh({"data": 2, "model": 2}, torus((2, 2)))
        >>> [list(g) for g in m.groups(["data", "model"])], [list(g) for g in m.groups(["model", "data"])]
        ([[0, 1, 2, 3]], [[0, 2, 1, 3]])
        >>> m.groups("model").shape, m.groups("model").wraparound
        ((2,), (True,))

        A mesh axis laid over two physical axes runs along both:

        >>> Mesh({"fsdp": 16, "tp": 4}, torus((4, 4, 4))).groups("fsdp").shape
        (4, 4)
        """
        named = self._axis_indices(axes)
        others = [a for a in range(len(self.shape)) if a not in named]
        members = self.devices.transpose(others + named).reshape(-1, math.prod(self.devices.shape[a] for a in named))
        groups = tuple(tuple(int(d) for d in row) for row in members)
        shape: tuple[int, ...] = ()
        wraps: tuple[bool, ...] = ()
        for a in named:
            sizes, rings = self._runs_along(self.axis_names[a])
            shape, wraps = shape + sizes, wraps + rings
        return AxisGroups(groups, tuple(self.axis_names[a] for a in named), shape, wraps, self.topology)

    def _runs_along(self, axis: str) -> tuple[tuple[int, ...], tuple[bool, ...]]:
        """The sizes and ring flags of what a group runs along on ``axis``: the axis, or the physical axes it is laid over."""
        a = self.axis_names.index(axis)
        physical = (self._physical or {}).get(axis, ())
        if len(physical) < 2:
            return (self.devices.shape[a],), (self.axis_is_ring(axis),)
        sizes = tuple(self.topology.dims[d] for d in physical)
        split = self.devices.reshape(self.devices.shape[:a] + sizes + self.devices.shape[a + 1 :])
        found = [_rings_and_chains(self.topology, _lines(split, a + k)) for k in range(len(sizes))]
        return sizes, tuple(rings or not chains for rings, chains in found)

    def axis_is_ring(self, axis: str) -> bool:
        """Whether an axis runs as a ring (True) or as a line without wraparound (False).

        See the module docstring: a line is a chain of neighbours whose ends are
        not linked both ways on links of their own.

        Examples
        --------
        >>> from netsim.network.topology import torus
        >>> m = Mesh({"x": 4, "y": 4}, torus((4, 4), wraparound=(True, False)))
        >>> m.axis_is_ring("x"), m.axis_is_ring("y")
        (True, False)
        """
        rings, chains = _rings_and_chains(self.topology, _lines(self.devices, self._axis_indices(axis)[0]))
        return rings or not chains


def physical_axes(shape: Mapping[str, int], dims: Sequence[int], axis_dims: Mapping[str, Sequence[int]] | None = None) -> dict[str, tuple[int, ...]]:
    """The physical axes (of more than one device) each mesh axis is laid over: ``axis_dims``'s, else as the
    mesh lies row-major on the torus (where an axis covers part of a physical axis, it and the axes after it
    are left out).

    Examples
    --------
    >>> physical_axes({"fsdp": 256, "tp": 16}, (16, 16, 16)), physical_axes({"x": 2, "y": 8}, (4, 4))
    ({'fsdp': (0, 1), 'tp': (2,)}, {})
    >>> physical_axes({"a": 4, "b": 16}, (4, 4, 4), {"a": [1], "b": [2, 0]})
    {'a': (1,), 'b': (2, 0)}
    """
    if axis_dims is not None:
        return {name: tuple(int(d) for d in axis_dims[name] if dims[d] > 1) for name in shape}
    covered: dict[str, tuple[int, ...]] = {}
    d = 0
    for name, size in shape.items():
        start, product = d, 1
        while d < len(dims) and product * dims[d] <= size and (product < size or dims[d] == 1):
            product *= dims[d]
            d += 1
        if product != size:
            break
        covered[name] = tuple(k for k in range(start, d) if dims[k] > 1)
    return covered


def group_sizes(shape: Mapping[str, int], dims: Sequence[int], axes: Sequence[str], axis_dims: Mapping[str, Sequence[int]] | None = None) -> tuple[int, ...]:
    """The sizes a group over mesh ``axes`` runs along (:attr:`AxisGroups.shape`), from the shapes alone,
    for a mesh netsim lays out (not an explicit ``devices`` list).

    Examples
    --------
    >>> group_sizes({"fsdp": 256, "tp": 16}, (16, 16, 16), ["tp", "fsdp"])
    (16, 16, 16)
    """
    physical = physical_axes(shape, dims, axis_dims)
    return tuple(size for a in axes for size in ((dims[d] for d in physical[a]) if len(physical.get(a, ())) > 1 else (shape[a],)))


def _lines(devices: np.ndarray, axis: int) -> np.ndarray:
    """The devices along ``axis`` of a device array, a row per line."""
    return np.moveaxis(devices, axis, -1).reshape(-1, devices.shape[axis])


def _rings_and_chains(topology: Topology, lines: np.ndarray) -> tuple[bool, bool]:
    """Whether every line is a ring of one-hop neighbours on distinct links both ways round, and whether every open chain is one-hop."""
    if lines.shape[1] == 1:
        return True, True
    if not topology.down_links:  # every route is dimension order: all lines at once, on arrays
        following = np.roll(lines, -1, axis=1)
        forward, backward = _one_hop(topology, lines, following, 1), _one_hop(topology, following, lines, -1)
        hops = np.sort(np.concatenate([forward, backward], axis=1), axis=1)
        rings = bool((hops >= 0).all() and (hops[:, 1:] != hops[:, :-1]).all())
        chains = bool((forward[:, :-1] >= 0).all() and (backward[:, :-1] >= 0).all())
        return rings, chains
    rings = chains = True
    for line in lines.tolist():
        n = len(line)
        forward = [topology.route(line[i], line[(i + 1) % n], 1) for i in range(n)]
        backward = [topology.route(line[(i + 1) % n], line[i], -1) for i in range(n)]
        hops = forward + backward
        if any(len(r) != 1 for r in hops) or len({r[0] for r in hops}) != 2 * n:
            rings = False
        if any(len(forward[i]) != 1 or len(backward[i]) != 1 for i in range(n - 1)):
            chains = False
    return rings, chains


def _one_hop(topology: Topology, src: np.ndarray, dst: np.ndarray, tie: int) -> np.ndarray:
    """Per pair, a number for the one link dimension-order routing takes from ``src`` to ``dst``, -1 if none."""
    axis, step = one_hop(topology, src, dst, tie)
    return np.where(axis >= 0, ((src * topology.n_devices + dst) * len(topology.dims) + axis) * 2 + (step > 0), -1)
