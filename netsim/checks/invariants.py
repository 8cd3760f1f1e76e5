"""Invariants every run must satisfy, checked after every playback.

They hold for any correct schedule on any topology, so a violation is a bug in
netsim (an algorithm, the engine or the output assembly), never a user mistake:
:class:`InvariantError` is an :class:`~netsim.engine.EngineError`, which the CLI
reports as an internal error (exit code 3).

``drained``
    Every transfer was sent and arrived (the event queue drained and every device
    finished), after the arrivals it waits for, at finite times.
``delivery``
    Every transfer crossed exactly the links of its route, once each and in order,
    from its source to its destination: nothing lost, duplicated or delivered to the
    wrong device. Chunks never leave their group.
``link bytes``
    What each link counted (bytes, messages, busy time) equals the sum of the
    crossings recorded on it, and its crossings never overlap (one message at a time).
``device bytes``
    At every device, bytes in on its links minus bytes it received equals bytes out
    on its links minus bytes it sent: what it forwarded. Every chunk is the size it
    started with.
``chunks``
    Replaying the schedule symbolically (each chunk as the set of group members whose
    data it carries), every device ends with every block it should hold, carrying
    each member's contribution exactly once: the owner's block for a gather, the
    whole group's for a reduction. For schedules that send bundles (gathers): every
    transfer leaves a source that holds its chunk or bundle by then (or all the
    parts it makes the bundle from), nothing reaches a device twice, and opening
    the bundles each device ends with gives every chunk it wants, once.
``compute``
    Every compute step started after the steps it waits for were done, lasted a finite
    time >= 0, and each device's compute unit ran one step at a time; every join was done
    the instant its last dependency was. (With compute steps, ``drained`` also reads a
    transfer's wait for a compute step, and the run's time is the last arrival or end.)

All checks are linear in the number of transfers and link crossings. :func:`check_playback`
runs them in that order; each lives in its own module: ``drained`` and ``delivery`` in
:mod:`netsim.checks.delivery`, ``link bytes`` and ``device bytes`` in
:mod:`netsim.checks.conservation`, ``chunks`` in :mod:`netsim.checks.chunks` (with
:mod:`netsim.checks.chunks_placed` and :mod:`netsim.checks.chunks_bundled`), all reading
the arrays of :mod:`netsim.checks.arrays`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

from netsim.checks.arrays import _Arrays
from netsim.checks.chunks import _PATTERNS, _check_chunks
from netsim.checks.computes import _check_computes
from netsim.checks.conservation import _check_device_bytes, _check_link_bytes
from netsim.checks.delivery import _check_delivery, _check_drained
from netsim.checks.errors import InvariantError
from netsim.engine import Playback, TransferLike
from netsim.network.topology import Topology

__all__ = ["InvariantError", "check_playback"]


def check_playback(
    topology: Topology,
    transfers: Sequence[TransferLike],
    buffers: Sequence[dict[Hashable, Any]],
    playback: Playback,
    *,
    groups: Sequence[Sequence[int]] | None = None,
    pattern: str | None = None,
    wanted: Callable[[int], Iterable[int]] | None = None,
    computes: Sequence[Any] = (),
) -> None:
    """Check every invariant of one playback; raise :class:`InvariantError` on the first broken one.

    Parameters
    ----------
    topology : Topology
        The topology played on.
    transfers : sequence of Transfer
        The transfers played.
    buffers : sequence of dict
        Each device's chunks at the start, as given to :func:`netsim.engine.play`.
    playback : Playback
        What ``play`` returned.
    groups : sequence of sequence of int, optional
        The collective's groups: chunks must stay in their group.
    pattern : str, optional
        ``"gather"``, ``"reduce_scatter"`` or ``"all_reduce"`` (keys ``(block, piece)``):
        enables the ``chunks`` check. Other patterns get the other checks only.
    wanted : callable, optional
        ``wanted(device)`` gives the blocks a device must hold at the end.
    computes : sequence of Compute, optional
        The compute steps played beside the transfers (a program's): enables the
        ``compute`` check.

    Raises
    ------
    InvariantError
        Naming the invariant and what broke it.

    Examples
    --------
    >>> import numpy as np
    >>> from netsim.engine import play
    >>> from netsim.algorithms.schedule import build_schedule
    >>> from netsim.network.topology import ring
    >>> s = build_schedule("gather", [[0, 1, 2]], "ring")
    >>> start = [{(d, 0): np.full(4, d)} for d in range(3)]
    >>> run = play(ring(3), s.transfers, start)
    >>> check_playback(ring(3), s.transfers, start, run, groups=s.groups, pattern="gather", wanted=lambda d: range(3))
    >>> run.hops = list(run.hops)[:-1]  # corrupt the playback: lose the last link crossing
    >>> check_playback(ring(3), s.transfers, start, run)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    netsim.checks.InvariantError: invariant 'delivery' violated: transfer #3 (0->1) crossed 0 link(s) [] but its route is 1 link(s) ['0->1']; ...
    """
    arrays = _Arrays(topology, transfers, playback, computes)
    _check_drained(transfers, playback, arrays)
    _check_computes(arrays)
    _check_delivery(transfers, groups, arrays)
    _check_link_bytes(playback, arrays)
    _check_device_bytes(transfers, buffers, playback, arrays)
    if pattern in _PATTERNS and groups is not None and wanted is not None:
        _check_chunks(arrays, buffers, groups, pattern, wanted)
