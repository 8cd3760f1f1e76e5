"""Turn a :class:`~netsim.result.Result` into what people read: rows for a table, or JSON.

Reports only read results; they never re-simulate.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any

from netsim.analysis.stats import run_stats
from netsim.analysis.summary import summary
from netsim.analysis.why import analyse
from netsim.cli.json_text import dumps
from netsim.cli.records import critical_links_record, memory_record
from netsim.cli.tables import short_link_name
from netsim.cli.terms import calibration_record, calibration_rows, estimate_terms, shape_calibration_record, shape_calibration_rows
from netsim.network.units import format_bytes, format_seconds
from netsim.result import Result

__all__ = [
    "device_table",
    "devices_csv",
    "estimate_rows",
    "estimate_table",
    "estimate_to_dict",
    "explanation_rows",
    "format_groups",
    "link_table",
    "links_csv",
    "step_table",
    "summary_rows",
    "to_dict",
    "to_json",
    "what_if_rows",
]


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


ENGINE_WORDS = {
    "processes": "processes (a SimPy process per link, device, unit)",
    "fast": "fast (the same events, without the processes)",
}


def summary_rows(result: Result) -> list[tuple[str, str]]:
    """Label/value pairs for the summary table of ``netsim run``."""
    s = summary(result)
    return [
        ("scenario", s["scenario"] or "-"),
        ("collective", s["collective"]),
        ("topology", s["topology"]),
        ("devices", str(s["n_devices"])),
        ("group layout", format_groups(result.groups)),
        *([("mesh axes", ", ".join(result.axes))] if result.axes else []),
        ("algorithm", s["algorithm"]),
        ("engine", ENGINE_WORDS.get(s["engine"], s["engine"])),
        ("steps / transfers", f"{s['steps']} / {s['transfers']}"),
        ("bytes per device", f"{format_bytes(s['bytes_per_device'])} ({s['bytes_per_device']} B)"),
        ("total bytes (S)", f"{format_bytes(s['total_bytes'])} ({s['total_bytes']} B)"),
        ("simulated time", format_seconds(s["time_s"])),
        *calibration_rows(result.topology_obj),
        *explanation_rows(result),
        ("algbw", f"{s['algbw_Bps'] / 1e9:.3f} GB/s"),
        ("busbw", f"{s['busbw_Bps'] / 1e9:.3f} GB/s"),
        *memory_rows(result),
        ("verified", _verified(s)),
        *what_if_rows(result),
    ]


def what_if_rows(result: Result) -> list[tuple[str, str]]:
    """Rows for the faults and stragglers of a run (none if it had neither) and its critical path.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> r = netsim.all_gather(np.zeros((4, 8)), topology=netsim.ring(4).fail_link(1, 2), stragglers={0: 5e-6})
    >>> for label, value in what_if_rows(r):
    ...     print(f"{label}: {value}")
    faults: 1->2 down, 2->1 down
    stragglers: device 0 starts at 5 us
    critical path: device 0 starts at 5 us; 0->3, 3->2, 2->3, 3->0, 0->1
    """
    rows = []
    if result.faults:
        rows.append(("faults", ", ".join(result.faults)))
    if result.stragglers:
        rows.append(("stragglers", ", ".join(f"device {d} starts at {format_seconds(t)}" for d, t in sorted(result.stragglers.items()))))
    rows.append(("critical path", result.critical_path.describe()))
    return rows


def _verified(summary: dict[str, Any]) -> str:
    how = summary.get("verification") or ""
    if summary["verified"]:
        return "yes, " + (how or "equals the NumPy reference of JAX's semantics")
    return "no, " + how if how else "no (verification off)"


def _payload(nbytes: float) -> str:
    """A crossover payload: bytes as computed, and with a binary prefix.

    Examples
    --------
    >>> _payload(45000.000000000004), _payload(12.5)
    ('45000 B (43.95 KiB)', '12.5 B')
    """
    text = f"{nbytes:.6g} B"
    return text if nbytes < 1024 else f"{text} ({format_bytes(nbytes)})"


def _kind(e: Any) -> str:
    """The estimate's kind and, for a bound, what it bounds."""
    return f"{e.kind}: {e.bounds}" if e.bounds else e.kind


