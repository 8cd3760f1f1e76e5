"""A big run explained in a page: by phase, axis and step, with a few representative devices.

Beyond a few dozen devices a step-by-step story of every device would run to
millions of lines. :func:`summary` says what the run did in under a hundred
lines of under a hundred columns: the steps (the first and the last few, each
with its transfers, bytes, hops, simulated span and α–β cost), the traffic on
each axis and direction of the links, a few representative devices (the first,
the last, the first and the last to finish, where the critical path starts) and
the total beside the closed form. :func:`device_view` follows one device step by
step and :func:`step_view` opens one step. Everything is computed from the
engine's columns (arrays per transfer and per hop), never from one object per
transfer, so the pod (a million transfers) takes seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from netsim.algorithms.registry import ALGORITHMS
from netsim.algorithms.transfers import PHASES
from netsim.analysis.why import analyse
from netsim.engine import as_array, transfer_columns
from netsim.engine.columns import hop_arrays
from netsim.engine.link_model import effective_bandwidth
from netsim.network.calibration import in_force
from netsim.network.units import format_bytes, format_seconds
from netsim.result import Result

__all__ = ["SUMMARY_ABOVE", "device_view", "step_view", "summary"]

SUMMARY_ABOVE = 32
"""Runs on more devices than this are explained by :func:`summary` rather than device by device."""

STEPS_SHOWN = (8, 3)
"""A summary lists the first 8 and the last 3 steps of a longer schedule."""

DEVICE_LINES = 120
"""Most transfer lines :func:`device_view` prints."""


@dataclass
class _Leaf:
    """One leaf's transfers and hops as arrays, with each step's totals."""

    result: Result
    index: int

    def __post_init__(self) -> None:
        if not 0 <= self.index < len(self.result.leaves):
            raise ValueError(f"leaf={self.index} is out of range: this result has {len(self.result.leaves)} leaf run(s)")
        if self.result.topology_obj is None:
            raise ValueError("this result carries no topology (topology_obj is None); run it with netsim.all_gather/psum_scatter/psum/simulate")
        run = self.result.leaves[self.index]
        self.topology, self.schedule, playback = self.result.topology_obj, run.schedule, run.playback
        columns = transfer_columns(self.schedule.transfers)
        self.src, self.dst = np.asarray(columns["src"], np.int64), np.asarray(columns["dst"], np.int64)
        self.key_index, self.keys = np.asarray(columns["key_index"]), columns["keys"]
        self.size = as_array(playback.nbytes, np.int64)
        self.sent, self.arrived = as_array(playback.sent_at, float), as_array(playback.arrived_at, float)
        step = getattr(self.schedule.transfers, "step", None)
        self.step = step if isinstance(step, np.ndarray) else np.fromiter((t.step for t in self.schedule.transfers), np.int64, len(self.src))
        phase = getattr(self.schedule.transfers, "phase", None)
        self.phase_of_step: dict[int, str] = {}
        if isinstance(phase, np.ndarray):
            self.phase_of_step = {int(s): PHASES[int(p)] for s, p in zip(*_first_per(self.step, phase), strict=True)}
        else:
            for t in self.schedule.transfers:
                self.phase_of_step.setdefault(t.step, t.phase)
        hop_transfer, hop_link, _, _, link_ids = hop_arrays(playback.hops)
        self.link_ids = list(link_ids)
        self.hop_transfer, self.hop_link = hop_transfer, hop_link
        self.latency = np.array([self.topology.link(link)["latency_s"] for link in self.link_ids], float)
        efficiency = in_force(self.topology).link_efficiency  # a calibrated run's links move at their effective rate
        self.bandwidth = np.array([effective_bandwidth(self.topology.link(link)["bandwidth_Bps"], efficiency) for link in self.link_ids], float)
        n = len(self.src)
        self.hops = np.bincount(hop_transfer, minlength=n)[:n]
        self.route_latency = np.bincount(hop_transfer, weights=self.latency[hop_link], minlength=n)[:n]
        self.steps = sorted(self.phase_of_step)
        self.time = playback.time

    @property
    def n_devices(self) -> int:
        return self.topology.n_devices

    def name(self, device: int) -> str:
        if len(self.topology.dims) == 1:
            return str(device)
        return "(" + ",".join(map(str, self.topology.coord(device))) + ")"

    def step_rows(self) -> dict[int, dict[str, Any]]:
        """Per step: transfers, bytes, sizes, hops, span, straggler and α–β cost (longest route's latency + busiest link's bytes/B)."""
        code = np.searchsorted(np.asarray(self.steps), self.step)
        k = len(self.steps)
        count = np.bincount(code, minlength=k)
        nbytes = np.bincount(code, weights=self.size, minlength=k)
        order = np.argsort(code, kind="stable")
        bounds = np.searchsorted(code[order], np.arange(k))
        nonempty = count > 0
        at = bounds[nonempty]

        def per_step(values: np.ndarray, reduce: Any, empty: float) -> np.ndarray:
            out = np.full(k, empty, float)
            out[nonempty] = reduce.reduceat(values[order], at)
            return out

        smallest, largest = per_step(self.size, np.minimum, 0), per_step(self.size, np.maximum, 0)
        started, finished = per_step(self.sent, np.minimum, np.nan), per_step(self.arrived, np.maximum, np.nan)
        hops, latency = per_step(self.hops, np.maximum, 0), per_step(self.route_latency, np.maximum, 0.0)
        last = {int(c): int(t) for c, t in zip(*_last_arrival(code, self.arrived), strict=True)}
        # busiest link of each step: bytes per (step, link), over the link's bandwidth
        n_links = max(len(self.link_ids), 1)
        pair = code[self.hop_transfer] * n_links + self.hop_link
        distinct, inverse = np.unique(pair, return_inverse=True)
        load = np.bincount(inverse.reshape(-1), weights=self.size[self.hop_transfer])
        seconds = load / self.bandwidth[distinct % n_links]
        bandwidth_s = np.zeros(k)
        np.maximum.at(bandwidth_s, distinct // n_links, seconds)
        rows = {}
        for c, step in enumerate(self.steps):
            rows[step] = {
                "phase": self.phase_of_step[step],
                "transfers": int(count[c]),
                "bytes": int(nbytes[c]),
                "sizes": (int(smallest[c]), int(largest[c])),
                "hops": int(hops[c]),
                "started": float(started[c]),
                "finished": float(finished[c]),
                "straggler": int(self.dst[last[c]]) if c in last else -1,
                "model": float(latency[c] + bandwidth_s[c]),
            }
        return rows


def _first_per(keys: np.ndarray, values: np.ndarray) -> tuple[list[int], list[int]]:
    """Each distinct key (sorted) and the value at its first occurrence."""
    distinct, first = np.unique(keys, return_index=True)
    return distinct.tolist(), values[first].tolist()


def _last_arrival(code: np.ndarray, arrived: np.ndarray) -> tuple[list[int], list[int]]:
    """Each step code present and its transfer that arrived last (the first such in order)."""
    order = np.lexsort((-arrived, code))  # by step, latest arrival first (stable: lowest index first among equals)
    head = np.concatenate([[True], code[order][1:] != code[order][:-1]]) if len(order) else np.zeros(0, bool)
    return code[order][head].tolist(), order[head].tolist()


def _size(sizes: tuple[int, int]) -> str:
    """``8 KiB``; ``~42.67 KiB`` when they differ by less than 1 %; ``1 KiB-2 KiB`` when they differ more."""
    low, high = sizes
    if low == high:
        return format_bytes(low)
    return f"~{format_bytes(high)}" if high - low < 0.01 * high else f"{format_bytes(low)}-{format_bytes(high)}"


def _step_line(step: int, row: dict[str, Any], name: str) -> str:
    times = f"{format_seconds(row['finished']):>11} {format_seconds(row['model']):>11}"
    return f"  {step + 1:>5} {row['phase'][:14]:<14} {row['transfers']:>9,} {_size(row['sizes']):>17} {row['hops']:>4} {times} {name}"


def _axis_lines(leaf: _Leaf) -> list[str]:
    """Traffic per axis and direction of the links, from each link's statistics."""
    playback = leaf.result.leaves[leaf.index].playback
    totals: dict[tuple[int, int], list[float]] = {}
    for (_, _, (axis, direction)), stats in playback.links.items():
        entry = totals.setdefault((axis, direction), [0, 0, 0, 0.0, 0.0])
        entry[0] += 1
        entry[1] += stats.messages
        entry[2] += stats.bytes
        entry[3] = max(entry[3], stats.busy_s)
        entry[4] += stats.busy_s
    lines = ["By axis and direction of the links:", f"  {'axis':<8} {'links':>6} {'messages':>11} {'bytes':>12} {'busiest link':>13} {'mean utilisation':>17}"]
    for (axis, direction), (links, messages, nbytes, busiest, busy) in sorted(totals.items()):
        used = busy / links / leaf.time if leaf.time > 0 and links else 0.0
        where = f"{axis} {'+' if direction > 0 else '-'}"
        lines.append(f"  {where:<8} {int(links):>6,} {int(messages):>11,} {format_bytes(int(nbytes)):>12} {format_seconds(busiest):>13} {used:>16.1%}")
    return lines


