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
- per op: when it started and ended on the *critical device* (``start_s``, ``end_s``,
  ``device``: from the device's first send or compute step to its last arrival or compute
  step, so an op never starts there before the ops it reads end there), its first start
  and last end on any device (``first_start_s``, ``last_end_s``), the longest it took on
  one device (``time_s``), and, from :mod:`netsim.analysis.op_estimates`, its closed form
  and its kind (``exact``, ``lower_bound``, ``upper_bound``, ``none``), what bounds it
  (``compute``, ``HBM``, ``ICI`` or ``given``), a collective's algorithm and bytes per
  device, and one line on why it took what it took.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from netsim.analysis.op_estimates import TOLERANCE, OpEstimate, link_sharing, op_estimate, op_why
from netsim.analysis.program_times import program_times
from netsim.analysis.why import _t
from netsim.checks.program_memory import device_memory, module_fit
from netsim.columnar import index_dtype, signed_ints
from netsim.engine.columns import compute_columns
from netsim.network.calibration import in_force

if TYPE_CHECKING:
    from netsim.result import Result

__all__ = ["OpStats", "ProgramStats", "program_stats"]


@dataclass(frozen=True)
class OpStats:
    """One op of a program's run (seconds)."""

    name: str
    op: str
    start_s: float  # on the critical device (``device``)
    end_s: float
    time_s: float  # the longest on one device
    estimate_s: float | None
    bound: str
    estimate_kind: str = "none"
    algorithm: str | None = None
    bytes_per_device: int | None = None
    why: str = ""
    device: int | None = None
    first_start_s: float = 0.0  # on any device
    last_end_s: float = 0.0


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
    repeats: dict[str, Any] | None = None
    """How ``repeat:`` blocks were extended past the trips played (None: every trip played)."""
    launches_s: float = 0.0  # a calibrated run's fixed cost per collective, on the device that paid most of it (not in compute_s)
    symmetry: dict[str, Any] | None = None
    """Played on representatives (:mod:`netsim.programs.symmetry`): the shifts' axes, the devices played and how many
    each stands for (None: every device played)."""

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


def _start_skew(n_devices: int, device: np.ndarray, start: np.ndarray) -> float:
    """How far apart the devices started an op: the latest device's first send or step, less the earliest's.

    Examples
    --------
    >>> _start_skew(3, np.array([0, 1, 0]), np.array([1.0, 3.0, 0.5]))
    2.5
    """
    if not len(device):
        return 0.0
    first = np.full(n_devices, np.inf)
    np.minimum.at(first, device, start)
    touched = first[np.isfinite(first)]
    return float(touched.max() - touched.min())


def _not_exact(e: OpEstimate, skew_s: float) -> OpEstimate:
    """A collective's exact form where the run differs from it: no promise (kind ``none``), and why, when its devices started it apart.

    Examples
    --------
    >>> _not_exact(OpEstimate(1e-6, "exact", "ICI", "ring", 8, "f"), 2e-7).formula
    'f (every device starting at once: its devices started it up to 200 ns apart)'
    """
    from netsim.network.units import format_seconds

    if skew_s > TOLERANCE * (e.estimate_s or 0.0):
        reason = f"every device starting at once: its devices started it up to {format_seconds(skew_s)} apart"
    else:
        reason = "every device starting at once on free links: not this run's"
    return replace(e, kind="none", formula=f"{e.formula} ({reason})")


def _span_on_device(device: int | None, sends: tuple, arrivals: tuple, computes: tuple) -> tuple[float, float] | None:
    """An op's start and end on one device: its first send or compute step there, and its last arrival or compute step there.

    A device that only receives starts with the first send towards it; one that only sends
    ends with its last send's arrival. None when the op does nothing on the device.

    Examples
    --------
    >>> a = np.array
    >>> _span_on_device(1, (a([1, 0]), a([2.0, 1.0])), (a([0, 1]), a([3.0, 1.5])), (a([1]), a([4.0]), a([5.0])))
    (2.0, 5.0)
    >>> _span_on_device(2, (a([1]), a([2.0])), (a([2]), a([3.0])), (a([], int), a([]), a([]))) # receives only
    (2.0, 3.0)
    """
    if device is None:
        return None
    (src, sent), (dst, arrived), (where, started, ended) = sends, arrivals, computes
    mine_out, mine_in, mine_steps = src == device, dst == device, where == device
    if not (mine_out.any() or mine_in.any() or mine_steps.any()):
        return None
    starts = np.concatenate([sent[mine_out], started[mine_steps]])
    ends = np.concatenate([arrived[mine_in], ended[mine_steps]])
    start = float(starts.min()) if len(starts) else float(sent[mine_in].min())
    end = float(ends.max()) if len(ends) else float(arrived[mine_out].max())
    return start, end


