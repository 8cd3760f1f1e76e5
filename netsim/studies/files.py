"""Study files: a base scenario and a grid of fields to sweep, expanded into points.

A study is the scenario format's sibling: its YAML is read by :mod:`netsim.scenario`
(the one module that parses files), its mistakes are :class:`~netsim.scenario.ScenarioError`
s naming the file and the field, and every point it expands to is a scenario mapping
validated by :func:`~netsim.scenario.scenario_from_data`.

A study::

    name: allgather_payloads
    description: ring vs bidirectional ring across payloads
    base: ../allgather_ring8.yaml        # a scenario file (relative to this file), or a mapping
    grid:                                # dotted paths into the scenario
      algorithm: [ring, bidirectional_ring, bidirectional_halfway]
      input.bytes_per_device: [1 KiB, 1 MiB, 64 MiB]
      collective.axis_index_groups:      # a mapping gives each value a label
        rows: [[0, 1, 2, 3], [4, 5, 6, 7]]
        strided: [[0, 2, 4, 6], [1, 3, 5, 7]]
    zip: false                           # true: zip every field; or groups: [[topology, input.bytes_per_device]]
    plots: [time_vs_payload, busbw_vs_payload, time_vs_devices, time_by_field]   # optional

Fields are crossed by default, the first field varying slowest. ``zip: true`` moves
every field together (all lists of one length); a list of groups zips the fields of
each group and crosses the groups with the other fields. Each value carries a label,
the text written in results.csv: the value itself for a string or a number, the
``name`` of an inline topology, the label given in a mapping, or else the value as
compact JSON.
"""

from __future__ import annotations

import copy
import itertools
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from netsim.programs.files import ProgramFile, program_from_data
from netsim.scenario import Scenario, ScenarioError, Strict, read_yaml, scenario_from_data, validate
from netsim.scenario.suggestions import did_you_mean

__all__ = ["PLOT_KINDS", "Point", "Study", "load_study", "study_from_data"]

PLOT_KINDS = ("time_vs_payload", "busbw_vs_payload", "time_vs_devices", "time_by_field")
"""The plots a sweep can draw (see :mod:`netsim.studies.plots`)."""

MAX_POINTS = 100_000
"""More points than this is almost certainly a mistake in the grid."""

MAX_EXPANDED = 5_000_000
"""The most values (numbers, strings, lists, mappings) all points of a study may hold together."""

MAX_LABEL = 200
"""The longest label a swept value may have (a longer value needs a label: write the grid entry as a mapping)."""

_NOT_SWEPT = {"name": "each point's name is set by the study", "expected": "a study's points have no expected result"}


class StudySpec(Strict):
    """A study file, as written."""

    name: str
    description: str | None = None
    base: str | dict[str, Any]
    grid: dict[str, Any] = Field(min_length=1)
    zip: bool | list[list[str]] = False
    plots: list[Literal["time_vs_payload", "busbw_vs_payload", "time_vs_devices", "time_by_field"]] | None = None


@dataclass(frozen=True, eq=False)
class Point:
    """One scenario of a study.

    Attributes
    ----------
    index : int
        Position in the study's expansion (the row order of results.csv).
    labels : tuple of (str, str)
        ``(field, label)`` of each swept field.
    data : dict
        The scenario mapping, base plus the swept values.
    source : str
        What error messages name, e.g. ``"studies/x.yaml point 3"``.
    base_dir : pathlib.Path or None
        Where the scenario's relative topology paths are looked up.
    """

    index: int
    labels: tuple[tuple[str, str], ...]
    data: dict[str, Any]
    source: str
    base_dir: Path | None
    program: bool = False

    def scenario(self) -> Scenario:
        """The point as a validated scenario (raises :class:`ScenarioError` if it is not one)."""
        return scenario_from_data(self.data, self.source, self.base_dir)

    def program_file(self) -> ProgramFile:
        """The point as a validated program, for a study of a program (raises :class:`ScenarioError` if it is not one)."""
        return program_from_data(self.data, self.source, self.base_dir)


