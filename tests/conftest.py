"""Shared helpers for the tests: an index-based formulation of JAX's collectives.

These are written differently from :mod:`netsim.semantics` (whole-group fancy
indexing and moveaxis instead of per-member stacking) so that a mistake in one is
not copied into the other.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def groups_of(axis_index_groups, n_devices):
    return [list(range(n_devices))] if axis_index_groups is None else [list(g) for g in axis_index_groups]


def expected_all_gather(x, axis, tiled, axis_index_groups):
    x = np.asarray(x)
    out = np.empty_like(x, shape=(0,))
    rows = [None] * x.shape[0]
    for g in groups_of(axis_index_groups, x.shape[0]):
        block = x[g]  # [n, *shape]
        rank = x.ndim - 1
        if tiled:
            a = axis % rank
            moved = np.moveaxis(block, 0, a)  # [..., n, shape[a], ...]
            merged = moved.reshape((*moved.shape[:a], -1, *moved.shape[a + 2 :]))
        else:
            merged = np.moveaxis(block, 0, axis % (rank + 1))
        for d in g:
            rows[d] = merged
    out = np.stack(rows)
    return out


def expected_psum_scatter(x, scatter_dimension, tiled, axis_index_groups):
    x = np.asarray(x)
    rows = [None] * x.shape[0]
    for g in groups_of(axis_index_groups, x.shape[0]):
        total = x[g].sum(axis=0, dtype=x.dtype)
        dim = scatter_dimension % total.ndim
        for k, d in enumerate(g):
            rows[d] = np.split(total, len(g), axis=dim)[k] if tiled else total.take(k, axis=dim)
    return np.stack(rows)


def expected_psum(x, axis_index_groups):
    x = np.asarray(x)
    out = np.empty_like(x)
    for g in groups_of(axis_index_groups, x.shape[0]):
        out[g] = x[g].sum(axis=0, dtype=x.dtype)
    return out


@pytest.fixture(scope="session")
def bundled_runs():
    """Every bundled scenario, simulated once per test session: {name: Result}."""
    import netsim

    return {path.stem: netsim.simulate(netsim.load_scenario(path)) for path in sorted((ROOT / "scenarios").glob("*.yaml"))}
