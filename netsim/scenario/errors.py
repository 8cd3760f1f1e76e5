"""The one error type for a malformed scenario, topology or study file."""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario or topology file is wrong: names the file, the field and the fix."""

    __module__ = "netsim.scenario"  # its public home: tracebacks and doctests say netsim.scenario.ScenarioError

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source, self.field, self.problem = source, field, problem
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + problem)