@dataclass(frozen=True, eq=False)
class Study:
    """A validated study: its swept fields and every point. Build one with :func:`load_study`.

    Attributes
    ----------
    name, description : str
    fields : tuple of str
        The swept dotted paths, in the order of the file.
    points : tuple of Point
    plots : tuple of str or None
        The plots asked for, or None for every plot that applies.
    source : str
        The study file (or ``"<study>"``).
    """

    name: str
    description: str | None
    fields: tuple[str, ...]
    points: tuple[Point, ...]
    plots: tuple[str, ...] | None
    source: str
    program: bool = False


def label(value: Any) -> str:
    """The text that stands for a swept value in results.csv and in plots.

    Examples
    --------
    >>> label("1 MiB"), label(8), label(True), label([[0, 1], [2, 3]])
    ('1 MiB', '8', 'true', '[[0, 1], [2, 3]]')
    >>> label({"name": "v5e-8x16", "kind": "torus", "dims": [8, 16]})
    'v5e-8x16'
    """
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return json.dumps(value)


def load_study(path: str | Path) -> Study:
    """Read and validate a study file and expand its grid into points.

    Raises
    ------
    ScenarioError
        Naming the file and the field (``grid.input.bytes_per_device``) and the fix.
        A point that is not a valid scenario is not an error here: sweeping records
        it as a failed row.

    Examples
    --------
    >>> study = load_study("scenarios/studies/ring_algorithms.yaml")
    >>> study.fields
    ('algorithm', 'input.bytes_per_device', 'data')
    >>> study.points[0].labels
    (('algorithm', 'ring'), ('input.bytes_per_device', '128 B'), ('data', 'values'))
    """
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict) and "base" not in data and "grid" not in data and "collective" in data:
        raise ScenarioError(str(path), "", f"this is a scenario, not a study (it has no base and grid): run it with `netsim run {path}`")
    return study_from_data(data, str(path), path.parent)


def study_from_data(data: Any, source: str = "<study>", base_dir: Path | None = None) -> Study:
    """Validate a study given as a mapping (as a study file holds it) and expand it.

    Parameters
    ----------
    data : dict
        ``name``, ``base``, ``grid`` and optionally ``description``, ``zip``, ``plots``.
    source : str
        What error messages name as the file.
    base_dir : pathlib.Path, optional
        Where a ``base`` path and relative topology paths are looked up.

    Examples
    --------
    >>> base = {"name": "b", "topology": "ring4", "collective": {"op": "all_gather"}, "input": {"shape": [4]}}
    >>> study = study_from_data({"name": "s", "base": base, "grid": {"algorithm": ["ring", "bidirectional_ring"], "seed": [0, 1]}})
    >>> [p.labels for p in study.points][:2]
    [(('algorithm', 'ring'), ('seed', '0')), (('algorithm', 'ring'), ('seed', '1'))]
    >>> study_from_data({"name": "s", "base": base, "grid": {"input.shape": [[4], [8]], "seed": [0]}, "zip": True})
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: <study>: zip: zipped fields need lists of one length; input.shape has 2 values, seed has 1 value
    """
    spec = validate(StudySpec, data, source)
    base, scenario_dir = _base(spec.base, source, base_dir)
    if "hlo" in base and "ops" not in base:
        problem = (
            "the base is an HLO program file (hlo:), which a study does not sweep; run it with `netsim program`, or give a scenario or a program file with ops"
        )
        raise ScenarioError(source, "base", problem)
    program = "ops" in base  # a program file's base: sweep program fields
    values = {path: _values(source, path, raw) for path, raw in spec.grid.items()}
    for path in values:
        _check_path(source, path, base, set(values), ProgramFile if program else Scenario)
    units = _units(source, spec.zip, list(values))
    _lengths_match(source, units, values)
    _distinct(source, units, values)
    lengths = [len(values[unit[0]]) for unit in units]
    total = 1
    for length in lengths:
        total *= length
    if total > MAX_POINTS:
        raise ScenarioError(source, "grid", f"{total} points is more than a sweep runs ({MAX_POINTS}); shorten the lists or zip fields")
    per_point = _size(base) + sum(max(_size(value) for _, value in pairs) for pairs in values.values())
    if total * per_point > MAX_EXPANDED:
        problem = f"{total} points of up to {per_point} values each is more than a study expands to ({MAX_EXPANDED} values); shorten the lists or the base"
        raise ScenarioError(source, "grid", problem)
    points = []
    for index, choice in enumerate(itertools.product(*(range(n) for n in lengths))):
        picked = {path: values[path][k] for unit, k in zip(units, choice, strict=True) for path in unit}
        ordered = [(path, picked[path]) for path in values]
        point_data = copy.deepcopy(base)
        point_data.pop("expected", None)
        point_data["name"] = f"{spec.name}[{index}]"
        for path, (_, value) in ordered:
            _set(point_data, path, copy.deepcopy(value))
        labels = tuple((path, text) for path, (text, _) in ordered)
        points.append(Point(index, labels, point_data, f"{source} point {index}", scenario_dir, program))
    return Study(spec.name, spec.description, tuple(values), tuple(points), tuple(spec.plots) if spec.plots is not None else None, source, program)


