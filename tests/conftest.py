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

TWO_LAYER_PROGRAM = """
name: p
topology: tpu-v5e:2x2
mesh: {data: 2, model: 2}
arrays:
  x: {shape: [8, 16], dtype: float32, sharding: [data, model]}
  w: {shape: [16, 32], dtype: float32, sharding: [model, null]}
ops:
  - {name: up1, op: matmul, in: [x, w], out: h}
  - {name: ar1, op: psum, in: h, axes: model, out: y}
"""
"""A small program file (a matmul, then a psum over the model axis) that tests change one field of."""


def load_script(relative: str, name: str):
    """A script of the repository (``scripts/validation.py``, ``bench/programs.py``) loaded by its path as module ``name``.

    Registered in ``sys.modules`` first: dataclasses look their module up there.
    """
    import importlib.util
    import sys
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(name, Path(__file__).resolve().parent.parent / relative)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def sample_then_slow(cases, keep: int, seed: int | None = None) -> list:
    """A sweep's cases with all but ``keep`` of them marked ``slow``: the first ``keep``, or a sample drawn from ``seed``.

    ``python -m pytest`` runs them all; ``python -m pytest -m "not slow"`` only the sample.
    """
    cases = list(cases)
    kept = set(range(keep)) if seed is None else set(np.random.default_rng(seed).choice(len(cases), min(keep, len(cases)), replace=False).tolist())
    out = []
    for index, case in enumerate(cases):
        if index in kept:
            out.append(case)
        elif isinstance(case, type(pytest.param(None))):
            out.append(pytest.param(*case.values, marks=(*case.marks, pytest.mark.slow), id=case.id))
        else:
            out.append(pytest.param(case, marks=pytest.mark.slow))
    return out


def shuffled_groups(size: int, n_groups: int, seed: int) -> list[list[int]]:
    """n_groups groups of ``size`` devices, devices and members in random order."""
    order = np.random.default_rng(seed).permutation(size * n_groups).tolist()
    return [order[i * size : (i + 1) * size] for i in range(n_groups)]


def make_input(n_devices: int, shape: tuple[int, ...], dtype: str, seed: int) -> np.ndarray:
    """Random stacked input: int32 in [-1000, 1000) or standard normal float32."""
    rng = np.random.default_rng(seed)
    if dtype == "int32":
        return rng.integers(-1000, 1000, size=(n_devices, *shape), dtype=np.int32)
    return rng.standard_normal((n_devices, *shape)).astype(np.float32)


def runnable(pattern: str, group_size: int) -> list[str]:
    """The algorithms that can play a pattern on groups of this size (some need a power of two)."""
    from netsim.algorithms.registry import ALGORITHMS, check_algorithm

    names = []
    for name in sorted(ALGORITHMS):
        try:
            check_algorithm(pattern, group_size, name)
        except ValueError:
            continue
        names.append(name)
    return names


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
            merged = moved.reshape((*moved.shape[:a], moved.shape[a] * moved.shape[a + 1], *moved.shape[a + 2 :]))
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


def expected_all_to_all(x, split_axis, concat_axis, tiled, axis_index_groups):
    """all_to_all by reshaping each group's stacked input: cut the split axis into (receiver, rest)."""
    x = np.asarray(x)
    rank = x.ndim - 1
    s, c = split_axis % rank, concat_axis % rank
    rows = [None] * x.shape[0]
    for g in groups_of(axis_index_groups, x.shape[0]):
        n = len(g)
        stacked = x[g]  # [sender, *shape]
        cut = stacked.reshape((*stacked.shape[: 1 + s], n, stacked.shape[1 + s] // n, *stacked.shape[2 + s :]))
        by_receiver = np.moveaxis(cut, 1 + s, 0)  # [receiver, sender, ..., rest, ...]
        for i, d in enumerate(g):
            mine = by_receiver[i]  # [sender, *shape with split axis -> rest]
            if tiled:
                moved = np.moveaxis(mine, 0, c)  # [..., sender, shape[c], ...]
                rows[d] = moved.reshape((*moved.shape[:c], -1, *moved.shape[c + 2 :]))
            else:
                rows[d] = np.moveaxis(mine.squeeze(axis=1 + s), 0, c)
    return np.stack(rows)


def expected_ppermute(x, perm):
    """ppermute by fancy indexing: out[destinations] = x[sources], zeros elsewhere."""
    x = np.asarray(x)
    out = np.zeros_like(x)
    if perm:
        sources, destinations = (list(v) for v in zip(*perm, strict=True))
        out[destinations] = x[sources]
    return out


def without_values(tree):
    """An output pytree with every array replaced by a stand-in of the same shape and dtype that holds no memory.

    The stand-in is one zero broadcast to the shape (``nbytes`` as the array's), so
    statistics of output bytes read the same; its values are not the run's.
    """
    if isinstance(tree, dict):
        return {key: without_values(value) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        return type(tree)(without_values(value) for value in tree)
    if isinstance(tree, np.ndarray):
        return np.broadcast_to(np.zeros((), tree.dtype), tree.shape)
    return tree


@pytest.fixture(scope="session")
def bundled_runs():
    """Every bundled scenario, simulated once per test session: {name: Result}, for the tests of times and statistics.

    The outputs (1.5 GB together, the bandwidth-bound ring's 537 MB) and the chunks each device
    ended with (0.5 GB, the corner ppermute's 258 MB) would stay resident for the whole session:
    the outputs are checked against the NumPy reference as each run ends (``Result.verified``),
    then both are replaced by :func:`without_values`. Tests of output values run the scenario
    themselves.
    """
    import dataclasses

    import netsim

    runs = {}
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        result = netsim.simulate(netsim.load_scenario(path))
        assert result.verified, f"{path.name}: the output differs from the NumPy reference"
        for leaf in result.leaves:
            for held in leaf.playback.buffers:
                held.update({key: without_values(chunk) for key, chunk in held.items()})
        runs[path.stem] = dataclasses.replace(result, output=without_values(result.output))
    return runs
