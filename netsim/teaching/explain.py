"""A collective explained step by step, in words, from the run itself.

:func:`explain` turns a :class:`~netsim.result.Result` into text a student can
follow: for each step of the schedule, who sends which block to whom, what every
device holds afterwards, and what the step costs in the α–β model (α the latency
of a hop, B the bandwidth of a link), ending with the total next to the simulated
time and the algorithm's closed form. The sentences and the costs of each step
come from :mod:`netsim.teaching.steps`; nothing here is written for one algorithm
in particular; the closed form comes from the one registry of
:mod:`netsim.analysis.closed_forms`, as for ``netsim run``.
"""

from __future__ import annotations

import itertools

from netsim.algorithms.bundles import leaves
from netsim.algorithms.registry import ALGORITHMS
from netsim.analysis.why import leaf_estimates, run_link
from netsim.engine.link_model import effective_bandwidth
from netsim.network.calibration import in_force
from netsim.network.topology import Topology
from netsim.network.units import format_bytes, format_seconds
from netsim.result import Result
from netsim.teaching.explain_scale import SUMMARY_ABOVE, summary
from netsim.teaching.replay import Holdings
from netsim.teaching.steps import StepCost, _piece, _Run, _run_of, _sentence, _step_title, step_costs

__all__ = ["explain"]


# ---------------------------------------------------------------- the text

_STARTS_AND_ENDS: dict[str, tuple[str, ...]] = {
    "gather": ("Each device starts with its own block; at the end every device holds all {n} blocks of its group, block j coming from member j.",),
    "reduce_scatter": ("Each device starts with its own share of all {n} blocks; at the end member k holds block k summed over the whole group.",),
    "all_reduce": (
        "Each device starts with its own share of all {n} blocks; a reduce-scatter sums each block on one member, then an all-gather",
        "hands the sums to everyone: at the end every member holds the whole group's sum.",
    ),
}
"""Pattern name -> the introduction's lines on what its devices hold at the start and at the end (``{n}``: the group size).

A pattern not listed (``all_to_all``, ``permute``, a program's) gets none.
"""


def _uniform_links(topology: Topology) -> tuple[float, float] | None:
    efficiency = in_force(topology).link_efficiency  # a calibrated run's links move at their effective rate
    values = {(effective_bandwidth(topology.link(link)["bandwidth_Bps"], efficiency), topology.link(link)["latency_s"]) for link in topology.links}
    return values.pop() if len(values) == 1 else None


def _rate(bandwidth_Bps: float) -> str:
    return f"{bandwidth_Bps / 1e9:.6g} GB/s"


def _exact(seconds: float) -> str:
    return f"{format_seconds(seconds)} ({seconds!r} s)"


def _token(run: _Run, device: int, block: int, held: Holdings) -> str:
    """One buffer cell: whose data a block (each of its pieces) holds."""
    words = []
    for piece in range(run.schedule.pieces):
        sources = held[device].get((block, piece))
        if not sources:
            words.append("·")
        elif len(sources) == 1:
            words.append(str(next(iter(sources))))
        elif len(sources) == run.n:
            words.append("all")
        elif run.n <= 4:
            words.append("+".join(map(str, sorted(sources))))
        else:
            words.append(f"{len(sources)}/{run.n}")
    return words[0] if len(set(words)) == 1 else "|".join(words)


def _buffers(run: _Run, held: Holdings, devices: list[int]) -> list[str]:
    blocks = range(max((k for h in held for k, _ in h), default=-1) + 1)
    cells = [[_token(run, d, b, held) for b in blocks] for d in devices]
    width = max((len(c) for row in cells for c in row), default=1)
    label = max(len(f"device {d}") for d in devices)
    lines = [f"    {'block:':<{label}}  " + " ".join(f"{b:>{width}}" for b in blocks)]
    for d, row in zip(devices, cells, strict=True):
        lines.append(f"    {f'device {d}':<{label}}  " + " ".join(f"{c:>{width}}" for c in row))
    return lines