def _device_facts(leaf: _Leaf) -> list[str]:
    """A few representative devices: the first, the last, the first and the last to finish, the critical path's origin."""
    n = leaf.n_devices
    finish = np.zeros(n)
    np.maximum.at(finish, leaf.dst, leaf.arrived)
    received = np.bincount(leaf.dst, weights=leaf.size, minlength=n)
    sent = np.bincount(leaf.src, weights=leaf.size, minlength=n)
    picks = {0: "the first device", n - 1: "the last device"}
    receivers = np.flatnonzero(np.bincount(leaf.dst, minlength=n))
    if len(receivers):
        picks.setdefault(int(receivers[np.argmin(finish[receivers])]), "the first to finish")
        picks.setdefault(int(np.argmax(finish)), "the last to finish")
    origin = leaf.result.critical_path.origin_device
    if origin is not None:
        picks.setdefault(int(origin), "critical path starts here")
    lines = ["Representative devices (netsim explain FILE --device D follows one step by step):"]
    for device in sorted(picks):
        lines.append(
            f"  device {_device(leaf, device)}: {format_bytes(int(sent[device]))} out, {format_bytes(int(received[device]))} in,"
            f" done at {format_seconds(float(finish[device]))}; {picks[device]}"
        )
    return lines


def summary(result: Result, leaf: int = 0) -> str:
    """A big run in under a hundred lines of under a hundred columns: steps, axes, devices, total.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> text = summary(netsim.all_gather(np.zeros((64, 256), np.float32)))
    >>> lines = text.splitlines()
    >>> lines[1]
    '64 devices in 1 group of 64; a block is 1 KiB (s).'
    >>> len(lines) < 100 and max(map(len, lines)) < 100
    True
    """
    data = _Leaf(result, leaf)
    schedule, n_steps = data.schedule, len(data.steps)
    groups = schedule.groups
    algorithm = ALGORITHMS.get(schedule.algorithm)
    about = f" ({algorithm.description})" if algorithm is not None and algorithm.description else ""
    lines = _wrapped(f"{result.collective} on {data.topology.name} with the {schedule.algorithm} algorithm{about}", 99)
    n = len(groups[0]) if groups else 0
    if schedule.pattern == "permute":
        lines.append(f"{len({d for g in groups for d in g})} devices; each sends its block (s = {format_bytes(result.bytes_per_device)}) to another.")
    else:
        block = result.bytes_per_device if schedule.pattern == "gather" else result.bytes_per_device // max(n, 1)
        plural = "s" if len(groups) != 1 else ""
        lines.append(f"{sum(len(g) for g in groups)} devices in {len(groups)} group{plural} of {n}; a block is {format_bytes(block)} (s).")
    lines.append(f"{len(data.src):,} transfers in {n_steps} steps, {format_bytes(int(data.size.sum()))} in all; simulated time {format_seconds(data.time)}.")
    lines.append(f"Too many devices to list one by one ({data.n_devices} > {SUMMARY_ABOVE}): a summary by step, axis and device.")
    rows = data.step_rows()
    first, last = STEPS_SHOWN
    shown = data.steps if n_steps <= first + last + 1 else data.steps[:first] + data.steps[-last:]
    lines += ["", f"{n_steps} steps (--step K opens one; α–β cost: longest route's α + busiest link's bytes/B):"]
    lines.append(f"  {'step':>5} {'phase':<14} {'transfers':>9} {'bytes each':>17} {'hops':>4} {'last in at':>11} {'α–β cost':>11} straggler")
    for k, step in enumerate(shown):
        if k == first and len(shown) < n_steps:
            lines.append(f"  ... {n_steps - len(shown)} more steps ...")
        row = rows[step]
        lines.append(_step_line(data.steps.index(step), row, data.name(row["straggler"]) if row["straggler"] >= 0 else "-"))
    phases: dict[str, list[int]] = {}
    for step in data.steps:
        phases.setdefault(rows[step]["phase"], []).append(step)
    if len(phases) > 1:
        lines += ["", "Phases:"]
        for phase, steps in phases.items():
            nbytes = sum(rows[s]["bytes"] for s in steps)
            span = f"{format_seconds(min(rows[s]['started'] for s in steps))} to {format_seconds(max(rows[s]['finished'] for s in steps))}"
            lines.append(f"  {phase}: {len(steps)} steps, {format_bytes(nbytes)}, {span}")
    lines += ["", *_axis_lines(data), "", *_device_facts(data)]
    lines += ["", "Total", f"  simulated time: {format_seconds(data.time)} ({data.time!r} s)"]
    lines.append(f"  α–β model, sum of the {n_steps} steps: {format_seconds(sum(r['model'] for r in rows.values()))}")
    analysis = analyse(result)
    if analysis.estimate is not None:
        e = analysis.estimate
        lines.append(f"  closed form: {format_seconds(e.time_s)}; simulated / closed form = {analysis.ratio:.6f}")
        lines += [f"    {part}" for part in _wrapped(f"{e.formula} [{e.source}]", 93)]
    if analysis.why:
        lines += [f"  {part}"[:99] for part in _wrapped(analysis.why)]
    lines += [f"  {part}" for part in _wrapped(f"critical path: {result.critical_path.describe()}", 95)]
    return "\n".join(lines)


