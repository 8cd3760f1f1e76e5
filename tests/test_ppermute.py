"""ppermute: outputs equal JAX's semantics; times follow from the routes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import expected_ppermute

import netsim

B = 45e9
ALPHA = 1e-6
RANK_SHAPES = {0: (), 1: (4,), 2: (2, 3), 3: (2, 1, 2)}


def random_perm(n: int, seed: int) -> list[tuple[int, int]]:
    """A partial permutation: a random subset of sources sent to distinct random destinations."""
    rng = np.random.default_rng(seed)
    sources = rng.permutation(n)[: rng.integers(1, n + 1)]
    destinations = rng.permutation(n)[: len(sources)]
    return [(int(s), int(d)) for s, d in zip(sources, destinations, strict=True)]


@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("rank", sorted(RANK_SHAPES))
@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 16])
def test_matches_reference(n, rank, dtype):
    rng = np.random.default_rng(10 * n + rank)
    shape = (n, *RANK_SHAPES[rank])
    x = rng.integers(-1000, 1000, size=shape, dtype=np.int32) if dtype == "int32" else rng.standard_normal(shape).astype(np.float32)
    for seed in range(3):
        perm = random_perm(n, seed + 100 * n + rank)
        result = netsim.ppermute(x, perm)
        expected = expected_ppermute(x, perm)
        assert result.output.dtype == expected.dtype and result.output.shape == expected.shape
        np.testing.assert_array_equal(result.output, expected)
        assert result.verified and result.algorithm == "direct"


def test_devices_that_receive_nothing_get_zeros():
    x = np.arange(1, 9, dtype=np.float32).reshape(4, 2)
    out = netsim.ppermute(x, [(0, 3), (3, 0)]).output
    np.testing.assert_array_equal(out, [[7, 8], [0, 0], [0, 0], [1, 2]])
    np.testing.assert_array_equal(netsim.ppermute(x, []).output, np.zeros_like(x))


def test_a_device_may_send_to_itself():
    x = np.arange(4)
    np.testing.assert_array_equal(netsim.ppermute(x, [(2, 2), (0, 1)]).output, [0, 0, 2, 0])


def test_pytree():
    x = {"a": np.arange(3), "b": (np.ones((3, 2), np.float32),)}
    out = netsim.ppermute(x, [(0, 1), (1, 2), (2, 0)]).output
    np.testing.assert_array_equal(out["a"], [2, 0, 1])
    assert isinstance(out["b"], tuple)


@pytest.mark.parametrize(
    ("perm", "message"),
    [
        ([(0, 1), (0, 2)], "perm repeats source 0: (0, 1) and (0, 2) both send from it"),
        ([(0, 2), (1, 2)], "perm repeats destination 2: (0, 2) and (1, 2) both send to it"),
        ([(0, 4)], "perm index 4 is out of range for 4 devices (valid: 0..3), in (0, 4)"),
        ([(-1, 0)], "perm index -1 is out of range for 4 devices (valid: 0..3), in (-1, 0)"),
        ([(0, 1, 2)], "perm must be a list of (source, destination) pairs; (0, 1, 2) is not a pair"),
        ([(0, 1.0)], "perm entries must be integer device indices, got 1.0 in (0, 1.0)"),
        ([(True, 1)], "perm entries must be integer device indices, got True in (True, 1)"),
        (3, "perm must be a list of (source, destination) pairs, got 3"),
    ],
)
def test_illegal_perms_raise_value_errors_naming_the_values(perm, message):
    with pytest.raises(ValueError) as error:
        netsim.ppermute(np.zeros(4), perm)
    assert str(error.value) == message


# --- timings ---------------------------------------------------------------------------------


def shift(n: int, k: int) -> list[tuple[int, int]]:
    return [(i, (i + k) % n) for i in range(n)]


def test_shift_by_one_is_one_hop():
    s = 2**20
    result = netsim.ppermute(np.zeros((8, s // 4), np.float32), shift(8, 1))
    assert result.time == pytest.approx(ALPHA + s / B, rel=1e-9)


@pytest.mark.parametrize("k", [2, 3])
def test_shift_by_k_shares_links(k):
    """A shift by k < n/2 on a ring: each message crosses k links and each link carries k
    messages (the first hop of its own source's, and transit from the k-1 before). Its own
    message goes first; the others arrive behind it, one latency after they started on
    the previous link, and follow back to back: the last one leaves the link at k s/B and
    lands one alpha later: k s/B + alpha (a message outlasts a hop's latency)."""
    s = 2**20
    result = netsim.ppermute(np.zeros((8, s // 4), np.float32), shift(8, k))
    assert result.time == pytest.approx(k * s / B + ALPHA, rel=1e-9)
    assert {stats.bytes for stats in result.leaves[0].playback.links.values() if stats.bytes} == {k * s}


def test_shift_by_half_goes_both_ways():
    """Shift by n/2: a tie, so each payload goes half each way round; every link direction
    carries n/2 halves, as much as a shift by n/4 carries whole: (n/4) s/B + alpha."""
    s = 2**20
    result = netsim.ppermute(np.zeros((8, s // 4), np.float32), shift(8, 4))
    assert result.time == pytest.approx(2 * s / B + ALPHA, rel=1e-9)


def test_swap_on_a_ring_of_two_uses_both_cables():
    s = 2**20
    result = netsim.ppermute(np.zeros((2, s // 4), np.float32), [(0, 1), (1, 0)])
    assert result.time == pytest.approx(ALPHA + s / (2 * B), rel=1e-9)


def test_single_pair_three_hops_cut_through():
    s = 2**20
    result = netsim.ppermute(np.zeros((8, s // 4), np.float32), [(0, 3)])
    assert result.time == pytest.approx(3 * ALPHA + s / B, rel=1e-9)
    assert result.total_bytes == s and result.busbw == pytest.approx(result.algbw)
