"""Turn a :class:`~netsim.result.Result` into what people read: rows for a table, or JSON.

Reports only read results; they never re-simulate.
"""

from __future__ import annotations

import json
from typing import Any

from netsim.result import Result
from netsim.units import format_bytes, format_seconds

__all__ = ["format_groups", "summary_rows", "to_json"]


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
        ("verified", _verified(s)),
    ]


def _verified(summary: dict[str, Any]) -> str:
    how = summary.get("verification") or ""
    if summary["verified"]:
        return "yes, " + (how or "equals the NumPy reference of JAX's semantics")
    return "no, " + how if how else "no (verification off)"


def to_json(result: Result) -> str:
    """The summary as one JSON object (times in seconds, sizes in bytes)."""
    data: dict[str, Any] = result.summary()
    return json.dumps(data, indent=2)
