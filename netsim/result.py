"""What a simulated collective returns: the output, the time and how they came about."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from netsim.engine import Playback
from netsim.schedules import Schedule
from netsim.topology import Topology

if TYPE_CHECKING:
    from netsim.analysis import Analysis
    from netsim.stats import RunStats

__all__ = ["LeafRun", "Result", "busbw_factor"]


def busbw_factor(collective: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor for a group of n (doc/PERFORMANCE.md).

    Examples
    --------
    >>> busbw_factor("all_gather", 8), busbw_factor("psum", 4)
    (0.875, 1.5)
    """
    if n <= 1:
        return 0.0
    if collective in ("psum", "all_reduce", "all_sum"):
        return 2 * (n - 1) / n
    return (n - 1) / n


@dataclass
class LeafRun:
    """The simulation of one array (one leaf of the input pytree)."""

    shape: tuple[int, ...]
    dtype: str
    schedule: Schedule
    playback: Playback


@dataclass
class Result:
    """A simulated collective.

    Attributes
    ----------
    output : numpy.ndarray or pytree
        Stacked ``[n_devices, ...]`` output, equal to what JAX returns.
    time : float
        Simulated seconds from the first send to the last arrival. With a pytree
        the leaves run one after another and the times add up.
    collective, algorithm, topology : str
        What ran where.
    groups : tuple of tuple of int
        The device groups (axis_index_groups, or one group of all devices).
    bytes_per_device : int
        Input bytes on each device (all leaves).
    total_bytes : int
        The collective's size S in nccl-tests' sense: all_gather n x per-device
        input, psum_scatter and psum one device's input.
    verified : bool
        Whether the output was checked against the independent NumPy reference.
    leaves : list of LeafRun
        Schedule and playback of each leaf.
    topology_obj : Topology or None
        The topology it ran on (for statistics and estimates).
    forwarding : str
        ``"cut_through"`` or ``"store_and_forward"``.
    verification : str
        How the output was checked, or why it was not (lazy outputs are checked
        without being materialised; ``data="none"`` runs have no output).
    """

    output: Any
    time: float
    collective: str
    algorithm: str
    topology: str
    n_devices: int
    groups: tuple[tuple[int, ...], ...]
    bytes_per_device: int
    total_bytes: int
    verified: bool
    leaves: list[LeafRun] = field(default_factory=list, repr=False)
    scenario: str | None = None
    topology_obj: Topology | None = field(default=None, repr=False)
    forwarding: str = "cut_through"
    verification: str = ""

    @property
    def group_size(self) -> int:
        """Devices in each group."""
        return len(self.groups[0])

    @property
    def algbw(self) -> float:
        """nccl-tests algorithm bandwidth S / t, bytes per second (0 if nothing moved)."""
        return self.total_bytes / self.time if self.time > 0 else 0.0

    @property
    def busbw(self) -> float:
        """nccl-tests bus bandwidth: algbw times (n-1)/n, or 2(n-1)/n for all-reduce."""
        return self.algbw * busbw_factor(self.collective, self.group_size)

    @cached_property
    def stats(self) -> RunStats:
        """Per-device, per-link and per-step statistics and the critical path, read from the playback."""
        from netsim.stats import run_stats

        return run_stats(self)

    @cached_property
    def analysis(self) -> Analysis:
        """The closed-form estimate beside the simulated time, the regime, and why they differ."""
        from netsim.analysis import analyse

        return analyse(self, self.stats if "stats" in self.__dict__ else None)

    def summary(self) -> dict[str, Any]:
        """The numbers a report shows, as plain JSON-ready values."""
        return {
            "scenario": self.scenario,
            "collective": self.collective,
            "topology": self.topology,
            "devices": self.n_devices,
            "groups": [list(g) for g in self.groups],
            "group_size": self.group_size,
            "algorithm": self.algorithm,
            "bytes_per_device": self.bytes_per_device,
            "total_bytes": self.total_bytes,
            "time_s": self.time,
            "algbw_Bps": self.algbw,
            "busbw_Bps": self.busbw,
            "steps": sum(leaf.schedule.n_steps for leaf in self.leaves),
            "transfers": sum(len(leaf.schedule.transfers) for leaf in self.leaves),
            "verified": self.verified,
            **(self.analysis.as_dict() if self.topology_obj is not None else {}),
            "verification": self.verification,
        }
