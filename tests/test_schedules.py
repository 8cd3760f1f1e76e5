"""Schedules are plain data: check them without any simulation."""

from __future__ import annotations

from collections import Counter

import pytest

from netsim.algorithms.registry import ALGORITHMS, Algorithm
from netsim.algorithms.schedule import build_schedule
from netsim.algorithms.transfers import Transfer

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
    names = (
        "ring, bidirectional_ring, bidirectional_halfway, direct, recursive_doubling, recursive_halving, rabenseifner, "
        "multiaxis, dimension_ordered, multiaxis_bundled, hierarchical"
    )
    with pytest.raises(ValueError, match=rf"^unknown algorithm 'tree'; expected one of {names}$"):
        build_schedule("gather", [[0, 1]], "tree")
    with pytest.raises(ValueError, match=r"^unknown pattern 'scan'; expected one of gather, reduce_scatter, all_reduce, all_to_all$"):
        build_schedule("scan", [[0, 1]], "ring")


def straightforward_schedule(pattern, groups, algorithm):
    """The spine's way of planning, kept as a reference: Python loops over the moves, a
    dictionary of arrivals per (device, chunk), one Transfer object at a time."""
    plan = ALGORITHMS[algorithm]
    phases = []
    if pattern in ("reduce_scatter", "all_reduce"):
        phases.append(("reduce_scatter", plan.reduce_scatter))
    if pattern in ("gather", "all_reduce"):
        phases.append(("gather", plan.gather))
    rows, offset = [], 0
    for phase, moves in phases:
        last = -1
        for group in groups:
            for step, i, j, block, piece, direction in moves(len(group)):
                rows.append((offset + step, group[i], group[j], (block, piece), phase == "reduce_scatter", direction, phase))
                last = max(last, step)
        offset += last + 1
    rows.sort(key=lambda r: r[0])
    arrivals, out = {}, []
    for step in sorted({r[0] for r in rows}):
        now = [(index, r) for index, r in enumerate(rows) if r[0] == step]
        for _index, (s, src, dst, key, reduce, direction, phase) in now:
            out.append(Transfer(s, src, dst, key, reduce, direction, tuple(arrivals.get((src, key), ())), phase))
        for index, (_, _, dst, key, *_) in now:
            arrivals.setdefault((dst, key), []).append(index)
    return tuple(out)


# Algorithms planned with arrays (those sending one message per step, or planning with a
# mesh shape, are planned transfer by transfer and checked by the replays above).
ARRAY_PLANNED = [name for name, plan in ALGORITHMS.items() if isinstance(plan, Algorithm) and not plan.one_message_per_step]


@pytest.mark.parametrize("algorithm", ARRAY_PLANNED)
@pytest.mark.parametrize("pattern", ["gather", "reduce_scatter", "all_reduce"])
@pytest.mark.parametrize(
    "groups",
    [[[0]], [[0, 1]], [[2, 0, 1]], [[0, 2], [3, 1]], [list(range(8))], [[5, 4, 3, 2, 1, 0, 6]], [[0, 1, 2], [3, 4], [5]], [[7, 0, 3, 9, 1], [2, 8, 4, 6, 5]]],
)
def test_vectorised_planning_equals_the_straightforward_one(algorithm, pattern, groups):
    if not ALGORITHMS[algorithm].runs(pattern):
        pytest.skip(f"{algorithm} does not run {pattern}")
    s = build_schedule(pattern, groups, algorithm)
    assert tuple(s.transfers) == straightforward_schedule(pattern, groups, algorithm)
    assert s.transfers == straightforward_schedule(pattern, groups, algorithm)  # a TransferTable compares as its transfers


@pytest.mark.parametrize("algorithm", [name for name, plan in ALGORITHMS.items() if isinstance(plan, Algorithm) and plan.gather_array is not None])
@pytest.mark.parametrize("n", [1, 2, 3, 4, 7, 8, 33])
def test_move_arrays_equal_the_move_generators(algorithm, n):
    plan = ALGORITHMS[algorithm]
    for generate, vectorised in ((plan.gather, plan.gather_array), (plan.reduce_scatter, plan.reduce_scatter_array)):
        assert vectorised(n).tolist() == [list(move) for move in generate(n)]


def test_transfer_table_columns_describe_its_transfers():
    table = build_schedule("all_reduce", [[0, 2, 1], [3, 5, 4]], "bidirectional_ring").transfers
    columns = table.columns()
    assert len(table) == len(columns["src"]) == 48
    for i, t in enumerate(table):
        assert (t.src, t.dst, t.direction, t.reduce) == (columns["src"][i], columns["dst"][i], columns["direction"][i], columns["reduce"][i])
        assert t.key == columns["keys"][columns["key_index"][i]]
        assert t.deps == tuple(columns["dep_idx"][columns["dep_ptr"][i] : columns["dep_ptr"][i + 1]].tolist())
    assert table[-1] is table[47] and table[1:3] == tuple(table)[1:3]
