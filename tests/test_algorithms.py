"""direct, recursive_doubling, recursive_halving and rabenseifner: errors, outputs and timings.

Outputs over every group size, rank and axis are also checked in test_collectives.py, whose
grids run every algorithm that accepts the pattern and the group size.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import expected_all_gather, expected_psum, expected_psum_scatter

import netsim
from netsim.algorithms.schedule import build_schedule

B = 45e9
ALPHA = 1e-6
S = 2**17  # bytes per block: s/B = 2.9 us, more than a hop's latency
U = S / B  # one block's time on one link


def ones(*shape):
    return np.ones(shape, np.float32)


# --- what each algorithm refuses ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: netsim.all_gather(ones(6, 2), algorithm="recursive_doubling"), "recursive_doubling needs a power-of-two group size, got 6"),
        (
            lambda: netsim.all_gather(ones(6, 2), axis_index_groups=[[0, 1, 2], [3, 4, 5]], algorithm="recursive_doubling"),
            "recursive_doubling needs a power-of-two group size, got 3",
        ),
        (lambda: netsim.psum_scatter(ones(6, 6), algorithm="recursive_halving"), "recursive_halving needs a power-of-two group size, got 6"),
        (lambda: netsim.psum(ones(12, 2), algorithm="rabenseifner"), "rabenseifner needs a power-of-two group size, got 12"),
        (
            lambda: netsim.psum_scatter(ones(4, 4), algorithm="recursive_doubling"),
            "algorithm 'recursive_doubling' does not run the reduce_scatter pattern; "
            "algorithms that do: ring, bidirectional_ring, bidirectional_halfway, direct, recursive_halving, multiaxis, dimension_ordered, "
            "multiaxis_bundled, hierarchical",
        ),
        (
            lambda: netsim.all_gather(ones(4, 4), algorithm="recursive_halving"),
            "algorithm 'recursive_halving' does not run the gather pattern; "
            "algorithms that do: ring, bidirectional_ring, bidirectional_halfway, direct, recursive_doubling, multiaxis, dimension_ordered, "
            "multiaxis_bundled, hierarchical",
        ),
        (
            lambda: netsim.all_gather(ones(4, 4), algorithm="rabenseifner"),
            "algorithm 'rabenseifner' does not run the gather pattern; "
            "algorithms that do: ring, bidirectional_ring, bidirectional_halfway, direct, recursive_doubling, multiaxis, dimension_ordered, "
            "multiaxis_bundled, hierarchical",
        ),
        (
            lambda: netsim.psum(ones(4, 4), algorithm="recursive_doubling"),
            "algorithm 'recursive_doubling' does not run the all_reduce pattern; "
            "algorithms that do: ring, bidirectional_ring, bidirectional_halfway, direct, rabenseifner, multiaxis, dimension_ordered, "
            "multiaxis_bundled, hierarchical",
        ),
    ],
)
def test_refusals_are_value_errors_naming_the_values(call, message):
    with pytest.raises(ValueError) as error:
        call()
    assert str(error.value) == message


# --- outputs on shuffled groups ---------------------------------------------------------------


def test_outputs_on_shuffled_groups_of_eight():
    rng = np.random.default_rng(7)
    groups = [rng.permutation(16)[:8].tolist()]
    groups.append([d for d in range(16) if d not in groups[0]][::-1])
    x = rng.integers(-1000, 1000, size=(16, 8, 3), dtype=np.int32)
    np.testing.assert_array_equal(netsim.psum(x, groups, algorithm="rabenseifner").output, expected_psum(x, groups))
    np.testing.assert_array_equal(netsim.psum_scatter(x, 0, groups, algorithm="recursive_halving").output, expected_psum_scatter(x, 0, False, groups))
    for algorithm in ("recursive_doubling", "direct"):
        out = netsim.all_gather(x, 1, axis_index_groups=groups, algorithm=algorithm).output
        np.testing.assert_array_equal(out, expected_all_gather(x, 1, False, groups))


# --- timings: Thakur-Rabenseifner-Gropp closed forms where every partner is one hop ------------

HYPERCUBES = [(2,), (2, 2), (2, 2, 2)]


@pytest.mark.parametrize("dims", HYPERCUBES, ids=lambda d: "x".join(map(str, d)))
def test_closed_forms_on_hypercubes(dims):
    """On a ring of 2 and 2x2, 2x2x2 tori, partner i XOR 2^k is one hop away along axis k and no
    two messages of a step share a link, so the closed forms hold exactly:
    recursive doubling lg p alpha + ((p-1)/p) n/B with n = p s the gathered bytes;
    recursive halving lg p alpha + ((p-1)/p) n/B with n one device's input;
    Rabenseifner 2 lg p alpha + 2 ((p-1)/p) n/B."""
    topology = netsim.torus(dims)
    p = topology.n_devices
    lg = p.bit_length() - 1
    s = 2**12
    gathered = netsim.all_gather(ones(p, s // 4), topology=topology, algorithm="recursive_doubling")
    assert gathered.time == pytest.approx(lg * ALPHA + (p - 1) / p * (p * s) / B, rel=1e-9)
    x = ones(p, p * s // 4)
    n = p * s
    scattered = netsim.psum_scatter(x, tiled=True, topology=topology, algorithm="recursive_halving")
    assert scattered.time == pytest.approx(lg * ALPHA + (p - 1) / p * n / B, rel=1e-9)
    reduced = netsim.psum(x, topology=topology, algorithm="rabenseifner")
    assert reduced.time == pytest.approx(2 * lg * ALPHA + 2 * (p - 1) / p * n / B, rel=1e-9)


def test_a_step_of_several_blocks_costs_one_message():
    """Step 1 of recursive doubling on a 2x2 torus sends two blocks, as two transfers. Each waits
    for the step-0 arrival at its source (even the source's own block, which it held from the
    start), so nothing leaves before the textbook's message would. Back to back on one link,
    they land at alpha + 2 s/B after the step began, as one 2s-byte message would; had the own
    block left at t = 0, the gather would end at 2 alpha + 2 s/B instead of 2 alpha + 3 s/B."""
    result = netsim.all_gather(ones(4, S // 4), topology=netsim.torus((2, 2)), algorithm="recursive_doubling")
    schedule, playback = result.leaves[0].schedule, result.leaves[0].playback
    step0 = {t.dst: i for i, t in enumerate(schedule.transfers) if t.step == 0}
    for i, t in enumerate(schedule.transfers):
        if t.step == 1:
            assert step0[t.src] in t.deps
            assert playback.sent_at[i] == pytest.approx(ALPHA + U, rel=1e-12)
    arrivals = sorted(playback.arrived_at[i] for i, t in enumerate(schedule.transfers) if t.step == 1 and t.src == 0)
    assert arrivals == pytest.approx([2 * ALPHA + 2 * U, 2 * ALPHA + 3 * U], rel=1e-12)


def test_two_block_step_has_no_barrier_for_the_rings():
    """The ring algorithms keep per-chunk dependencies only: step 1 of a ring depends on one arrival."""
    schedule = build_schedule("gather", [[0, 1, 2, 3]], "ring")
    assert all(len(t.deps) == (1 if t.step else 0) for t in schedule.transfers)


# --- timings on rings, where partners share links ------------------------------------------------


def test_ring_of_four():
    """Recursive doubling on a ring of 4, s/B > alpha. Step 0 (partners 1 apart, one hop, no
    sharing) ends at alpha + s/B. In step 1 partners are 2 apart, a tie: 0->2 and 1->3 go
    forward, 2->0 and 3->1 backward, so link 1->2 carries 1->3's two blocks (first hop, queued
    first) and then 0->2's two (second hop, arriving a latency later): it is busy for 4 s/B,
    and 0->2 lands one alpha after: alpha + s/B + 4 s/B + alpha = 2 alpha + 5 s/B, against
    2 alpha + 3 s/B on a 2x2 torus. Recursive halving is the mirror image: the shared
    two-block step comes first, the one-block step after, with the same total."""
    gathered = netsim.all_gather(ones(4, S // 4), algorithm="recursive_doubling")
    assert gathered.time == pytest.approx(2 * ALPHA + 5 * U, rel=1e-9)
    scattered = netsim.psum_scatter(ones(4, 4 * S // 4), tiled=True, algorithm="recursive_halving")
    assert scattered.time == pytest.approx(2 * ALPHA + 5 * U, rel=1e-9)


def test_ring_of_eight():
    """Recursive doubling on a ring of 8: member 3 has its step-1 message (from 1, whose own
    blocks go first on link 1->2) at alpha + s/B + 2 s/B + 2 alpha. From then on link 3->4
    carries the four step-2 messages that cross it, 0->4, 1->5, 2->6 and 3->7, 16 blocks,
    back to back, and the last is the final hop of 0->4:
    3 alpha + 3 s/B + 16 s/B + alpha = 4 alpha + 19 s/B (3 alpha + 7 s/B on a hypercube).
    Recursive halving mirrors it: the 16-block step on link 3->4 comes first."""
    gathered = netsim.all_gather(ones(8, S // 4), algorithm="recursive_doubling")
    assert gathered.time == pytest.approx(4 * ALPHA + 19 * U, rel=1e-9)
    playback = gathered.leaves[0].playback
    link_3_4 = sorted((h for h in playback.hops if h.link == (3, 4, (0, 1))), key=lambda h: h.start)
    assert len(link_3_4) == 16
    assert link_3_4[0].start == pytest.approx(3 * ALPHA + 3 * U, rel=1e-12)
    assert all(b.start == pytest.approx(a.end, rel=1e-12) for a, b in itertools.pairwise(link_3_4))
    scattered = netsim.psum_scatter(ones(8, 8 * S // 4), tiled=True, algorithm="recursive_halving")
    assert scattered.time == pytest.approx(4 * ALPHA + 19 * U, rel=1e-9)
    ring = netsim.all_gather(ones(8, S // 4))
    assert ring.time == pytest.approx(7 * (ALPHA + U / 2), rel=1e-9)
    assert ring.time < gathered.time / 3  # the default bidirectional ring: 7 (alpha + s/(2B))


@pytest.mark.parametrize(("n", "expected"), [(2, ALPHA + U / 2), (3, ALPHA + U), (4, ALPHA + 2 * U), (8, ALPHA + 8 * U)])
def test_direct_all_gather_on_rings(n, expected):
    """direct sends every block to every member at once. Ring of 2: each block's halves use the
    two cables. Ring of 3: each pair has its own link. Even n: each link direction carries
    n^2/8 blocks, back to back from t = 0 (as for all_to_all, see test_all_to_all.py), so
    alpha + (n^2/8) s/B; the same pairs and bytes as an all_to_all of s-byte chunks."""
    gathered = netsim.all_gather(ones(n, S // 4), algorithm="direct")
    assert gathered.time == pytest.approx(expected, rel=1e-9)
    exchanged = netsim.all_to_all(ones(n, n, S // 4), 0, 0)
    assert exchanged.time == pytest.approx(gathered.time, rel=1e-12)
    scattered = netsim.psum_scatter(ones(n, n * S // 4), tiled=True, algorithm="direct")
    assert scattered.time == pytest.approx(expected, rel=1e-9)