def _transfer_line(run: _Run, index: int) -> str:
    t = run.schedule.transfers[index]
    playback = run.leaf.playback
    block, piece = t.key
    owner = run.owner(t.src, block)
    carried = run.replay.carried[index]
    if t.reduce and len(carried) == 1:
        what = f"device {next(iter(carried))}'s share of block {block} (the part device {owner} ends up with); {t.dst} adds it in"
    elif t.reduce:
        what = f"partial sum of block {block} (the part device {owner} ends up with), shares of {', '.join(map(str, sorted(carried)))}; {t.dst} adds it in"
    elif len(carried) > 1:
        what = f"block {block}, summed over devices {', '.join(map(str, sorted(carried)))}"
    elif t.key in run.schedule.bundles:
        blocks = sorted({b for b, _ in leaves(t.key, run.schedule.bundles)})
        shown = ", ".join(map(str, blocks[:4])) + (", ..." if len(blocks) > 4 else "")
        what = f"bundle of {len(blocks)} blocks ({shown})"
    elif t.src == t.dst:  # a ppermute pair (d, d): the block stays where it is
        what = f"block {block} (device {t.src}'s data) to itself: it stays in place"
    else:
        what = f"block {block} (device {next(iter(carried))}'s data)"
    part = _piece(run, piece)
    hops = len(playback.routes[index])
    extra = [format_bytes(playback.nbytes[index])] + ([part] if part else []) + ([f"{hops} hops" if hops else "no link"] if hops != 1 else [])
    return f"    {t.src:>3} → {t.dst:<3} {what} [{', '.join(extra)}]"


def _cost_line(run: _Run, cost: StepCost, links: tuple[float, float] | None) -> str:
    if links is None:
        return (
            f"    α–β cost: longest route latency {format_seconds(cost.latency_s)} + busiest link {format_seconds(cost.bandwidth_s)}"
            f" = {format_seconds(cost.model_s)}"
        )
    bandwidth, latency = links
    alpha, hops = ("α", "") if cost.hops == 1 else (f"{cost.hops}·α", f"{cost.hops} × ")
    return (
        f"    α–β cost: {alpha} + bytes/B = {hops}{format_seconds(latency)} + {cost.busiest_bytes} B / {_rate(bandwidth)}"
        f" = {format_seconds(cost.model_s)}" + ("  (the busiest link carries several messages)" if _shared(run, cost.step) else "")
    )


def _shared(run: _Run, step: int) -> bool:
    seen: set = set()
    for index in run.by_step[step]:
        for link in run.leaf.playback.routes[index]:
            if link in seen:
                return True
            seen.add(link)
    return False


def _block_bytes(run: _Run) -> int:
    """The bytes of one block: its pieces' sizes added up (bundles, which carry several blocks, left out)."""
    sizes: dict[tuple[int, int], int] = {}
    for index, t in enumerate(run.schedule.transfers):
        if tuple(t.key) in run.schedule.bundles:
            continue
        sizes[tuple(t.key)] = max(sizes.get(tuple(t.key), 0), run.leaf.playback.nbytes[index])
    per_block: dict[int, int] = {}
    for (block, _), nbytes in sizes.items():
        per_block[block] = per_block.get(block, 0) + nbytes
    return max(per_block.values(), default=0)


def _intro(result: Result, run: _Run, links: tuple[float, float] | None) -> list[str]:
    schedule, n = run.schedule, run.n
    algorithm = ALGORITHMS.get(schedule.algorithm)
    about = f" ({algorithm.description})" if algorithm and algorithm.description else ""
    s = format_bytes(_block_bytes(run))
    groups = schedule.groups
    lines = [f"{result.collective} on {run.topology.name} with the {schedule.algorithm} algorithm{about}"]
    devices = len({d for g in groups for d in g})
    if schedule.pattern == "permute":
        pairs = ", ".join(f"{a}→{b}" for a, b in groups[:8]) + (", ..." if len(groups) > 8 else "")
        senders = "each sends its" if len(groups) == devices else "1 of them sends its" if len(groups) == 1 else f"{len(groups)} of them send their"
        to = "to another" if all(a != b for a, b in groups) else "to another or, paired with itself, keeps it"
        lines.append(f"{devices} devices; {senders} block (s = {s}) {to}: {pairs}.")
    else:
        lines.append(f"{devices} devices in {len(groups)} group{'s' if len(groups) > 1 else ''} of {n}; a block is {s} (s).")
    lines.extend(line.format(n=n) for line in _STARTS_AND_ENDS.get(schedule.pattern, ()))
    if schedule.pieces > 1:
        lines.append(f"Every block is cut into {schedule.pieces} pieces that travel as separate messages{_piece_routes(run)}.")
    if links is not None:
        lines.append(f"Links: B = {_rate(links[0])} in each direction, α = {format_seconds(links[1])} per hop.")
    else:
        lines.append("Links differ in bandwidth or latency; costs use each link's own.")
    lines.append("")
    lines.append("How to read the buffers: one column per block; a number is the device whose data the cell holds, · is empty,")
    lines.append("a+b is a partial sum of those devices' shares, k/n a sum of k of the n shares, 'all' the full sum, x|y the pieces of a block.")
    return lines