def _percent(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f} %"


def explanation_rows(result: Result) -> list[tuple[str, str]]:
    """Rows that put the closed forms beside the simulated time, and say why they differ.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> rows = dict(explanation_rows(netsim.all_gather(np.zeros((8, 2**16), np.float32), algorithm="ring")))
    >>> rows["simulated / estimate"], rows["regime"]
    ('1.000000', 'bandwidth-bound (latency and bandwidth terms equal at 45000 B (43.95 KiB) per device)')
    """
    if result.topology_obj is None:
        return []
    a = analyse(result)
    e = a.estimate
    rows = []
    if e is None:
        rows.append(("estimate (closed form)", a.closed.note))
    else:
        rows.append(("estimate (closed form)", estimate_terms(e)))
        rows.append(("estimate kind", _kind(e)))
        rows.append(("formula", f"{e.formula} on a {a.closed.geometry.describe()} [{e.source}]"))
        rows.append(("simulated / estimate", f"{a.ratio:.6f}" if a.ratio is not None else "-"))
    if a.regime == "nothing moves":
        rows.append(("regime", a.regime))
    elif a.regime is not None:
        crossover = a.crossover_bytes
        where = (
            f"latency and bandwidth terms equal at {_payload(crossover)} per device"
            if crossover is not None and math.isfinite(crossover)
            else "nothing scales with the payload"
        )
        rows.append(("regime", f"{a.regime} ({where})"))
    if a.book is not None:
        rows.append(("book estimate", f"{format_seconds(a.book.time_s)} = {a.book.formula}"))
    if a.book_bandwidth_s is not None:
        rows.append(("book V/(W_ici·N_axes)", f"{format_seconds(a.book_bandwidth_s)} (counts all of V, a member's own share too: not a bound)"))
    if a.bound_s is not None:
        rows.append(("bandwidth bound", f"{format_seconds(a.bound_s)} = α + R/(L·B) for any algorithm: reached {_percent(a.bound_fraction)}"))
    if a.why:
        rows.append(("why", a.why))
    return rows


def memory_rows(result: Result) -> list[tuple[str, str]]:
    """One row on the memory each device holds (the most any device held)."""
    if result.topology_obj is None:
        return []
    devices = run_stats(result).devices
    if not devices:
        return []
    inp = max(d.input_bytes for d in devices)
    out = max(d.output_bytes for d in devices)
    peak = max(d.peak_bytes for d in devices)
    flight = max(d.peak_in_flight_bytes for d in devices)
    factor = f" ({out / inp:.3g}x the input)" if inp else ""
    text = f"input {format_bytes(inp)}, output {format_bytes(out)}{factor}, peak held {format_bytes(peak)}, up to {format_bytes(flight)} in flight"
    return [("memory per device", text)]


def link_table(result: Result, limit: int = 5) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of the ``limit`` busiest links.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> headers, rows = link_table(netsim.all_gather(np.zeros((4, 1024), np.float32), algorithm="ring"), limit=1)
    >>> dict(zip(headers, rows[0]))["link"]
    '0->1'
    """
    headers = ["link", "bytes", "msgs", "busy", "busy %", "max queue", "waited"]
    topology = result.topology_obj
    rows = [
        [
            (short_link_name(u.link, topology.coord(u.link[0])) if max(u.link[0], u.link[1]) < topology.n_devices else None) or u.name,  # (a DCN link by name)
            *(format_bytes(u.bytes), str(u.messages), format_seconds(u.busy_s), _percent(u.utilisation)),
            *(str(u.longest_queue), format_seconds(u.wait_s)),
        ]
        for u in run_stats(result).busiest(limit)
    ]
    return headers, rows


def device_table(result: Result, limit: int = 16) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of per-device statistics (the first ``limit`` devices).

    ``peak`` is the most the device held at once (its chunks and receive buffers),
    ``in flight`` the most bytes on their way to it at once.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> headers, rows = device_table(netsim.all_gather(np.zeros((4, 256), np.float32), algorithm="ring"))
    >>> dict(zip(headers, rows[0]))["peak"]
    '4 KiB'
    """
    headers = ["device", "sent", "received", "done at", "input", "output", "peak", "in flight"]
    rows = [
        [
            d.name,
            format_bytes(d.bytes_sent),
            format_bytes(d.bytes_received),
            format_seconds(d.finish_s),
            format_bytes(d.input_bytes),
            format_bytes(d.output_bytes),
            format_bytes(d.peak_bytes),
            format_bytes(d.peak_in_flight_bytes),
        ]
        for d in run_stats(result).devices[:limit]
    ]
    return headers, rows


