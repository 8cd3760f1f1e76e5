"""all_to_all: outputs equal JAX's semantics; the direct algorithm's times follow from its link loads."""

from __future__ import annotations

import itertools
from collections import defaultdict

import numpy as np
import pytest
from conftest import expected_all_to_all, make_input, shuffled_groups

import netsim

B = 45e9
ALPHA = 1e-6
SMALL = (2, 3)
LARGE = (4, 5, 8, 16)


def shape_for(rank: int, split: int, n: int, tiled: bool) -> tuple[int, ...]:
    """A per-device shape of the given rank whose split axis fits a group of n (other sizes 2, 3, 1)."""
    shape = [2, 3, 1][:rank]
    shape[split] = 2 * n if tiled else n
    return tuple(shape)


def run_case(size, rank, dtype, split, concat, tiled, seed):
    n_groups = 2 if size <= 8 else 1
    groups = shuffled_groups(size, n_groups, seed)
    x = make_input(size * n_groups, shape_for(rank, split, size, tiled), dtype, seed)
    result = netsim.all_to_all(x, split, concat, axis_index_groups=groups, tiled=tiled)
    expected = expected_all_to_all(x, split, concat, tiled, groups)
    assert result.output.shape == expected.shape and result.output.dtype == expected.dtype
    # all_to_all only moves data: equal bit for bit, floats included
    np.testing.assert_array_equal(result.output, expected)
    assert result.verified and result.algorithm == "direct"


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("size", SMALL)
def test_every_axis_spelling_matches_reference(size, rank, dtype):
    """Groups of 2 and 3: every (split_axis, concat_axis) in -rank..rank-1, tiled and untiled."""
    for i, (split, concat, tiled) in enumerate(itertools.product(range(-rank, rank), range(-rank, rank), (False, True))):
        run_case(size, rank, dtype, split, concat, tiled, seed=100 * size + 10 * rank + i)


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("size", LARGE)
def test_larger_groups_match_reference(size, rank):
    """Groups of 4 to 16: every axis pair, tiled and untiled, each axis written negative in
    turn, int32 and float32 in turn (the groups of 2 and 3 above try every spelling)."""
    for i, (split, concat, tiled) in enumerate(itertools.product(range(rank), range(rank), (False, True))):
        split -= rank * (i % 2)
        concat -= rank * (i // 2 % 2)
        run_case(size, rank, "float32" if i % 3 == 1 else "int32", split, concat, tiled, seed=i)


def test_untiled_square_is_a_transpose():
    x = np.arange(25, dtype=np.int32).reshape(5, 5)
    np.testing.assert_array_equal(netsim.all_to_all(x, 0, 0).output, x.T)


def test_untiled_keeps_the_rank_and_moves_the_device_axis():
    x = np.zeros((4, 2, 4, 3), np.float32)
    assert netsim.all_to_all(x, split_axis=1, concat_axis=0).output.shape == (4, 4, 2, 3)
    assert netsim.all_to_all(x, split_axis=-2, concat_axis=-1).output.shape == (4, 2, 3, 4)
    assert netsim.all_to_all(x, split_axis=1, concat_axis=1).output.shape == (4, 2, 4, 3)


def test_tiled_divides_split_and_multiplies_concat():
    x = np.zeros((4, 8, 3), np.float32)
    assert netsim.all_to_all(x, split_axis=0, concat_axis=1, tiled=True).output.shape == (4, 2, 12)
    assert netsim.all_to_all(x, split_axis=-2, concat_axis=-2, tiled=True).output.shape == (4, 8, 3)


def test_pytree_leaves_each_exchange():
    a = np.arange(16, dtype=np.int32).reshape(4, 4)
    b = np.arange(32, dtype=np.float32).reshape(4, 4, 2)
    result = netsim.all_to_all({"a": a, "b": b}, 0, 0)
    np.testing.assert_array_equal(result.output["a"], expected_all_to_all(a, 0, 0, False, None))
    np.testing.assert_array_equal(result.output["b"], expected_all_to_all(b, 0, 0, False, None))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: netsim.all_to_all(np.zeros(4), 0, 0), "all_to_all needs at least one dimension per device; got scalars"),
        (lambda: netsim.all_to_all(np.zeros((4, 4)), 1, 0), "split_axis=1 is out of range for 1 dimension(s) (valid: -1..0)"),
        (lambda: netsim.all_to_all(np.zeros((4, 4, 2)), 0, -3), "concat_axis=-3 is out of range for 2 dimension(s) (valid: -2..1)"),
        (lambda: netsim.all_to_all(np.zeros((4, 4)), 0.0, 0), "split_axis must be an integer, got 0.0"),
        (lambda: netsim.all_to_all(np.zeros((4, 3)), 0, 0), "all_to_all with tiled=False needs shape[0]=3 to equal the group size 4"),
        (lambda: netsim.all_to_all(np.zeros((4, 2, 6)), -1, 0, tiled=True), "all_to_all with tiled=True needs shape[1]=6 to be divisible by the group size 4"),
        (
            lambda: netsim.all_to_all(np.zeros((4, 2)), 0, 0, axis_index_groups=[[0, 1], [2, 2]]),
            "axis_index_groups must cover every device exactly once; device 2 appears more than once in [[0, 1], [2, 2]]",
        ),
        (
            lambda: netsim.all_to_all(np.zeros((4, 4)), 0, 0, algorithm="ring"),
            "algorithm 'ring' does not run the all_to_all pattern; algorithms that do: direct, dimension_ordered",
        ),
        (lambda: netsim.all_to_all(np.zeros((4, 4)), 0, 0, topology="ring8"), "input has 4 devices on its leading axis but topology ring8 has 8"),
    ],
)
def test_illegal_arguments_raise_value_errors(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert str(error.value) == message


# --- timings of the direct algorithm ---------------------------------------------------------


def direct_all_to_all(n: int, chunk_bytes: int, topology=None):
    return netsim.all_to_all(np.zeros((n, n, chunk_bytes // 4), np.float32), 0, 0, topology=topology)


def busy_back_to_back_from_zero(playback, link) -> bool:
    hops = sorted((h for h in playback.hops if h.link == link), key=lambda h: h.start)
    return hops[0].start == 0 and all(b.start == pytest.approx(a.end, abs=1e-15) for a, b in itertools.pairwise(hops))


@pytest.mark.parametrize("n", [4, 8, 16])
def test_ring_direct_equals_the_scaling_book_plus_one_hop(n):
    """V/(4 W_ici) + alpha on a ring of even n, when a chunk takes longer than a hop's latency.

    Each link direction carries 1 + 2 + ... + (n/2 - 1) chunks plus half of n/2 (the
    devices opposite are reached half each way): n^2/8 chunks, V/(8B) = V/(4 W_ici)
    with V = n^2 c the bytes over all devices and W_ici = 2B. A chunk (c/B = 1.46 us)
    outlasts the latency, so each link has its own source's chunks queued while
    transit chunks are still a hop away: it is busy back to back from t = 0. The last
    chunk off a link is on its final hop and lands one latency later. So the simulated
    time is the book's estimate plus one alpha, exactly; relative to the book that is
    +34 % at n = 4, +9 % at n = 8 and +2 % at n = 16 for these 64 KiB chunks.
    """
    c = 2**16
    result = direct_all_to_all(n, c)
    V = n * n * c
    assert result.time == pytest.approx(V / (4 * 2 * B) + ALPHA, rel=1e-9)
    playback = result.leaves[0].playback
    assert {stats.bytes for stats in playback.links.values()} == {n * n // 8 * c}
    assert all(busy_back_to_back_from_zero(playback, link) for link in playback.links)


@pytest.mark.parametrize("n", [3, 5, 7])
def test_ring_direct_odd_n_has_no_ties(n):
    """Odd n: offsets 1..(n-1)/2 each way, (n^2 - 1)/8 chunks per link direction, plus one alpha."""
    c = 2**16
    result = direct_all_to_all(n, c)
    assert result.time == pytest.approx((n * n - 1) / 8 * c / B + ALPHA, rel=1e-9)


def test_ring_direct_latency_bound():
    """Tiny chunks: links idle while chunks cross up to n/2 hops, so the time lies between the
    link-load bound plus one alpha and that bound plus n/2 alphas."""
    n, c = 8, 64
    result = direct_all_to_all(n, c)
    bound = n * n / 8 * c / B
    assert bound + ALPHA < result.time <= bound + n / 2 * ALPHA


def test_opposite_devices_get_half_each_way():
    result = direct_all_to_all(8, 2**12)
    playback, schedule = result.leaves[0].playback, result.leaves[0].schedule
    routes = {(t.src, t.dst, t.key[1]): playback.routes[i] for i, t in enumerate(schedule.transfers)}
    assert [link[1] for link in routes[(0, 4, 0)]] == [1, 2, 3, 4]
    assert [link[1] for link in routes[(0, 4, 1)]] == [7, 6, 5, 4]
    assert routes[(0, 3, 0)] == routes[(0, 3, 1)]  # not a tie: both halves the short way


def test_torus_4x4_carries_the_book_bound_but_takes_longer():
    """On a 4x4 torus every link direction carries exactly the 8 chunks of the book's
    V max(A, B) / (4 N W_ici); the time exceeds it (see scenarios/alltoall_torus4x4.yaml):
    axis-1 links wait for chunks still crossing axis 0."""
    c = 2**16
    result = direct_all_to_all(16, c, topology="torus4x4")
    book = 16 * 16 * c * 4 / (4 * 16 * 2 * B)
    playback = result.leaves[0].playback
    assert {stats.bytes for stats in playback.links.values()} == {8 * c}
    assert book == pytest.approx(8 * c / B, rel=1e-12)
    idle = defaultdict(float)
    for hop in playback.hops:
        idle[hop.link] += hop.end - hop.start
    waits = {link: playback.time - ALPHA - busy for link, busy in idle.items()}
    assert result.time > book + 2 * ALPHA
    assert max(waits.values()) > c / (2 * B)  # some links sit idle for over half a chunk time
