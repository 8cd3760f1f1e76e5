"""Memory: how much a run will need, how much the machine has, and refusing up front.

A run holds the stacked input, the stacked output, the partial sums of a
reduction, one group's reference answer while it is checked, and the schedule
and playback (about 1.5 KB per transfer). If that is more than the memory
available, it is refused before anything is allocated, with a message that
suggests the timing-only mode (``data: none``), instead of being killed by the
operating system half way through.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netsim.engine.compiled import MIN_TRANSFERS as COMPILED_MIN_TRANSFERS
from netsim.network.units import format_bytes
from netsim.semantics.chunks import SLICE_ELEMENTS

MATERIALISE_LIMIT_BYTES = 2 * 2**30
"""With ``output="auto"``, outputs larger than this (all devices together) stay lazy."""

__all__ = [
    "BYTES_PER_HOP",
    "BYTES_PER_RUN",
    "BYTES_PER_TRANSFER",
    "MemoryEstimate",
    "MemoryLimitError",
    "available_memory",
    "check_memory",
    "estimate_memory",
    "estimate_program_memory",
    "mean_hops",
    "memory_advice",
    "pieces_of",
    "transfers_of",
]

BYTES_PER_TRANSFER = 400
"""Schedule, playback and engine state per transfer, beside its hops: measured with tracemalloc (about 220 B) plus a margin."""

BYTES_PER_HOP = 400
"""Playback state per link a transfer crosses: measured with tracemalloc (about 300 B) plus a margin."""

BYTES_PER_RUN = 256 * 1024
"""A run's fixed structures (topology, routes, engine), measured with tracemalloc at under 0.1 MiB for small runs, with a margin."""

NEIGHBOUR_ALGORITHMS = ("ring", "bidirectional_ring", "bidirectional_halfway", "multiaxis", "dimension_ordered", "multiaxis_bundled")
"""Algorithms whose transfers go to a neighbour on the group's ring: one hop each where the group follows the links."""


def mean_hops(algorithm: str | None, dims: tuple[int, ...], wraparound: tuple[bool, ...]) -> float:
    """Links a transfer crosses on average: 1 for neighbour algorithms, else the topology's mean distance (an upper bound for smaller groups).

    Examples
    --------
    >>> mean_hops("ring", (512,), (True,)), mean_hops("direct", (512,), (True,)), mean_hops(None, (4, 4), (False, False))
    (1.0, 128.0, 3.0)
    """
    if algorithm in NEIGHBOUR_ALGORITHMS:
        return 1.0
    if algorithm == "hierarchical":  # its slices' rings, a row's end to the next row's start, and the DCN's 4 links: 1.94-1.98 measured
        return 2.0
    distance = sum(n / 4 if wrap else (n * n - 1) / (3 * n) for n, wrap in zip(dims, wraparound, strict=True))
    return max(1.0, float(math.ceil(distance)))


