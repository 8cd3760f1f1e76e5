"""Each step of a collective in words and in the α–β model, read from the run itself.

:func:`step_captions` says in one sentence what each step of the schedule does
(who sends which block to whom); the animation shows them. :func:`step_costs` gives
what each step costs in the α–β model (α the latency of a hop, B the bandwidth of a
link) beside its simulated span. :mod:`netsim.teaching.explain` tells the whole story
from both.

Everything is read from the schedule (``Transfer`` src/dst/key/reduce/step/phase),
the playback (bytes, routes, times) and :mod:`netsim.teaching.replay`; nothing is
written for one algorithm in particular.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from netsim.algorithms.schedule import Schedule
from netsim.algorithms.transfers import Transfer
from netsim.engine.link_model import effective_bandwidth
from netsim.network.calibration import in_force
from netsim.network.topology import Topology
from netsim.result import LeafRun, Result
from netsim.teaching.replay import Replay

__all__ = ["StepCost", "step_captions", "step_costs"]

_PHASE_NAMES = {"gather": "all-gather", "reduce_scatter": "reduce-scatter"}


@dataclass(frozen=True)
class StepCost:
    """What one step costs, in the α–β model and in the simulation.

    Attributes
    ----------
    step : int
    hops : int
        Most links any transfer of the step crosses.
    latency_s : float
        α part: the largest sum of hop latencies along one transfer's route.
    busiest_bytes : int
        Bytes that the most loaded link carries in this step.
    bandwidth_s : float
        β part: the largest bytes/bandwidth over the links of the step.
    started_s, finished_s : float
        Simulated: when the step's first transfer left, when its last one arrived.
    """

    step: int
    hops: int
    latency_s: float
    busiest_bytes: int
    bandwidth_s: float
    started_s: float
    finished_s: float

    @property
    def model_s(self) -> float:
        """α–β cost of the step: latency part plus bandwidth part."""
        return self.latency_s + self.bandwidth_s


@dataclass
class _Run:
    """One leaf's run with the look-ups every sentence needs."""

    leaf: LeafRun
    topology: Topology
    replay: Replay = field(init=False)
    multi_axis: bool = field(init=False)
    member: dict[int, tuple[int, int]] = field(init=False)
    by_step: list[list[int]] = field(init=False)

    def __post_init__(self) -> None:
        self.replay = Replay(self.leaf.schedule, self.leaf.playback)
        first = self.schedule.groups[0] if self.schedule.groups else ()  # a ppermute of perm: [] has no pair
        coords = [{self.topology.coord(d)[axis] for d in first} for axis in range(len(self.topology.dims))]
        self.multi_axis = self.schedule.pattern != "permute" and sum(len(c) > 1 for c in coords) > 1 and len(first) > 2
        self.member = {d: (g, i) for g, group in enumerate(self.schedule.groups) for i, d in enumerate(group)}
        self.by_step = [[] for _ in range(self.schedule.n_steps)]
        for index, t in enumerate(self.schedule.transfers):
            self.by_step[t.step].append(index)

    @property
    def schedule(self) -> Schedule:
        return self.leaf.schedule

    @property
    def n(self) -> int:
        return len(self.schedule.groups[0]) if self.schedule.groups else 0

    def owner(self, device: int, block: int) -> int:
        """The device block ``block`` of ``device``'s group belongs to (gathers: comes from)."""
        group = self.schedule.groups[self.member[device][0]]
        return group[block] if block < len(group) else device

    def arrived_in(self, step: int, device: int, key: tuple[int, int]) -> Transfer | None:
        """A transfer of ``step`` that brought ``key`` to ``device``, if any."""
        for index in self.by_step[step] if 0 <= step < len(self.by_step) else ():
            t = self.schedule.transfers[index]
            if t.dst == device and tuple(t.key) == key:
                return t
        return None


def _run_of(result: Result, leaf: int) -> _Run:
    if not 0 <= leaf < len(result.leaves):
        raise ValueError(f"leaf={leaf} is out of range: this result has {len(result.leaves)} leaf run(s)")
    if result.topology_obj is None:
        raise ValueError("this result carries no topology (topology_obj is None); run it with netsim.all_gather/psum_scatter/psum/simulate")
    return _Run(result.leaves[leaf], result.topology_obj)


# ---------------------------------------------------------------- sentences


