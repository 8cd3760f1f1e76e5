"""Resuming a sweep: which rows of an earlier ``results.csv`` may be kept.

Every row carries ``row_sha256``, a hash of the point's scenario (base and swept values,
as the study expands it, but not the name the study gives it), of the files it read (its
topology file, an HLO module: :func:`netsim.scenario.inputs.files_named`) and of every
other cell of the row. A row is kept only if its hash is the one this study's point
would give with the same cells: a row of another study, of a study whose base or values
changed since, of a point whose files were edited, created or removed since, or one
edited by hand is refused, naming the file, the row and the column. Rows whose point hit an internal error
are run again rather than kept.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING

from netsim.scenario.inputs import files_digest, files_named

if TYPE_CHECKING:
    from netsim.studies.files import Point, Study

__all__ = ["HASH_COLUMN", "finished_rows", "point_files", "row_hash"]

HASH_COLUMN = "row_sha256"
"""The column holding each row's hash (:func:`row_hash`)."""

_FIX = "remove results.csv (or that row) to run the point afresh, or choose another output folder"


def point_files(point: Point) -> str:
    """The hash of what the files a point reads hold now (:func:`netsim.scenario.inputs.files_digest`)."""
    return files_digest(files_named(point.data, point.base_dir))


def row_hash(point: Point, cells: dict[str, str], files: str | None = None) -> str:
    """The hash of a point's scenario, of the files it read and of a row's cells (all but :data:`HASH_COLUMN`), as hex.

    ``files`` is :func:`point_files` taken when the point ran (default: now).

    Examples
    --------
    >>> from netsim.studies.files import load_study
    >>> point = load_study("scenarios/studies/ring_algorithms.yaml").points[0]
    >>> row_hash(point, {"time_s": "1e-06"}) == row_hash(point, {"time_s": "1e-06"}) != row_hash(point, {"time_s": "2e-06"})
    True
    """
    scenario = json.dumps({k: v for k, v in point.data.items() if k != "name"}, sort_keys=True, default=str)  # renaming a study keeps its rows
    row = json.dumps(sorted((k, v) for k, v in cells.items() if k != HASH_COLUMN and v != ""))
    files = point_files(point) if files is None else files
    return hashlib.sha256(f"{scenario}\n{files}\n{row}".encode()).hexdigest()


def finished_rows(path: Path, study: Study, header: list[str], internal: str) -> dict[int, dict[str, str]]:
    """The rows of ``path`` (an earlier ``results.csv``) to keep, by point; raise ValueError for a row that does not belong."""
    if not path.is_file():
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot read it ({getattr(error, 'strerror', None) or error}); {_FIX}") from None
    if not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]  # the last line was cut short by an interrupt: run it again
    try:
        lines = list(csv.reader(io.StringIO(text)))
    except csv.Error as error:
        raise ValueError(f"{path}: not a CSV table ({error}); {_FIX}") from None
    if not lines:
        return {}
    if lines[0] != header:
        raise ValueError(f"{path}: row 1: its columns are not the columns of study {study.name!r}; {_FIX}")
    rows: dict[int, dict[str, str]] = {}
    for number, cells in enumerate(lines[1:], start=2):
        if len(cells) != len(header):
            raise ValueError(f"{path}: row {number}: {len(cells)} cells for {len(header)} columns; {_FIX}")
        row = dict(zip(header, cells, strict=True))
        text_index = row["point"]
        index = int(text_index) if text_index.isdigit() and len(text_index) < 10 else -1
        if not 0 <= index < len(study.points):
            raise ValueError(
                f"{path}: row {number}, column point: {text_index[:40]!r} is not a point of study {study.name!r} (0..{len(study.points) - 1}); {_FIX}"
            )
        point = study.points[index]
        for field, label in point.labels:
            if row[field] != label:
                raise ValueError(f"{path}: row {number}, column {field}: {row[field][:60]!r}, but point {index} of the study has {label[:60]!r}; {_FIX}")
        if row[HASH_COLUMN] != row_hash(point, row):
            problem = (
                "does not match the point's scenario and the row's cells, or the files the point reads:"
                " the study's base or a file it names changed, or the row was edited"
            )
            raise ValueError(f"{path}: row {number}, column {HASH_COLUMN}: {problem}; {_FIX}")
        if index in rows:
            raise ValueError(f"{path}: row {number}, column point: point {index} appears twice; {_FIX}")
        if not row["error"].startswith(internal):
            rows[index] = row
    return rows