def _wrapped(text: str, width: int = 95) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line] if line else lines


def _check_step(data: _Leaf, step: int) -> int:
    """The schedule's step for a 1-based step number, or ValueError."""
    if not data.steps:
        raise ValueError(f"--step {step}: this run has no step: nothing moves (netsim explain without --step says why)")
    if not 1 <= step <= len(data.steps):
        raise ValueError(f"--step {step}: this run has steps 1 to {len(data.steps)}")
    return data.steps[step - 1]


def _check_device(data: _Leaf, device: int) -> None:
    if not 0 <= device < data.n_devices:
        raise ValueError(f"--device {device}: this run has devices 0 to {data.n_devices - 1}")


def _transfer_text(data: _Leaf, i: int, device: int) -> str:
    key = data.keys[int(data.key_index[i])]
    bundle = " (a bundle)" if key in data.schedule.bundles else ""
    hops = f", {int(data.hops[i])} hops" if data.hops[i] != 1 else ""
    if data.src[i] == device:
        what = f"sends chunk {key}{bundle} to {_device(data, int(data.dst[i]))}"
    else:
        what = f"receives chunk {key}{bundle} from {_device(data, int(data.src[i]))}"
    timing = f"{format_seconds(float(data.sent[i]))} -> {format_seconds(float(data.arrived[i]))}"
    return f"    {what} [{format_bytes(int(data.size[i]))}{hops}] {timing}"[:99]


