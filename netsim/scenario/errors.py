"""The one error type for a malformed scenario, topology or study file."""

from __future__ import annotations

import re

MAX_PART = 300
"""The most characters of a file name, field path or problem an error message repeats."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clipped(text: str, limit: int = MAX_PART) -> str:
    """``text`` with control characters escaped and cut to ``limit`` characters (its start and end kept).

    Examples
    --------
    >>> clipped("a\\x1b[31mred")
    'a\\\\x1b[31mred'
    >>> len(clipped("x" * 10_000))
    300
    """
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    return f"{text[:head]}...{text[len(text) - (limit - head - 3) :]}"


MAX_LISTED = 12
"""The most mistakes of one file an error lists (then how many more there are)."""


class ScenarioError(ValueError):
    """A scenario or topology file is wrong: names the file, the field and the fix.

    A file with several mistakes gives them all, one line each: the first is
    ``field`` and ``problem``, the others ``more`` (pairs of a field and a problem).

    Examples
    --------
    >>> print(ScenarioError("s.yaml", "link.bandwidth", "45 has no unit", more=[("link.latency", "1 has no unit")]))
    s.yaml: link.bandwidth: 45 has no unit
    s.yaml: link.latency: 1 has no unit
    """

    __module__ = "netsim.scenario"  # its public home: tracebacks and doctests say netsim.scenario.ScenarioError

    def __init__(self, source: str, field: str, problem: str, *, more: tuple[tuple[str, str], ...] | list[tuple[str, str]] = ()) -> None:
        self.source, self.field, self.problem = clipped(str(source)), clipped(str(field)), clipped(str(problem), 2 * MAX_PART)
        self.more = tuple((clipped(str(f)), clipped(str(p), 2 * MAX_PART)) for f, p in more)
        lines = [self._line(self.field, self.problem)] + [self._line(f, p) for f, p in self.more[: MAX_LISTED - 1]]
        if len(self.more) >= MAX_LISTED:
            lines.append(f"{self.source}: ... and {len(self.more) - MAX_LISTED + 1} more")
        super().__init__("\n".join(lines))

    def _line(self, field: str, problem: str) -> str:
        return f"{self.source}: {field}: {problem}" if field else f"{self.source}: {problem}"
