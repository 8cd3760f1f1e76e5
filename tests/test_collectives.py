"""Simulated outputs equal JAX's semantics; simulated times equal the ring closed forms."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import expected_all_gather, expected_psum, expected_psum_scatter, make_input, shuffled_groups

import netsim
from netsim.algorithms.registry import ALGORITHMS

GROUP_SIZES = (2, 3, 4, 5, 8, 16)
RANK_SHAPES = {0: (), 1: (4,), 2: (2, 3), 3: (2, 1, 2)}
ALGOS = ("ring", "bidirectional_ring", "bidirectional_halfway")  # the spine's rings, with exact closed forms


def algorithms_for(pattern: str, n: int) -> tuple[str, ...]:
    """Every registered algorithm that runs ``pattern`` on groups of n (power-of-two ones only where n is one)."""
    return tuple(a for a, plan in ALGORITHMS.items() if plan.runs(pattern) and (not plan.power_of_two or n & (n - 1) == 0))


def check(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    if actual.dtype.kind == "i":
        np.testing.assert_array_equal(actual, expected)
    else:
        np.testing.assert_allclose(actual, expected, rtol=2e-6, atol=2e-5)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("rank", sorted(RANK_SHAPES))
@pytest.mark.parametrize("size", GROUP_SIZES)
def test_all_gather_matches_reference(size, rank, dtype):
    shape = RANK_SHAPES[rank]
    n_groups = 2 if size <= 8 else 1
    groups = shuffled_groups(size, n_groups, seed=size * 10 + rank)
    x = make_input(size * n_groups, shape, dtype, seed=rank)
    cases = [(a, False) for a in range(-(rank + 1), rank + 1)] + [(a, True) for a in range(-rank, rank)]
    algos = algorithms_for("gather", size)
    for i, (axis, tiled) in enumerate(cases):
        algorithm = algos[i % len(algos)]
        result = netsim.all_gather(x, axis=axis, tiled=tiled, axis_index_groups=groups, algorithm=algorithm)
        check(result.output, expected_all_gather(x, axis, tiled, groups))
        assert result.verified and result.time > 0


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("size", GROUP_SIZES)
def test_psum_scatter_matches_reference(size, rank, dtype):
    n_groups = 2 if size <= 8 else 1
    groups = shuffled_groups(size, n_groups, seed=size + rank)
    algos = algorithms_for("reduce_scatter", size)
    for i, dim in enumerate(range(-rank, rank)):
        for tiled in (False, True):
            shape = [2] * rank
            shape[dim] = size * (2 if tiled else 1)
            x = make_input(size * n_groups, tuple(shape), dtype, seed=i)
            algorithm = algos[(i + tiled) % len(algos)]
            result = netsim.psum_scatter(x, scatter_dimension=dim, axis_index_groups=groups, tiled=tiled, algorithm=algorithm)
            check(result.output, expected_psum_scatter(x, dim, tiled, groups))


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("rank", sorted(RANK_SHAPES))
@pytest.mark.parametrize("size", GROUP_SIZES)
def test_psum_matches_reference(size, rank, dtype):
    n_groups = 2 if size <= 8 else 1
    groups = shuffled_groups(size, n_groups, seed=3 * size + rank)
    x = make_input(size * n_groups, RANK_SHAPES[rank], dtype, seed=rank + 7)
    for algorithm in algorithms_for("all_reduce", size):
        check(netsim.psum(x, axis_index_groups=groups, algorithm=algorithm).output, expected_psum(x, groups))


def test_without_groups_every_device_is_in_one_group():
    x = np.arange(5 * 3, dtype=np.int32).reshape(5, 3)
    np.testing.assert_array_equal(netsim.all_gather(x).output, expected_all_gather(x, 0, False, None))
    np.testing.assert_array_equal(netsim.psum(x).output, expected_psum(x, None))


def test_integer_sums_wrap_like_xla():
    x = np.full((4, 2), np.iinfo(np.int32).max, dtype=np.int32)
    out = netsim.psum(x).output
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out, x.sum(axis=0, dtype=np.int32)[None].repeat(4, 0))


# --- the jax.lax documentation examples, exactly -------------------------------------


def test_docs_all_gather_of_arange_4():
    out = netsim.all_gather(np.arange(4)).output
    np.testing.assert_array_equal(out, np.tile(np.arange(4), (4, 1)))


def test_docs_all_gather_with_groups():
    out = netsim.all_gather(np.arange(16).reshape(4, 4), axis_index_groups=[[0, 2], [3, 1]]).output
    np.testing.assert_array_equal(out[0], [[0, 1, 2, 3], [8, 9, 10, 11]])
    np.testing.assert_array_equal(out[1], [[12, 13, 14, 15], [4, 5, 6, 7]])
    np.testing.assert_array_equal(out[2], [[0, 1, 2, 3], [8, 9, 10, 11]])
    np.testing.assert_array_equal(out[3], [[12, 13, 14, 15], [4, 5, 6, 7]])


def test_docs_psum_scatter_untiled():
    np.testing.assert_array_equal(netsim.psum_scatter(np.arange(16).reshape(4, 4)).output, [24, 28, 32, 36])


def test_docs_psum_scatter_tiled():
    out = netsim.psum_scatter(np.arange(16).reshape(4, 4), tiled=True).output
    np.testing.assert_array_equal(out, [[24], [28], [32], [36]])


def test_docs_psum_scatter_tiled_with_groups():
    out = netsim.psum_scatter(np.arange(16).reshape(4, 4), axis_index_groups=[[0, 2], [3, 1]], tiled=True).output
    np.testing.assert_array_equal(out, [[8, 10], [20, 22], [12, 14], [16, 18]])


# --- pytrees ----------------------------------------------------------------------------


def test_pytree_maps_over_leaves_and_times_add_up():
    a = np.arange(8, dtype=np.int32).reshape(4, 2)
    b = np.ones((4, 3), dtype=np.float32)
    tree = {"w": a, "b": [b, (a,)]}
    result = netsim.all_gather(tree, axis=-1)
    np.testing.assert_array_equal(result.output["w"], expected_all_gather(a, -1, False, None))
    np.testing.assert_array_equal(result.output["b"][0], expected_all_gather(b, -1, False, None))
    assert isinstance(result.output["b"][1], tuple)
    singles = [netsim.all_gather(leaf, axis=-1).time for leaf in (b, a, a)]
    assert result.time == pytest.approx(sum(singles), rel=1e-12)
    assert result.bytes_per_device == a[0].nbytes * 2 + b[0].nbytes


# --- timings: closed forms on contention-free rings --------------------------------------

B = 45e9
ALPHA = 1e-6


def closed_form(algorithm: str, n: int, s: float) -> float:
    return {
        "ring": (n - 1) * (ALPHA + s / B),
        "bidirectional_ring": (n - 1) * (ALPHA + s / (2 * B)),
        "bidirectional_halfway": (n // 2) * (ALPHA + s / B),
        # without mesh axes a group is one axis that wraps: both are the bidirectional ring
        "multiaxis": (n - 1) * (ALPHA + s / (2 * B)),
        "dimension_ordered": (n - 1) * (ALPHA + s / (2 * B)),
    }[algorithm]


@pytest.mark.parametrize(("algorithm", "n"), list(itertools.product(ALGOS, (2, 3, 4, 5, 8, 16))))
def test_all_gather_time_equals_closed_form(algorithm, n):
    s = 4096 * 4  # per-device shard, bytes
    x = np.zeros((n, 4096), np.float32)
    result = netsim.all_gather(x, algorithm=algorithm)
    assert result.time == pytest.approx(closed_form(algorithm, n, s), rel=1e-9)


@pytest.mark.parametrize(("algorithm", "n"), list(itertools.product(ALGOS, (2, 3, 4, 5, 8, 16))))
def test_reduce_scatter_and_all_reduce_times_equal_closed_forms(algorithm, n):
    s = 2048 * 4  # per-device output of the reduce-scatter, bytes
    x = np.ones((n, n, 2048), np.int32)
    rs = netsim.psum_scatter(x, algorithm=algorithm)
    assert rs.time == pytest.approx(closed_form(algorithm, n, s), rel=1e-9)
    ar = netsim.psum(x.reshape(n, -1), algorithm=algorithm)
    assert ar.time == pytest.approx(2 * closed_form(algorithm, n, s), rel=1e-9)


def test_link_parameters_come_from_the_topology():
    x = np.zeros((4, 1000), np.uint8)
    topo = netsim.ring(4, bandwidth_Bps=1e9, latency_s=5e-6)
    assert netsim.all_gather(x, topology=topo, algorithm="ring").time == pytest.approx(3 * (5e-6 + 1000 / 1e9), rel=1e-12)


def test_strided_groups_contend_for_links():
    """Groups [[0, 2], [1, 3]] on a ring of 4 take 2s/B + alpha; neighbours take s/B + alpha.

    With the one-way ring each block of a strided group crosses two links, and each link
    carries one block of each group: 0->1 first carries 0->2 (its first hop), then 3->1
    (its second hop), which has waited in 0->1's queue for the whole of 0->2. Neighbour
    groups [[0, 1], [2, 3]] send each block over one link that nobody else uses.
    """
    s = 2**20
    x = np.zeros((4, s // 4), np.float32)
    strided = netsim.all_gather(x, axis_index_groups=[[0, 2], [1, 3]], algorithm="ring", topology="ring4")
    neighbours = netsim.all_gather(x, axis_index_groups=[[0, 1], [2, 3]], algorithm="ring", topology="ring4")
    assert neighbours.time == pytest.approx(ALPHA + s / B, rel=1e-9)
    assert strided.time == pytest.approx(ALPHA + 2 * s / B, rel=1e-9)
    assert strided.time / neighbours.time == pytest.approx((ALPHA + 2 * s / B) / (ALPHA + s / B), rel=1e-9)
    busiest = max(strided.leaves[0].playback.links.values(), key=lambda st: st.messages)
    assert busiest.messages == 2 and busiest.max_queue >= 1


def test_same_input_same_numbers():
    x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    first = netsim.psum(x, axis_index_groups=[[0, 3, 5, 6], [1, 2, 4, 7]])
    second = netsim.psum(x, axis_index_groups=[[0, 3, 5, 6], [1, 2, 4, 7]])
    assert first.time == second.time
    np.testing.assert_array_equal(first.output, second.output)


def test_nccl_bandwidths():
    x = np.zeros((8, 1024), np.float32)
    r = netsim.all_gather(x)
    assert r.total_bytes == 8 * 4096
    assert r.algbw == pytest.approx(8 * 4096 / r.time)
    assert r.busbw == pytest.approx(r.algbw * 7 / 8)
    p = netsim.psum(x)
    assert p.total_bytes == 4096 and p.busbw == pytest.approx(p.algbw * 2 * 7 / 8)


# --- bad arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: netsim.all_gather(np.zeros((4, 3)), axis=3), "axis=3 is out of range for 2 dimension(s) (valid: -2..1)"),
        (lambda: netsim.all_gather(np.zeros((4, 3)), axis=-2, tiled=True), "axis=-2 is out of range for 1 dimension(s) (valid: -1..0)"),
        (lambda: netsim.all_gather(np.zeros(4), tiled=True), "all_gather with tiled=True needs at least one dimension per device; got scalars"),
        (
            lambda: netsim.all_gather(np.zeros(4), axis_index_groups=[[0, 1], [2, 2]]),
            "axis_index_groups must cover every device exactly once; device 2 appears more than once in [[0, 1], [2, 2]]",
        ),
        (
            lambda: netsim.all_gather(np.zeros(4), axis_index_groups=[[0, 1], [2]]),
            "axis_index_groups must all have the same size, got sizes [2, 1] in [[0, 1], [2]]",
        ),
        (lambda: netsim.psum(np.zeros(4), axis_index_groups=[[0, 1], [2, 7]]), "axis_index_groups index 7 is out of range for 4 devices (valid: 0..3)"),
        (
            lambda: netsim.psum(np.zeros(4), axis_index_groups=[[0, 1]]),
            "axis_index_groups must cover every device exactly once; device 2 is in no group of [[0, 1]]",
        ),
        (
            lambda: netsim.psum_scatter(np.zeros((4, 6))),
            "psum_scatter with tiled=False needs shape[0]=6 to equal the group size 4",
        ),
        (
            lambda: netsim.psum_scatter(np.zeros((4, 2, 6)), scatter_dimension=-1, tiled=True),
            "psum_scatter with tiled=True needs shape[1]=6 to be divisible by the group size 4",
        ),
        (lambda: netsim.psum_scatter(np.zeros((4, 4)), scatter_dimension=2), "scatter_dimension=2 is out of range for 1 dimension(s) (valid: -1..0)"),
        (
            lambda: netsim.all_gather(np.zeros(4), algorithm="tree"),
            "unknown algorithm 'tree'; expected one of ring, bidirectional_ring, bidirectional_halfway, "
            "direct, recursive_doubling, recursive_halving, rabenseifner, multiaxis, dimension_ordered, multiaxis_bundled, hierarchical",
        ),
        (lambda: netsim.all_gather(np.zeros(4), topology="ring8"), "input has 4 devices on its leading axis but topology ring8 has 8"),
        (lambda: netsim.all_gather(np.float32(1.0)), "every input array must be stacked [n_devices, ...] with the same n_devices; got shapes [()]"),
    ],
)
def test_illegal_arguments_raise_value_errors_naming_the_values(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert str(error.value) == message
