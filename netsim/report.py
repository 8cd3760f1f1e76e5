"""Turn a :class:`~netsim.result.Result` into what people read: rows for a table, or JSON.

Reports only read results; they never re-simulate.
"""

from __future__ import annotations

import json
from typing import Any

from netsim.result import Result
from netsim.units import format_bytes, format_seconds

__all__ = ["format_groups", "summary_rows", "sweep_rows", "to_json"]


def format_groups(groups: tuple[tuple[int, ...], ...], limit: int = 6) -> str:
    """Groups as text, shortened when there are many.

    Examples
    --------
    >>> format_groups(((0, 2), (3, 1)))
    '[[0, 2], [3, 1]]'
    >>> format_groups(((0, 1, 2, 3, 4, 5, 6, 7),))
    'one group of all 8 devices'
    """
    if len(groups) == 1 and groups[0] == tuple(range(len(groups[0]))):
        return f"one group of all {len(groups[0])} devices"
    shown = ", ".join(str(list(g)) for g in groups[:limit])
    more = f", ... ({len(groups)} groups of {len(groups[0])})" if len(groups) > limit else ""
    return f"[{shown}{more}]"


def summary_rows(result: Result) -> list[tuple[str, str]]:
    """Label/value pairs for the summary table of ``netsim run``."""
    s = result.summary()
    return [
        ("scenario", s["scenario"] or "-"),
        ("collective", s["collective"]),
        ("topology", s["topology"]),
        ("devices", str(s["devices"])),
        ("group layout", format_groups(result.groups)),
        ("algorithm", s["algorithm"]),
        ("steps / transfers", f"{s['steps']} / {s['transfers']}"),
        ("bytes per device", f"{format_bytes(s['bytes_per_device'])} ({s['bytes_per_device']} B)"),
        ("total bytes (S)", f"{format_bytes(s['total_bytes'])} ({s['total_bytes']} B)"),
        ("simulated time", format_seconds(s["time_s"])),
        ("algbw", f"{s['algbw_Bps'] / 1e9:.3f} GB/s"),
        ("busbw", f"{s['busbw_Bps'] / 1e9:.3f} GB/s"),
        ("verified", "yes, equals the NumPy reference of JAX's semantics" if s["verified"] else "no (verification off)"),
    ]


def to_json(result: Result) -> str:
    """The summary as one JSON object (times in seconds, sizes in bytes)."""
    data: dict[str, Any] = result.summary()
    return json.dumps(data, indent=2)


def sweep_rows(table: Any, limit: int = 40) -> tuple[list[str], list[list[str]], int]:
    """Header and rows of the summary table of ``netsim sweep``, and how many rows were left out.

    ``table`` is a sweep's results table (:func:`netsim.sweep.read_results`).

    Examples
    --------
    >>> import io
    >>> from netsim.sweep import read_results
    >>> table = read_results(io.StringIO("point,algorithm,time_s,estimate_s,ratio,regime,busbw_Bps,error\\n0,ring,2.5e-05,2.5e-05,1.0,latency,4.5e10,\\n"))
    >>> header, rows, left_out = sweep_rows(table)
    >>> header
    ['point', 'algorithm', 'time', 'estimate', 'ratio', 'regime', 'busbw', 'status']
    >>> rows
    [['0', 'ring', '25 us', '25 us', '1.000000', 'latency', '45.000 GB/s', 'ok']]
    """
    from netsim.sweep import RESULT_COLUMNS

    fields = [c for c in table.columns if c != "point" and (c not in RESULT_COLUMNS or c in ("algorithm", "topology"))]
    header = ["point", *fields, "time", "estimate", "ratio", "regime", "busbw", "status"]
    rows = []
    for record in table.head(limit).to_dict("records"):
        status = "ok" if _text(record, "error") == "-" else f"failed: {record['error']}"
        rows.append(
            [
                str(record["point"]),
                *(_text(record, f) for f in fields),
                _text(record, "time_s", format_seconds),
                _text(record, "estimate_s", format_seconds),
                _text(record, "ratio", lambda r: f"{r:.6f}"),
                _text(record, "regime"),
                _text(record, "busbw_Bps", lambda b: f"{b / 1e9:.3f} GB/s"),
                status,
            ]
        )
    return header, rows, max(0, len(table) - limit)


def _text(record: dict[str, Any], column: str, form: Any = str) -> str:
    value = record.get(column)
    return "-" if value is None or value != value else form(value)