def _offset(run: _Run, src: int, dst: int) -> str | None:
    """Where ``dst`` lies from ``src`` on a torus or mesh, by axis, when the groups span several axes
    (a ppermute's pairs: always, since a pair's devices are not neighbours by number)."""
    topology = run.topology
    if len(topology.dims) < 2 or not (run.multi_axis or run.schedule.pattern == "permute"):
        return None
    a, b = topology.coord(src), topology.coord(dst)
    steps = []
    for axis, (x, y, size) in enumerate(zip(a, b, topology.dims, strict=True)):
        k = (y - x) % size
        if k:  # the short way round on a ring; an axis without wraparound has only one way
            steps.append((axis, (k if k <= size // 2 else k - size) if topology.wraparound[axis] else y - x))
    if steps and steps[0][0] == 0 and getattr(topology, "n_slices", 1) > 1:  # axis 0 of slices joined by the DCN
        k = steps[0][1]
        return f"its peer {k:+d} slice{'s' if abs(k) > 1 else ''} away, over the DCN" if len(steps) == 1 else "a device of another slice, over the DCN"
    if len(steps) == 1 and abs(steps[0][1]) == 1:
        axis, k = steps[0]
        return f"its {'+' if k > 0 else '−'}1 neighbour along axis {axis}"
    return "the device " + ", ".join(f"{k:+d} along axis {axis}" for axis, k in steps)


def _whom(run: _Run, index: int) -> str:
    t = run.schedule.transfers[index]
    if t.src == t.dst:  # a ppermute pair (d, d)
        return "itself"
    n = run.n
    ahead = (run.member[t.dst][1] - run.member[t.src][1]) % n
    on_grid = _offset(run, t.src, t.dst)
    if on_grid is not None:
        return on_grid
    if run.schedule.pattern == "permute":
        shift = (t.dst - t.src) % run.topology.n_devices
        if shift == 1:
            return "its right neighbour"
        if shift == run.topology.n_devices - 1:
            return "its left neighbour"
        return f"the device {shift} places on"
    if n == 2:
        return "the other member of its group"
    if ahead == 1:
        return "its right neighbour"
    if ahead == n - 1:
        return "its left neighbour"
    return f"the member {ahead} places on in its group"


def _hops(hops: set[int], piece: str = "") -> str:
    """What goes in brackets after a destination: the piece, and how far it is when more than one hop."""
    notes = [piece] if piece else []
    if hops == {0}:
        notes.append("no link crossed")
    elif hops != {1}:
        notes.append(f"{next(iter(hops))} hops away" if len(hops) == 1 else f"{min(hops)} to {max(hops)} hops away")
    return f" ({', '.join(notes)})" if notes else ""


def _piece(run: _Run, piece: int) -> str:
    pieces = run.schedule.pieces
    if pieces == 1:
        return ""
    if pieces == 2:
        return ("first", "second")[piece] + " half"
    return f"piece {piece + 1} of {pieces}"


def _what(run: _Run, index: int) -> tuple[str, str]:
    """(verb, object) saying what transfer ``index`` sends, from the sender's point of view."""
    t = run.schedule.transfers[index]
    key = tuple(t.key)
    carried = run.replay.carried[index]
    came = run.arrived_in(t.step - 1, t.src, key)
    if t.reduce:
        if carried == frozenset({t.src}):
            return "sends", "its own share of one block"
        if came is not None:
            return "passes on", "its partial sum (what it received last step plus its own share)"
        return "passes on", "a partial sum"
    bundled = key in run.schedule.bundles
    if came is not None and not came.reduce:
        return "forwards", "the bundle it received last step" if bundled else "the block it received last step"
    if bundled:
        return "sends", "everything it has gathered so far as one bundle"
    if len(carried) == run.n and len(carried) > 1:
        return "sends", "its fully summed block"
    if carried == frozenset({t.src}):
        return "sends", "its own block"
    return "forwards", "a block it received earlier"


def _who(run: _Run, devices: set[int]) -> str:
    everyone = {d for g in run.schedule.groups for d in g}
    if devices == everyone:
        return "every device"
    names = sorted(devices)
    if len(names) == 1:
        return f"device {names[0]}"
    if len(names) <= 6:
        return "each of devices " + ", ".join(map(str, names[:-1])) + f" and {names[-1]}"
    return f"each of {len(names)} devices"


def _sentence(run: _Run, step: int) -> str:
    # (verb, object, reduce) -> (whom, piece) -> (senders, hop counts)
    clauses: dict[tuple[str, str, bool], dict[tuple[str, str], tuple[set[int], set[int]]]] = {}
    for index in run.by_step[step]:
        t = run.schedule.transfers[index]
        verb, obj = _what(run, index)
        targets = clauses.setdefault((verb, obj, t.reduce), {})
        senders, hops = targets.setdefault((_whom(run, index), _piece(run, t.key[1])), (set(), set()))
        senders.add(t.src)
        hops.add(len(run.leaf.playback.routes[index]))
    parts = []
    for (verb, obj, add), targets in clauses.items():
        by_who: dict[frozenset[int], list[tuple[str, str, set[int]]]] = {}
        for (whom, piece), (senders, hops) in targets.items():
            by_who.setdefault(frozenset(senders), []).append((whom, piece, hops))
        for senders, where in by_who.items():
            where = _whole_blocks(run, where)
            where.sort(key=lambda w: (w[0] != "its right neighbour", w[0], w[1]))
            whoms = {w for w, _, _ in where}
            if whoms == {"its right neighbour", "its left neighbour"} and len({p for _, p, _ in where}) == 1:
                piece = where[0][1]
                target = "both neighbours" + _hops(set().union(*(h for _, _, h in where)), piece)
            else:
                target = " and ".join(w + _hops(h, p) for w, p, h in where)
            tail = ", which adds it to its own copy" if add and len(where) == 1 else (", which add them to their own copies" if add else "")
            parts.append(f"{_who(run, set(senders))} {verb} {obj} to {target}{tail}")
    return "; ".join(parts) if parts else "nothing moves"


def _whole_blocks(run: _Run, where: list[tuple[str, str, set[int]]]) -> list[tuple[str, str, set[int]]]:
    """Merge the pieces of a block that all go to the same place into one entry for the whole block."""
    pieces = run.schedule.pieces
    by_whom: dict[str, list[tuple[str, str, set[int]]]] = {}
    for entry in where:
        by_whom.setdefault(entry[0], []).append(entry)
    merged = []
    for whom, entries in by_whom.items():
        if pieces > 1 and len(entries) == pieces:
            hops: set[int] = set().union(*(h for _, _, h in entries))
            merged.append((whom, "both halves" if pieces == 2 else f"all {pieces} pieces", hops))
        else:
            merged.extend(entries)
    return merged


def _step_title(run: _Run, step: int) -> str:
    phases = sorted({run.schedule.transfers[i].phase for i in run.by_step[step]})
    many = len({t.phase for t in run.schedule.transfers}) > 1
    where = f", {_PHASE_NAMES.get(phases[0], phases[0])} phase" if many and len(phases) == 1 else ""
    return f"step {step + 1}/{run.schedule.n_steps}{where}"


def step_captions(result: Result, leaf: int = 0) -> list[str]:
    """One sentence per step of the schedule, e.g. for the frames of an animation.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> for line in step_captions(netsim.all_gather(np.arange(4), algorithm="ring")):
    ...     print(line)
    step 1/3: every device sends its own block to its right neighbour
    step 2/3: every device forwards the block it received last step to its right neighbour
    step 3/3: every device forwards the block it received last step to its right neighbour
    """
    run = _run_of(result, leaf)
    return [f"{_step_title(run, s)}: {_sentence(run, s)}" for s in range(run.schedule.n_steps)]


# ---------------------------------------------------------------- costs


def step_costs(result: Result, leaf: int = 0) -> list[StepCost]:
    """The α–β cost and the simulated span of every step.

    The α–β cost of a step is the longest route's latency plus the busiest link's
    bytes over its bandwidth: on a contention-free ring that is α + s/B for a
    block of s bytes, and the costs of the steps add up to the simulated time.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> r = netsim.all_gather(np.zeros((4, 1000), np.uint8), algorithm="ring", topology=netsim.ring(4, 1e9, 1e-6))
    >>> [round(c.model_s * 1e6, 9) for c in step_costs(r)]
    [2.0, 2.0, 2.0]
    >>> round(sum(c.model_s for c in step_costs(r)) - r.time, 15)
    0.0
    """
    run = _run_of(result, leaf)
    playback, topology = run.leaf.playback, run.topology
    efficiency = in_force(topology).link_efficiency  # a calibrated run's links move at their effective rate
    costs = []
    for step, indices in enumerate(run.by_step):
        load: dict[tuple, int] = {}
        latency, hops = 0.0, 0
        for index in indices:
            route = playback.routes[index]
            hops = max(hops, len(route))
            latency = max(latency, sum(topology.link(link)["latency_s"] for link in route))
            for link in route:
                load[link] = load.get(link, 0) + playback.nbytes[index]
        times = {link: nbytes / effective_bandwidth(topology.link(link)["bandwidth_Bps"], efficiency) for link, nbytes in load.items()}
        busiest = max(times, key=times.get, default=None)
        costs.append(
            StepCost(
                step=step,
                hops=hops,
                latency_s=latency,
                busiest_bytes=load[busiest] if busiest is not None else 0,
                bandwidth_s=times[busiest] if busiest is not None else 0.0,
                started_s=min((playback.sent_at[i] for i in indices), default=0.0),
                finished_s=max((playback.arrived_at[i] for i in indices), default=0.0),
            )
        )
    return costs
