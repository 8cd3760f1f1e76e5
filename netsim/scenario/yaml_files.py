"""Reading YAML files safely (bounded size and nesting, no Python objects, no key twice)
and turning pydantic's errors into one line naming the file, the field and the fix."""

from __future__ import annotations

import re
import reprlib
import stat
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ValidationError

from netsim.scenario.collective_spec import SPECS
from netsim.scenario.errors import ScenarioError
from netsim.scenario.suggestions import did_you_mean, nearest

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "MAX_NODES", "is_program_file", "read_yaml", "validate"]


_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's parser where PyYAML has it (it reads a megabyte in a tenth of a second, PyYAML's own in five)."""


class _Strict:
    """A safe loader's constructor that refuses a key given twice in one mapping (YAML would keep the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:
                continue  # an unhashable key: SafeLoader itself says so
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"found the key {key!r} twice in one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer, or an error at its place in the file when it has more digits than Python reads (4300)."""
        try:
            return super().construct_yaml_int(node)
        except ValueError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a number of {len(node.value)} digits is too long; write it in units or as a float", node.start_mark
            ) from None


class _StrictLoader(_Strict, _FAST_LOADER):  # type: ignore[misc,valid-type]
    """The loader of every netsim file: libyaml's parser (when there), safe construction, no key twice."""


# YAML 1.2's floats too: YAML 1.1 (PyYAML's) reads 1.5e9 and 1e-3 as text (it wants a dot and a signed exponent)
_StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789."))


class _ExplainingLoader(_Strict, yaml.SafeLoader):
    """PyYAML's own parser, whose messages say more (``found character '\\t' that cannot start any token``): rereads a small file libyaml refused."""


for _loader in (_StrictLoader, _ExplainingLoader):
    _loader.add_constructor("tag:yaml.org,2002:int", _Strict.construct_yaml_int)

