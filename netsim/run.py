"""The steps every run shares: where it runs, which engine plays it, and play -> check.

A collective (:mod:`netsim.pipeline`), a program file and an HLO module
(:mod:`netsim.programs.run`, :mod:`netsim.programs.hlo.run`) are each lowered to a
:class:`~netsim.algorithms.schedule.Schedule` their own way (a collective's algorithm
plans it, a program's ops are lowered into one); from there they run the same way:
:func:`resolve_topology` says where, :func:`choose_engine` which engine, and
:func:`play_checked` plays the schedule and checks every invariant of the playback
(:func:`netsim.checks.invariants.check_playback`), compute steps included.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

from netsim.algorithms.schedule import Schedule
from netsim.checks.invariants import check_playback
from netsim.engine import ComputeUnit, Link, Playback, play
from netsim.network.presets import is_slice_name, tpu_slice
from netsim.network.topology import Topology, ring

__all__ = ["AUTO_PROCESSES_MAX_TRANSFERS", "ENGINE_MODES", "TopologyLike", "check_engine", "choose_engine", "play_checked", "resolve_topology", "stood_for"]

TopologyLike = Topology | str | Path | None

ENGINE_MODES = ("auto", "processes", "fast")
"""``engine=``: the model as SimPy processes, the fast player of the same events, or the first where it costs little."""

AUTO_PROCESSES_MAX_TRANSFERS = 20_000
"""With ``engine="auto"``, schedules of up to this many transfers play on the process model
(about 10 us of CPU per transfer, against 2 for the fast player: at most a fifth of a second more)."""


def check_engine(engine: str) -> str:
    """``engine`` if it is one of :data:`ENGINE_MODES`; a ``ValueError`` naming them otherwise.

    Examples
    --------
    >>> check_engine("fast")
    'fast'
    >>> check_engine("turbo")
    Traceback (most recent call last):
    ...
    ValueError: engine must be one of 'auto', 'processes', 'fast', got 'turbo'
    """
    if engine not in ENGINE_MODES:
        raise ValueError(f"engine must be one of {', '.join(map(repr, ENGINE_MODES))}, got {engine!r}")
    return engine


def choose_engine(engine: str, transfers: int, custom: bool = False) -> str:
    """The engine that plays a schedule of ``transfers`` transfers when the user asked for ``engine``.

    ``"auto"`` is the process model (the definition of netsim's timing) where it
    costs little, up to :data:`AUTO_PROCESSES_MAX_TRANSFERS` transfers, and
    whenever the user hands it a class of their own; the fast player above.

    Examples
    --------
    >>> choose_engine("auto", 112), choose_engine("auto", 2_095_104), choose_engine("fast", 112)
    ('processes', 'fast', 'fast')
    """
    if check_engine(engine) != "auto":
        return engine
    return "processes" if custom or transfers <= AUTO_PROCESSES_MAX_TRANSFERS else "fast"


def resolve_topology(topology: TopologyLike, n_devices: int | None) -> Topology:
    """The topology to run on: a default ring, a TPU slice, a bundled or file topology, or the object given.

    Parameters
    ----------
    topology : Topology, str, pathlib.Path or None
        None means a ring of ``n_devices`` with 45 GB/s and 1 us links; a string
        names a TPU slice (``"tpu-v5e:8x16"``, see :mod:`netsim.network.presets`), a file
        in ``topologies/`` (with or without ``.yaml``) or a path.
    n_devices : int or None
        The devices the run needs (the input's leading dimension): the topology must
        have exactly this many. None: any number (an HLO module checks its own).

    Examples
    --------
    >>> resolve_topology(None, 8).name
    'ring8'
    >>> resolve_topology("torus4x4", 16).dims
    (4, 4)
    >>> resolve_topology("tpu-v5e:8x4", 32).wraparound
    (False, False)
    """
    if topology is None:
        if n_devices is None:
            raise ValueError("topology must be given: a Topology, a TPU slice such as 'tpu-v5e:4x4' or a topology file")
        return ring(n_devices)
    if isinstance(topology, str) and is_slice_name(topology):
        topology = tpu_slice(topology)
    elif isinstance(topology, (str, Path)):
        from netsim.scenario.topology_spec import load_topology  # (the file formats, pydantic: only for a name or a file)

        topology = load_topology(topology)
    if not isinstance(topology, Topology):
        raise ValueError(f"topology must be a Topology, a topology name or a path, got {topology!r}")
    if n_devices is not None and topology.n_devices != n_devices:
        raise ValueError(f"input has {n_devices} devices on its leading axis but topology {topology.name} has {topology.n_devices}")
    return topology


def play_checked(
    topology: Topology,
    schedule: Schedule,
    buffers: Sequence[dict[Hashable, Any]],
    *,
    engine: str = "auto",
    cut_through: bool = True,
    start_s: Sequence[float] | None = None,
    link_class: type[Link] | None = None,
    compute_class: type[ComputeUnit] | None = None,
    pattern: str | None = None,
    wanted: Callable[[int], Iterable[int]] | None = None,
) -> Playback:
    """Play ``schedule`` (its transfers and compute steps) on ``topology`` from ``buffers``, then check the playback.

    Parameters
    ----------
    topology : Topology
    schedule : Schedule
        A collective's, or a lowered program's.
    buffers : sequence of dict
        Each device's chunks at the start.
    engine : {"auto", "processes", "fast"}
        See :func:`choose_engine`.
    cut_through, start_s, link_class, compute_class
        As :func:`netsim.engine.play` takes them.
    pattern, wanted : optional
        A collective's pattern and the blocks each device must end with: they enable
        the ``chunks`` invariant (see :func:`~netsim.checks.invariants.check_playback`).

    Returns
    -------
    Playback

    Raises
    ------
    netsim.checks.InvariantError
        If the playback breaks an invariant (a bug in netsim).

    Examples
    --------
    >>> import numpy as np
    >>> from netsim.algorithms.schedule import build_schedule
    >>> s = build_schedule("gather", [[0, 1, 2, 3]], "ring")
    >>> start = [{(d, p): np.full(2, d) for p in range(s.pieces)} for d in range(4)]
    >>> run = play_checked(ring(4), s, start, pattern="gather", wanted=lambda d: range(4))
    >>> run.engine, sorted(run.buffers[0]) == [(b, p) for b in range(4) for p in range(s.pieces)]
    ('processes', True)
    """
    chosen = choose_engine(engine, len(schedule.transfers), custom=link_class is not None or compute_class is not None)
    playback = play(
        topology,
        schedule.transfers,
        buffers,
        computes=schedule.computes,
        cut_through=cut_through,
        start_s=start_s,
        engine=chosen,
        link_class=link_class,
        compute_class=compute_class,
    )
    check_playback(topology, schedule.transfers, buffers, playback, groups=schedule.groups, pattern=pattern, wanted=wanted, computes=schedule.computes)
    aliases = getattr(schedule.transfers, "aliases", None)
    return playback if aliases is None else stood_for(playback, aliases)


def stood_for(playback: Playback, aliases: Any) -> Playback:
    """A run played on representatives (``aliases.device``, ``aliases.link``) with every link's and device's statistics
    those of the one that stands for it: what the whole run would count there."""
    links = aliases.every_link(playback.links, list(playback.links))
    return dataclasses.replace(
        playback, links=links, compute_units=aliases.every_device(playback.compute_units), dma_units=aliases.every_device(playback.dma_units)
    )
