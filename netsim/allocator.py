"""How big runs ask the C allocator (glibc's) to handle the large arrays they free.

Two policies; the thresholds are the process's, so the one asked for last holds
(asking again for the one in force does nothing):

* :func:`return_freed_memory`: each large array gets a mapping of its own, unmapped
  when freed, so memory goes back to the system at once (big collectives);
* :func:`keep_freed_memory`: large arrays come from the heap, which keeps what is
  freed for the arrays that follow, so their pages are not faulted in again (big
  programs and HLO modules).

Neither changes a time or a result; both are no-ops where the C library is not glibc.
"""

from __future__ import annotations

import contextlib

__all__ = ["KEEP_FREED_MIN_DEVICES", "RETURN_FREED_MIN_BYTES", "keep_freed_memory", "return_freed_memory"]

RETURN_FREED_MIN_BYTES = 2**30
"""Collectives whose estimate is at least this call :func:`return_freed_memory` before planning."""
KEEP_FREED_MIN_DEVICES = 256
"""Programs and HLO modules on at least this many devices call :func:`keep_freed_memory` before lowering."""


def return_freed_memory() -> bool:
    """Have the C allocator give memory back to the system as soon as it is freed (glibc only).

    A big run builds its schedule from many large NumPy arrays made and dropped in
    turn. By default glibc raises its mmap threshold each time a large block is
    freed, so later arrays of up to 32 MiB come from the heap, whose freed middle is
    never returned: a 32-layer program's peak resident memory was 2.36 GiB, of which
    about 0.6 GiB was freed but held. Fixing both thresholds at 128 KiB
    (``mallopt(M_TRIM_THRESHOLD)`` and ``mallopt(M_MMAP_THRESHOLD)``, as the
    ``MALLOC_TRIM_THRESHOLD_`` and ``MALLOC_MMAP_THRESHOLD_`` environment variables
    would) gives each such array a mapping of its own, unmapped when freed. Times
    and results are untouched. It costs fresh pages for every such array (about 6 %
    of a fresh 1024-chip ring all_gather's wall time), so runs ask for it only when
    they are big: collectives whose estimate is :data:`RETURN_FREED_MIN_BYTES` or more
    (big programs and HLO modules ask for :func:`keep_freed_memory` instead: for them
    the fresh pages cost more than the memory held). Asking again while it is in force
    does nothing; a no-op where the C library is not glibc.

    Returns
    -------
    bool
        Whether the thresholds are set (now, or when this policy was last asked for).

    Examples
    --------
    >>> return_freed_memory() in (True, False)
    True
    """
    return _policy("return", {M_TRIM_THRESHOLD: 128 * 2**10, M_MMAP_THRESHOLD: 128 * 2**10, M_TOP_PAD: 128 * 2**10})


def keep_freed_memory() -> bool:
    """Have the C allocator keep big freed blocks for the arrays that follow instead of unmapping them (glibc only).

    A big program lowers and plays its schedule through arrays of tens of millions of
    entries, made and dropped in turn. Given a mapping of its own (glibc's default past
    32 MiB, or :func:`return_freed_memory`'s 128 KiB), each array's pages fault in when
    first written and go back when it is freed, and the next array faults them in again:
    the kernel's time for that was 6.2 s of a 512-chip FSDP program's 17.0 s of CPU
    (8 layers on tpu-v4:8x8x8). Here every block below 1 GiB comes from the heap
    (``M_MMAP_THRESHOLD``), the heap grows 64 MiB at a time (``M_TOP_PAD``) and gives
    its top back only once 1 GiB of it is free (``M_TRIM_THRESHOLD``), so later arrays
    reuse pages already mapped. Times and results are untouched; the peak resident
    memory grows by what the heap holds freed (bench/README.md has the figures).
    Programs and HLO modules on :data:`KEEP_FREED_MIN_DEVICES` devices or more ask for
    it; a later :func:`return_freed_memory` (a collective of 1 GiB or more) sets its own
    thresholds. A no-op where the C library is not glibc.

    Returns
    -------
    bool
        Whether glibc took the three settings (now, or when this policy was last asked for).

    Examples
    --------
    >>> keep_freed_memory() in (True, False)
    True
    """
    return _policy("keep", {M_MMAP_THRESHOLD: 2**30, M_TRIM_THRESHOLD: 2**30, M_TOP_PAD: 64 * 2**20})


M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
"""glibc's ``mallopt`` options (malloc.h)."""


_in_force: list[str] = []
"""The policy set last (none yet: glibc's own)."""


def _policy(name: str, settings: dict[int, int]) -> bool:
    """Set glibc's ``mallopt`` options, in order, unless policy ``name`` is in force; whether it is (False where
    the C library is not glibc)."""
    if _in_force[-1:] == [name]:
        return True
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        if all(bool(libc.mallopt(option, value)) for option, value in settings.items()):
            _in_force[:] = [name]
            return True
    return False
