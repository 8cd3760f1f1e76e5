"""Tables that read well at 80 columns: short link names on tori, numbers never split across lines."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.table import Table

__all__ = ["drop_uniform", "grid", "short_link_name", "split_column", "sweep_rows", "sweep_table"]

AXIS_LETTERS = "xyz"
TEXT_COLUMNS = ("link", "device", "phase", "straggler", "algorithm", "regime", "formula", "status")
NAME_COLUMNS = ("link", "device")
"""A first column of names: cut with an ellipsis to what the other columns leave, never wrapped mid-name."""


def short_link_name(link: Any, coord: tuple[int, ...] | None) -> str | None:
    """A torus link as its axis, direction and source: ``x+ (0,1,2)``; None on a ring (``3->4`` is short already).

    Examples
    --------
    >>> short_link_name((5, 6, (1, 1)), (1, 1))
    'y+ (1,1)'
    >>> short_link_name((6, 5, (1, -1)), (1, 2))
    'y- (1,2)'
    >>> short_link_name((3, 4, (0, 1)), (3,)) is None
    True
    """
    if coord is None or len(coord) < 2:
        return None
    _, _, (axis, direction) = link
    letter = AXIS_LETTERS[axis] if len(coord) <= len(AXIS_LETTERS) else f"a{axis}"
    return f"{letter}{'+' if direction > 0 else '-'} ({','.join(map(str, coord))})"


def drop_uniform(headers: list[str], rows: list[list[str]], columns: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """Leave out the ``columns`` whose value is the same on every row (another line of the report says it).

    Examples
    --------
    >>> drop_uniform(["device", "input", "sent"], [["0", "1 MiB", "2 MiB"], ["1", "1 MiB", "3 MiB"]], ("input",))
    (['device', 'sent'], [['0', '2 MiB'], ['1', '3 MiB']])
    """
    keep = [i for i, h in enumerate(headers) if h not in columns or len({row[i] for row in rows}) > 1]
    return [headers[i] for i in keep], [[row[i] for i in keep] for row in rows]


def split_column(headers: list[str], rows: list[list[str]], column: str) -> tuple[list[str], list[list[str]], list[str]]:
    """Take a long text column out of a table, to print it below as ``first cell: text`` lines.

    Examples
    --------
    >>> split_column(["algorithm", "estimate", "formula"], [["ring", "1 us", "(n−1)·α"]], "formula")
    (['algorithm', 'estimate'], [['ring', '1 us']], ['ring: (n−1)·α'])
    """
    i = headers.index(column)
    lines = [f"{row[0]}: {row[i]}" for row in rows]
    return [h for j, h in enumerate(headers) if j != i], [[c for j, c in enumerate(row) if j != i] for row in rows], lines


def grid(title: str, headers: list[str], rows: list[list[str]], width: int | None = None) -> Table:
    """A table whose numeric columns never wrap (a number stays on one line); text columns wrap or fold.

    Given the ``width`` it is printed at, a first column of names (:data:`NAME_COLUMNS`) takes
    the room the other columns leave (numbers whole, text at its longest word, a two-word header
    over two lines where a name would not fit), its names cut in the middle with an ellipsis
    (:func:`~netsim.cli.console.clip_name`) rather than wrapped.

    Examples
    --------
    >>> from rich.console import Console
    >>> Console(width=30).print(grid("t", ["link", "busy"], [["a long link name here", "34.9525 us"]]))  # doctest: +NORMALIZE_WHITESPACE
    t
    ┏━━━━━━━━━━━━━━━┳━━━━━━━━━━━━┓
    ┃ link          ┃       busy ┃
    ┡━━━━━━━━━━━━━━━╇━━━━━━━━━━━━┩
    │ a long link   │ 34.9525 us │
    │ name here     │            │
    └───────────────┴────────────┘
    >>> rows = [["nic7->switch", "34.9525 us"], ["nic12->switch", "1 us"]]
    >>> Console(width=29).print(grid("t", ["link", "busy"], rows, width=29))  # doctest: +NORMALIZE_WHITESPACE
    t
    ┏━━━━━━━━━━━━━━┳━━━━━━━━━━━━┓
    ┃ link         ┃       busy ┃
    ┡━━━━━━━━━━━━━━╇━━━━━━━━━━━━┩
    │ nic7->switch │ 34.9525 us │
    │ nic12-…witch │       1 us │
    └──────────────┴────────────┘
    """
    if width is not None and headers and headers[0] in NAME_COLUMNS and rows:
        longest = max(len(row[0]) for row in rows)
        if longest > _name_room(headers, rows, width):  # a two-word header over two lines before a name is cut
            headers = [h if k == 0 or h in TEXT_COLUMNS else h.replace(" ", "\n") for k, h in enumerate(headers)]
        rows = [[_clip_name(row[0], _name_room(headers, rows, width)), *row[1:]] for row in rows]
    table = Table(title=title, title_justify="left")
    for header in headers:
        text = header in TEXT_COLUMNS
        table.add_column(header, justify="left" if text else "right", no_wrap=not text, overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


def _name_room(headers: list[str], rows: list[list[str]], width: int) -> int:
    """Columns left to the first column at ``width``: the others' numbers whole, their text at its longest word, 3 per column of frame."""
    from netsim.cli.console import NAME_LIMIT

    def needs(k: int) -> int:
        cells = [headers[k], *(row[k] for row in rows)]
        return max(len(w) for c in cells for w in c.split()) if headers[k] in TEXT_COLUMNS else max(len(line) for c in cells for line in c.split("\n"))

    others = sum(needs(k) for k in range(1, len(headers))) + 3 * len(headers) + 1
    return max(10, min(NAME_LIMIT, width - others))


