"""Reading YAML files safely (bounded size and nesting, no Python objects, no key twice)
and turning pydantic's errors into one line naming the file, the field and the fix."""

from __future__ import annotations

import re
import reprlib
import stat
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import BaseModel, ValidationError

from netsim.scenario.collective_spec import SPECS
from netsim.scenario.errors import ScenarioError

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "MAX_NODES", "is_program_file", "read_yaml", "validate"]


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (YAML would keep the last silently)."""

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


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _StrictLoader.construct_yaml_int)


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
    try:
        loader = _StrictLoader(text)  # a SafeLoader: no Python objects
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            try:
                size = expanded_size(node)
            except ValueError as error:
                raise ScenarioError(str(path), "", str(error)) from None
            if size > MAX_NODES:
                raise ScenarioError(
                    str(path), "", f"the document expands to more than {MAX_NODES} values (YAML aliases repeat what they name); write it out plainly"
                )
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ScenarioError(str(path), "", f"invalid YAML{where}: {error.problem}") from None
    except RecursionError:
        raise ScenarioError(str(path), "", "invalid YAML: the document is nested too deeply") from None
    except yaml.YAMLError as error:
        raise ScenarioError(str(path), "", f"invalid YAML: {type(error).__name__}") from None


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
_MODEL_TAGS = {"TopologySpec"}
"""Models that are one member of a union with a plain type (``topology: str | TopologySpec``): pydantic names them in paths."""


_TYPE_TAG = re.compile(r"(function-[a-z-]+|constrained-[a-z]+|list|int|str|bool|float|dict|tuple|union|nullable)(\[.*\])?|\[key\]")
"""Pydantic's names for the member of a union or validator that failed: not fields, left out of paths."""


def validate(model: type[BaseModel], data: Any, source: str, extra: dict[str, Any] | None = None) -> Any:
    """``data`` (a file's mapping) validated as ``model``, pydantic's errors turned into one line.

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

    Returns
    -------
    object
        The validated ``model``.

    Raises
    ------
    ScenarioError
        ``source: field.path: what is wrong and what was expected``.

    Examples
    --------
    >>> from netsim.scenario.topology_spec import TopologySpec
    >>> validate(TopologySpec, {"kind": "ring", "dims": [4]}, "t.yaml").dims
    [4]
    >>> validate(TopologySpec, {"kind": "ring"}, "t.yaml")
    Traceback (most recent call last):
    ...
    netsim.scenario.ScenarioError: t.yaml: dims: required field is missing
    """
    if not isinstance(data, dict):
        raise ScenarioError(source, "", f"expected a mapping of fields at the top level, got {type(data).__name__}")
    try:
        return model.model_validate({**data, **(extra or {})})
    except ValidationError as error:
        errors = error.errors(include_url=False)
        first = errors[0]
        if first["type"].endswith("_type"):
            # A union (e.g. a topology name or mapping): when the value has the other
            # member's type, that member's error says what is wrong inside it.
            deeper = [e for e in errors if len(_field_path(e)) > len(_field_path(first)) and _field_path(e)[: len(_field_path(first))] == _field_path(first)]
            first = deeper[0] if deeper else first
        loc = _field_path(first)
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] in ("union_tag_invalid", "union_tag_not_found"):
            loc.append("op")
            message = f"expected one of {', '.join(SPECS)}"
        if first["type"] == "extra_forbidden":
            allowed = _allowed_fields(model, loc[:-1], data)
            message = f"unknown field; allowed here: {', '.join(allowed)}" if allowed else "unknown field"
        elif first["type"] == "missing":
            message = "required field is missing"
        elif "input" in first and "op" not in loc[-1:] and "(got " not in message:
            message = f"{message} (got {_short(first['input'])})"
        raise ScenarioError(source, ".".join(loc), message) from None
    except RecursionError:
        raise ScenarioError(source, "", "document is nested too deeply") from None


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
