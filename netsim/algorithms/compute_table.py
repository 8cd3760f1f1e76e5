"""Many compute steps held as columns: what a lowered program's schedule keeps instead of one object per step.

A training step on 256 chips has over a million compute steps (every HLO
instruction on every device). Made one :class:`~netsim.algorithms.compute.Compute`
at a time, and turned back into arrays for the players, they cost more than
playing them. A :class:`ComputeTable` keeps them as the arrays the players read
(:func:`netsim.engine.columns.compute_columns` takes its :attr:`~ComputeTable.columns`
as they are) and still reads as a sequence of ``Compute`` steps, each made when
asked for.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from netsim.algorithms.compute import Compute
from netsim.columnar import signed_ints

__all__ = ["ComputeTable"]


class ComputeTable(Sequence[Compute]):
    """Compute steps as columns, read as a sequence of :class:`~netsim.algorithms.compute.Compute`.

    Parameters
    ----------
    device : array of int
    seconds : array of float
        NaN where the step is timed by its ``flops`` and ``bytes``.
    flops, bytes, efficiency : array of float
    join : array of bool
    unit : array of int
    name : array of int
        Each step's name, as a position in ``names``.
    names : sequence of str
    dep_ptr, dep_idx : array of int
        Step ``j`` waits for ``dep_idx[dep_ptr[j]:dep_ptr[j + 1]]`` (numbered as in :func:`netsim.engine.play`).

    Examples
    --------
    >>> import numpy as np
    >>> t = ComputeTable(np.array([0, 1]), np.array([np.nan, 2e-6]), np.array([8.0, 0.0]), np.array([4.0, 0.0]),
    ...     np.array([1.0, 1.0]), np.array([False, False]), np.array([0, 0]), np.array([0, 1]), ("mm", "wait"),
    ...     np.array([0, 1, 1]), np.array([5]))
    >>> len(t), t[1].seconds, t[1].deps.tolist(), t[0].seconds, t[0].name
    (2, 2e-06, [], None, 'mm')
    """

    def __init__(
        self,
        device: np.ndarray,
        seconds: np.ndarray,
        flops: np.ndarray,
        bytes: np.ndarray,
        efficiency: np.ndarray,
        join: np.ndarray,
        unit: np.ndarray,
        name: np.ndarray,
        names: Sequence[str],
        dep_ptr: np.ndarray,
        dep_idx: np.ndarray,
    ) -> None:
        n = len(device)
        self.device = np.asarray(device, np.int64)
        self.seconds = np.asarray(seconds, np.float64)
        self.flops = np.asarray(flops, np.float64)
        self.bytes = np.asarray(bytes, np.float64)
        self.efficiency = np.asarray(efficiency, np.float64)
        self.join = np.asarray(join, bool)
        self.unit = np.asarray(unit, np.int64)
        self.name = np.asarray(name, np.int64)
        self.names = tuple(names)
        self.dep_ptr = np.asarray(dep_ptr, np.int64)
        self.dep_idx = signed_ints(dep_idx)  # (int32 from a program's builder while it fits)
        sizes = {len(c) for c in (self.seconds, self.flops, self.bytes, self.efficiency, self.join, self.unit, self.name)}
        if sizes != {n} or len(self.dep_ptr) != n + 1:
            raise ValueError(f"a compute table's columns must all give {n} steps (dep_ptr {n + 1} entries)")

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """The steps as :func:`netsim.engine.columns.compute_columns` gives them (the arrays themselves, not copies)."""
        return {
            "device": self.device,
            "seconds": self.seconds,
            "flops": self.flops,
            "bytes": self.bytes,
            "join": self.join,
            "unit": self.unit,
            "efficiency": self.efficiency,
            "dep_ptr": self.dep_ptr,
            "dep_idx": self.dep_idx,
        }

    def __len__(self) -> int:
        return len(self.device)

    @overload
    def __getitem__(self, j: int) -> Compute: ...
    @overload
    def __getitem__(self, j: slice) -> tuple[Compute, ...]: ...
    def __getitem__(self, j: Any) -> Any:
        if isinstance(j, slice):
            return tuple(self[i] for i in range(*j.indices(len(self))))
        n = len(self)
        if not -n <= j < n:
            raise IndexError(f"compute step {j} of {n}")
        j = int(j) % n if n else int(j)
        seconds = float(self.seconds[j])
        return Compute(
            device=int(self.device[j]),
            seconds=None if seconds != seconds else seconds,
            flops=float(self.flops[j]),
            bytes=float(self.bytes[j]),
            deps=self.dep_idx[self.dep_ptr[j] : self.dep_ptr[j + 1]],
            name=self.names[self.name[j]],
            join=bool(self.join[j]),
            efficiency=float(self.efficiency[j]),
            unit=int(self.unit[j]),
        )

    def __iter__(self) -> Iterator[Compute]:
        return (self[j] for j in range(len(self)))

    def __repr__(self) -> str:
        return f"ComputeTable({len(self)} steps)"