class MemoryLimitError(ValueError):
    """A run would need more memory than the machine has."""


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a run needs, by what holds them.

    Attributes
    ----------
    inputs, outputs, partial_sums, reference, schedule : int
        Bytes for the stacked input (0 when it already exists), the stacked output,
        the partial sums a reduction creates, checking one group against the
        reference (the group's inputs, and the comparison's temporaries of a few
        device outputs; for psum_scatter, the temporaries of a slice of one output),
        and the transfers with their playback.
    """

    inputs: int
    outputs: int
    partial_sums: int
    reference: int
    schedule: int

    @property
    def total(self) -> int:
        """All of it."""
        return self.inputs + self.outputs + self.partial_sums + self.reference + self.schedule


def pieces_of(algorithm: Any, group_shape: tuple[int, ...] | None = None) -> int:
    """Pieces an algorithm (an entry of :data:`netsim.algorithms.registry.ALGORITHMS`, or None) cuts a block into, at most.

    Algorithms over mesh axes cut by the number of axes: those of ``group_shape`` longer
    than 1, as the schedule plans them; counted for three when it is not known.

    Examples
    --------
    >>> from netsim.algorithms.registry import ALGORITHMS
    >>> pieces_of(ALGORITHMS["bidirectional_ring"]), pieces_of(None), pieces_of(ALGORITHMS["hierarchical"], (2, 16))
    (2, 2, 2)
    """
    pieces = getattr(algorithm, "pieces", 2)
    if not callable(pieces):
        return int(pieces)
    return int(pieces(3 if group_shape is None else max(sum(d > 1 for d in group_shape), 1)))


def transfers_of(algorithm: Any, n_devices: int, group_shape: tuple[int, ...] | None) -> int | None:
    """Transfers an algorithm (an entry of :data:`netsim.algorithms.registry.ALGORITHMS`) plans for
    ``n_devices`` in groups of ``group_shape``, if it says (None otherwise).

    Examples
    --------
    >>> from netsim.algorithms.registry import ALGORITHMS
    >>> transfers_of(ALGORITHMS["multiaxis_bundled"], 4096, (16, 16, 16))  # one group: the whole pod
    1105920
    >>> transfers_of(ALGORITHMS["multiaxis"], 4096, (16, 16, 16)) is None
    True
    """
    count = getattr(algorithm, "transfers", None)
    if count is None or group_shape is None:
        return None
    return n_devices // max(math.prod(group_shape), 1) * count(tuple(d for d in group_shape if d > 1) or (1,))  # as planned: axes of 1 left out


def _scatter_sums(n_devices: int, group_size: int, input_bytes: int, algorithm: str | None, transfers: int) -> int:
    """Bytes of the partial sums a reduce-scatter holds at its peak.

    Each sum is a new array (``held + arrived``) that replaces the chunk held under
    its key; the replaced one is freed unless another device still holds it. A
    ring passes every sum it makes on and keeps it: all (g - 1) sums of a block
    (input / g) per device stay, bounded here by the whole input. Recursive
    halving keeps the sums it sent (g/4 + g/8 + ... + 1 blocks) and its final one:
    half its input. Direct adds every arrival into its own block: one sum, and the
    one it replaces while it is made. The compiled player (schedules of
    :data:`~netsim.engine.compiled.MIN_TRANSFERS` transfers and more) makes every
    sum before it fills the buffers: (g - 1) blocks per device, whatever the algorithm.

    Examples
    --------
    >>> [_scatter_sums(8, 8, 2**20, a, 56) // 2**10 for a in ("ring", "recursive_halving", "direct")]
    [8192, 4224, 1152]
    >>> _scatter_sums(8, 8, 2**20, "direct", 10**6) // 2**10  # compiled: every sum, 7 blocks of 128 KiB per device
    7168
    """
    block = input_bytes // max(group_size, 1)
    if transfers >= COMPILED_MIN_TRANSFERS and algorithm in ("direct", "recursive_halving"):
        return n_devices * max(group_size - 1, 0) * block
    if algorithm == "direct":
        return n_devices * block + block
    if algorithm == "recursive_halving":
        return n_devices * input_bytes // 2 + block
    return n_devices * input_bytes


def _scatter_check(output: int, itemsize: int) -> int:
    """Bytes of the temporaries of checking one reduce-scatter output against the reference, a slice at a time.

    Per element of a slice (at most :data:`~netsim.semantics.chunks.SLICE_ELEMENTS`):
    the reference's sum (itemsize), and ``np.allclose`` on both sides cast to
    float32 or float64 (two copies and at most four temporaries of that width),
    and its masks (a few bytes): measured with tracemalloc at 6 outputs for
    float32 rows that fit in a slice.

    Examples
    --------
    >>> _scatter_check(2**18, 4) // 2**10  # a float32 row of 256 KiB: 65536 elements of 4 + 6 x 4 + 4 bytes
    2048
    """
    wide = 8 if itemsize >= 8 else 4
    elements = min(output // max(itemsize, 1), SLICE_ELEMENTS)
    return elements * (itemsize + 6 * wide + 4)


def estimate_memory(
    collective: str,
    n_devices: int,
    group_size: int,
    input_bytes: int,
    pieces: int = 2,
    *,
    input_exists: bool = False,
    materialised: bool = True,
    transfers: int | None = None,
    data: str = "values",
    hops: float = 1.0,
    algorithm: str | None = None,
    itemsize: int = 4,
) -> MemoryEstimate:
    """Estimate the memory a collective will need, from sizes alone (nothing is allocated).

    Parameters
    ----------
    collective : str
        ``"all_gather"``, ``"psum_scatter"``, ``"psum"``, ``"all_to_all"`` or ``"ppermute"``
        (the last two move one device's input: output size = input size).
    n_devices, group_size : int
        Devices in all, and in each group.
    input_bytes : int
        One device's input.
    pieces : int, default 2
        Pieces each block is cut into (the algorithm's).
    input_exists : bool, default False
        True when the caller already holds the input (the Python API).
    materialised : bool, default True
        False when the output stays lazy (built a row at a time when read), so
        it takes no memory up front.
    transfers : int, optional
        The transfers the schedule will have, when the algorithm knows (see
        :func:`transfers_of`); default n_devices (group_size - 1) pieces, one per
        block piece and device (twice for psum).
    data : str, default "values"
        ``"none"`` for a timing-only run: no arrays at all, only the schedule.
    hops : float, default 1
        Links a transfer crosses on average (:func:`mean_hops`).
    algorithm : str, optional
        The algorithm's name (a direct or recursive-halving reduce-scatter holds fewer partial sums).
    itemsize : int, default 4
        Bytes per element, the largest of the input's arrays (what checking a reduce-scatter's output costs depends on it).

    Examples
    --------
    >>> e = estimate_memory("all_gather", 4096, 4096, 2**30)  # 4096 devices gather 1 GiB each
    >>> e.outputs == 4096 * 4096 * 2**30, format_bytes(e.outputs)
    (True, '1.638e+04 TiB')
    >>> estimate_memory("psum", 8, 8, 1024, input_exists=True).inputs
    0
    """
    if collective == "all_gather":
        output = group_size * input_bytes
    elif collective == "psum_scatter":
        output = input_bytes // max(group_size, 1)
    else:
        output = input_bytes
    reduces = collective in ("psum", "psum_scatter")
    if transfers is None:
        transfers = n_devices * max(group_size - 1, 0) * pieces * (2 if collective == "psum" else 1)
    # psum's reduced blocks are the chunks its all-gather moves: counted in its output
    partial_sums = _scatter_sums(n_devices, group_size, input_bytes, algorithm, transfers) if collective == "psum_scatter" else 0
    schedule = BYTES_PER_RUN + int(transfers * (BYTES_PER_TRANSFER + hops * BYTES_PER_HOP))
    if data == "none":
        return MemoryEstimate(inputs=0, outputs=0, partial_sums=0, reference=0, schedule=schedule)
    return MemoryEstimate(
        inputs=0 if input_exists else n_devices * input_bytes,
        outputs=n_devices * output if materialised else 0,
        partial_sums=partial_sums,
        # one group's inputs, and the comparison's temporaries: a few outputs for sums of floats, one for exact copies
        # (compared bit for bit, outputs._same_bits); a lazy output is checked a row at a time
        reference=(
            _scatter_check(output, itemsize)
            if collective == "psum_scatter" and materialised
            else group_size * input_bytes + (4 if reduces else 1) * output
            if materialised
            else 2 * output
        ),
        schedule=schedule,
    )


BYTES_PER_DEPENDENCY = 48
"""Per dependency entry of a lowered program: its place in the schedule's columns and in the player's
lists of who waits for what (a Python int and a list slot), measured with tracemalloc at about 40 B."""


def estimate_program_memory(transfers: int, hops: float, compute_steps: int, dependencies: int, values_bytes: int = 0) -> MemoryEstimate:
    """Estimate the memory a lowered program will need to play, from its counts alone.

    Parameters
    ----------
    transfers : int
        The transfers of its schedule (every collective's).
    hops : float
        Links a transfer crosses on average.
    compute_steps : int
        Its compute steps (joins included).
    dependencies : int
        Its dependency entries, transfers' and compute steps'.
    values_bytes : int, default 0
        The arrays a run with values holds (0 when timing only).

    Examples
    --------
    >>> e = estimate_program_memory(2_088_960, 1.0, 3840, 3_900_000)
    >>> format_bytes(e.schedule), e.inputs
    ('1.734 GiB', 0)
    """
    schedule = BYTES_PER_RUN + int((transfers + compute_steps) * (BYTES_PER_TRANSFER + hops * BYTES_PER_HOP) + dependencies * BYTES_PER_DEPENDENCY)
    return MemoryEstimate(inputs=values_bytes, outputs=0, partial_sums=0, reference=0, schedule=schedule)


PLANNED_FIXED_BYTES = 128 * 2**20
"""What a big timing-only program's process grows by besides its transfers (the compiled player, its first arrays):
RSS growth fitted at 140 MB over FSDP programs of 0.2 to 3.1 M transfers (bench/README.md), rounded down."""

PLANNED_BYTES_PER_ENTRY = 314
"""Per transfer or compute step of a planned program: twice the 157 B per transfer its peak RSS grows by (2-layer FSDP
programs on tpu-v4 4x8x8, 8x8x8 and 8x8x16, 0.8 to 12.6 M transfers: 157 B between each two; bench/README.md), a margin."""


BYTES_PER_START_CHUNK = 400
"""Per chunk the devices start with, timing only (a reduction's every device holds every block: N^2 of them): its entry in
the device's buffer and in the compiled player's tables. About 280 B measured (the 16B training step on a v5e 16x16 at
one and two backward trips: 3.9 and 6.0 M chunks), a margin."""


def estimate_planned_memory(
    transfers: int, compute_steps: int, values_bytes: int = 0, link_crossings: float | None = None, start_chunks: int = 0
) -> MemoryEstimate:
    """The memory a program will need, from the counts of its plans before it is lowered (:func:`netsim.programs.run.planned_estimate`).

    Measured against fresh processes playing 2-layer FSDP programs on the compiled player, whose transfers
    cross one link each: 1.34x the RSS growth over the run at 0.2 M transfers and 1.58x at 0.8 M
    (tests/test_program_plans.py checks both), and 0.77x to 1.89x the whole process's peak from 0.05 M to
    12.6 M transfers on 64 to 4096 chips (bench/README.md); every further link crossed
    (``link_crossings`` beyond one per transfer) is counted at :data:`BYTES_PER_HOP`, every
    chunk the devices start with (``start_chunks``) at :data:`BYTES_PER_START_CHUNK`. The
    estimate for the Python player (:func:`estimate_program_memory`) keeps its margin.

    Examples
    --------
    >>> format_bytes(estimate_planned_memory(3_139_584, 3_072).total)
    '1.044 GiB'
    """
    beyond = max(0.0, (link_crossings or transfers) - transfers)
    schedule = PLANNED_FIXED_BYTES + (transfers + compute_steps) * PLANNED_BYTES_PER_ENTRY + int(beyond * BYTES_PER_HOP) + start_chunks * BYTES_PER_START_CHUNK
    return MemoryEstimate(inputs=values_bytes, outputs=0, partial_sums=0, reference=0, schedule=schedule)


def available_memory() -> int | None:
    """Bytes this process can still allocate: MemAvailable, capped by a cgroup limit (None if unknown).

    Examples
    --------
    >>> available_memory() is None or available_memory() > 0
    True
    """
    found: list[int] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    if not found:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            found.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        try:
            limit = Path(limit_file).read_text().strip()
            if limit != "max" and int(limit) < 1 << 60:
                found.append(max(int(limit) - int(Path(usage_file).read_text().strip()), 0))
        except (OSError, ValueError):
            continue
    return min(found) if found else None


def check_memory(estimate: MemoryEstimate, available: int | None = None, *, timing_only: bool = False, fewer: str = "fewer devices") -> None:
    """Refuse a run whose estimate exceeds the available memory.

    Parameters
    ----------
    estimate : MemoryEstimate
    available : int, optional
        Bytes available; default :func:`available_memory` (no check if unknown).
    timing_only : bool, default False
        The run is already timing-only (``data: none``): the advice is fewer devices.
    fewer : str, default "fewer devices"
        What the advice asks for less of (a program: ``"fewer devices or ops"``).

    Raises
    ------
    MemoryLimitError
        One line: what is needed, what is there, and what to do instead.

    Examples
    --------
    >>> check_memory(estimate_memory("all_gather", 8, 8, 1024), available=2**30)
    >>> check_memory(estimate_memory("all_gather", 4096, 4096, 2**30), available=16 * 2**30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    netsim.checks.memory.MemoryLimitError: this run needs about 1.64e+04 TiB of memory (outputs 1.638e+04 TiB) but only 16 GiB ...
    """
    available = available_memory() if available is None else available
    if available is None or estimate.total <= available:
        return
    parts = sorted(
        ((name, getattr(estimate, name)) for name in ("inputs", "outputs", "partial_sums", "reference", "schedule")),
        key=lambda item: -item[1],
    )
    shown = ", ".join(f"{name.replace('_', ' ')} {format_bytes(size)}" for name, size in parts if size and size >= estimate.total / 1000)
    needs = f"this run needs about {format_bytes(estimate.total)} of memory ({shown})"
    raise MemoryLimitError(f"{needs} but only {format_bytes(available)} is available; {memory_advice(timing_only, fewer)}")


def memory_advice(timing_only: bool, fewer: str = "fewer devices") -> str:
    """What to try when a run does not fit: never what it already does (a timing-only run is not told to run timing-only).

    Examples
    --------
    >>> memory_advice(False)
    'run it timing-only with `data: none`, or use fewer devices or a smaller input'
    >>> memory_advice(True, "fewer devices or ops")
    'use fewer devices or ops, or an algorithm with fewer steps'
    """
    return f"use {fewer}, or an algorithm with fewer steps" if timing_only else f"run it timing-only with `data: none`, or use {fewer} or a smaller input"
