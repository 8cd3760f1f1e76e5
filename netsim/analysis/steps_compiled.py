"""Per-step summaries of big runs, compiled (numba): :func:`netsim.analysis.steps._steps` without the sorts.

Steps numbered within a range not much wider than their count are a table's rows: one
pass over the transfers takes each step's first send, last arrival and, per (step,
destination), the last arrival there; a pass over the table then gives each step's
first device done and its straggler (the lowest device among those done last). Minima
and maxima of the same floats, each time shifted by the same offset as the NumPy version
does it: the same numbers.
"""

from __future__ import annotations

import numpy as np

from netsim.engine.compiled_cache import njit

__all__ = ["step_pass"]


@njit(cache=True)
def step_pass(step, src, dst, sent, arrived, offset, low, n_steps, n_devices):
    """Per step ``low + k`` that has transfers: (k, first transfer, first send, last arrival, first done, straggler)."""
    first = np.full(n_steps, -1, np.int64)
    start = np.full(n_steps, np.inf)
    last = np.full(n_steps, -np.inf)
    done = np.full(n_steps * n_devices, -np.inf)
    for t in range(len(step)):
        k = step[t] - low
        if first[k] < 0:
            first[k] = t
        s, a = offset + sent[t], offset + arrived[t]
        if s < start[k]:
            start[k] = s
        if a > last[k]:
            last[k] = a
        c = k * n_devices + dst[t]
        if a > done[c]:
            done[c] = a
    rows = 0
    for k in range(n_steps):
        rows += first[k] >= 0
    out_step = np.empty(rows, np.int64)
    out_first = np.empty(rows, np.int64)
    out_start = np.empty(rows)
    out_last = np.empty(rows)
    out_done = np.empty(rows)
    out_straggler = np.empty(rows, np.int64)
    r = 0
    for k in range(n_steps):
        if first[k] < 0:
            continue
        earliest, straggler = np.inf, -1
        for d in range(n_devices):
            v = done[k * n_devices + d]
            if v == -np.inf:
                continue
            earliest = min(earliest, v)
            if straggler < 0 and v == last[k]:
                straggler = d
        out_step[r], out_first[r], out_start[r], out_last[r], out_done[r], out_straggler[r] = k, first[k], start[k], last[k], earliest, straggler
        r += 1
    return out_step, out_first, out_start, out_last, out_done, out_straggler
