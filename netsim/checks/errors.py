"""The error every check raises: :class:`InvariantError`, an internal error of netsim."""

from __future__ import annotations

from netsim.engine import EngineError

__all__ = ["InvariantError"]

_REPORT = "this is a bug in netsim, please report it"


class InvariantError(EngineError):
    """A run broke one of netsim's invariants: a bug in netsim, not in the input.

    Attributes
    ----------
    invariant : str
        Which one (``"drained"``, ``"delivery"``, ``"link bytes"``, ``"device bytes"``,
        ``"chunks"``, ``"output"``).
    detail : str
        What was wrong.
    """

    __module__ = "netsim.checks"  # its public home: tracebacks and doctests say netsim.checks.InvariantError

    def __init__(self, invariant: str, detail: str) -> None:
        self.invariant, self.detail = invariant, detail
        super().__init__(f"invariant '{invariant}' violated: {detail}; {_REPORT}")
