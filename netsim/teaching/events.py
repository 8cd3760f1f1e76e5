"""A run as data for the browser player: devices, links, every transfer and arrival, the closed form beside it.

:func:`player_data` turns a finished :class:`~netsim.result.Result` into plain JSON-ready
data, from which the browser draws every moment itself (``netsim/teaching/web/player.js``):
no image is made on the server. Times are the engine's, so a slow link looks slow.

Two views, as for the other drawings (:mod:`netsim.teaching.views`):

``devices`` (up to 32 devices on a ring or a 2D grid)
    every device at its place (:mod:`netsim.teaching.layout_2d`), its buffer as slots;
    ``start`` and ``changes`` say which slot holds whose data when (from
    :class:`~netsim.teaching.replay.Replay`), ``transfers`` and ``hops`` when each chunk is on
    which link.
``axes`` (more devices, or three axes)
    one row per axis and direction, the share of its links busy over time
    (:func:`~netsim.teaching.timeline_axes.axis_rows`), and a few representative devices
    with the times their pieces arrived.

Examples
--------
>>> import numpy as np, netsim
>>> data = player_data(netsim.all_gather(np.arange(4), algorithm="ring"))
>>> data["view"], len(data["transfers"]["src"]), data["summary"]["kind"]
('devices', 12, 'exact')
>>> data["steps"][0]["caption"]
'step 1/3: every device sends its own block to its right neighbour'
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from netsim.analysis.why import analyse
from netsim.engine import transfer_columns
from netsim.engine.columns import hop_arrays
from netsim.network.units import format_bytes, format_seconds
from netsim.result import Result
from netsim.teaching.explain_scale import _Leaf
from netsim.teaching.formula import substituted
from netsim.teaching.layout_2d import layout
from netsim.teaching.palette import PALETTE
from netsim.teaching.replay import Replay
from netsim.teaching.steps import step_captions
from netsim.teaching.timeline_axes import axis_rows
from netsim.teaching.views import per_axis

__all__ = ["DIGITS", "player_data", "scale_captions", "summary_of"]

DIGITS = 6
"""Significant digits kept of every time and coordinate (the page shows at most 4)."""

_AXIS_BINS = 60
_REPRESENTATIVES = 4


def _r(values: Any) -> list[float]:
    """Floats rounded to :data:`DIGITS` significant digits (a smaller page, the same picture)."""
    return [float(f"{v:.{DIGITS}g}") for v in np.asarray(values, float).tolist()]


def summary_of(result: Result) -> dict[str, Any]:
    """The simulated time beside the algorithm's closed form: its terms with the numbers written in, its kind and why they differ.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> s = summary_of(netsim.all_gather(np.zeros((4, 2**14), np.float32), algorithm="ring"))
    >>> s["formula"], s["agree"]
    ('(n−1)·(α + s/B) = (4−1)·(1 us + 64 KiB/45 GB/s) = 7.36907 us', True)
    """
    a = analyse(result)
    e = a.estimate
    n = len(result.groups[0]) if result.groups else result.n_devices
    out: dict[str, Any] = {
        "time_s": result.time,
        "simulated": format_seconds(result.time),
        "collective": result.collective,
        "algorithm": result.algorithm,
        "topology": result.topology,
        "n_devices": result.n_devices,
        "group_size": n,
        "bytes_per_device": result.bytes_per_device,
        "bytes": format_bytes(result.bytes_per_device),
        "estimate_s": None,
        "formula": a.closed.note or "no closed form",
        "kind": "none",
        "agree": False,
        "regime": a.regime,
        "crossover_bytes": None,
        "latency_s": a.latency_s,
        "bandwidth_Bps": a.bandwidth_Bps,
    }
    if e is None:
        out["why"] = a.closed.note
        return out
    fixed = f" + fixed cost {format_seconds(e.fixed_s)}" if e.fixed_s else ""
    out.update(
        estimate_s=e.time_s,
        estimate=format_seconds(e.time_s),
        latency_term_s=e.latency_s + e.fixed_s,
        terms=f"latency {format_seconds(e.latency_s)} + bandwidth {format_seconds(e.bandwidth_s)}{fixed}",
        symbols=e.formula,
        formula=substituted(e.formula, n, a.latency_s, a.bandwidth_Bps, e.bytes_per_device, e.latency_s + e.bandwidth_s),
        kind=e.kind,
        source=e.source,
        ratio=a.ratio,
        crossover_bytes=e.crossover_bytes if math.isfinite(e.crossover_bytes) else None,
    )
    out["agree"] = a.ratio is not None and abs(a.ratio - 1) <= 1e-9
    ratio = f"simulated / estimate = {a.ratio:.6f}" if a.ratio is not None else ""
    if out["agree"]:
        out["why"] = "they agree: the run moves exactly what the formula counts (no link shared, no wait)" if e.kind == "exact" else f"{e.bounds}; {ratio}"
    elif e.bounds is not None:
        out["why"] = f"a bound ({e.bounds}): {a.why or ratio}"
    else:
        out["why"] = a.why or ratio
    return out


def _steps(result: Result, captions: list[str]) -> list[dict[str, Any]]:
    run = result.leaves[0]
    column = getattr(run.schedule.transfers, "step", None)  # the columnar schedule's steps, or read one by one
    steps = column if isinstance(column, np.ndarray) else np.fromiter((t.step for t in run.schedule.transfers), np.int64)
    sent, arrived = np.asarray(run.playback.sent_at, float), np.asarray(run.playback.arrived_at, float)
    out = []
    for k, caption in enumerate(captions):
        mine = steps == k
        start = float(sent[mine].min()) if mine.any() else 0.0
        end = float(arrived[mine].max()) if mine.any() else 0.0
        out.append({"caption": caption, "start": start, "end": end})  # exact: the player's step buttons land on them
    return out


def _devices_view(result: Result) -> dict[str, Any]:
    run = result.leaves[0]
    schedule, playback, topology = run.schedule, run.playback, result.topology_obj
    replay = Replay(schedule, playback)
    n = len(schedule.groups[0]) if schedule.groups else 1
    reducing = any(t.reduce for t in schedule.transfers)
    blocks = 1 + max([k[0] for h in replay.start for k in h] + [t.key[0] for t in schedule.transfers], default=-1)
    pieces = schedule.pieces
    cols = 1 if blocks <= 1 else blocks if blocks <= 4 else math.ceil(blocks / (2 if blocks <= 8 else math.ceil(math.sqrt(blocks))))
    place = layout(topology)
    grouped = sorted({d for g in schedule.groups for d in g})

    def slot(key: tuple[int, int]) -> int:
        return key[0] * pieces + key[1]

    def cell(sources: frozenset[int]) -> list[int]:
        return [len(sources), min(sources) if len(sources) == 1 else -1]

    start = [[[slot(k), k[0] % n, *cell(s)] for k, s in sorted(held.items())] if d in set(grouped) else [] for d, held in enumerate(replay.start)]
    changes = [[c.time, c.device, slot(c.key), c.key[0] % n, *cell(c.sources)] for c in replay._changes]
    transfers = schedule.transfers
    hop_transfer, link, hstart, hend, link_ids = hop_arrays(playback.hops)
    index = {lk: i for i, lk in enumerate(place.paths)}
    remap = np.array([index[lk] for lk in link_ids], np.int64) if len(link_ids) else np.zeros(0, np.int64)
    latency = [topology.link(lk)["latency_s"] for lk in place.paths]
    x0, x1, y0, y1 = place.extent
    return {
        "view": "devices",
        "extent": _r([x0, x1, y0, y1]),
        "box": _r(place.box),
        "devices": [[d, *_r(place.positions[d])] for d in sorted(place.positions)],
        "grouped": grouped,
        "panels": [[label, *_r([lo, hi])] for label, lo, hi in place.panels],
        "links": [[u, v, *_r([*p.start, *p.control, *p.end, lat])] for ((u, v, _), p), lat in zip(place.paths.items(), latency, strict=True)],
        "blocks": blocks,
        "pieces": pieces,
        "cols": max(cols, 1),
        "reducing": reducing,
        "start": start,
        "changes": {"time": _r([c[0] for c in changes]), "cell": [c[1:] for c in changes]},
        "transfers": {
            "src": [t.src for t in transfers],
            "dst": [t.dst for t in transfers],
            "step": [t.step for t in transfers],
            "colour": [t.key[0] % n for t in transfers],
            "count": [len(s) for s in replay.carried],
            "sent": _r(playback.sent_at),
            "arrived": _r(playback.arrived_at),
        },
        "hops": {
            "transfer": np.asarray(hop_transfer, np.int64).tolist(),
            "link": remap[link].tolist() if len(link) else [],
            "start": _r(hstart),
            "end": _r(hend),
        },
    }


def _axes_view(result: Result) -> dict[str, Any]:
    run = result.leaves[0]
    rows = axis_rows(result, bins=_AXIS_BINS)
    arrived = np.asarray(run.playback.arrived_at, float)
    dst = np.asarray(transfer_columns(run.schedule.transfers)["dst"], np.int64)
    last = np.full(result.n_devices, -1.0)
    if len(dst):
        np.maximum.at(last, dst, arrived)
    receiving = np.flatnonzero(last >= 0)
    chosen: dict[int, str] = {}
    if len(receiving):
        for device, why in (
            (int(receiving[0]), "the first device"),
            (int(receiving[-1]), "the last device"),
            (int(receiving[np.argmin(last[receiving])]), "the first to finish"),
            (int(receiving[np.argmax(last[receiving])]), "the last to finish"),
        ):
            chosen.setdefault(device, why)
    representatives = [{"device": d, "why": why, "arrivals": _r(np.sort(arrived[dst == d]))} for d, why in list(chosen.items())[:_REPRESENTATIVES]]
    return {
        "view": "axes",
        "bins": _AXIS_BINS,
        "rows": [{"label": r.label, "links": r.links, "messages": r.messages, "share": _r(r.busy_share)} for r in rows],
        "representatives": representatives,
        "transfers": {"count": len(dst)},
    }


def scale_captions(result: Result) -> list[str]:
    """One line per step of a big run, from its totals (:mod:`netsim.teaching.explain_scale`): what :func:`step_captions` says device by device."""
    rows = _Leaf(result, 0).step_rows()
    k = len(rows)
    return [
        f"step {s + 1}/{k} ({row['phase'].replace('_', '-')}): {row['transfers']:,} transfers of {format_bytes(row['sizes'][1])},"
        f" up to {row['hops']} hop{'s' if row['hops'] != 1 else ''}; α–β cost {format_seconds(row['model'])}; last to arrive at device {row['straggler']}"
        for s, row in sorted(rows.items())
    ]


def player_data(result: Result) -> dict[str, Any]:
    """Everything the browser player draws of a run, as JSON-ready data (see the module's description).

    Raises
    ------
    ValueError
        If the result carries no topology.
    """
    if result.topology_obj is None:
        raise ValueError("this result carries no topology: run it with netsim.simulate or netsim.all_gather/psum_scatter/psum")
    topology = result.topology_obj
    big = per_axis(topology) or getattr(topology, "n_slices", 1) > 1
    captions = scale_captions(result) if big else step_captions(result)
    data = {
        "title": f"{result.scenario or result.collective}: {result.collective} with {result.algorithm} on {result.topology} ({result.n_devices} devices)",
        "time_s": result.time,
        "n_devices": result.n_devices,
        "group_size": len(result.groups[0]) if result.groups else 1,
        "palette": list(PALETTE),
        "steps": _steps(result, captions),
        "summary": summary_of(result),
    }
    data.update(_axes_view(result) if big else _devices_view(result))
    return data