def _sharing(playback: Any, lowered: Any) -> list[set[int]]:
    """Per op, the other ops on one of its links at the same time (:func:`netsim.analysis.op_estimates.link_sharing`)."""
    op_of = np.zeros(len(playback.sent_at), index_dtype(len(lowered.ops)))
    for k, record in enumerate(lowered.ops):
        op_of[record.transfers.start : record.transfers.stop] = k
    return link_sharing(playback.hops, op_of, len(lowered.ops))


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
    devices = np.asarray(compute_columns(schedule.computes)["device"], np.int64)
    facts = result.topology_obj.device(0)
    peak, hbm = facts["peak_flops"], facts["hbm_bandwidth_Bps"]
    ops = []
    src, dst = (signed_ints(schedule.transfers.columns()[k] if hasattr(schedule.transfers, "columns") else []) for k in ("src", "dst"))
    busy = {d: s.busy_s for d, s in playback.compute_units.items()}
    times = program_times(lowered, playback, result.time)
    critical = times.critical_device
    spans, estimates = [], []
    for record in lowered.ops:
        t, c = slice(record.transfers.start, record.transfers.stop), slice(record.computes.start, record.computes.stop)
        comm_s = float(arrived[t].max() - sent[t].min()) if len(record.transfers) else 0.0
        where, starts = np.concatenate([src[t], dst[t], devices[c]]), np.concatenate([sent[t], arrived[t], started[c]])
        spans.append(_span_on_devices(result.n_devices, where, starts, np.concatenate([sent[t], arrived[t], ended[c]])))
        e = op_estimate(record, lowered, result.topology_obj, peak, hbm, comm_s)
        if record.collective and e.kind == "exact" and e.estimate_s and abs(spans[-1][2] / e.estimate_s - 1) > TOLERANCE:
            e = _not_exact(e, _start_skew(result.n_devices, np.concatenate([src[t], devices[c]]), np.concatenate([sent[t], started[c]])))
        estimates.append(e)
    sharing = _sharing(playback, lowered)
    for k, record in enumerate(lowered.ops):
        t, c = slice(record.transfers.start, record.transfers.stop), slice(record.computes.start, record.computes.stop)
        first, last, longest = spans[k]
        here = _span_on_device(critical, (src[t], sent[t]), (dst[t], arrived[t]), (devices[c], started[c], ended[c]))
        start, end = here if here is not None else (first, last)
        e = estimates[k]
        why = op_why(longest, e, [lowered.ops[j].op.name for j in sorted(sharing[k])])
        ops.append(
            OpStats(
                record.op.name,
                record.op.op,
                start,
                end,
                longest,
                e.estimate_s,
                e.bound,
                e.kind,
                e.algorithm,
                e.bytes_per_device,
                why,
                critical if here is not None else None,
                first,
                last,
            )
        )
    checks = {name: {"difference": d, "tolerance": t} for name, (d, t) in run.checks.items()}
    return ProgramStats(
        result.scenario or "",
        result.topology,
        result.time,
        times.compute_s,
        times.communication_s,
        times.exposed_communication_s,
        times.critical_device,
        result.verified,
        result.verification,
        {"peak_flops": peak, "hbm_bandwidth_Bps": hbm, "compute_efficiency": in_force(result.topology_obj).compute_efficiency},
        _why(lowered, times.communication_s, times.exposed_communication_s, times.compute_s, result.time),
        ops,
        checks,
        _devices(result.n_devices, busy, playback.links),
        _memory(run, lowered, facts["hbm_capacity_bytes"]),
        repeats.to_dict() if (repeats := getattr(result.program, "repeats", None)) is not None else None,
        times.launches_s,
        _symmetry(lowered),
    )


def _symmetry(lowered: Any) -> dict[str, Any] | None:
    """What a run played on representatives played (None: every device)."""
    quotient = getattr(lowered, "quotient", None)
    if quotient is None:
        return None
    aliases = quotient.aliases
    played = int(aliases.kept.sum())
    return {
        "axes": list(aliases.axes),
        "devices_played": played,
        "devices": len(aliases.device),
        "each_stands_for": aliases.order,
        "transfers_played": len(lowered.schedule.transfers),
    }


def _memory(run: Any, lowered: Any, capacity: int | None) -> dict[str, Any]:
    """One device's HBM at its peak: an HLO module's buffers (its liveness pass), else the program's arrays."""
    module = getattr(run, "memory", None)
    if module is not None:
        return module_fit(module, capacity)
    return device_memory(lowered.program, lowered.arrays, lowered.mesh.shape, capacity)


def _devices(n: int, busy: dict[int, float], links: dict[Any, Any]) -> list[dict[str, float]]:
    """Per device: its compute unit's busy time and the busy time of the links leaving it (seconds)."""
    sending = [0.0] * n
    for link, stats in (links or {}).items():
        if link[0] < n:  # (a DCN's NICs and switch are not devices)
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
    return _t(seconds)
