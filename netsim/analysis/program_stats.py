"""What a program's run did: its time, how busy compute and communication were, how much communication was exposed, and every op.

:func:`program_stats` reads a program's :class:`~netsim.result.Result` (from
:func:`netsim.run_program`) and never simulates.

- ``compute_s``: the busiest device's compute unit, seconds of work.
- ``communication_s``: the time during which at least one collective is in flight
  (from its first send to its last arrival).
- ``devices``: per device, its compute unit's busy time and that of the links leaving it.
- ``exposed_communication_s``: the time during which the *critical device* (the one
  whose compute unit finishes last) has its compute unit idle while a collective
  is in flight: communication that did not hide behind compute.
- per op: when it started (its first step on any device) and ended (its last),
  the longest it took on one device (from the device's first send or compute step
  to its last arrival or compute step),
  its closed form (the matmul roofline ``max(flops / peak_flops, bytes /
  hbm_bandwidth)`` per device; a collective's closed form from
  :mod:`netsim.analysis.closed_forms`, where there is one) and what bounds it:
  ``compute``, ``HBM`` or ``ICI`` (a collective matmul whose blocks take longer
  to arrive than to multiply is ``ICI``-bound).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from netsim.analysis.closed_forms.registry import estimate_collective
from netsim.analysis.why import nominal_link
from netsim.checks.program_memory import device_memory
from netsim.network.calibration import in_force
from netsim.semantics.program_values import itemsize

if TYPE_CHECKING:
    from netsim.result import Result

__all__ = ["OpStats", "ProgramStats", "program_stats"]


@dataclass(frozen=True)
class OpStats:
    """One op of a program's run (seconds)."""

    name: str
    op: str
    start_s: float
    end_s: float
    time_s: float  # the longest on one device
    estimate_s: float | None
    bound: str


@dataclass(frozen=True)
class ProgramStats:
    """A program's run in numbers (see the module docstring)."""

    name: str
    topology: str
    time_s: float
    compute_s: float
    communication_s: float
    exposed_communication_s: float
    critical_device: int | None
    verified: bool
    verification: str
    devices_compute: dict[str, float | None]
    why: str
    ops: list[OpStats] = field(default_factory=list)
    checks: dict[str, dict[str, float]] = field(default_factory=dict)
    devices: list[dict[str, float]] = field(default_factory=list)
    memory: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """As plain data, for JSON: the program's name under ``scenario``, as ``netsim run --json`` names a scenario's."""
        return {("scenario" if key == "name" else key): value for key, value in asdict(self).items()}


