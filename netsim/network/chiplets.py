"""Chips that show several devices: a torus of chips, each chip two devices joined on the chip.

A TPU7x (Ironwood) chip holds two TensorCores, and the compiler sees each as a device
of its own. netsim models such a slice as a grid of *devices* with one more axis than
the chips' torus: the chips' axes first, then a last axis of size 2, the device's
place on its chip (its *core*).

Device numbering
    Device ``d`` sits on chip ``d // 2`` as core ``d % 2``; chips are numbered
    row-major over their torus coordinates, as on any other slice. So the two devices
    of a chip are consecutive, a device's coordinates are ``(x, y, z, core)``, and
    :meth:`Topology.index <netsim.network.topology.Topology.index>` and
    :meth:`~netsim.network.topology.Topology.coord` work unchanged.

Links
    The two devices of a chip are joined by the chip's own link (one cable, both
    ways: the core axis never wraps), with its own bandwidth and latency. Between
    neighbouring chips each core has its own lane: core ``c`` of one chip to core
    ``c`` of the next, so a chip-to-chip cable is two lanes, one per core; a lane has
    the bandwidth and latency given for the chips' links. Routes are dimension-order
    as everywhere: the chips' axes first, then, on the destination chip, across to the
    other core. Wraparound on the chips' axes follows the generation's rule.

This module knows nothing of SimPy or collectives.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from netsim.network.topology import DEFAULT_LATENCY_S, Topology, _check_link, torus

__all__ = ["DEVICES_PER_CHIP", "chip_axis", "chip_torus"]

DEVICES_PER_CHIP = 2
"""Devices on one chip (TPU7x: two TensorCores, each a device)."""


def chip_torus(
    chip_dims: Sequence[int],
    wraparound: bool | Sequence[bool],
    bandwidth_Bps: float,
    chip_link_bandwidth_Bps: float,
    latency_s: float = DEFAULT_LATENCY_S,
    chip_link_latency_s: float = DEFAULT_LATENCY_S,
    name: str | None = None,
    device: Mapping[str, float | int | None] | None = None,
) -> Topology:
    """A torus of chips with two devices each, joined on the chip by their own link.

    Parameters
    ----------
    chip_dims : sequence of int
        Size of each axis of the chips' torus, e.g. ``(4, 4, 4)``.
    wraparound : bool or sequence of bool
        Whether each of the chips' axes closes into a ring.
    bandwidth_Bps : float
        One-way bandwidth of one lane between neighbouring chips (one core's share
        of a chip-to-chip link), bytes per second.
    chip_link_bandwidth_Bps : float
        One-way bandwidth of the link between the two devices of a chip.
    latency_s, chip_link_latency_s : float
        Per-hop latency of a lane and of the on-chip link, seconds.
    name : str, optional
        Label for reports; defaults to e.g. ``chips4x4x4x2``.
    device : mapping, optional
        Compute facts of every device (each half of a chip), as :func:`~netsim.network.topology.torus`.

    Returns
    -------
    Topology
        ``dims`` are ``(*chip_dims, 2)``; the last axis is the core and never wraps.

    Raises
    ------
    ValueError
        As :func:`~netsim.network.topology.torus`, or if an on-chip link parameter is
        not positive and finite.

    Examples
    --------
    >>> t = chip_torus((2, 2, 1), False, 45e9, 90e9)
    >>> t.n_devices, t.dims, t.wraparound
    (8, (2, 2, 1, 2), (False, False, False, False))
    >>> t.link((0, 1, (3, 1)))["bandwidth_Bps"], t.link((0, 2, (1, 1)))["bandwidth_Bps"]
    (90000000000.0, 45000000000.0)
    >>> [t.link_name(hop) for hop in t.route(0, 7)]
    ['(0,0,0,0)->(1,0,0,0)', '(1,0,0,0)->(1,1,0,0)', '(1,1,0,0)->(1,1,0,1)']
    """
    _check_link(chip_link_bandwidth_Bps, chip_link_latency_s)
    dims = tuple(chip_dims)
    wraps = (wraparound,) * len(dims) if isinstance(wraparound, bool) else tuple(wraparound)
    if len(wraps) != len(dims):
        raise ValueError(f"wraparound must be a bool or one bool per axis of {dims!r}, got {wraparound!r}")
    default = "chips" + "x".join(map(str, (*dims, DEVICES_PER_CHIP)))
    topology = torus((*dims, DEVICES_PER_CHIP), (*wraps, False), bandwidth_Bps, latency_s, name=name or default, device=device)
    core = len(dims)
    for _, _, key, data in topology.graph.edges(keys=True, data=True):
        if key[0] == core:
            data.update(bandwidth_Bps=float(chip_link_bandwidth_Bps), latency_s=float(chip_link_latency_s))
    topology.graph.graph["chip_axis"] = core
    return topology


def chip_axis(topology: Topology) -> int | None:
    """The axis of a device's place on its chip, or None if each chip is one device.

    Examples
    --------
    >>> from netsim.network.topology import torus
    >>> chip_axis(chip_torus((4,), True, 45e9, 90e9)), chip_axis(torus((4, 2)))
    (1, None)
    """
    return topology.graph.graph.get("chip_axis")
