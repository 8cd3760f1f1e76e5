"""Compute steps: a device working for a while, beside the transfers of a schedule."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

__all__ = ["Compute"]


@dataclass(frozen=True, slots=True)
class Compute:
    """Device ``device`` works, once every step in ``deps`` is done there.

    For ``seconds``, or, when that is None, for
    ``max(flops / (peak_flops * efficiency), bytes / hbm_bandwidth)`` at its chip's
    rates (the topology's ``device:`` figures, or a TPU preset's); ``efficiency`` is
    the fraction of the peak it reaches (1: the peak). Steps are numbered
    transfers first: in a schedule of n transfers, compute step j is step
    ``n + j`` in anyone's ``deps``. A compute step waits for arrivals at its device
    and for other compute steps on it; a transfer may wait for compute steps on
    its source.

    A *join* (``join=True``) is a step of no work that is done the instant its
    last dependency is done on its device, without queueing on the compute unit:
    "op B starts on device d once op A's inputs are there" is then one dependency
    per transfer of B (on the join) instead of one per arrival of A.

    ``unit`` says which of the device's units serves it: 0 its compute unit, 1 its DMA
    engine (copies between memories, prefetches), which works beside the compute unit,
    one step at a time, in the order they became ready; a DMA step's time is its bytes
    at the HBM bandwidth.

    When the step is done and ``fn`` is given, the device stores
    ``fn(*(its chunks under inputs))`` under ``output``: real values flow through
    compute as they do through the links.

    Examples
    --------
    >>> import numpy as np
    >>> step = Compute(device=0, flops=2 * 64**3, bytes=3 * 64 * 64 * 2, inputs=("a", "b"), output="c", fn=np.matmul)
    >>> step.seconds is None, step.deps
    (True, ())
    """

    device: int
    seconds: float | None = None
    flops: float = 0.0
    bytes: float = 0.0
    deps: tuple[int, ...] | Any = ()  # a tuple, or an int array (a lowered program's)
    inputs: tuple[Hashable, ...] = ()
    output: Hashable | None = None
    fn: Callable[..., Any] | None = None
    name: str = ""
    join: bool = False
    efficiency: float = 1.0
    unit: int = 0
