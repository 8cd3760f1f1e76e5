"""Several slices joined by the data-center network (DCN): hosts, NICs and one switch.

``multislice(slice, n)`` (or a name such as ``tpu-v5e:4x4x2slices``) takes ``n`` copies
of one slice. Inside a slice, its ICI links as before; between slices, the path a byte
really takes (Cloud TPU, *Multislice introduction*: chips "communicate by transferring
data to CPUs (hosts) which in turn transmit the data over the ... DCN"):

    chip --PCIe--> its NIC --uplink--> switch --downlink--> NIC --PCIe--> chip

- every chip has a link to its host and one back (one way each, the PCIe rate);
- every NIC of every host is a pair of directed links, up to the switch and down from
  it, each of the NIC's rate; a host's chips are dealt to its NICs in equal runs, so
  chips of one host share their NIC as they do on a TPU host;
- the switch is **non-blocking**: it never holds a message back, any NIC can send to
  any other at its full rate at once (full bisection). ``oversubscription=f`` runs
  every NIC link at 1/f of its rate: what a switch of 1/f the full bisection gives
  when every host sends at once, as in a collective (a host alone would see more).

Device numbering is slice-major: device ``d`` is device ``d % M`` of slice ``d // M``
(M devices a slice), at coordinates ``(slice, *its coordinates in the slice)``, as JAX
numbers processes (``process_id = process_id_in_slice + slice_id * processes_per_slice``).
:meth:`SlicedTopology.slice_of`, :meth:`~SlicedTopology.host_of` and
:meth:`~SlicedTopology.nic_of` say where each device is. NICs and the switch are nodes
of the graph after the devices (numbered from ``n_devices``), not devices.

Link keys keep the grid's form ``(axis, step)``: a slice's axis ``a`` is axis ``a + 1``
of the whole, and the DCN's links are axis 0, the slice axis: step +1 towards the
switch (chip to NIC, NIC to switch), -1 away from it (switch to NIC, NIC to chip).

A mesh axis crosses the DCN when its devices lie in different slices
(:func:`dcn_axes`); :func:`hybrid_mesh` places devices as JAX's
``mesh_utils.create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape)`` does.

This module knows nothing of SimPy or collectives.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import networkx as nx
import numpy as np

from netsim.network.chips import check_device
from netsim.network.dcn import DCN_NIC_LATENCY_S, DCN_PCIE_LATENCY_S, DcnFigures
from netsim.network.device_mesh import Mesh
from netsim.network.topology import LinkId, Topology, _check_link

__all__ = ["SLICES_SUFFIX", "SlicedTopology", "dcn_axes", "hybrid_mesh", "multislice", "split_slices_name"]

SLICES_SUFFIX = re.compile(r"x([1-9][0-9]*)slices$")
"""The end of a multi-slice name: ``tpu-v5e:4x4x2slices`` is 2 slices of ``tpu-v5e:4x4``."""


@dataclass(frozen=True)
class SlicedTopology(Topology):
    """Slices joined by the DCN (see the module docstring); build one with :func:`multislice`.

    Attributes
    ----------
    n_slices : int
        How many slices.
    slice_dims : tuple of int
        One slice's axes (``dims`` is ``(n_slices, *slice_dims)``).
    device_nic : tuple of int
        Per device, the graph node of its NIC.
    device_host : tuple of int
        Per device, its host (numbered across slices, slice-major).
    switch : int
        The switch's node.
    """

    n_slices: int = 1
    slice_dims: tuple[int, ...] = ()
    device_nic: tuple[int, ...] = ()
    device_host: tuple[int, ...] = ()
    switch: int = -1

    @property
    def n_devices(self) -> int:
        """Number of devices (NICs and the switch are nodes, not devices)."""
        return len(self.device_nic)

    @property
    def slice_size(self) -> int:
        """Devices in one slice."""
        return self.n_devices // self.n_slices

    def slice_of(self, device: int) -> int:
        """The slice a device belongs to.

            Examples
            --------
            >>> from netsim.network.topology import mesh
            >>> from netsim.network.topology import mesh
        >>> t = multislice(mesh((2, 2)), 2)
            >>> t.slice_of(3), t.slice_of(4)
            (0, 1)
        """
        return int(device) // self.slice_size

    def host_of(self, device: int) -> int:
        """The host a device belongs to (hosts numbered slice-major)."""
        return self.device_host[int(device)]

    def nic_of(self, device: int) -> int:
        """The graph node of the NIC a device sends through."""
        return self.device_nic[int(device)]

    @property
    def dcn_links(self) -> tuple[LinkId, ...]:
        """The DCN's links (PCIe and NIC links), in a fixed order."""
        n = self.n_devices
        return tuple(link for link in self.links if link[0] >= n or link[1] >= n)

    def route(self, src: int, dst: int, tie: int = 1) -> tuple[LinkId, ...]:
        """Inside a slice, its ICI route (:meth:`Topology.route`); between slices, through the DCN.

            Examples
            --------
            >>> from netsim.network.topology import mesh
            >>> from netsim.network.topology import mesh
        >>> t = multislice(mesh((2, 2)), 2)
            >>> [t.link_name(link) for link in t.route(1, 6)]
            ['(0,0,1)->nic0', 'nic0->switch', 'switch->nic1', 'nic1->(1,1,0)']
        """
        if self.slice_of(src) == self.slice_of(dst):
            return super().route(src, dst, tie)
        a, b = self.nic_of(src), self.nic_of(dst)
        return ((src, a, (0, 1)), (a, self.switch, (0, 1)), (self.switch, b, (0, -1)), (b, dst, (0, -1)))

    def coord(self, device: int) -> tuple[int, ...] | None:
        """Coordinates of a device, ``(slice, *its coordinates in the slice)``; None for a NIC or the switch."""
        return self.graph.nodes[device].get("coord")

    def _node_name(self, device: int) -> str:
        if device == self.switch:
            return "switch"
        if device >= self.n_devices:
            return f"nic{device - self.n_devices}"
        return "(" + ",".join(map(str, self.coord(device))) + ")"

    def link_name(self, link: LinkId) -> str:
        """As :meth:`Topology.link_name`; DCN links name the NIC or the switch, e.g. ``(0,1)->nic0``."""
        u, v, _ = link
        if u >= self.n_devices or v >= self.n_devices:
            return f"{self._node_name(u)}->{self._node_name(v)}"
        return super().link_name(link)

    def with_links(self, bandwidth_Bps: float | None = None, latency_s: float | None = None) -> SlicedTopology:
        """A copy with every ICI link's bandwidth and/or latency replaced (the DCN's links keep theirs)."""
        _check_link(bandwidth_Bps if bandwidth_Bps is not None else 1.0, latency_s or 0.0)
        graph = self.graph.copy()
        n = self.n_devices
        for u, v, data in graph.edges(data=True):
            if u < n and v < n:
                if bandwidth_Bps is not None:
                    data["bandwidth_Bps"] = float(bandwidth_Bps)
                if latency_s is not None:
                    data["latency_s"] = float(latency_s)
        return replace(self, graph=graph)

    def with_device(self, device: Mapping[str, float | int | None]) -> SlicedTopology:
        """A copy in which every device (not the NICs or the switch) has the given compute facts."""
        facts = check_device(device)
        graph = self.graph.copy()
        for node in range(self.n_devices):
            graph.nodes[node].update(facts)
        return replace(self, graph=graph)