def _base(base: str | dict[str, Any], source: str, base_dir: Path | None) -> tuple[dict[str, Any], Path | None]:
    if isinstance(base, dict):
        return base, base_dir
    path = Path(base)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if path.is_file() and Path(source).is_file() and path.resolve() == Path(source).resolve():
        raise ScenarioError(source, "base", "names this study file itself; give the scenario file the points start from, or the scenario inline")
    if not path.is_file():
        raise ScenarioError(source, "base", f"no scenario file {base!r} (looked for {path}); give a path relative to the study, or the scenario inline")
    data = read_yaml(path)
    if not isinstance(data, dict):
        raise ScenarioError(str(path), "", f"expected a mapping of fields at the top level, got {type(data).__name__}")
    return data, path.parent


def _values(source: str, path: str, raw: Any) -> list[tuple[str, Any]]:
    """A grid entry as (label, value) pairs; a mapping gives the labels."""
    where = f"grid.{path}"
    if isinstance(raw, dict):
        pairs = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        pairs = [(label(v), v) for v in raw]
    else:
        raise ScenarioError(source, where, f"expected a list of values (or a mapping of label: value), got {raw!r}")
    if not pairs:
        raise ScenarioError(source, where, "no values to sweep; give at least one")
    for text, _ in pairs:
        if len(text) > MAX_LABEL:
            problem = f"a value's label is longer than {MAX_LABEL} characters; name the values: write {where} as a mapping of label: value"
            raise ScenarioError(source, where, problem)
    return pairs