def _span_on_devices(n_devices: int, device: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[float, float, float]:
    """An op's first start and last end over the devices it touches, and the longest of its spans on one device.

    Each entry is something the op does on ``device[i]`` from ``start[i]`` to ``end[i]`` (a transfer
    leaving or arriving, a compute step). (0, 0, 0) for an op that does nothing.

    Examples
    --------
    >>> _span_on_devices(3, np.array([0, 2, 0]), np.array([1.0, 2.0, 4.0]), np.array([1.5, 3.0, 5.0]))
    (1.0, 5.0, 4.0)
    """
    if not len(device):
        return 0.0, 0.0, 0.0
    first, last = np.full(n_devices, np.inf), np.full(n_devices, -np.inf)
    np.minimum.at(first, device, start)
    np.maximum.at(last, device, end)
    touched = first <= last
    return float(first[touched].min()), float(last[touched].max()), float((last[touched] - first[touched]).max())


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def _idle(busy: list[tuple[float, float]], end: float) -> list[tuple[float, float]]:
    gaps, now = [], 0.0
    for start, stop in busy:
        if start > now:
            gaps.append((now, start))
        now = max(now, stop)
    if end > now:
        gaps.append((now, end))
    return gaps


def program_stats(result: Result) -> ProgramStats:
    """The numbers of a program's run.

    Examples
    --------
    >>> import netsim
    >>> s = program_stats(netsim.run_program("scenarios/programs/allgather_matmul.yaml"))
    >>> s.exposed_communication_s == s.communication_s, [o.bound for o in s.ops]
    (True, ['ICI', 'HBM'])
    """
    run = result.program
    if run is None:
        raise ValueError("not a program's result: run one with netsim.run_program")
    lowered = run.lowered
    playback = result.leaves[0].playback
    schedule = lowered.schedule
    sent, arrived = np.asarray(playback.sent_at, float), np.asarray(playback.arrived_at, float)
    started, ended = playback.computes.started_at, playback.computes.ended_at
    devices = np.array([c.device for c in schedule.computes], np.int64)
    facts = result.topology_obj.device(0)
    peak, hbm = facts["peak_flops"], facts["hbm_bandwidth_Bps"]
    ops, in_flight = [], []
    src, dst = (np.asarray(schedule.transfers.columns()[k] if hasattr(schedule.transfers, "columns") else [], np.int64) for k in ("src", "dst"))
    for record in lowered.ops:
        t, c = slice(record.transfers.start, record.transfers.stop), slice(record.computes.start, record.computes.stop)
        if len(record.transfers):
            in_flight.append((float(sent[t].min()), float(arrived[t].max())))
        start, end, longest = _span_on_devices(
            result.n_devices,
            np.concatenate([src[t], dst[t], devices[c]]),
            np.concatenate([sent[t], arrived[t], started[c]]),
            np.concatenate([sent[t], arrived[t], ended[c]]),
        )
        comm_s = (
            float(arrived[record.transfers.start : record.transfers.stop].max() - sent[record.transfers.start : record.transfers.stop].min())
            if len(record.transfers)
            else 0.0
        )
        estimate, bound = _estimate(record, lowered, result.topology_obj, peak, hbm, comm_s)
        ops.append(OpStats(record.op.name, record.op.op, start, end, longest, estimate, bound))
    busy = {d: s.busy_s for d, s in playback.compute_units.items()}
    critical = max(busy, key=lambda d: (float(ended[devices == d].max()), busy[d])) if busy else None
    communication = _union(in_flight)
    if critical is None:
        exposed = sum(e - s for s, e in communication)
    else:
        mine = _union([(float(s), float(e)) for s, e in zip(started[devices == critical], ended[devices == critical], strict=True)])
        exposed = _overlap(_idle(mine, result.time), communication)
    checks = {name: {"difference": d, "tolerance": t} for name, (d, t) in run.checks.items()}
    comm_s = sum(e - s for s, e in communication)
    return ProgramStats(
        result.scenario or "",
        result.topology,
        result.time,
        max(busy.values(), default=0.0),
        comm_s,
        exposed,
        critical,
        result.verified,
        result.verification,
        {"peak_flops": peak, "hbm_bandwidth_Bps": hbm, "compute_efficiency": in_force(result.topology_obj).compute_efficiency},
        _why(lowered, comm_s, exposed, max(busy.values(), default=0.0), result.time),
        ops,
        checks,
        _devices(result.n_devices, busy, playback.links),
        device_memory(lowered.program, lowered.arrays, lowered.mesh.shape, facts["hbm_capacity_bytes"]),
    )


def _devices(n: int, busy: dict[int, float], links: dict[Any, Any]) -> list[dict[str, float]]:
    """Per device: its compute unit's busy time and the busy time of the links leaving it (seconds)."""
    sending = [0.0] * n
    for link, stats in (links or {}).items():
        sending[link[0]] += stats.busy_s
    return [{"device": d, "compute_busy_s": busy.get(d, 0.0), "link_busy_s": sending[d]} for d in range(n)]


def _why(lowered: Any, comm_s: float, exposed_s: float, compute_s: float, time_s: float) -> str:
    """One line on where the time went and what overlapped."""
    if comm_s <= 0:
        return "no communication: the time is the busiest device's compute"
    hidden = comm_s - exposed_s
    parts = [f"{hidden / comm_s:.0%} of the {_us(comm_s)} of communication hides behind compute, {_us(exposed_s)} is exposed"]
    if any(r.collective_matmul for r in lowered.ops):
        parts.append("a collective matmul multiplies each block as it arrives instead of waiting for the whole gather")
    if compute_s > 0 and exposed_s > 0 and hidden < comm_s:
        parts.append(f"compute ({_us(compute_s)} on the busiest device) is {'shorter' if compute_s < comm_s else 'longer'} than the communication")
    return "; ".join(parts)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.4g} us"


def _estimate(record: Any, lowered: Any, topology: Any, peak: float | None, hbm: float | None, comm_s: float = 0.0) -> tuple[float | None, str]:
    """An op's closed form and what bounds it (``comm_s``: how long its own transfers took, for a collective matmul)."""
    op = record.op
    if record.collective:
        array = lowered.arrays[op.inputs[0]]
        nbytes = math.prod(array.local_shape(lowered.mesh.shape)) * itemsize(array.dtype)
        latency, bandwidth = nominal_link(topology)  # (the effective rate: calibrated runs' link efficiency applied)
        fixed = in_force(topology).collective_overhead_s
        try:
            closed = estimate_collective(
                op.op, record.algorithm, topology.dims, topology.wraparound, record.layout.groups, nbytes, latency, bandwidth, fixed_s=fixed
            )
        except (ValueError, KeyError):
            return None, "ICI"
        return (closed.estimate.time_s if closed.estimate is not None else None), "ICI"
    if record.seconds is not None:
        return record.seconds, "given"
    efficiency = getattr(record, "efficiency", 1.0)
    flops_s = record.flops / (peak if efficiency == 1 else peak * efficiency) if peak else 0.0
    bytes_s = record.bytes / hbm if hbm else 0.0
    compute = max(flops_s, bytes_s)
    if record.collective_matmul and comm_s > compute:  # its blocks arrive slower than it multiplies them
        return compute, "ICI"
    if flops_s >= bytes_s and efficiency != 1:  # the roofline says at which fraction of the peak it counted
        return compute, f"compute at {efficiency:.3g} of peak"
    return compute, "compute" if flops_s >= bytes_s else "HBM"
