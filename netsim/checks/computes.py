"""The ``compute`` invariant: every compute step ran after what it waits for, one at a time on its unit.

A compute step starts once every step it waits for is done (transfers arrived at its
device, compute steps ended there), lasts a finite time >= 0, and a device's compute unit
serves one step at a time: on each device, the steps that are work (not joins) never
overlap. A join (:class:`~netsim.algorithms.compute.Compute` ``join=True``) is done the
instant its last dependency is: it starts and ends then.
"""

from __future__ import annotations

import numpy as np

from netsim.checks.arrays import _Arrays, _first, _later, _slack
from netsim.checks.errors import InvariantError
from netsim.columnar import AT_ONCE


def _check_computes(a: _Arrays) -> None:
    """Raise :class:`InvariantError` ("compute") at the first compute step that breaks the invariant."""
    started, ended, columns = a.started, a.ended, a.computes
    m = len(started)
    if not m:
        return
    bad = ~(np.isfinite(started) & np.isfinite(ended)) | (started < 0) | _later(started, ended)
    if bad.any():
        j = _first(bad)
        raise InvariantError("compute", f"compute step #{j} started at {started[j]:.9g} s and ended at {ended[j]:.9g} s")
    ptr, idx = columns["dep_ptr"], columns["dep_idx"]
    if len(idx) and (int(idx.min()) < 0 or int(idx.max()) >= len(a.done)):
        raise InvariantError("compute", "a compute step waits for a step that does not exist")
    last = _last_dependency(ptr, idx, a.done)
    early = _later(last, started)  # (later than the start beyond rounding: the last one is, if any is)
    if early.any():
        j = _first(early)
        deps = idx[ptr[j] : ptr[j + 1]]
        d = int(deps[_first(_later(a.done[deps], np.full(len(deps), started[j])))])
        what = f"transfer #{d} arrived" if d < len(a.src) else f"compute step #{d - len(a.src)} ended"
        raise InvariantError("compute", f"compute step #{j} started at {started[j]:.9g} s, before {what} at {a.done[d]:.9g} s, which it waits for")
    joins = np.asarray(columns["join"], bool)
    if joins.any():
        late = joins & ((started != last) | (ended != last))
        if late.any():
            j = _first(late)
            when = f"from {started[j]:.9g} s to {ended[j]:.9g} s"
            raise InvariantError("compute", f"join #{j} was done {when}, not when its last dependency was ({last[j]:.9g} s)")
    work = np.flatnonzero(~joins)
    lane = np.asarray(columns["unit"], np.int64) if "unit" in columns else np.zeros(len(columns["device"]), np.int64)
    device = (2 * np.asarray(columns["device"], np.int64) + lane)[work]  # each device's compute unit (2d) and DMA engine (2d + 1)
    by_start = np.lexsort((ended[work], started[work], device))  # each unit's steps in the order they started (at one instant, a step of no time first)
    order, same = work[by_start], device[by_start]
    overlap = (same[1:] == same[:-1]) & (ended[order[:-1]] > started[order[1:]] + _slack(ended[order[:-1]], started[order[1:]]))
    if overlap.any():
        k = _first(overlap)
        j, i = int(order[k]), int(order[k + 1])
        raise InvariantError(
            "compute",
            f"device {same[k] // 2}'s {('compute unit', 'DMA engine')[same[k] % 2]} ran step #{i} from {started[i]:.9g} s"
            f" while step #{j} ran until {ended[j]:.9g} s (one step at a time)",
        )


def _last_dependency(ptr: np.ndarray, idx: np.ndarray, done: np.ndarray, entries: int = AT_ONCE) -> np.ndarray:
    """When each step's last dependency was done (``-inf`` for a step that waits for nothing): by segment, about
    ``entries`` dependencies at a time (no array of one time per dependency: a big program's steps wait for tens of millions).

    Examples
    --------
    >>> _last_dependency(np.array([0, 2, 2, 5]), np.array([0, 1, 1, 2, 0]), np.array([3.0, 1.0, 2.0]), entries=2).tolist()
    [3.0, -inf, 3.0]
    """
    m = len(ptr) - 1
    last = np.full(m, -np.inf)
    cuts = np.unique(np.concatenate([[0], np.searchsorted(ptr, np.arange(entries, int(ptr[-1]), entries), "right") - 1, [m]]))
    for first, end in zip(cuts[:-1].tolist(), cuts[1:].tolist(), strict=True):  # steps first .. end - 1, whole
        lo, hi = int(ptr[first]), int(ptr[end])
        waits = np.flatnonzero(np.diff(ptr[first : end + 1]) > 0) + first
        if len(waits):
            last[waits] = np.maximum.reduceat(done[idx[lo:hi]], ptr[waits] - lo)
    return last