def _device(data: _Leaf, device: int) -> str:
    """``5``, or ``5 (0,1,1)`` on a grid."""
    return str(device) if len(data.topology.dims) == 1 else f"{device} {data.name(device)}"


def device_view(result: Result, device: int, step: int | None = None, leaf: int = 0) -> str:
    """One device's transfers, step by step (``step``: only that step, 1-based), when each left and arrived.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> print(device_view(netsim.all_gather(np.zeros((4, 2)), algorithm="ring"), 1, step=1))
    device 1 in all_gather on ring4 (ring): its transfers in step 1 of 3
      step 1/3 (gather)
        receives chunk (0, 0) from 0 [16 B] 0 ns -> 1.00036 us
        sends chunk (1, 0) to 2 [16 B] 0 ns -> 1.00036 us
    """
    data = _Leaf(result, leaf)
    _check_device(data, device)
    only = _check_step(data, step) if step is not None else None
    mine = np.flatnonzero((data.src == device) | (data.dst == device))
    if only is not None:
        mine = mine[data.step[mine] == only]
    mine = mine[np.lexsort((mine, data.sent[mine], data.step[mine]))]
    n_steps = len(data.steps)
    scope = f"in step {step} of {n_steps}" if step is not None else f"over {n_steps} steps"
    lines = [f"device {_device(data, device)} in {result.collective} on {data.topology.name} ({data.schedule.algorithm}): its transfers {scope}"]
    current = None
    for printed, i in enumerate(mine.tolist()):
        if printed >= DEVICE_LINES:
            lines.append(f"  ... {len(mine) - printed} more transfers (--step K shows one step)")
            break
        if data.step[i] != current:
            current = int(data.step[i])
            lines.append(f"  step {data.steps.index(current) + 1}/{n_steps} ({data.phase_of_step[current]})")
        lines.append(_transfer_text(data, i, device))
    if not len(mine):
        lines.append("  (no transfers)")
    return "\n".join(lines)


