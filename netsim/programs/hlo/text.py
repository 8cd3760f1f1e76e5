"""HLO text read into computations and instructions, each with its line number.

A module's text is a header line (``HloModule name, is_scheduled=true, ...``),
computations (``[ENTRY] %name (params) -> shape {`` ... ``}``), one instruction per line
(``[ROOT] %name = shape opcode(operands), attribute=value, ...``), and blocks of
debugging tables (``FileNames``, ``StackFrames``, ...) that carry no meaning here and are
skipped. Attribute values are kept as written; their meaning is read elsewhere.
Anything else is an error naming its line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from netsim.programs.hlo.debug_tables import DEBUG_TABLES, strip_debug_tables
from netsim.programs.hlo.shapes import Shape, read_shape

__all__ = [
    "SHOWN_CHARACTERS",
    "Computation",
    "HloSyntaxError",
    "Instruction",
    "Module",
    "cut_long_words",
    "leaf_layouts",
    "parse_module",
    "shown",
    "split_top_level",
    "strip_debug_tables",
]

_NAME = r"%?([A-Za-z0-9_.\-]+)"
_INSTRUCTION = re.compile(r"\s*(ROOT\s+)?" + _NAME + r"\s*=\s*")
_OPCODE = re.compile(r"\s*([a-z][a-z0-9\-_]*)\(")
_COMPUTATION = re.compile(r"(ENTRY\s+)?" + _NAME + r"\s*(\(.*\))?\s*(->.*)?\{\s*$")
_OPERAND = re.compile(_NAME + r"$")
_LEAF_LAYOUT = re.compile(r"[a-z][a-z0-9]*\[[^\]]*\](?:\{([^{}]*)\})?")


def leaf_layouts(shape_text: str) -> tuple[str, ...]:
    """Per array of a shape as written, its layout (the text in its braces, ``""`` when none); empty when no layout
    carries tiles or a memory space (what follows a colon: ``T(8,128)``, ``S(1)``), as on CPU.

    Examples
    --------
    >>> leaf_layouts("(bf16[8,128]{1,0:T(8,128)(2,1)S(1)}, f32[4], u32[]{:S(2)})")
    ('1,0:T(8,128)(2,1)S(1)', '', ':S(2)')
    >>> leaf_layouts("f32[4,2]{1,0}")
    ()
    """
    if ":" not in shape_text:
        return ()
    return tuple(leaf.group(1) or "" for leaf in _LEAF_LAYOUT.finditer(shape_text))


SHOWN_CHARACTERS = 60
"""The most characters of a name or value an error message repeats."""


def shown(text: str) -> str:
    """``text`` as an error message repeats it: cut to :data:`SHOWN_CHARACTERS` characters.

    Examples
    --------
    >>> print(shown("x" * 1000))
    xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx... (1000 characters)
    """
    return text if len(text) <= SHOWN_CHARACTERS else f"{text[:SHOWN_CHARACTERS]}... ({len(text)} characters)"


def cut_long_words(message: str) -> str:
    """``message`` with every run of more than :data:`SHOWN_CHARACTERS` non-blank characters cut (see :func:`shown`).

    Examples
    --------
    >>> cut_long_words("unknown opcode 'frob' in " + "n" * 2_000_000)[-40:]
    'nnnnnnnnnnnnnnnn... (2000000 characters)'
    >>> cut_long_words("collective-permute " + "n" * 2_000_000 + ": pairs repeat")[-42:]  # the colon kept
    'nnnn... (2000001 characters): pairs repeat'
    """

    def cut(word: re.Match[str]) -> str:
        text = word.group()
        return shown(text) + (text[-1] if text[-1] in ":;," else "")  # the name's colon stays after its count

    return re.sub(rf"\S{{{SHOWN_CHARACTERS + 1},}}+(?! \(\d+ characters\))", cut, message)  # a word cut once is left as it is


class HloSyntaxError(ValueError):
    """Text that is not HLO: carries the 1-based line number and what was not understood."""

    def __init__(self, line: int, problem: str) -> None:
        self.line, self.problem = line, cut_long_words(problem)  # a 2,000,000-character name is not echoed whole
        super().__init__(f"line {line}: {self.problem}")


@dataclass
class Instruction:
    """One HLO instruction as written: result shape, opcode, operand names, raw attributes."""

    name: str
    opcode: str
    shape: Shape
    operands: tuple[str, ...]
    attrs: dict[str, str]
    line: int
    root: bool = False
    literal: str = ""
    """The text between the parentheses of a ``constant`` or ``parameter``."""
    layouts: tuple[str, ...] = ()
    """Per array of the result (tuples flattened), its layout as written (:func:`leaf_layouts`): the TPU's
    tiles and memory space; empty when no layout carries them."""


@dataclass
class Computation:
    """A computation: its instructions in the order written (the schedule, when the module is scheduled)."""

    name: str
    line: int
    entry: bool
    instructions: list[Instruction] = field(default_factory=list)
    attrs: dict[str, str] = field(default_factory=dict)
    """What follows its closing brace, e.g. ``execution_thread="sparsecore"`` (TPU7x's SparseCore computations)."""

    @property
    def execution_thread(self) -> str:
        """The thread it runs on: ``main``, or what its closing line names (``sparsecore``)."""
        return self.attrs.get("execution_thread", '"main"').strip('"')

    @property
    def root(self) -> Instruction:
        """The instruction marked ROOT (else the last one)."""
        return next((i for i in self.instructions if i.root), self.instructions[-1])

    def by_name(self) -> dict[str, Instruction]:
        """The instructions keyed by name."""
        return {i.name: i for i in self.instructions}


@dataclass
class Module:
    """A module: its name, header attributes (raw) and computations by name."""

    name: str
    attrs: dict[str, str]
    computations: dict[str, Computation]

    @property
    def entry(self) -> Computation:
        """The ENTRY computation."""
        return next(c for c in self.computations.values() if c.entry)

    @property
    def is_scheduled(self) -> bool:
        """Whether the header says ``is_scheduled=true`` (instructions listed in execution order)."""
        return self.attrs.get("is_scheduled") == "true"

    def count(self, attr: str) -> int:
        """``num_partitions`` or ``replica_count`` from the header (1 when absent)."""
        return int(self.attrs.get(attr, "1"))


def split_top_level(text: str, separator: str = ",") -> list[str]:
    """``text`` split at ``separator`` outside brackets, braces, parentheses and quotes.

    Examples
    --------
    >>> split_top_level('a={1,2}, b="x,y", c=f(1,2)')
    ['a={1,2}', 'b="x,y"', 'c=f(1,2)']
    """
    parts, start, depth = [], 0, 0
    for index, depth in _outside_quotes(text, 0):
        if depth < 0:
            break
        if depth == 0 and text[index] == separator:
            parts.append(text[start:index].strip())
            start = index + 1
    if depth != 0:
        raise ValueError(f"unbalanced brackets in {text[:80]!r}")
    tail = text[start:].strip()
    if tail or parts:
        parts.append(tail)
    return parts


def _outside_quotes(text: str, start: int) -> Iterator[tuple[int, int]]:
    """(index, bracket depth after it) of each character outside quotes, from ``start``."""
    depth, quote, index = 0, "", start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        else:
            depth += (char in "([{") - (char in ")]}")
            yield index, depth
        index += 1
    if quote:
        raise ValueError(f"unclosed quote in {text[:80]!r}")


def _closing(text: str, start: int) -> int:
    """The index of the parenthesis closing the one just before ``start``."""
    for index, depth in _outside_quotes(text, start):
        if depth < 0:
            return index
    raise ValueError("unclosed '(' after the opcode")


def _attributes(text: str) -> dict[str, str]:
    attrs: dict[str, str] = {}
    for part in split_top_level(text):
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            raise ValueError(f"expected attribute=value, got {part!r}")
        key = key.strip()
        if key == "device_ids" and "replica_groups" in attrs:  # the mesh spelling: mesh[...], device_ids=(...) {axes}
            attrs["replica_groups"] += ", " + part
            continue
        attrs[key] = value.strip()
    return attrs


def parse_instruction(text: str, line: int) -> Instruction:
    """One instruction line read into an :class:`Instruction` (``line`` names it in errors).

    Examples
    --------
    >>> i = parse_instruction("%ag = f32[32,32]{1,0} all-gather(%x), channel_id=1, dimensions={0}", 7)
    >>> i.name, i.opcode, str(i.shape), i.operands, i.attrs
    ('ag', 'all-gather', 'f32[32,32]', ('x',), {'channel_id': '1', 'dimensions': '{0}'})
    """
    try:
        head = _INSTRUCTION.match(text)
        if head is None:
            raise ValueError("expected an instruction such as `%name = f32[8] add(%a, %b)`")
        shape, index = read_shape(text, head.end())
        opcode = _OPCODE.match(text, index)
        if opcode is None:
            raise ValueError(f"expected an opcode followed by '(' at {text[index : index + 40].strip()!r}")
        close = _closing(text, opcode.end())
        inside = text[opcode.end() : close]
        rest = text[close + 1 :].strip()
        if rest and not rest.startswith(","):
            raise ValueError(f"unexpected {rest[:40]!r} after the operands")
        attrs = _attributes(rest[1:]) if rest else {}
    except ValueError as error:
        raise HloSyntaxError(line, str(error)) from None
    name, op = head.group(2), opcode.group(1)
    layouts = leaf_layouts(text[head.end() : index])
    if op in ("constant", "parameter"):
        return Instruction(name, op, shape, (), attrs, line, bool(head.group(1)), inside.strip(), layouts)
    operands = []
    for operand in split_top_level(inside):
        found = _OPERAND.search(operand.strip())
        if found is None:
            raise HloSyntaxError(line, f"operand {operand!r} of {name} is not a name such as %x")
        operands.append(found.group(1))
    return Instruction(name, op, shape, tuple(operands), attrs, line, bool(head.group(1)), layouts=layouts)


def _closing_attributes(text: str, line: int) -> dict[str, str]:
    """The attributes after a computation's closing brace: ``}, execution_thread="sparsecore"`` (none for ``}``)."""
    try:
        return _attributes(text[2:]) if text != "}" else {}
    except ValueError as error:
        raise HloSyntaxError(line, str(error)) from None


def _header(text: str, line: int) -> tuple[str, dict[str, str]]:
    body = text[len("HloModule") :].strip()
    name, _, rest = body.partition(",")
    try:
        return name.strip(), _attributes(rest)
    except ValueError as error:
        raise HloSyntaxError(line, str(error)) from None


def parse_module(text: str) -> Module:
    """Read the text of an HLO module.

    Raises
    ------
    HloSyntaxError
        For the first line that is not understood, with its number.

    Examples
    --------
    >>> m = parse_module('''HloModule m, is_scheduled=true, num_partitions=2
    ... ENTRY %main (p: f32[4]) -> f32[4] {
    ...   %p = f32[4]{0} parameter(0)
    ...   ROOT %ar = f32[4]{0} all-reduce(%p), channel_id=1, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
    ... }''')
    >>> m.name, m.is_scheduled, m.count("num_partitions"), m.entry.root.opcode
    ('m', True, 2, 'all-reduce')
    """
    name, attrs = "", {}
    computations: dict[str, Computation] = {}
    current: Computation | None = None
    in_table = False
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("//"):
            in_table = False
            continue
        if current is not None:
            if stripped == "}" or stripped.startswith("},"):
                current.attrs = _closing_attributes(stripped, number)
                if not current.instructions:
                    raise HloSyntaxError(number, f"computation {current.name} has no instructions")
                computations[current.name] = current
                current = None
            else:
                current.instructions.append(parse_instruction(stripped, number))
            continue
        if stripped.startswith("HloModule"):
            if name:
                raise HloSyntaxError(number, "a second HloModule header (one module per file)")
            name, attrs = _header(stripped, number)
            continue
        if stripped in DEBUG_TABLES:
            in_table = True
            continue
        if in_table and stripped[0].isdigit():
            continue
        header = _COMPUTATION.match(stripped)
        if header is None:
            raise HloSyntaxError(number, f"not understood: {stripped[:60]!r} (expected a computation `%name (...) -> shape {{` or an instruction inside one)")
        if header.group(2) in computations:
            raise HloSyntaxError(number, f"computation {header.group(2)} is defined twice")
        current = Computation(header.group(2), number, bool(header.group(1)))
    if current is not None:
        raise HloSyntaxError(current.line, f"computation {current.name} is not closed by '}}'")
    if not name:
        raise HloSyntaxError(1, "no `HloModule name, ...` header: is this the text of an HLO module?")
    entries = [c for c in computations.values() if c.entry]
    if len(entries) != 1:
        raise HloSyntaxError(1, f"expected one ENTRY computation, found {len(entries)}")
    return Module(name, attrs, computations)