def _piece_routes(run: _Run) -> str:
    """Which ways the two halves of a block travel, read from the first link of every route they take."""
    if run.schedule.pieces != 2:
        return ""
    ways: dict[int, tuple[set, set]] = {}
    for index, t in enumerate(run.schedule.transfers):
        route = run.leaf.playback.routes[index]
        if route:
            ways.setdefault(t.key[0], (set(), set()))[t.key[1]].add(route[0][2])  # the link's (axis, direction)
    axes = [({a for a, _ in first}, {a for a, _ in second}) for first, second in ways.values()]
    if ways and all(len(f) == len(s) == 1 and f != s for f, s in axes):
        return " (the two halves of a block leave along different axes)"
    opposite = sum(not (first & second) for first, second in ways.values())
    if opposite == len(ways):
        return " (the two halves of a block go opposite ways)"
    if opposite == 0:
        return " (both halves of a block go the same way)" if all(len(a) == 1 for a, _ in ways.values()) else " (both halves of a block go the same ways)"
    return f" (the two halves go opposite ways for {opposite} of {len(ways)} blocks, the same way for the others)"


def _closed_form(result: Result, leaf: int) -> tuple[str, str]:
    """The leaf's closed form from the registry, in words, and its kind."""
    from netsim.analysis.across_slices import leaves_across_slices

    latency, bandwidth = run_link(result)
    per_leaf = leaf_estimates(result, latency, bandwidth)
    closed = (leaves_across_slices(result, per_leaf) or per_leaf)[leaf]  # groups across slices: the DCN's forms, as netsim run gives them
    e = closed.estimate
    if e is None:
        return closed.note, "none"
    what = {"exact": "closed form", "lower_bound": "lower bound", "upper_bound": "upper bound"}.get(e.kind, "estimate")
    return f"{what} for {closed.algorithm} on a {closed.geometry.describe()}: {e.formula}: {_exact(e.time_s)}", e.kind


LONGEST_STORY = 3000
"""Lines (about: a step's buffers and its sentences) past which a run is summarised rather than told step by step."""