def step_view(result: Result, step: int, leaf: int = 0, examples: int = 8) -> str:
    """One step (1-based): its transfers, bytes, hops and axes, its span and α–β cost, and a few of its transfers.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> print(step_view(netsim.all_gather(np.zeros((4, 2)), algorithm="ring"), 3).splitlines()[0])
    step 3/3 of all_gather on ring4 (ring): gather, 4 transfers of 16 B, 1 hop each
    """
    data = _Leaf(result, leaf)
    chosen = _check_step(data, step)
    row = data.step_rows()[chosen]
    n_steps = len(data.steps)
    hops = f"{row['hops']} hop{'s' if row['hops'] != 1 else ''} at most" if row["hops"] != 1 else "1 hop each"
    lines = [
        f"step {step}/{n_steps} of {result.collective} on {data.topology.name} ({data.schedule.algorithm}): "
        f"{row['phase']}, {row['transfers']:,} transfers of {_size(row['sizes'])}, {hops}"
    ]
    lines.append(f"  simulated: from {format_seconds(row['started'])} to {format_seconds(row['finished'])}; α–β cost {format_seconds(row['model'])}")
    if row["straggler"] >= 0:
        lines.append(f"  last to receive: device {_device(data, row['straggler'])}")
    in_step = np.flatnonzero(data.step == chosen)
    on_step = np.isin(data.hop_transfer, in_step)
    axes: dict[tuple[int, int], int] = {}
    for number, count in zip(*np.unique(data.hop_link[on_step], return_counts=True), strict=True):
        axis = data.link_ids[int(number)][2]
        axes[axis] = axes.get(axis, 0) + int(count)
    if axes:
        lines.append("  link crossings by axis and direction: " + ", ".join(f"{a} {'+' if d > 0 else '-'}: {c:,}" for (a, d), c in sorted(axes.items())))
    lines.append(f"  {min(examples, len(in_step))} of its transfers (netsim explain FILE --device D --step {step} shows a device's):")
    for i in in_step[:examples].tolist():
        lines.append(_transfer_text(data, i, int(data.src[i])).replace("    sends", f"    {_device(data, int(data.src[i]))} sends"))
    return "\n".join(lines)