def multislice(
    slice_topology: Topology,
    n_slices: int,
    *,
    figures: DcnFigures | None = None,
    host_shape: Sequence[int] | None = None,
    nics_per_host: int | None = None,
    nic_bandwidth_Bps: float | None = None,
    pcie_bandwidth_Bps: float | None = None,
    nic_latency_s: float = DCN_NIC_LATENCY_S,
    pcie_latency_s: float = DCN_PCIE_LATENCY_S,
    oversubscription: float = 1.0,
    name: str | None = None,
) -> SlicedTopology:
    """``n_slices`` copies of a slice joined through their hosts' NICs and one non-blocking switch.

    Parameters
    ----------
    slice_topology : Topology
        One slice (its links, wraparound and device facts are copied to every slice).
    n_slices : int
        How many slices.
    figures : DcnFigures, optional
        A generation's hosts and rates (:data:`netsim.network.dcn.DCN`); the arguments
        below override them. Without it: hosts of 4 devices (the slice's first axes),
        1 NIC of 25 GB/s, PCIe 16 GB/s.
    host_shape : sequence of int, optional
        The devices of one host as a tile of the slice's axes (clipped to the slice;
        axes left out are whole).
    nics_per_host : int, optional
        NICs per host.
    nic_bandwidth_Bps, pcie_bandwidth_Bps : float, optional
        One NIC's rate and one device's link to its host, one way, bytes per second.
    nic_latency_s, pcie_latency_s : float
        Their latencies (default: the ASSUMED 10 us and 1 us of :mod:`netsim.network.dcn`).
    oversubscription : float, default 1
        At least 1: every NIC link runs at 1/oversubscription of its rate.
    name : str, optional
        Default: the slice's name and ``x{n}slices``.

    Returns
    -------
    SlicedTopology

    Raises
    ------
    ValueError
        If ``n_slices`` is not a positive integer, the slice is already several
        slices or has links down, a rate is not positive and finite, or the host shape
        does not tile the slice.

    Examples
    --------
    >>> from netsim.network.topology import mesh
    >>> t = multislice(mesh((2, 2)), 2, host_shape=(1, 2), nics_per_host=1, nic_bandwidth_Bps=1e9)
    >>> t.n_devices, t.dims, t.n_slices, [t.host_of(d) for d in range(8)]
    (8, (2, 2, 2), 2, [0, 0, 1, 1, 2, 2, 3, 3])
    >>> t.coord(5), t.slice_of(5), t.graph.number_of_nodes()
    ((1, 0, 1), 1, 13)
    """
    if isinstance(n_slices, bool) or not isinstance(n_slices, int) or n_slices < 1:
        raise ValueError(f"slices must be a positive integer, got {n_slices!r}")
    if isinstance(slice_topology, SlicedTopology):
        raise ValueError(f"{slice_topology.name} is already {slice_topology.n_slices} slices; give one slice")
    if slice_topology.down_links:
        raise ValueError(f"{slice_topology.name} has links down; join whole slices, then take links down")
    if not (isinstance(oversubscription, (int, float)) and 1 <= oversubscription < math.inf):
        raise ValueError(f"oversubscription must be a number of at least 1 (1: a non-blocking switch), got {oversubscription!r}")
    figures = figures or DcnFigures((2, 2), 1, 25e9, 1.6e10, 6.25e9, "no generation: netsim's defaults")
    nic_rate = (figures.nic_bandwidth_Bps if nic_bandwidth_Bps is None else nic_bandwidth_Bps) / oversubscription
    pcie_rate = figures.pcie_bandwidth_Bps if pcie_bandwidth_Bps is None else pcie_bandwidth_Bps
    _check_link(nic_rate, nic_latency_s)
    _check_link(pcie_rate, pcie_latency_s)
    nics = figures.nics_per_host if nics_per_host is None else nics_per_host
    if isinstance(nics, bool) or not isinstance(nics, int) or nics < 1:
        raise ValueError(f"nics_per_host must be a positive integer, got {nics!r}")
    dims = tuple(slice_topology.dims)
    tile = _host_tile(dims, tuple(host_shape) if host_shape is not None else _oriented(dims, tuple(figures.host_shape)))
    local_host, local_nic = _hosts(dims, tile, nics)
    m, hosts_per_slice, nics_per_slice = len(local_host), max(local_host) + 1, nics * (max(local_host) + 1)
    n = m * n_slices
    graph = nx.MultiDiGraph()
    for s in range(n_slices):
        for d, data in slice_topology.graph.nodes(data=True):
            facts = {k: v for k, v in data.items() if k != "coord"}
            graph.add_node(s * m + d, **facts, coord=(s, *data["coord"]), slice=s, host=s * hosts_per_slice + local_host[d])
    for s in range(n_slices):
        for u, v, (axis, step), data in slice_topology.graph.edges(keys=True, data=True):
            graph.add_edge(s * m + u, s * m + v, key=(axis + 1, step), **data)
    n_nics = nics_per_slice * n_slices
    switch = n + n_nics
    for k in range(n_nics):
        graph.add_node(n + k, kind="nic", slice=k // nics_per_slice, host=k // nics)
    graph.add_node(switch, kind="switch")
    device_nic = tuple(n + (d // m) * nics_per_slice + local_nic[d % m] for d in range(n))
    for d, nic in enumerate(device_nic):
        graph.nodes[d]["nic"] = nic
        graph.add_edge(d, nic, key=(0, 1), bandwidth_Bps=float(pcie_rate), latency_s=float(pcie_latency_s))
    for k in range(n_nics):
        graph.add_edge(n + k, switch, key=(0, 1), bandwidth_Bps=float(nic_rate), latency_s=float(nic_latency_s))
        graph.add_edge(switch, n + k, key=(0, -1), bandwidth_Bps=float(nic_rate), latency_s=float(nic_latency_s))
    for d, nic in enumerate(device_nic):
        graph.add_edge(nic, d, key=(0, -1), bandwidth_Bps=float(pcie_rate), latency_s=float(pcie_latency_s))
    for key in ("calibration_offered", "calibration_in_force", "calibration_mode"):  # the slice's measured terms (its ICI's; the DCN's links stay nominal)
        if key in slice_topology.graph.graph:
            graph.graph[key] = slice_topology.graph.graph[key]
    chip = slice_topology.graph.graph.get("chip_axis")
    if chip is not None:
        graph.graph["chip_axis"] = chip + 1
    graph.graph["dcn"] = {
        "nic_bandwidth_Bps": float(nic_rate),
        "pcie_bandwidth_Bps": float(pcie_rate),
        "nic_latency_s": float(nic_latency_s),
        "pcie_latency_s": float(pcie_latency_s),
        "oversubscription": float(oversubscription),
        "host_shape": tile,
        "nics_per_host": nics,
        "devices_per_nic": m // nics_per_slice,
        "source": figures.source,
    }
    host = tuple(int(graph.nodes[d]["host"]) for d in range(n))
    return SlicedTopology(
        graph,
        (n_slices, *dims),
        (True, *slice_topology.wraparound),
        name or f"{slice_topology.name}x{n_slices}slices",
        n_slices=n_slices,
        slice_dims=dims,
        device_nic=device_nic,
        device_host=host,
        switch=switch,
    )


def _oriented(dims: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """A generation's host shape turned to hold the most chips of a slice of ``dims``: a host of 4x2 chips is one 2x4 host on a 2x4 slice.

    The order given wins a tie, and a turn must still tile the slice.

    Examples
    --------
    >>> _oriented((2, 4), (4, 2)), _oriented((4, 2), (4, 2)), _oriented((16, 16), (4, 2))
    ((2, 4), (4, 2), (4, 2))
    """
    best, most = shape, 0
    for turned in dict.fromkeys(itertools.permutations(shape)):
        tile = tuple(min(turned[a], d) if a < len(turned) else d for a, d in enumerate(dims))
        if not any(d % t for d, t in zip(dims, tile, strict=True)) and math.prod(tile) > most:
            best, most = turned, math.prod(tile)
    return best


def _host_tile(dims: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The host's tile on the slice's axes: clipped to the slice, axes not given whole; it must divide every axis."""
    if any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in shape):
        raise ValueError(f"host_shape must be positive integers, got {shape!r}")
    tile = tuple(min(shape[a], d) if a < len(shape) else d for a, d in enumerate(dims))
    if any(d % t for d, t in zip(dims, tile, strict=True)):
        raise ValueError(f"hosts of {'x'.join(map(str, tile))} devices do not tile a slice of {'x'.join(map(str, dims))}")
    return tile


def _hosts(dims: tuple[int, ...], tile: tuple[int, ...], nics: int) -> tuple[list[int], list[int]]:
    """Per device of one slice (row-major), its host and its NIC within the slice."""
    coords = np.indices(dims).reshape(len(dims), -1)
    grid = tuple(d // t for d, t in zip(dims, tile, strict=True))
    host = np.ravel_multi_index(tuple(c // t for c, t in zip(coords, tile, strict=True)), grid)
    per_host = math.prod(tile)
    place = np.ravel_multi_index(tuple(c % t for c, t in zip(coords, tile, strict=True)), tile)
    if per_host % nics:
        nics = math.gcd(per_host, nics)
    nic = host * nics + place * nics // per_host
    return [int(h) for h in host], [int(k) for k in nic]


def split_slices_name(name: str) -> tuple[str, int] | None:
    """``("tpu-v5e:4x4", 2)`` for ``"tpu-v5e:4x4x2slices"``; None for a name of one slice.

    Examples
    --------
    >>> split_slices_name("tpu-v5e:16x16x4slices"), split_slices_name("tpu-v5e:4x4")
    (('tpu-v5e:16x16', 4), None)
    """
    found = SLICES_SUFFIX.search(name)
    return None if found is None else (name[: found.start()], int(found.group(1)))


def dcn_axes(mesh: Mesh) -> tuple[str, ...]:
    """The mesh axes whose devices lie in different slices: a collective over one crosses the DCN.

    Examples
    --------
    >>> from netsim.network.topology import mesh
    >>> t = multislice(mesh((2, 2)), 2)
    >>> dcn_axes(Mesh({"dcn": 2, "x": 2, "y": 2}, t)), dcn_axes(Mesh({"x": 2, "dcn": 2, "y": 2}, t, axis_dims={"dcn": 0, "x": 1, "y": 2}))
    (('dcn',), ('dcn',))
    """
    topology = mesh.topology
    if not isinstance(topology, SlicedTopology):
        return ()
    slices = mesh.devices // topology.slice_size
    return tuple(name for a, name in enumerate(mesh.axis_names) if mesh.devices.shape[a] > 1 and (np.diff(slices, axis=a) != 0).any())


def hybrid_mesh(ici_mesh_shape: Mapping[str, int], dcn_mesh_shape: Mapping[str, int], topology: SlicedTopology) -> Mesh:
    """A mesh laid as JAX's ``create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape)`` lays it.

    Axis ``i`` has ``ici[i] * dcn[i]`` devices; along it, position ``dcn_index * ici[i] +
    ici_index`` (the DCN is the major factor); slice ``k`` sits at position ``k`` of the
    DCN mesh (row-major), and each slice's devices row-major over the ICI mesh.
    Both shapes name the same axes in the same order; give 1 where an axis has none.

    Raises
    ------
    ValueError
        If the names differ, the DCN sizes do not multiply to the slices, or the ICI
        sizes to one slice's devices.

    Examples
    --------
    >>> from netsim.network.topology import mesh
    >>> t = multislice(mesh((2, 2)), 2)
    >>> m = hybrid_mesh({"data": 1, "model": 4}, {"data": 2, "model": 1}, t)
    >>> m.devices.tolist(), dcn_axes(m)
    ([[0, 1, 2, 3], [4, 5, 6, 7]], ('data',))
    """
    names = list(ici_mesh_shape)
    if list(dcn_mesh_shape) != names:
        raise ValueError(f"the ICI and DCN mesh shapes must name the same axes in the same order, got {names} and {list(dcn_mesh_shape)}")
    ici, dcn = [int(ici_mesh_shape[a]) for a in names], [int(dcn_mesh_shape[a]) for a in names]
    if math.prod(dcn) != topology.n_slices:
        raise ValueError(f"the DCN mesh {dict(dcn_mesh_shape)} has {math.prod(dcn)} slices but {topology.name} has {topology.n_slices}")
    if math.prod(ici) != topology.slice_size:
        raise ValueError(f"the ICI mesh {dict(ici_mesh_shape)} has {math.prod(ici)} devices but a slice of {topology.name} has {topology.slice_size}")
    # blocks[slice position...][ici position...] -> interleave: axis i index = dcn_i * ici_i + ici_i'
    per_slice = np.arange(topology.n_devices).reshape(topology.n_slices, *ici)
    grid = per_slice.reshape(*dcn, *ici)
    k = len(names)
    order = [a for i in range(k) for a in (i, k + i)]
    devices = grid.transpose(order).reshape([d * i for d, i in zip(dcn, ici, strict=True)])
    return Mesh({a: d * i for a, d, i in zip(names, dcn, ici, strict=True)}, topology, devices=devices)
