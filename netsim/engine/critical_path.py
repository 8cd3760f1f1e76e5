"""The critical path as data: the chain of link crossings that set a run's finish time.

A :class:`CriticalPath` is what :func:`netsim.analysis.critical_path.critical_path`
finds by reading a playback backwards, and what a :class:`~netsim.result.Result`
carries for each array it ran (``LeafRun.critical_path``). It lives here, beside the
playback it describes, so that the result can hold it without knowing how it is found.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from netsim.network.topology import LinkId
from netsim.network.units import format_seconds

__all__ = ["CriticalPath", "PathStep"]


@dataclass(frozen=True, slots=True)
class PathStep:
    """One link crossing on the critical path.

    Attributes
    ----------
    transfer : int
        Index of the transfer in its schedule.
    link : LinkId or None
        The link crossed (None for a transfer that stays on its device).
    link_name : str
        The link as people read it, e.g. ``3->4`` or ``(0,1)->(0,2)``.
    start, end : float
        When the message started on the link and when it left it, seconds.
    waited_for : str
        Why it started then: ``"data"`` (as soon as its chunk was there) or
        ``"link"`` (the link was busy with the step before this one on the path).
    """

    transfer: int
    link: LinkId | None
    link_name: str
    start: float
    end: float
    waited_for: str

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {"transfer": self.transfer, "link": self.link_name, "start_s": self.start, "end_s": self.end, "waited_for": self.waited_for}


@dataclass(frozen=True)
class CriticalPath:
    """The chain of link crossings that determined when a run finished.

    Attributes
    ----------
    steps : tuple of PathStep
        In time order.
    origin_device : int or None
        The device whose start began the chain.
    origin_s : float
        When that device started: 0, or a straggler's late start.
    finish_s : float
        When the last transfer arrived: the run's time.
    """

    steps: tuple[PathStep, ...]
    origin_device: int | None
    origin_s: float
    finish_s: float

    @property
    def links(self) -> Counter[str]:
        """How many crossings of the path each link carries, by link name."""
        return Counter(step.link_name for step in self.steps if step.link is not None)

    @staticmethod
    def joined(paths: Sequence[CriticalPath], finish_s: float) -> CriticalPath:
        """The paths of runs played one after another, as one path (``finish_s`` the finish when there are none).

        Examples
        --------
        >>> a = CriticalPath((PathStep(0, (0, 1, (0, 1)), "0->1", 0.0, 1e-6, "data"),), 0, 0.0, 1e-6)
        >>> b = a.shifted(1e-6)
        >>> joined = CriticalPath.joined([a, b], 2e-6)
        >>> [step.start for step in joined.steps], joined.finish_s
        ([0.0, 1e-06], 2e-06)
        >>> CriticalPath.joined([], 3e-6).finish_s
        3e-06
        """
        if not paths:
            return CriticalPath((), None, 0.0, finish_s)
        steps = tuple(step for path in paths for step in path.steps)
        return CriticalPath(steps, paths[0].origin_device, paths[0].origin_s, paths[-1].finish_s)

    def shifted(self, offset_s: float) -> CriticalPath:
        """The same path with every time moved by ``offset_s`` (for runs played one after another)."""
        steps = tuple(replace(step, start=step.start + offset_s, end=step.end + offset_s) for step in self.steps)
        return CriticalPath(steps, self.origin_device, self.origin_s + offset_s, self.finish_s + offset_s)

    def describe(self, limit: int = 8) -> str:
        """One line for a report: the links in order, or the busiest ones on a long path.

        Examples
        --------
        >>> a = PathStep(0, (1, 0, (0, -1)), "1->0", 2e-05, 2.5e-05, "data")
        >>> b = PathStep(1, (0, 3, (0, -1)), "0->3", 2.5e-05, 3e-05, "link")
        >>> CriticalPath((a, b), 1, 2e-05, 3.1e-05).describe()
        'device 1 starts at 20 us; 1->0, 0->3 (queued)'
        >>> CriticalPath((a, b, b), 1, 2e-05, 3.1e-05).describe()
        'device 1 starts at 20 us; 1->0, 0->3 x2 (2 queued)'
        >>> CriticalPath((a, b, a), 1, 2e-05, 3.1e-05).describe(limit=2)
        'device 1 starts at 20 us; 3 crossings, most on 1->0 x2, 0->3 x1 (1 queued)'
        """
        start = f"device {self.origin_device} starts at {format_seconds(self.origin_s)}; " if self.origin_s > 0 else ""
        crossings = [step for step in self.steps if step.link is not None]
        if not crossings:
            return f"{start}no link crossed"
        runs: list[list[PathStep]] = []
        for step in crossings:
            if runs and runs[-1][0].link_name == step.link_name:
                runs[-1].append(step)
            else:
                runs.append([step])
        if len(runs) <= limit:
            return start + ", ".join(_run_text(run) for run in runs)
        queued = Counter(step.link_name for step in crossings if step.waited_for == "link")
        counts = self.links.most_common()
        shown = ", ".join(f"{name} x{count}" + (f" ({queued[name]} queued)" if queued[name] else "") for name, count in counts[:4])
        more = f", ... ({len(counts)} links)" if len(counts) > 4 else ""
        return f"{start}{len(crossings)} crossings, most on {shown}{more}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready values."""
        return {
            "origin_device": self.origin_device,
            "origin_s": self.origin_s,
            "finish_s": self.finish_s,
            "steps": [step.to_dict() for step in self.steps],
        }


def _run_text(run: list[PathStep]) -> str:
    queued = sum(step.waited_for == "link" for step in run)
    count = f" x{len(run)}" if len(run) > 1 else ""
    if queued:
        return f"{run[0].link_name}{count} (queued)" if len(run) == 1 else f"{run[0].link_name}{count} ({queued} queued)"
    return f"{run[0].link_name}{count}"