_EXPLAIN_BELOW = 256 * 2**10
"""Files libyaml refuses that are smaller than this are reread by PyYAML's parser for its message (a quarter second at most)."""
_NOT_YAML_CHARACTER = re.compile(r"[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
"""What YAML does not allow in a file: control characters but tab and line ends, surrogates, U+FFFE and U+FFFF."""


MAX_FILE_BYTES = 16 * 2**20
"""The largest scenario or topology file read."""
MAX_NESTING = 64
"""The deepest nesting of YAML flow collections read (PyYAML's scanner is quadratic in it)."""
_QUOTED_OR_COMMENT = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'|(?:^|(?<=\s))#[^\n]*", re.MULTILINE)


def is_program_file(path: str | Path) -> bool:
    """Whether a YAML file holds a program (it has ``ops``, or ``hlo``: a compiled module) rather than a scenario.

    A file that cannot be read as YAML is not a program file (reading it as a
    scenario then says why).

    Examples
    --------
    >>> is_program_file("scenarios/programs/allgather_matmul.yaml"), is_program_file("scenarios/allgather_ring8.yaml")
    (True, False)
    """
    try:
        data = read_yaml(Path(path))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and ("ops" in data or "hlo" in data)


def read_yaml(path: Path) -> Any:
    """The data of a YAML file, read safely: bounded size and nesting, plain data only, no key twice.

    The one reader of every netsim file format (scenarios, topologies, studies, programs).

    Parameters
    ----------
    path : pathlib.Path

    Returns
    -------
    object
        What the file holds (a mapping, for every netsim file).

    Raises
    ------
    ScenarioError
        Naming the file: missing, not a regular file, too big or too deep, or not YAML.

    Examples
    --------
    >>> read_yaml(Path("scenarios/allgather_ring8.yaml"))["topology"]
    'ring8'
    """
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            raise ScenarioError(str(path), "", "not a regular file")
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ScenarioError(str(path), "", "no such file") from None
    except OSError as error:
        raise ScenarioError(str(path), "", f"cannot read: {error.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(str(path), "", f"larger than {MAX_FILE_BYTES // 2**20} MiB; a scenario or topology file is a few lines of YAML")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ScenarioError(str(path), "", "not a text file (expected UTF-8 YAML)") from None
    if _nesting(text) > MAX_NESTING:
        raise ScenarioError(str(path), "", f"invalid YAML: the document is nested too deeply (more than {MAX_NESTING} levels of [ ] or {{ }})")
    bad = _NOT_YAML_CHARACTER.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        code = ord(bad.group())
        kind = "control character" if unicodedata.category(bad.group()) == "Cc" else "character"
        escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
        problem = f"invalid YAML at line {line}, column {column}: the {kind} U+{code:04X} is not allowed in YAML; delete it"
        raise ScenarioError(str(path), "", f'{problem} (or write it as "{escape}" in a double-quoted string)')
    try:
        return _load(text, str(path), _StrictLoader)
    except yaml.MarkedYAMLError as error:
        raise ScenarioError(str(path), "", _explained(error, text, len(data) < _EXPLAIN_BELOW)) from None
    except RecursionError:
        raise ScenarioError(str(path), "", "invalid YAML: the document is nested too deeply") from None
    except yaml.YAMLError as error:
        raise ScenarioError(str(path), "", f"invalid YAML: {type(error).__name__}") from None


def _explained(error: yaml.MarkedYAMLError, text: str, small: bool) -> str:
    """``invalid YAML at line L, column C: what``, in PyYAML's own words when the file is small enough to read again."""
    if _FAST_LOADER is not yaml.SafeLoader and small:
        try:
            _load(text, "", _ExplainingLoader)
        except yaml.MarkedYAMLError as explained:
            error = explained
        except (ValueError, RecursionError):
            pass
    mark = error.problem_mark
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"invalid YAML{where}: {error.problem}"


def _load(text: str, source: str, loader_class: type) -> Any:
    """The document of ``text``, its size with aliases expanded checked before anything is built."""
    loader = loader_class(text)  # a SafeLoader: no Python objects
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            size = expanded_size(node)
        except ValueError as error:
            raise ScenarioError(source, "", str(error)) from None
        if size > MAX_NODES:
            raise ScenarioError(source, "", f"the document expands to more than {MAX_NODES} values (YAML aliases repeat what they name); write it out plainly")
        return loader.construct_document(node)
    finally:
        loader.dispose()


MAX_NODES = 300_000
"""The most values (scalars, lists and mappings, each alias counted as what it repeats) a file may hold."""


def expanded_size(root: yaml.Node, limit: int = MAX_NODES) -> int:
    """How many nodes ``root`` holds once every alias is expanded (counting stops past ``limit``).

    Each distinct node is visited once: a node's size is worked out from its children's,
    so a chain of aliases doubling at every level costs its length, not its expansion.

    Examples
    --------
    >>> text = "a: &a [1, 2, 3]\\nb: [*a, *a, *a]\\n"
    >>> expanded_size(yaml.compose(text))
    20
    """
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, done = stack.pop()
        key = id(node)
        if key in sizes and not done:
            continue
        children = _children(node)
        if not done:
            if key in open_nodes:
                raise ValueError("an alias refers to a node that holds it (a recursive YAML document); write it out plainly")
            open_nodes.add(key)
            stack.append((node, True))
            stack.extend((child, False) for child in children if id(child) not in sizes)
            continue
        open_nodes.discard(key)
        sizes[key] = min(limit + 1, 1 + sum(sizes[id(child)] for child in children))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def _nesting(text: str) -> int:
    """How deep ``[`` and ``{`` nest outside quotes and comments (an upper bound is enough)."""
    codes = np.frombuffer(_QUOTED_OR_COMMENT.sub("", text).encode("utf-8"), np.uint8)
    step = np.isin(codes, (ord("["), ord("{"))).astype(np.int64) - np.isin(codes, (ord("]"), ord("}")))
    return int(np.cumsum(step).max(initial=0))


_UNION_TAGS = set(SPECS)
_COLLECTIVE_FIELDS = {name for spec in SPECS.values() for name in spec.model_fields}
_MODEL_TAGS = {"TopologySpec", "OpSpec", "RepeatSpec"}
"""Models that are one member of a union with a plain type (``topology: str | TopologySpec``): pydantic names them in paths."""


_TYPE_TAG = re.compile(r"(function-[a-z-]+|constrained-[a-z]+|list|int|str|bool|float|dict|tuple|union|nullable)(\[.*\])?|\[key\]")
"""Pydantic's names for the member of a union or validator that failed: not fields, left out of paths."""


FieldsAt = Callable[[list[str]], "tuple[str, list[str]] | None"]
"""The fields allowed at a path the model alone cannot tell: what they are called and their names, or None."""


def validate(
    model: type[BaseModel],
    data: Any,
    source: str,
    extra: dict[str, Any] | None = None,
    fields_at: FieldsAt | None = None,
) -> Any:
    """``data`` (a file's mapping) validated as ``model``, pydantic's errors turned into lines.

    Every mistake pydantic finds is reported, one line each: a misspelt field is named
    with the field it most likely meant (and that field's "required field is missing"
    is not repeated), a misspelt value with the value.

    Parameters
    ----------
    model : type of pydantic.BaseModel
        The file format (e.g. :class:`~netsim.scenario.Scenario`).
    data : object
        What :func:`read_yaml` read.
    source : str
        The file, as errors name it.
    extra : dict, optional
        Fields added to ``data`` (where the file came from).
    fields_at : callable, optional
        The fields allowed at a path the model alone cannot tell (e.g. a program's
        ``ops.3``, whose fields depend on its ``op``): ``("matmul takes", [names])``,
        or None.

    Returns
    -------
    object
        The validated ``model``.

    Raises
    ------
    ScenarioError
        ``source: field.path: what is wrong and what was expected``, a line per mistake.

    Examples
    --------
    >>> from netsim.scenario.topology_spec import TopologySpec
    >>> validate(TopologySpec, {"kind": "ring", "dims": [4]}, "t.yaml").dims
    [4]
    >>> validate(TopologySpec, {"kind": "ring"}, "t.yaml")
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: t.yaml: dims: required field is missing
    >>> try:
    ...     validate(TopologySpec, {"kind": "rign", "dimz": [4]}, "t.yaml")
    ... except ScenarioError as error:
    ...     print(str(error).replace("? allowed here", "?\\n  allowed here"))
    t.yaml: kind: Input should be 'ring', 'torus' or 'mesh' (got 'rign'); did you mean ring?
    t.yaml: dimz: unknown field; did you mean dims?
      allowed here: name, description, kind, dims, wraparound, cables, link, devices_per_chip, chip_link, device, calibration
    """
    if not isinstance(data, dict):
        raise ScenarioError(source, "", f"expected a mapping of fields at the top level, got {type(data).__name__}")
    try:
        return model.model_validate({**data, **(extra or {})})
    except ValidationError as error:
        problems = _problems(error.errors(include_url=False), model, data, fields_at)
        (field, problem), *more = problems
        raise ScenarioError(source, field, problem, more=more) from None
    except RecursionError:
        raise ScenarioError(source, "", "document is nested too deeply") from None


def _problems(errors: list[Any], model: type[BaseModel], data: Any, fields_at: FieldsAt | None) -> list[tuple[str, str]]:
    """Pydantic's errors as (field path, problem) pairs, a pair per mistake, in the format's order of fields (unknown ones last)."""
    paths = [_field_path(e) for e in errors]
    kept = []
    for i, (e, path) in enumerate(zip(errors, paths, strict=True)):
        if e["type"].endswith("_type") and any(j != i and len(p) > len(path) and p[: len(path)] == path for j, p in enumerate(paths)):
            continue  # one member of a union (e.g. a topology name or mapping): the other member's error says what is wrong inside it
        if any(p == path for p in paths[:i]):
            continue  # another member of the same union failed at the same place: its error is enough
        kept.append((e, path))
    unknown: dict[tuple[str, ...], list[str]] = {}
    for e, path in kept:
        if e["type"] == "extra_forbidden":
            unknown.setdefault(tuple(path[:-1]), []).append(path[-1])
    problems = []
    for e, path in kept:
        loc, message = list(path), e["msg"].removeprefix("Value error, ")
        if e["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("op")
            message = f"expected one of {', '.join(SPECS)}" + did_you_mean(e.get("ctx", {}).get("tag"), SPECS)
        elif e["type"] == "extra_forbidden":
            named, allowed = _allowed(model, loc[:-1], data, fields_at)
            hint = did_you_mean(loc[-1], allowed) if loc[-1] not in _COLLECTIVE_FIELDS else ""  # all_to_all's axis is not a misspelt axes
            message = "unknown field" + hint + (f"{'' if hint else ';'} {named}: {', '.join(allowed)}" if allowed else "")
        elif e["type"] == "missing":
            siblings = unknown.get(tuple(loc[:-1]), [])
            if any(nearest(name, [loc[-1]]) == loc[-1] for name in siblings):
                continue  # a misspelling of it is named as an unknown field, with this one as the fix
            message = "required field is missing"
        elif e["type"] == "literal_error":
            expected = [str(v).strip("'") for v in re.findall(r"'[^']*'|\d+", e.get("ctx", {}).get("expected", ""))]
            message = f"{message} (got {_short(e['input'])}){did_you_mean(e['input'], expected)}"
        elif e["type"] in ("model_type", "dict_type", "model_attributes_type"):
            expected = _MAPPINGS.get(loc[-1] if loc else "", "a mapping of fields")
            message = f"expected {expected} (got {_short(e.get('input'))})"
        elif "input" in e and "op" not in loc[-1:] and "(got " not in message and not message.startswith(f"{e['input']!r} "):
            message = f"{message} (got {_short(e['input'])})"
        problems.append((".".join(loc), message))
    return _alike_once(problems) or [("", "does not fit the file format")]


_MAPPINGS = {
    "mesh": "a mapping of each axis's name to its size, e.g. {data: 8} or {data: 2, model: 4}",
    "link": "a mapping of fields, e.g. {bandwidth: 45 GB/s, latency: 1 us}",
    "input": "a mapping of fields, e.g. {shape: [1024], dtype: float32}",
    "collective": "a mapping of fields, e.g. {op: psum}",
}
"""What a section that must be a mapping holds (pydantic would name netsim's class for it instead)."""


def _alike_once(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The same mistake in several items of a list (``groups.0.1``, ``groups.0.2``) said once, with how many more."""
    first: dict[tuple[str, str], int] = {}
    counts: list[int] = []
    kept: list[tuple[str, str]] = []
    for field, problem in problems:
        key = (re.sub(r"\.\d+(?=\.|$)", ".N", field), re.sub(r" \(got .*\)$", "", problem))
        if key in first and key[0] != field:
            counts[first[key]] += 1
            continue
        first[key] = len(kept)
        kept.append((field, problem))
        counts.append(0)
    return [(field, f"{problem} (and {n} more like it)" if n else problem) for (field, problem), n in zip(kept, counts, strict=True)]


def _allowed(model: type[BaseModel], path: list[str], data: Any, fields_at: FieldsAt | None) -> tuple[str, list[str]]:
    """What the fields at ``path`` are called ("allowed here", "matmul takes") and their names."""
    allowed = fields_at(path) if fields_at is not None else None
    return allowed if allowed is not None else ("allowed here", _allowed_fields(model, path, data))


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 3, 4, 4, 50, 50, 40


def _field_path(error: Any) -> list[str]:
    """The fields an error's location goes through, without pydantic's union and validator tags (a model's name among them)."""
    return [str(p) for p in error["loc"] if p not in _UNION_TAGS and p not in _MODEL_TAGS and not _TYPE_TAG.fullmatch(str(p))]


def _short(value: Any) -> str:
    """A short repr, bounded however big the value (YAML aliases can make it huge)."""
    text = _REPR.repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed_fields(model: type[BaseModel], path: list[str], data: Any) -> list[str]:
    for part in path:
        if part.isdigit() or model is None:
            return []
        info = model.model_fields.get(part)
        if info is None:
            return []
        annotation = info.annotation
        if part == "collective" and isinstance(data, dict) and isinstance(data.get("collective"), dict):
            op = data["collective"].get("op")
            model = SPECS.get(op)
            continue
        candidates = [a for a in getattr(annotation, "__args__", (annotation,)) if isinstance(a, type) and issubclass(a, BaseModel)]
        model = candidates[0] if candidates else None
    if model is None:
        return []
    return [name for name, info in model.model_fields.items() if not info.exclude]
