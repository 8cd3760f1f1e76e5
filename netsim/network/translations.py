"""A torus's translations: the shifts along wrapped axes that map every device, link and link rate onto another.

On a torus whose links along an axis all have one bandwidth and latency (and whose
chips are alike), moving every device one place along a wrapped axis maps the slice
onto itself. A run that does the same on every device of such a shift plays the
same times there: :mod:`netsim.programs.symmetry` plays one device of each set
(:class:`Translations`), each link standing for the links it is moved onto.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from netsim.network.topology import Topology

__all__ = ["Translations", "coordinates", "shift", "translatable_axes"]


def coordinates(topology: Topology) -> np.ndarray:
    """Every device's coordinates on the grid, one row each (``(devices, axes)``).

    Examples
    --------
    >>> from netsim.network.topology import torus
    >>> coordinates(torus((2, 3)))[4].tolist()
    [1, 1]
    """
    n = topology.n_devices
    return np.array([topology.coord(d) for d in range(n)], np.int64).reshape(n, -1)


def shift(topology: Topology, axis: int) -> np.ndarray:
    """Where each device goes when the slice moves one place along ``axis`` (wrapping round).

    Examples
    --------
    >>> from netsim.network.topology import torus
    >>> shift(torus((2, 3)), 1).tolist()
    [1, 2, 0, 4, 5, 3]
    """
    coords = coordinates(topology)
    coords[:, axis] = (coords[:, axis] + 1) % topology.dims[axis]
    return np.ravel_multi_index(tuple(coords.T), topology.dims).astype(np.int64)


def translatable_axes(topology: Topology) -> tuple[int, ...]:
    """The wrapped axes (of more than one device) along which a shift maps every link onto a link of the same rates,
    on a slice of alike chips with no link down.

    Examples
    --------
    >>> from netsim.network.topology import mesh, torus
    >>> translatable_axes(torus((4, 2))), translatable_axes(mesh((4, 4)))
    ((0, 1), ())
    >>> from netsim.network.presets import tpu_slice
    >>> translatable_axes(tpu_slice("tpu-v5e:16x16x2slices"))  # (joined by a data-center network: not one torus)
    ()
    >>> translatable_axes(torus((4, 4)).degrade_link(0, 1, bandwidth_factor=0.5))  # (no shift maps the slow link onto itself)
    ()
    """
    if topology.down_links or len(topology.dims) == 0:
        return ()
    n = topology.n_devices
    facts = [topology.device(d) for d in range(n)]
    if any(f != facts[0] for f in facts) or any(topology.index(topology.coord(d)) != d for d in range(n)):
        return ()
    edges = {(u, v, key): (data["bandwidth_Bps"], data["latency_s"]) for u, v, key, data in topology.graph.edges(keys=True, data=True)}
    if n != int(np.prod(topology.dims)) or any(not (0 <= u < n and 0 <= v < n and isinstance(key, tuple) and len(key) == 2) for u, v, key in edges):
        return ()  # (a data-center network's NICs and switch are no chips of the grid)
    axes = []
    for axis, (size, wraps) in enumerate(zip(topology.dims, topology.wraparound, strict=True)):
        if not wraps or size < 2:
            continue
        to = shift(topology, axis).tolist()
        if all((to[u], to[v], key) in edges and edges[to[u], to[v], key] == rates for (u, v, key), rates in edges.items()):
            axes.append(axis)
    return tuple(axes)


@dataclass(frozen=True)
class Translations:
    """The shifts along ``axes`` of a torus, all together: which device and which link each stands for.

    Every device is moved onto one with coordinate 0 along ``axes`` (its representative, ``device[d]``) by exactly
    one shift, which moves each link leaving it onto the link ``link[j]`` (links numbered as ``topology.links``).

    Attributes
    ----------
    axes : tuple of int
    order : int
        How many shifts there are (devices each representative stands for).
    device : int array (devices,)
    link : int array (links,)

    Examples
    --------
    >>> from netsim.network.topology import torus
    >>> t = Translations.of(torus((2, 3)), (1,))
    >>> t.order, t.device.tolist(), t.kept.tolist()
    (3, [0, 0, 0, 3, 3, 3], [True, False, False, True, False, False])
    """

    axes: tuple[int, ...]
    order: int
    device: np.ndarray
    link: np.ndarray

    @property
    def kept(self) -> np.ndarray:
        """Whether each device is a representative (played)."""
        return self.device == np.arange(len(self.device))

    @classmethod
    def of(cls, topology: Topology, axes: tuple[int, ...]) -> Translations:
        """The shifts along ``axes`` (from :func:`translatable_axes`) of ``topology``."""
        coords = coordinates(topology)
        home = coords.copy()
        home[:, list(axes)] = 0
        device = np.ravel_multi_index(tuple(home.T), topology.dims).astype(np.int64)
        number = {link: j for j, link in enumerate(topology.links)}
        moved = coords - home  # (each device's shift from its representative)
        link = np.empty(len(number), np.int64)
        for (u, v, key), j in number.items():
            there = (coords[v] - moved[u]) % np.array(topology.dims)
            link[j] = number[(int(device[u]), int(np.ravel_multi_index(tuple(there), topology.dims)), key)]
        order = int(np.prod([topology.dims[a] for a in axes], dtype=np.int64)) if axes else 1
        return cls(tuple(axes), order, device, link)

    def every_link(self, stats: dict, links: list) -> dict:
        """``stats`` (by link id, ``links`` numbered as the topology's) given to every link: each has the one's that stands for it.

        Examples
        --------
        >>> from netsim.network.topology import ring
        >>> t = ring(3)
        >>> shifts = Translations.of(t, (0,))
        >>> sorted(shifts.every_link({link: link[0] for link in t.links}, t.links).values())
        [0, 0, 0, 0, 0, 0]
        """
        return {link: stats[links[j]] for link, j in zip(links, self.link.tolist(), strict=True)}

    def every_device(self, stats: dict) -> dict:
        """``stats`` (by device) given to every device whose representative has some.

        Examples
        --------
        >>> from netsim.network.topology import ring
        >>> Translations.of(ring(3), (0,)).every_device({0: "busy"})
        {0: 'busy', 1: 'busy', 2: 'busy'}
        """
        return {d: stats[rep] for d, rep in enumerate(self.device.tolist()) if rep in stats}