def step_table(result: Result, limit: int = 16) -> tuple[list[str], list[list[str]]]:
    """Headers and rows of per-step timing: first send, first and last device done, and the
    straggler (the device done last, when not all finished together).

    Examples
    --------
    >>> import numpy as np, netsim
    >>> headers, rows = step_table(netsim.all_gather(np.zeros((4, 256), np.float32), algorithm="ring"))
    >>> len(rows), rows[0][-1]
    (3, 'none')
    """
    stats = run_stats(result)
    multi = len(result.leaves) > 1
    headers = (["leaf"] if multi else []) + ["step", "phase", "started", "first done", "all done", "straggler"]
    rows = []
    for st in stats.steps[:limit]:
        together = st.end_s - st.first_done_s <= 1e-9 * abs(st.end_s)
        straggler = "none" if together or not 0 <= st.straggler < len(stats.devices) else stats.devices[st.straggler].name
        row = [str(st.step), st.phase, format_seconds(st.start_s), format_seconds(st.first_done_s), format_seconds(st.end_s), straggler]
        rows.append(([str(st.leaf)] if multi else []) + row)
    return headers, rows


def _clean(value: Any) -> Any:
    """NaN and infinity become None, so the JSON is strict."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_dict(result: Result) -> dict[str, Any]:
    """The summary, the estimates and all statistics as plain JSON-ready values."""
    data: dict[str, Any] = summary(result)
    data["output_sha256"] = result.output_digest  # a lazy output is not built for it: what defines it is hashed
    data["output_sha256_of"] = result.output_digest_of
    data["critical_links"] = critical_links_record(result.critical_path)
    data.update(calibration_record(result.topology_obj))
    if result.topology_obj is None:
        return data
    stats = run_stats(result)
    path = stats.critical_path
    data["memory"] = memory_record(stats.devices)
    data["critical_path"] = {
        "transfers": path.transfers,
        "hops": path.hops,
        "latency_s": path.latency_s,
        "transmission_s": path.transmission_s,
        "queueing_s": path.queueing_s,
        "straggle_s": path.straggle_s,
        "queued_on": [{"link": name, "wait_s": wait} for name, wait in path.queued_on],
    }
    data["totals"] = {
        "transfers": stats.transfers,
        "transfer_bytes": stats.transfer_bytes,
        "hop_bytes": stats.hop_bytes,
        "link_bytes": sum(u.bytes for u in stats.links),
        "max_route_hops": stats.max_route_hops,
    }
    data["devices"] = [_fields(d) for d in stats.devices]
    data["links"] = [{**_fields(u), "link": [u.link[0], u.link[1], list(u.link[2])]} for u in stats.links]
    data["steps"] = [{k: _clean(v) for k, v in _fields(st).items()} for st in stats.steps]
    data["step_timings"] = [{k: _clean(v) for k, v in _fields(st).items()} for st in stats.step_timings]
    if stats.transfers and not stats.step_timings:
        data["step_timings_note"] = "per-device step timings omitted: too many (see netsim.analysis.stats.STEP_DETAIL_LIMIT)"
    return data


def _fields(record: Any) -> dict[str, Any]:
    """A flat dataclass's fields as a new dict, in order (``dataclasses.asdict`` without its deep copies)."""
    values = getattr(record, "__dict__", None)
    return dict(values) if values is not None else {name: getattr(record, name) for name in record.__dataclass_fields__}


