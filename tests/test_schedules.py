"""Schedules are plain data: check them without any simulation."""

from __future__ import annotations

from collections import Counter

import pytest

from netsim.schedules import ALGORITHMS, build_schedule

SIZES = (1, 2, 3, 4, 5, 8, 16)


def runnable(pattern, sizes=SIZES):
    """(algorithm, n) for every registered algorithm that runs ``pattern`` on groups of n."""
    return [(algorithm, n) for algorithm, plan in ALGORITHMS.items() for n in sizes if plan.runs(pattern) and (not plan.power_of_two or n & (n - 1) == 0)]


def replay(schedule, n_blocks):
    """Walk a schedule step by step, tracking which contributions each device's chunks hold."""
    groups = schedule.groups
    held = {}
    for g in groups:
        for pos, d in enumerate(g):
            for b in range(n_blocks):
                for p in range(schedule.pieces):
                    if schedule.pattern == "gather":
                        if b == pos:
                            held[(d, (b, p))] = frozenset([d])
                    else:
                        held[(d, (b, p))] = frozenset([d])
    for step in range(schedule.n_steps):
        moves = [t for t in schedule.transfers if t.step == step]
        sent = {(t.src, t.key): held[(t.src, t.key)] for t in moves}  # snapshot before arrivals
        for t in moves:
            payload = sent[(t.src, t.key)]
            if t.reduce:
                assert not (payload & held[(t.dst, t.key)]), "a contribution would be added twice"
                held[(t.dst, t.key)] = held[(t.dst, t.key)] | payload
            else:
                held[(t.dst, t.key)] = payload
    return held


@pytest.mark.parametrize(("algorithm", "n"), runnable("gather"))
def test_gather_delivers_every_block_everywhere_exactly_once(algorithm, n):
    group = list(range(n))[::-1]
    s = build_schedule("gather", [group], algorithm)
    arrivals = Counter((t.dst, t.key) for t in s.transfers)
    assert all(count == 1 for count in arrivals.values())
    held = replay(s, n)
    for _pos, d in enumerate(group):
        for b in range(n):
            for p in range(s.pieces):
                assert held[(d, (b, p))] == {group[b]}


@pytest.mark.parametrize(("algorithm", "n"), runnable("reduce_scatter"))
def test_reduce_scatter_sums_every_contribution_once(algorithm, n):
    group = [(3 * i) % n for i in range(n)] if n % 3 else list(range(n))
    s = build_schedule("reduce_scatter", [group], algorithm)
    held = replay(s, n)
    for pos, d in enumerate(group):
        for p in range(s.pieces):
            assert held[(d, (pos, p))] == set(group)


@pytest.mark.parametrize(("algorithm", "n"), runnable("all_reduce", (5, 8)))
def test_all_reduce_leaves_the_full_sum_everywhere(algorithm, n):
    s = build_schedule("all_reduce", [list(range(n))], algorithm)
    held = replay(s, n)
    assert all(held[(d, (b, p))] == set(range(n)) for d in range(n) for b in range(n) for p in range(s.pieces))


@pytest.mark.parametrize(
    ("algorithm", "n", "steps", "per_step_per_direction"),
    [("ring", 8, 7, 1), ("bidirectional_ring", 8, 7, 1), ("bidirectional_halfway", 8, 4, 1), ("bidirectional_halfway", 7, 3, 1)],
)
def test_steps_and_link_load(algorithm, n, steps, per_step_per_direction):
    s = build_schedule("gather", [list(range(n))], algorithm)
    assert s.n_steps == steps
    load = Counter((t.step, t.src, t.direction) for t in s.transfers)
    assert max(load.values()) == per_step_per_direction


def test_dependencies_point_at_the_arrival_of_the_chunk_being_sent():
    s = build_schedule("gather", [[0, 1, 2, 3]], "ring")
    for index, t in enumerate(s.transfers):
        for d in t.deps:
            before = s.transfers[d]
            assert before.dst == t.src and before.key == t.key and before.step < t.step < index + 10**6
        assert bool(t.deps) == (t.step > 0)


def test_groups_run_side_by_side():
    s = build_schedule("gather", [[0, 2], [3, 1]], "ring")
    assert {(t.src, t.dst) for t in s.transfers} == {(0, 2), (2, 0), (3, 1), (1, 3)}
    assert s.n_steps == 1


def test_unknown_names():
    names = "ring, bidirectional_ring, bidirectional_halfway, direct, recursive_doubling, recursive_halving, rabenseifner, multiaxis, dimension_ordered"
    with pytest.raises(ValueError, match=rf"^unknown algorithm 'tree'; expected one of {names}$"):
        build_schedule("gather", [[0, 1]], "tree")
    with pytest.raises(ValueError, match=r"^unknown pattern 'scan'; expected one of gather, reduce_scatter, all_reduce, all_to_all$"):
        build_schedule("scan", [[0, 1]], "ring")
