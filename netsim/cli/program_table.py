"""The tables of ``netsim program``: its ops (when, how long, against what closed form, and why) and a program study's summary."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

from netsim.cli.console import clip_name
from netsim.network.units import format_bytes

__all__ = ["KIND_WORDS", "op_lines", "ops_table", "program_sweep_rows", "short_seconds"]

KIND_WORDS = {"exact": "exact", "lower_bound": "lower", "upper_bound": "upper", "none": "none"}
"""An estimate's kind in a narrow column (``lower``: a lower bound)."""


def short_seconds(t: float | None) -> str:
    """A time in the units ``netsim run`` uses, to four significant digits, for narrow columns.

    Examples
    --------
    >>> short_seconds(3.736e-1), short_seconds(9.7381e-6), short_seconds(0.0), short_seconds(None)
    ('373.6 ms', '9.738 us', '0 ns', '-')
    """
    if t is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(t) >= scale:
            return f"{t / scale:.4g} {unit}"
    return f"{t / 1e-9:.4g} ns"


def ops_table(stats: Any) -> Table:
    """A program's ops: what each is, start and end on the critical device, the longest on one device, the closed form and its kind.

    Examples
    --------
    >>> import netsim
    >>> from netsim.analysis.program_stats import program_stats
    >>> from netsim.cli.console import QuietConsole
    >>> stats = program_stats(netsim.run_program("scenarios/programs/allgather_matmul.yaml"))
    >>> QuietConsole(width=80).print(ops_table(stats))
    ops: start and end on device 0 (its compute ends last); time: the
    longest on one device
    op      what           start       end      time  estimate  kind
    ─────────────────────────────────────────────────────────────────
    gather  all_gather      0 ns  9.738 us  9.738 us  9.738 us  exact
    mm      matmul      9.738 us     12 us  2.265 us  2.265 us  exact
    """
    where = f"device {stats.critical_device} (its compute ends last)" if stats.critical_device is not None else "any device"
    title = f"ops: start and end on {where}; time: the longest on one device"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for header in ("op", "what", "start", "end", "time", "estimate", "kind"):
        text = header in ("op", "what", "kind")
        table.add_column(header, justify="left" if text else "right", no_wrap=not text or header == "op", overflow="ellipsis" if header == "op" else "fold")
    for op in stats.ops:
        times = (op.start_s, op.end_s, op.time_s, op.estimate_s) if op.device is not None else (op.first_start_s, op.last_end_s, op.time_s, op.estimate_s)
        table.add_row(clip_name(op.name, 40), op.op, *(short_seconds(t) for t in times), KIND_WORDS.get(op.estimate_kind, op.estimate_kind))
    return table


def op_lines(stats: Any) -> list[str]:
    """One line per op: what it is (algorithm, bytes per device, what bounds it) and why it took what it took.

    Examples
    --------
    >>> import netsim
    >>> from netsim.analysis.program_stats import program_stats
    >>> for line in op_lines(program_stats(netsim.run_program("scenarios/programs/allgather_matmul.yaml"))):
    ...     print(line)  # doctest: +ELLIPSIS
    gather (all_gather, multiaxis, 128 KiB per device, ICI-bound): as the estimate for a line of 4: ...
    mm (matmul, HBM-bound): as the estimate: 1.75 MiB at 810 GB/s of HBM
    """
    lines = []
    for op in stats.ops:
        facts = [op.op, *([op.algorithm] if op.algorithm else []), *([f"{format_bytes(op.bytes_per_device)} per device"] if op.bytes_per_device else [])]
        facts.append("given its time" if op.bound == "given" else f"{op.bound}-bound")
        lines.append(f"{clip_name(op.name)} ({', '.join(facts)}): {op.why}")
    return lines


def _cell_text(record: dict[str, Any], column: str, form: Any = str) -> str:
    value = record.get(column)
    return "-" if value is None or value != value else form(value)


def program_sweep_rows(table: Any, limit: int) -> tuple[list[str], list[list[str]], int]:
    """The summary rows of ``netsim sweep`` for a program study: every swept field (a topology too), then time,
    compute, communication in flight and exposed communication, in ``netsim run``'s units, and
    each point's status when one failed (the summary line counts them).

    A dotted field is headed by its last name (``params.B`` by ``B``); results.csv has every column.

    Examples
    --------
    >>> import io
    >>> from netsim.studies.sweep import read_results
    >>> csv = "point,params.B,topology,n_devices,time_s,compute_s,communication_s,exposed_communication_s,error\\n"
    >>> csv += "0,1024,tpu-v5e:4x4,16,2.5e-05,7.7e-06,1.8e-05,1.8e-05,\\n1,1024,tpu-v6e:4x4,16,1.5e-05,3.9e-06,1.1e-05,1.1e-05,\\n"
    >>> header, rows, left_out = program_sweep_rows(read_results(io.StringIO(csv)), 40)
    >>> header, rows[1]
    (['#', 'B', 'topology', 'time', 'compute', 'in flight', 'exposed'], ['1', '1024', 'tpu-v6e:4x4', '15 us', '3.9 us', '11 us', '11 us'])
    """
    from netsim.studies.program_sweep import PROGRAM_COLUMNS

    fields = [c for c in table.columns if c != "point" and c not in PROGRAM_COLUMNS]
    if "topology" in table.columns and table["topology"].nunique(dropna=False) > 1:
        fields.append("topology")  # swept (its label is the measured column)
    measured = ("time_s", "compute_s", "communication_s", "exposed_communication_s")
    failures = "error" in table.columns and table["error"].notna().any()
    header = ["#", *(f.rsplit(".", 1)[-1] for f in fields), "time", "compute", "in flight", "exposed", *(["status"] if failures else [])]
    rows = []
    for record in table.head(limit).to_dict("records"):
        status = "ok" if _cell_text(record, "error") == "-" else "failed"  # (its error is printed below the table, whole)
        measures = (_cell_text(record, m, short_seconds) for m in measured)
        rows.append([str(record["point"]), *(_cell_text(record, f) for f in fields), *measures, *([status] if failures else [])])
    return header, rows, max(0, len(table) - limit)