def to_json(result: Result) -> str:
    """The summary, estimates and statistics as one JSON object (times in seconds, sizes in bytes)."""
    return dumps(to_dict(result))


def _csv(headers: list[str], rows: list[list[Any]]) -> str:
    stream = io.StringIO()
    writer = csv.writer(stream, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows(rows)
    return stream.getvalue()


def links_csv(result: Result) -> str:
    """Every link of the run as CSV, busiest first (seconds and bytes, full precision).

    Examples
    --------
    >>> import numpy as np, netsim
    >>> lines = links_csv(netsim.all_gather(np.zeros((4, 1024), np.float32), algorithm="ring")).splitlines()
    >>> lines[0]
    'link,src,dst,axis,direction,bytes,messages,busy_s,utilisation,longest_queue,wait_s'
    >>> lines[1].split(",")[:7]
    ['0->1', '0', '1', '0', '1', '12288', '3']
    """
    headers = ["link", "src", "dst", "axis", "direction", "bytes", "messages", "busy_s", "utilisation", "longest_queue", "wait_s"]
    rows = [
        [u.name, u.link[0], u.link[1], u.link[2][0], u.link[2][1], u.bytes, u.messages, repr(u.busy_s), repr(u.utilisation), u.longest_queue, repr(u.wait_s)]
        for u in run_stats(result).links
    ]
    return _csv(headers, rows)


def devices_csv(result: Result) -> str:
    """Every device of the run as CSV.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> print(devices_csv(netsim.all_gather(np.zeros((2, 4), np.float32))).splitlines()[1].split(",")[:4])
    ['0', '0', '16', '16']
    """
    headers = ["device", "name", "bytes_sent", "bytes_received", "finish_s", "input_bytes", "output_bytes", "peak_bytes", "peak_in_flight_bytes"]
    rows = [
        [d.device, d.name, d.bytes_sent, d.bytes_received, repr(d.finish_s), d.input_bytes, d.output_bytes, d.peak_bytes, d.peak_in_flight_bytes]
        for d in run_stats(result).devices
    ]
    return _csv(headers, rows)


def _chip_link(shape: Any) -> str:
    if shape.chip_axis is None:
        return ""
    return f"; between a chip's two devices {shape.chip_link_bandwidth_Bps / 1e9:.6g} GB/s, {format_seconds(shape.chip_link_latency_s)}"


def _dcn_rows(scenario: Any) -> list[tuple[str, str]]:
    """The DCN's row for slices joined by it (docs/multislice.md), else none."""
    if scenario.topology_shape.slices <= 1:
        return []
    from netsim.analysis.across_slices import dcn_path

    p = dcn_path(scenario.topology_obj)
    text = (
        f"{p.nic_bandwidth_Bps / 1e9:.6g} GB/s a NIC one way, {p.devices_per_nic} devices a NIC, PCIe {p.pcie_bandwidth_Bps / 1e9:.6g} GB/s;"
        f" L = {format_seconds(p.latency_s)} chip to chip (assumed: no DCN latency is published)"
    )
    return [("DCN", text)]


def estimate_rows(scenario: Any, mine: Any) -> list[tuple[str, str]]:
    """Label/value pairs for ``netsim estimate``: the scenario's closed forms, without simulating."""
    shape = scenario.topology_shape
    e, b = mine.estimate, mine.book
    rows = [
        ("scenario", scenario.name),
        ("collective", scenario.collective.op),
        (
            "topology",
            f"{shape.name}: {shape.n_devices} devices"
            if len(shape.dims) == 1
            else f"{shape.name}: {'x'.join(map(str, shape.dims))} = {shape.n_devices} devices",
        ),
        ("links", f"{shape.bandwidth_Bps / 1e9:.6g} GB/s one way, {format_seconds(shape.latency_s)} per hop" + _chip_link(shape)),
        *_dcn_rows(scenario),
        *shape_calibration_rows(shape),
        ("group layout", mine.geometry.describe()),
        ("algorithm", scenario.algorithm or f"{scenario.resolved_algorithm} (the default)"),
    ]
    if e is None:
        rows.append(("estimate (closed form)", mine.note))
    else:
        rows += [
            ("estimate (closed form)", estimate_terms(e)),
            ("estimate kind", _kind(e)),
            ("formula", f"{e.formula} [{e.source}]"),
            (
                "regime",
                f"{e.regime} (latency and bandwidth terms equal at {_payload(e.crossover_bytes)} per device)" if math.isfinite(e.crossover_bytes) else e.regime,
            ),
        ]
    if b is not None:
        rows.append(("book estimate", f"{format_seconds(b.time_s)} = {b.formula}"))
    if mine.book_bandwidth_s is not None:
        rows.append(("book V/(W_ici·N_axes)", f"{format_seconds(mine.book_bandwidth_s)} (not a bound)"))
    if mine.bound_s is not None:
        rows.append(("bandwidth bound", f"{format_seconds(mine.bound_s)} = α + R/(L·B) for any algorithm"))
    return rows


def estimate_table(others: list[tuple[str, Any]], chosen: str) -> tuple[list[str], list[list[str]]]:
    """Headers and rows comparing every algorithm's closed form for the same collective and layout."""
    headers = ["algorithm", "estimate", "kind", "latency term", "bandwidth term", "regime", "formula"]
    rows = []
    for name, c in others:
        label = f"{name} *" if name == chosen else name
        e = c.estimate
        if e is None:
            rows.append([label, "-", "none", "-", "-", "-", c.note])
        else:
            rows.append([label, format_seconds(e.time_s), e.kind, format_seconds(e.latency_s), format_seconds(e.bandwidth_s), e.regime, e.formula])
    return headers, rows


def estimate_to_dict(scenario: Any, mine: Any, others: list[tuple[str, Any]]) -> dict[str, Any]:
    """What ``netsim estimate --json`` prints: the scenario's closed forms and every algorithm's.

    Examples
    --------
    >>> from netsim.analysis.why import estimate_scenario
    >>> from netsim.scenario import load_scenario
    >>> s = load_scenario("scenarios/allgather_ring8.yaml", build_topology=False)
    >>> d = estimate_to_dict(s, *estimate_scenario(s))
    >>> d["layout"], d["regime"], len(d["algorithms"]) > 3
    ('ring of 8', 'bandwidth-bound', True)
    """

    def one(c: Any) -> dict[str, Any]:
        e, b = c.estimate, c.book
        return {
            "algorithm": c.algorithm,
            "estimate_s": e.time_s if e else None,
            "estimate_kind": e.kind if e else "none",
            "estimate_bounds": e.bounds if e else None,
            "latency_term_s": e.latency_s if e else None,
            "bandwidth_term_s": e.bandwidth_s if e else None,
            **({"fixed_cost_s": e.fixed_s} if e and e.fixed_s else {}),
            "regime": e.regime if e else None,
            "crossover_bytes_per_device": _clean(e.crossover_bytes) if e else None,
            "formula": e.formula if e else None,
            "formula_source": e.source if e else None,
            "no_closed_form": c.note or None,
            "book_estimate_s": b.time_s if b else None,
            "book_formula": b.formula if b else None,
            "book_bandwidth_s": c.book_bandwidth_s,
            "bound_s": c.bound_s,
        }

    shape = scenario.topology_shape
    return {
        "scenario": scenario.name,
        "collective": scenario.collective.op,
        "n_devices": shape.n_devices,
        "layout": mine.geometry.describe(),
        **one(mine),
        "algorithms": [one(c) for _, c in others],
        "calibration": shape_calibration_record(shape, getattr(scenario, "calibration", "nominal")),
    }