def explain(result: Result, leaf: int = 0, max_devices: int = 16, summarise: bool | None = None) -> str:
    """The collective as a step-by-step story, with costs, ending with the total.

    Parameters
    ----------
    result : Result
        A simulated collective (from :func:`netsim.simulate`, :func:`netsim.all_gather`, ...).
    leaf : int, default 0
        Which array of a pytree input to explain.
    max_devices : int, default 16
        Transfers and buffers are listed for the first group, and at most this many of its devices.
        Runs on more than :data:`~netsim.teaching.explain_scale.SUMMARY_ABOVE` devices, or whose
        story would run past :data:`LONGEST_STORY` lines, are summarised by step, axis and
        device instead (:func:`~netsim.teaching.explain_scale.summary`).
    summarise : bool or None, default None
        True for that summary, False for the story step by step whatever the size; None
        chooses by the number of devices.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``leaf`` is out of range or the result carries no topology.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> text = explain(netsim.all_gather(np.arange(3), algorithm="ring"))
    >>> print(text.split("\\n\\n")[2])
    Start
        block:    0 1 2
        device 0  0 · ·
        device 1  · 1 ·
        device 2  · · 2
    """
    if summarise or (summarise is None and result.n_devices > SUMMARY_ABOVE):
        return summary(result, leaf)
    run = _run_of(result, leaf)
    links = _uniform_links(run.topology)
    schedule, playback = run.schedule, run.leaf.playback
    permute = schedule.pattern == "permute"
    if permute and all(t.src == t.dst for t in schedule.transfers):
        return _nothing_moves(result, run)
    shown_group = tuple(sorted({d for g in schedule.groups for d in g})) if permute else schedule.groups[0]
    devices = list(shown_group[:max_devices])
    others = 0 if permute else len(schedule.groups) - 1
    costs = step_costs(result, leaf)
    if summarise is None and len(schedule.transfers) + len(costs) * (len(devices) + 6) > LONGEST_STORY:  # thousands of lines: the summary says it better
        return summary(result, leaf)
    lines = _intro(result, run, links)
    lines += ["", "Start", *_buffers(run, run.replay.start, devices)]
    done = 0.0
    for step, cost in enumerate(costs):
        lines.append("")
        lines.append(f"{_step_title(run, step).capitalize()}: {_sentence(run, step)}.")
        shown = [i for i in run.by_step[step] if schedule.transfers[i].src in devices]
        for index in sorted(shown, key=lambda i: (shown_group.index(schedule.transfers[i].src), schedule.transfers[i].key[1])):
            lines.append(_transfer_line(run, index))
        if others:
            rest = "the other group does" if others == 1 else f"the other {others} groups do"
            lines.append(f"    ({rest} the same at the same time)")
        lines.append("  Buffers afterwards:")
        lines += _buffers(run, run.replay.after_step(step), devices)
        lines.append(_cost_line(run, cost, links))
        finished = max(done, cost.finished_s)
        lines.append(
            f"    simulated: the step's transfers left from {format_seconds(cost.started_s)} on; the last arrived at "
            f"{format_seconds(cost.finished_s)} (+{format_seconds(finished - done)})"
        )
        done = finished
    fixed = in_force(run.topology).collective_overhead_s if costs else 0.0  # paid once, before the first byte leaves
    model = fixed + sum(c.model_s for c in costs)
    lines += ["", "Total", f"  simulated time:                 {_exact(playback.time)}"]
    if fixed:
        lines.append(f"  fixed cost per collective (calibration: calibrated), paid before step 1: {_exact(fixed)}")
    steps_said = f"sum of the {len(costs)} step{'s' if len(costs) != 1 else ''}"
    lines.append(f"  α–β model, {'the fixed cost plus the ' + steps_said if fixed else steps_said}: {_exact(model)}")
    closed, kind = _closed_form(result, leaf)
    lines.append(f"  {closed}")
    if kind == "lower_bound":
        lines.append("  (a lower bound: this algorithm has no exact closed form on this layout; the simulated time is at least this)")
    if abs(model - playback.time) > 1e-9 * max(playback.time, 1e-300):
        less = "less" if playback.time < model else "more"
        lines.append(f"  The simulation takes {format_seconds(abs(model - playback.time))} {less} than the α–β model, because:")
        lines += [f"  - {reason}" for reason in _differences(run, costs)]
    if len(result.leaves) > 1:
        lines.append(f"  (this explains leaf {leaf} of {len(result.leaves)}; the leaves run one after another, {_exact(result.time)} in all)")
    return "\n".join(lines)


def _nothing_moves(result: Result, run: _Run) -> str:
    """The story of a ppermute that moves nothing: no pair (``perm: []``), or only pairs (d, d) of a device with itself."""
    pairs = run.schedule.groups
    heading = f"{result.collective} on {run.topology.name}: nothing crosses a link, and the simulated time is 0 s."
    if not pairs:
        what = "perm is empty: no device sends anything, so every device ends with zeros, as jax.lax.ppermute gives them."
    else:
        shown = ", ".join(f"{a}→{b}" for a, b in pairs[:8]) + (", ..." if len(pairs) > 8 else "")
        what = (
            f"Every pair of perm ({shown}) sends a device's block to itself: it stays where it is;"
            " the devices in no pair end with zeros, as jax.lax.ppermute gives them."
        )
    return "\n".join([heading, what, "", "Total", f"  simulated time: {_exact(run.leaf.playback.time)} (no step: nothing to move)"])


def _differences(run: _Run, costs: list[StepCost]) -> list[str]:
    """Why the simulation and the α–β model disagree, for the effects present in this run."""
    reasons = []
    if any(c.hops > 1 for c in costs):
        reasons.append("messages cross several links cut-through: a hop starts as soon as the head arrives, so the model's per-hop charges overlap")
    if any(_shared(run, c.step) for c in costs):
        reasons.append("messages that need the same link queue behind each other (the model charges the busiest link's bytes, not the order)")
    if any(later.started_s < earlier.finished_s for earlier, later in itertools.pairwise(costs)):
        reasons.append("each chunk moves on as soon as it has arrived, so consecutive steps overlap in time")
    return reasons or ["links or start times differ between devices, which the model does not see"]
