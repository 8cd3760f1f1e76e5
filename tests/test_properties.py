"""Property-based tests (hypothesis) over topologies, group layouts, shapes, dtypes, axes and algorithms.

Every legal combination gives JAX's output (checked against the independent
reference in conftest.py) and a positive, finite time; every illegal one is a
ValueError naming the values. Derandomized, so CI sees the same examples every run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import expected_all_gather, expected_psum, expected_psum_scatter, runnable
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import netsim
from netsim.semantics.all_to_all import all_to_all_reference
from netsim.semantics.permute import ppermute_reference

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
DTYPES = ("int8", "uint16", "int32", "int64", "float16", "float32", "float64")


def algorithms(pattern: str, group_size: int) -> st.SearchStrategy[str]:
    """The algorithms that can play the pattern on groups of this size (some need a power of two)."""
    return st.sampled_from(runnable(pattern, group_size))


@st.composite
def topologies(draw):
    kind = draw(st.sampled_from(["ring", "torus", "mesh", "torus3d"]))
    if kind == "ring":
        return netsim.ring(draw(st.integers(1, 8)))
    if kind == "torus3d":
        return netsim.torus((2, 2, draw(st.integers(1, 3))))
    dims = (draw(st.integers(1, 4)), draw(st.integers(1, 4)))
    return netsim.torus(dims) if kind == "torus" else netsim.mesh(dims)


@st.composite
def layouts(draw, topology):
    """axis_index_groups (or None): equal groups of shuffled devices."""
    n = topology.n_devices
    if draw(st.booleans()):
        return None, n
    size = draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
    order = draw(st.permutations(range(n)))
    return [list(order[i : i + size]) for i in range(0, n, size)], size


def data(seed: int, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype).kind
    if kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)  # sums wrap, identically in any order
    return rng.standard_normal(shape).astype(dtype)


def assert_output(actual: np.ndarray, expected: np.ndarray, x: np.ndarray, group_size: int) -> None:
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype.kind in "iu":
        np.testing.assert_array_equal(actual, expected)
        return
    # sums in another order differ by rounding: a few ulps of the sum of magnitudes
    eps = float(np.finfo(actual.dtype).eps)
    bound = 2 * group_size * eps * float(np.abs(x.astype(np.float64)).sum(axis=0).max(initial=0.0)) + 1e-30
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=0, atol=bound)


def assert_time(result, group_size: int) -> None:
    assert math.isfinite(result.time)
    assert result.time > 0 if group_size > 1 else result.time == 0
    assert result.verified


shapes = st.lists(st.integers(0, 4), min_size=0, max_size=3).map(tuple)


@SETTINGS
@given(st.data())
def test_all_gather_equals_the_reference(draw):
    topology = draw.draw(topologies())
    groups, size = draw.draw(layouts(topology))
    shape = draw.draw(shapes)
    tiled = draw.draw(st.booleans()) and len(shape) > 0
    rank = len(shape)
    axis = draw.draw(st.integers(-rank, rank - 1) if tiled else st.integers(-(rank + 1), rank))
    dtype, algorithm = draw.draw(st.sampled_from(DTYPES)), draw.draw(algorithms("gather", size))
    x = data(draw.draw(st.integers(0, 2**32 - 1)), (topology.n_devices, *shape), dtype)
    result = netsim.all_gather(x, axis=axis, tiled=tiled, axis_index_groups=groups, topology=topology, algorithm=algorithm)
    np.testing.assert_array_equal(result.output, expected_all_gather(x, axis, tiled, groups))
    assert_time(result, size)


@SETTINGS
@given(st.data())
def test_psum_scatter_equals_the_reference(draw):
    topology = draw.draw(topologies())
    groups, size = draw.draw(layouts(topology))
    shape = list(draw.draw(shapes.filter(len)))
    dim = draw.draw(st.integers(-len(shape), len(shape) - 1))
    tiled = draw.draw(st.booleans())
    shape[dim] = size * draw.draw(st.integers(0, 2)) if tiled else size
    dtype, algorithm = draw.draw(st.sampled_from(DTYPES)), draw.draw(algorithms("reduce_scatter", size))
    x = data(draw.draw(st.integers(0, 2**32 - 1)), (topology.n_devices, *shape), dtype)
    result = netsim.psum_scatter(x, scatter_dimension=dim, axis_index_groups=groups, tiled=tiled, topology=topology, algorithm=algorithm)
    assert_output(result.output, expected_psum_scatter(x, dim, tiled, groups), x, size)
    assert_time(result, size)


@SETTINGS
@given(st.data())
def test_psum_equals_the_reference(draw):
    topology = draw.draw(topologies())
    groups, size = draw.draw(layouts(topology))
    shape = draw.draw(shapes)
    dtype, algorithm = draw.draw(st.sampled_from(DTYPES)), draw.draw(algorithms("all_reduce", size))
    x = data(draw.draw(st.integers(0, 2**32 - 1)), (topology.n_devices, *shape), dtype)
    result = netsim.psum(x, axis_index_groups=groups, topology=topology, algorithm=algorithm)
    assert_output(result.output, expected_psum(x, groups), x, size)
    assert_time(result, size)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.data())
def test_with_a_link_down_or_degraded_and_a_straggler_the_output_is_still_the_reference(draw):
    n = draw.draw(st.integers(3, 8))
    a = draw.draw(st.integers(0, n - 1))
    topology = netsim.ring(n)
    if draw.draw(st.booleans()):
        topology = topology.fail_link(a, (a + 1) % n, both_ways=draw.draw(st.booleans()))
    else:
        topology = topology.degrade_link(a, (a + 1) % n, bandwidth_factor=draw.draw(st.floats(0.01, 2.0)))
    groups, size = draw.draw(layouts(topology))
    late = draw.draw(st.integers(0, n - 1))
    delay = draw.draw(st.floats(0, 1e-4))
    x = data(draw.draw(st.integers(0, 2**32 - 1)), (n, 2 * n), "int32")
    algorithm = draw.draw(algorithms("all_reduce", size))
    result = netsim.psum(x, axis_index_groups=groups, topology=topology, algorithm=algorithm, stragglers={late: delay})
    np.testing.assert_array_equal(result.output, expected_psum(x, groups))
    assert_time(result, size)
    assert not any(hop.link in topology.down_links for hop in result.leaves[0].playback.hops)
    if size > 1:
        assert result.time >= delay + 1e-6 * (1 - 1e-12)  # the late device sends at least once
    assert result.critical_path.finish_s == result.time


@SETTINGS
@given(st.data())
def test_all_to_all_equals_the_reference(draw):
    topology = draw.draw(topologies())
    groups, size = draw.draw(layouts(topology))
    shape = list(draw.draw(shapes.filter(len)))
    split = draw.draw(st.integers(-len(shape), len(shape) - 1))
    concat = draw.draw(st.integers(-len(shape), len(shape) - 1))
    tiled = draw.draw(st.booleans())
    shape[split] = size * draw.draw(st.integers(0, 2)) if tiled else size
    dtype, algorithm = draw.draw(st.sampled_from(DTYPES)), draw.draw(algorithms("all_to_all", size))
    x = data(draw.draw(st.integers(0, 2**32 - 1)), (topology.n_devices, *shape), dtype)
    result = netsim.all_to_all(x, split, concat, axis_index_groups=groups, tiled=tiled, topology=topology, algorithm=algorithm)
    np.testing.assert_array_equal(result.output, all_to_all_reference(x, split, concat, axis_index_groups=groups, tiled=tiled))
    assert_time(result, size)


@SETTINGS
@given(st.data())
def test_ppermute_equals_the_reference(draw):
    topology = draw.draw(topologies())
    n = topology.n_devices
    sources = draw.draw(st.permutations(range(n)))
    destinations = draw.draw(st.permutations(range(n)))
    perm = list(zip(sources, destinations, strict=True))[: draw.draw(st.integers(0, n))]
    x = data(draw.draw(st.integers(0, 2**32 - 1)), (n, *draw.draw(shapes)), draw.draw(st.sampled_from(DTYPES)))
    result = netsim.ppermute(x, perm, topology=topology)
    np.testing.assert_array_equal(result.output, ppermute_reference(x, perm))
    assert math.isfinite(result.time) and result.time >= 0


# Illegal combinations ------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_an_axis_out_of_range_is_named(draw):
    n = draw.draw(st.integers(1, 6))
    shape = draw.draw(shapes)
    rank = len(shape)
    tiled = draw.draw(st.booleans()) and rank > 0
    limit = rank if tiled else rank + 1
    axis = draw.draw(st.one_of(st.integers(limit, limit + 5), st.integers(-limit - 5, -limit - 1)))
    with pytest.raises(ValueError) as error:
        netsim.all_gather(np.zeros((n, *shape)), axis=axis, tiled=tiled)
    assert f"axis={axis} is out of range for {limit} dimension(s)" in str(error.value)


@SETTINGS
@given(st.data())
def test_groups_that_repeat_skip_or_differ_in_size_are_named(draw):
    n = draw.draw(st.integers(2, 8))
    order = draw.draw(st.permutations(range(n)))
    how = draw.draw(st.sampled_from(["repeat", "skip", "ragged", "outside"]))
    groups = [list(order)]
    if how == "repeat":
        twice = order[draw.draw(st.integers(0, n - 1))]
        groups = [[*order, twice]]
        expected = f"device {twice} appears more than once"
    elif how == "skip":
        groups = [list(order[1:])]
        expected = f"device {order[0]} is in no group"
    elif how == "ragged":
        cut = draw.draw(st.integers(1, n - 1).filter(lambda c: 2 * c != n))
        groups = [list(order[:cut]), list(order[cut:])]
        expected = f"got sizes {[cut, n - cut]}"
    else:
        groups = [[*order[:-1], n + draw.draw(st.integers(0, 5))]]
        expected = f"index {groups[0][-1]} is out of range for {n} devices"
    op = draw.draw(st.sampled_from([netsim.all_gather, netsim.psum]))
    with pytest.raises(ValueError) as error:
        op(np.zeros((n, 2)), axis_index_groups=groups)
    assert expected in str(error.value)


@SETTINGS
@given(st.data())
def test_a_scatter_dimension_that_does_not_split_is_named(draw):
    n = draw.draw(st.integers(2, 6))
    size = draw.draw(st.integers(1, 12).filter(lambda s: s % n))
    tiled = draw.draw(st.booleans())
    if not tiled:
        size = draw.draw(st.integers(1, 12).filter(lambda s: s != n))
    with pytest.raises(ValueError) as error:
        netsim.psum_scatter(np.zeros((n, 3, size)), scatter_dimension=1, tiled=tiled)
    if tiled:
        assert str(error.value) == f"psum_scatter with tiled=True needs shape[1]={size} to be divisible by the group size {n}"
    else:
        assert str(error.value) == f"psum_scatter with tiled=False needs shape[1]={size} to equal the group size {n}"


@SETTINGS
@given(st.integers(1, 8), st.integers(1, 8), st.text(min_size=1, max_size=8).filter(lambda s: s not in netsim.ALGORITHMS))
def test_a_wrong_topology_size_or_algorithm_is_named(n, m, name):
    if n != m:
        with pytest.raises(ValueError) as error:
            netsim.psum(np.zeros((n, 2)), topology=netsim.ring(m))
        assert str(error.value) == f"input has {n} devices on its leading axis but topology ring{m} has {m}"
    with pytest.raises(ValueError) as error:
        netsim.psum(np.zeros((n, 2)), algorithm=name)
    assert f"unknown algorithm {name!r}" in str(error.value)