def _clip_name(name: str, limit: int) -> str:
    from netsim.cli.console import clip_name

    return clip_name(name, limit)


def _text(record: dict[str, Any], column: str, form: Any = str) -> str:
    value = record.get(column)
    return "-" if value is None or value != value else form(value)


def sweep_rows(table: Any, limit: int = 40) -> tuple[list[str], list[list[str]], int]:
    """Header and rows of the summary table of ``netsim sweep``, and how many rows were left out.

    ``table`` is a sweep's results table (:func:`netsim.studies.sweep.read_results`). The
    swept fields come first (as labelled; a dotted path is shown by its last name), then
    the time, the ratio to the closed form, the bus bandwidth and whether the point ran.
    A measured name that is the same on every row (the topology of a one-topology study)
    is left out; results.csv has every column.

    Examples
    --------
    >>> import io
    >>> from netsim.studies.sweep import read_results
    >>> csv = "point,link.latency,algorithm,topology,time_s,ratio,busbw_Bps,error\\n"
    >>> csv += "0,1 us,ring,ring8,2.5e-05,1.0,4.5e10,\\n1,2 us,ring,ring8,3e-05,1.2,4e10,\\n"
    >>> header, rows, left_out = sweep_rows(read_results(io.StringIO(csv)))
    >>> header
    ['#', 'latency', 'time', 'ratio', 'busbw']
    >>> rows[0]
    ['0', '1 us', '25 us', '1.000', '45 GB/s']
    """
    from netsim.studies.sweep import RESULT_COLUMNS

    if "exposed_communication_s" in table.columns:  # a program study
        from netsim.cli.program_table import program_sweep_rows

        return program_sweep_rows(table, limit)
    fields = [c for c in table.columns if c != "point" and (c not in RESULT_COLUMNS or c in ("algorithm", "topology"))]
    fields = [c for c in fields if c not in RESULT_COLUMNS or table[c].nunique(dropna=False) > 1]
    failures = "error" in table.columns and table["error"].notna().any()
    header = ["#", *(f.rsplit(".", 1)[-1].replace("_", " ") for f in fields), "time", "ratio", "busbw", *(["status"] if failures else [])]
    rows = []
    for record in table.head(limit).to_dict("records"):
        status = "ok" if _text(record, "error") == "-" else "failed"  # (its error is printed below the table, whole)
        rows.append(
            [
                str(record["point"]),
                *(_text(record, f) for f in fields),
                _text(record, "time_s", _short_seconds),
                _text(record, "ratio", lambda r: f"{r:.3f}"),
                _text(record, "busbw_Bps", _rate),
                *([status] if failures else []),
            ]
        )
    return header, rows, max(0, len(table) - limit)


def _rate(bytes_per_s: float) -> str:
    """A bus bandwidth in GB/s, or MB/s below 1 GB/s (four digits).

    Examples
    --------
    >>> _rate(4.5e10), _rate(3.195e6)
    ('45 GB/s', '3.195 MB/s')
    """
    return f"{bytes_per_s / 1e9:.4g} GB/s" if bytes_per_s >= 1e9 else f"{bytes_per_s / 1e6:.4g} MB/s"


def _short_seconds(t: float) -> str:
    from netsim.cli.program_table import short_seconds

    return short_seconds(t)


def sweep_table(title: str, header: list[str], rows: list[list[str]], width: int = 80) -> Table:
    """The sweep summary: light rules, numbers never split, labels kept whole where ``width`` allows (headers wrap first).

    Examples
    --------
    >>> from netsim.cli.console import QuietConsole
    >>> rows = [["0", "bidirectional_ring", "1 KiB", "3.034 us"], ["1", "ring", "16 KiB", "12.5 us"]]
    >>> QuietConsole(width=40).print(sweep_table("t", ["#", "algorithm", "bytes per device", "time"], rows, 40))
    t
                           bytes
                           per
    #  algorithm           device       time
    ────────────────────────────────────────
    0  bidirectional_ring  1 KiB    3.034 us
    1  ring                16 KiB    12.5 us
    """
    numeric = [name in SWEEP_NUMBERS for name in header]
    cells = [max([len(row[k]) for row in rows] + [0]) for k in range(len(header))]
    word = [max(len(w) for w in name.split()) if name.strip() else 1 for name in header]
    sizes = [max(c, len(h)) for c, h in zip(cells, header, strict=True)]
    tokens = [max([len(t) for row in rows for t in row[k].split()] + [1]) for k in range(len(header))]
    excess = sum(sizes) + 2 * (len(header) - 1) - width
    for smallest in ([max(w, t) for w, t in zip(word, tokens, strict=True)], [4] * len(header)):  # labels whole, else split
        while excess > 0:  # narrow the widest text column that can still give
            k = max((k for k in range(len(header)) if not numeric[k] and sizes[k] > smallest[k]), key=lambda k: sizes[k], default=None)
            if k is None:
                break
            sizes[k] -= 1
            excess -= 1
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, collapse_padding=True)
    for name, number, size in zip(header, numeric, sizes, strict=True):
        table.add_column(name, justify="right" if number else "left", no_wrap=number, overflow="fold", width=size)
    for row in rows:
        table.add_row(*row)
    return table


SWEEP_NUMBERS = ("#", "time", "ratio", "busbw", "compute", "in flight", "exposed")
"""The sweep summary's numeric columns: right-aligned, never wrapped."""