def _size(value: Any) -> int:
    """How many values ``value`` holds (itself, and every item of its lists and mappings, keys included)."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        if count > MAX_EXPANDED:
            break
    return count


def _distinct(source: str, units: list[list[str]], values: dict[str, list[tuple[str, Any]]]) -> None:
    """A crossed field's values need distinct labels (a zipped field may repeat one)."""
    for unit in units:
        if len(unit) == 1:
            seen: set[str] = set()
            for text, _ in values[unit[0]]:
                if text in seen:
                    raise ScenarioError(source, f"grid.{unit[0]}", f"{text!r} appears twice; every value needs its own label")
                seen.add(text)


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation can hold (through unions and Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def _check_path(source: str, path: str, base: dict[str, Any], swept: set[str], root: type[BaseModel] = Scenario) -> None:
    """Check that a dotted path names a scenario (or program) field that can be set.

    In a program, a mapping keyed by name (``params``, ``arrays``) takes any key
    as the next part: ``params.B``, ``arrays.A.shape``.
    """
    where = f"grid.{path}"
    parts = path.split(".")
    if parts[0] in _NOT_SWEPT:
        raise ScenarioError(source, where, f"cannot sweep {parts[0]}: {_NOT_SWEPT[parts[0]]}")
    models: list[type[BaseModel]] = [root]
    value: Any = base
    keyed = False
    for depth, part in enumerate(parts):
        if keyed:  # a key of a program's named mapping: one the base has (a new parameter or array would change nothing)
            prefix = ".".join(parts[:depth])
            if not isinstance(value, dict) or part not in value:
                keys = [str(k) for k in value] if isinstance(value, dict) else []
                if not keys:
                    raise ScenarioError(source, where, f"the base has no {prefix}; give it {prefix}: {{{part}: ...}} used by its ops, or sweep another field")
                raise ScenarioError(source, where, f"the base has no {prefix} {part!r} (it has {', '.join(keys)}){did_you_mean(part, keys)}")
            keyed, value = False, value.get(part)
            continue
        prefix = ".".join(parts[:depth])
        if isinstance(value, list) and prefix not in swept:  # a list written out in the base (a program's ops): an entry by its index
            if not (part.isdigit() and int(part) < len(value)):
                raise ScenarioError(source, where, f"{prefix} is a list of {len(value)}: name an entry by its index, 0 to {len(value) - 1} (e.g. {prefix}.0)")
            value = value[int(part)]
            continue
        if not models:
            raise ScenarioError(source, where, f"{prefix} is a value, not a group of fields; sweep {prefix} as a whole")
        if depth and value is not None and not isinstance(value, dict) and prefix not in swept:
            raise ScenarioError(source, where, f"the base has {prefix}: {_clip(repr(value))}, not a mapping; write {prefix} out in the base to sweep inside it")
        fields = {name: info for model in models for name, info in model.model_fields.items() if not info.exclude}
        if part not in fields:
            hint = did_you_mean(part, list(fields))
            raise ScenarioError(source, where, f"unknown field {part!r}; allowed{' in ' + prefix if prefix else ''}: {', '.join(fields)}{hint}")
        models = _models(fields[part].annotation)
        value = value.get(part) if isinstance(value, dict) else None
        keyed = root is ProgramFile and typing.get_origin(fields[part].annotation) is dict


def _units(source: str, zipped: bool | list[list[str]], fields: list[str]) -> list[list[str]]:
    """Groups of fields that move together; the groups are crossed."""
    if zipped is False:
        return [[f] for f in fields]
    groups = [fields] if zipped is True else zipped
    placed: set[str] = set()
    for group in groups:
        for f in group:
            if f not in fields:
                raise ScenarioError(source, "zip", f"{f!r} is not a field of the grid; the grid has: {', '.join(fields)}")
            if f in placed:
                raise ScenarioError(source, "zip", f"{f!r} is in more than one zipped group")
            placed.add(f)
    units: list[list[str]] = []
    for f in fields:
        group = next((g for g in groups if f in g), [f])
        if group not in units:
            units.append(group)
    return units


def _lengths_match(source: str, units: list[list[str]], values: dict[str, list[tuple[str, Any]]]) -> None:
    for unit in units:
        sizes = {f: len(values[f]) for f in unit}
        if len(set(sizes.values())) > 1:
            detail = ", ".join(f"{f} has {n} value{'s' if n != 1 else ''}" for f, n in sizes.items())
            raise ScenarioError(source, "zip", f"zipped fields need lists of one length; {detail}")


def _clip(text: str, limit: int = 60) -> str:
    """``text`` cut to about ``limit`` characters (an echoed value never floods a line)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _set(data: Any, path: str, value: Any) -> None:
    parts = path.split(".")
    for part in parts[:-1]:
        if isinstance(data, list):  # an entry of a list the base writes out (checked by _check_path)
            data = data[int(part)]
            continue
        if not isinstance(data.get(part), dict | list):
            data[part] = {}
        data = data[part]
    if isinstance(data, list):
        data[int(parts[-1])] = value
    else:
        data[parts[-1]] = value
