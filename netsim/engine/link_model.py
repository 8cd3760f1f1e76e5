"""The link model, written once: how long a message holds a link, and when it reaches the next.

A directed link serves one message at a time. A message holds it for its bytes over
the link's bandwidth (:func:`transmission_s`), but never finishes before its tail has
arrived over the previous link of its route; its head reaches the next link one
latency after it started there (cut-through forwarding) or after it ended
(store-and-forward), its tail one latency after it ended, and its destination takes
it in when its tail arrives. :func:`serve` is that rule for one message on one link,
and :func:`head_ready` the moment it implies for the analyses that read a playback
back. So an uncontended h-hop message of s bytes takes ``h * latency + s /
bandwidth`` cut-through, ``h * (latency + s / bandwidth)`` store-and-forward.

Every player reads this module: the process model's :class:`~netsim.engine.processes.Link`,
the fast player (:mod:`netsim.engine.fast`), and the compiled loop
(:mod:`netsim.engine.kernel`), which compiles these same functions with numba
(``njit(inline="always")(serve)``: numba compiles a plain Python function). They are
plain Python on floats and bools, so that one source gives the same floating-point
operations, in the same order, in each player: times agree bit for bit. (numba caches
the loop by ``kernel.py`` alone: after changing this module, touch ``kernel.py``.)

:class:`LinkModel` holds what the rule needs per link number: bandwidth and latency,
read afresh from a topology, and the forwarding mode. The bandwidth is the link's
*effective* rate (:func:`effective_bandwidth`): its nominal bandwidth times the link
efficiency of the topology's calibration in force, 1 unless a run asks for
``calibration: calibrated`` (:mod:`netsim.network.calibration`).

Examples
--------
A message of 1 MiB over 2 links of 2**30 B/s and 2**-20 s (1 MiB / 2**30 B/s = 2**-10 s):

>>> from netsim.network.topology import ring
>>> links = LinkModel.of(ring(4, bandwidth_Bps=2.0**30, latency_s=2.0**-20))
>>> route = (links.number[(0, 1, (0, 1))], links.number[(1, 2, (0, 1))])
>>> links.alone(2**20, route)[-1] == 2 * 2.0**-20 + 2.0**-10
True
>>> links.store_and_forward().alone(2**20, route)[-1] == 2 * (2.0**-20 + 2.0**-10)
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from netsim.engine.routes import link_rates
from netsim.network.calibration import efficiency_of, in_force
from netsim.network.topology import LinkId, Topology

__all__ = ["LinkModel", "effective_bandwidth", "head_ready", "serve", "transmission_s"]


def effective_bandwidth(nominal_Bps: float, efficiency: float) -> float:
    """The rate a link moves a long transfer at: its nominal bandwidth times the link efficiency.

    The efficiency is 1 under ``calibration: nominal`` (the rate is then the nominal
    bandwidth itself, bit for bit), a measured fraction under ``calibrated``
    (:mod:`netsim.network.calibration`).

    Examples
    --------
    >>> effective_bandwidth(45e9, 0.95), effective_bandwidth(45e9, 1.0)
    (42750000000.0, 45000000000.0)
    """
    return nominal_Bps if efficiency == 1 else nominal_Bps * efficiency


def transmission_s(nbytes: float, bandwidth_Bps: float) -> float:
    """How long a message of ``nbytes`` holds a link of ``bandwidth_Bps``: its bytes over the bandwidth.

    Examples
    --------
    >>> transmission_s(4096, 2.0**30)
    3.814697265625e-06
    """
    return nbytes / bandwidth_Bps


def serve(now: float, transmission: float, latency: float, tail_at: float, hop: int, last_hop: bool, cut_through: bool) -> tuple[float, float, float, float]:
    """One message served by one link, from ``now``: when the link is done with it, and when it goes on.

    Parameters
    ----------
    now : float
        When the link starts on the message, seconds.
    transmission : float
        How long its bytes hold the link (:func:`transmission_s`), seconds.
    latency : float
        The link's latency, seconds.
    tail_at : float
        When the message's tail reaches the end of the link before this one on its
        route (read only when ``hop > 0``).
    hop : int
        Which link of its route this is, 0 for the first.
    last_hop : bool
        Whether this link ends at the message's destination.
    cut_through : bool
        Cut-through forwarding (else store-and-forward).

    Returns
    -------
    end : float
        When the link is done with the message: ``now + transmission``, or its tail's
        arrival over the previous link if that is later.
    hold : float
        ``end - now``: the link is free again ``now + hold``.
    reach : float
        From ``now``, when the message reaches its next link (its head one latency
        after ``now`` cut-through; else, and at its destination, its tail,
        ``hold + latency``). Players schedule it at ``now + reach``.
    tail_at : float
        When its tail reaches the end of this link, ``end + latency`` (the next
        link's ``tail_at``).

    Examples
    --------
    The second link of a cut-through route, where the tail is still on its way:

    >>> end, hold, reach, tail = serve(1.0, 0.25, 0.5, 1.5, hop=1, last_hop=False, cut_through=True)
    >>> end, hold, reach, tail  # done when the tail came, not at 1.25; the head goes on at 1.5
    (1.5, 0.5, 0.5, 2.0)
    >>> serve(1.0, 0.25, 0.5, 1.5, hop=1, last_hop=True, cut_through=True)[2]  # delivered with its tail
    1.0
    """
    end = now + transmission
    if hop and tail_at > end:  # never done before its tail arrived (on its first link it left when it started)
        end = tail_at
    hold = end - now
    reach = latency if cut_through and not last_hop else hold + latency  # head goes on; else its tail
    return end, hold, reach, end + latency


def head_ready(start: float | np.ndarray, end: float | np.ndarray, latency: float | np.ndarray, cut_through: bool) -> float | np.ndarray:
    """When a message that held a link from ``start`` to ``end`` is ready at its next link.

    Its head, one ``latency`` after ``start`` with cut-through forwarding; else its
    tail, one ``latency`` after ``end``. Works on arrays of hops alike. It is the
    moment :func:`serve` schedules (``start + reach``), read back from a playback:
    equal for cut-through; for store-and-forward the player's ``start + (hold +
    latency)`` may differ from ``end + latency`` in the last bit.

    Examples
    --------
    >>> head_ready(1.0, 1.25, 0.5, cut_through=True), head_ready(1.0, 1.25, 0.5, cut_through=False)
    (1.5, 1.75)
    """
    return (start if cut_through else end) + latency


@dataclass(frozen=True)
class LinkModel:
    """Per link number, what :func:`serve` needs: bandwidth and latency; and the forwarding mode.

    Build it with :meth:`of`. Link number k is ``link_ids[k]``; ``bandwidth_Bps`` and
    ``latency_s`` are read-only float64 arrays by link number.

    Attributes
    ----------
    link_ids : tuple of LinkId
    bandwidth_Bps, latency_s : numpy.ndarray
    cut_through : bool
    number : dict
        Link id -> link number.
    """

    link_ids: tuple[LinkId, ...]
    bandwidth_Bps: np.ndarray
    latency_s: np.ndarray
    cut_through: bool = True
    number: dict[LinkId, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "number", {link: k for k, link in enumerate(self.link_ids)})

    @classmethod
    def of(cls, topology: Topology, link_ids: Sequence[LinkId] | None = None, *, cut_through: bool = True) -> LinkModel:
        """The links ``link_ids`` (default every link, in :attr:`Topology.links` order) of ``topology``, rates read afresh.

        Examples
        --------
        >>> from netsim.network.topology import ring
        >>> links = LinkModel.of(ring(4, bandwidth_Bps=1e9, latency_s=1e-6).degrade_link(0, 1, bandwidth_factor=0.5))
        >>> len(links.link_ids), sorted(set(links.bandwidth_Bps.tolist())), links.cut_through
        (8, [500000000.0, 1000000000.0], True)
        """
        ids = tuple(topology.links if link_ids is None else link_ids)
        bandwidth, latency = (np.array(v, np.float64) for v in link_rates(topology, list(ids)))
        if in_force(topology).link_efficiency != 1:  # calibrated: every link at its effective rate (the DCN's: nominal, never measured)
            bandwidth = np.array([effective_bandwidth(b, efficiency_of(topology, i)) for b, i in zip(bandwidth.tolist(), ids, strict=True)], np.float64)
        bandwidth.flags.writeable = latency.flags.writeable = False
        return cls(ids, bandwidth, latency, bool(cut_through))

    def store_and_forward(self) -> LinkModel:
        """The same links, store-and-forward."""
        return replace(self, cut_through=False)

    def alone(self, nbytes: int, route: Sequence[int], sent_at: float = 0.0) -> list[float]:
        """A message of ``nbytes`` on ``route`` (link numbers) with the links to itself: when it starts on each link, then when it arrives.

        The players' times for an uncontended message, bit for bit (each link starts it
        ``reach`` after the previous one did, as they schedule it).

        Examples
        --------
        >>> from netsim.network.topology import ring
        >>> links = LinkModel.of(ring(2, bandwidth_Bps=2.0**30, latency_s=2.0**-20))
        >>> links.alone(2**20, [0]) == [0.0, 2.0**-20 + 2.0**-10]
        True
        """
        now, tail_at, times = float(sent_at), float(sent_at), []
        for hop, link in enumerate(route):
            times.append(now)
            transmission = transmission_s(nbytes, float(self.bandwidth_Bps[link]))
            _, _, reach, tail_at = serve(now, transmission, float(self.latency_s[link]), tail_at, hop, hop == len(route) - 1, self.cut_through)
            now = now + reach
        return [*times, now]
