"""The fast player plays exactly the events of the process model.

Random schedules full of ties (equal sizes, latencies and compute times that are
multiples of each other, stragglers, contention on shared links, reductions,
zero-byte and zero-hop messages, compute steps waiting for arrivals and transfers
waiting for compute steps, steps that compute values) must give the same numbers
bit for bit with both engines: times, hops in the same order, link and compute
unit statistics, event counts and final buffers.
"""

from __future__ import annotations

import math
import random
from types import SimpleNamespace

import numpy as np
import pytest
from conftest import sample_then_slow

from netsim.algorithms.bundles import Bundle, BundleTable
from netsim.algorithms.compute import Compute
from netsim.algorithms.schedule import build_schedule
from netsim.algorithms.transfers import TransferTable
from netsim.checks.invariants import check_playback
from netsim.engine import ComputeUnit, EngineError, Link, play, transfer_columns
from netsim.engine.compiled_bundles import BundledBuffers
from netsim.network.topology import mesh, ring, torus
from netsim.semantics.chunks import SizeOnly


def add_one(x):
    return x + 1


def random_case(seed, with_computes=True, values=True, joins=False):
    """A random schedule full of ties; ``values=False``: no compute step computes values (timing only);
    ``joins``: join steps too, on devices where something is done before them."""
    rng = random.Random(seed)
    kind = rng.choice(["ring", "torus", "mesh"])
    if kind == "ring":
        topo = ring(rng.randint(2, 8), 1e9, rng.choice([0.0, 1e-6, 2e-6]))
    elif kind == "torus":
        topo = torus((rng.randint(2, 4), rng.randint(2, 4)), True, 1e9, rng.choice([0.0, 1e-6]))
    else:
        topo = mesh((rng.randint(2, 4), rng.randint(1, 3)), 1e9, 1e-6)
    if rng.random() < 0.5:
        for _, _, data in topo.graph.edges(data=True):
            data["bandwidth_Bps"] = rng.choice([1e9, 2e9, 5e8])
    for d in topo.graph.nodes:
        topo.graph.nodes[d]["peak_flops"] = rng.choice([1e12, 2e12])
        topo.graph.nodes[d]["hbm_bandwidth_Bps"] = 1e9
    n = topo.n_devices
    keys = ["a", "b", "c"]
    sizes = {k: rng.choice([0, 1000, 2000, 3000]) for k in keys}
    buffers = [{k: np.full(sizes[k] // 8, d + 1, np.int64) for k in keys} for d in range(n)]
    # Steps in the order they are made; each waits only for earlier steps done where it starts.
    made = []  # (kind, fields, done_at)
    for _ in range(rng.randint(1, 60)):
        computing = with_computes and rng.random() < 0.3
        start = rng.randrange(n)
        here = [k for k, (_, _, done_at) in enumerate(made) if done_at == start]
        deps = sorted(rng.sample(here, min(len(here), rng.choice([0, 0, 1, 1, 2, 3]))))
        if joins and here and rng.random() < 0.25:  # a join of one to four steps done here
            made.append(("compute", dict(device=start, deps=sorted(rng.sample(here, min(len(here), rng.randint(1, 4)))), join=True), start))
            continue
        if computing:
            timing = rng.choice(
                [{"seconds": rng.choice([0.0, 5e-7, 1e-6, 2e-6])}, {"flops": rng.choice([1e6, 2e6, 3e6])}, {"bytes": rng.choice([1000.0, 2000.0])}]
            )
            key = rng.choice(keys)
            fn = {"inputs": (key,), "output": key, "fn": add_one} if rng.random() < 0.5 and values else {}
            made.append(("compute", dict(device=start, deps=deps, **timing, **fn), start))
        else:
            dst = rng.randrange(n)
            fields = dict(src=start, dst=dst, key=rng.choice(keys), reduce=rng.random() < 0.3, direction=rng.choice([1, -1]), deps=deps)
            made.append(("transfer", fields, dst))
    transfer_order = [k for k, step in enumerate(made) if step[0] == "transfer"]
    compute_order = [k for k, step in enumerate(made) if step[0] == "compute"]
    number = {k: i for i, k in enumerate(transfer_order + compute_order)}
    transfers = [SimpleNamespace(**{**made[k][1], "deps": tuple(number[d] for d in made[k][1]["deps"])}) for k in transfer_order]
    computes = [Compute(**{**made[k][1], "deps": tuple(number[d] for d in made[k][1]["deps"])}) for k in compute_order]
    start_s = [rng.choice([0.0, 0.0, 0.0, 1e-6, 3e-6, 2.5e-6]) for _ in range(n)] if rng.random() < 0.3 else None
    return topo, transfers, computes, buffers, rng.random() < 0.7, start_s


def played(engine, topo, transfers, computes, buffers, cut_through, start_s, **classes):
    return play(topo, transfers, buffers, computes=computes, cut_through=cut_through, start_s=start_s, engine=engine, **classes)


def assert_same(ours, theirs, payloads=True):
    assert ours.time == theirs.time
    assert ours.actions == theirs.actions
    assert ours.sent_at == theirs.sent_at
    np.testing.assert_array_equal(ours.arrived_at, theirs.arrived_at)
    assert ours.nbytes == theirs.nbytes
    assert ours.routes == theirs.routes
    assert [(h.transfer, h.link, h.start, h.end) for h in ours.hops] == [(h.transfer, h.link, h.start, h.end) for h in theirs.hops]
    stats = lambda links: {link: (s.bytes, s.messages, s.busy_s, s.max_queue) for link, s in links.items()}  # noqa: E731
    assert stats(ours.links) == stats(theirs.links)
    np.testing.assert_array_equal(ours.computes.started_at, theirs.computes.started_at)
    np.testing.assert_array_equal(ours.computes.ended_at, theirs.computes.ended_at)
    assert ours.compute_units == theirs.compute_units
    assert ours.bundles == theirs.bundles
    for mine, reference in zip(ours.buffers, theirs.buffers, strict=True) if payloads else ():
        assert mine.keys() == reference.keys()
        for key in mine:
            np.testing.assert_array_equal(mine[key], reference[key])


@pytest.mark.parametrize("seed", sample_then_slow(range(200), 40))
def test_random_schedules_play_the_same_on_both_engines(seed):
    case = random_case(seed)
    fast, processes = played("fast", *case), played("processes", *case)
    assert (fast.engine, processes.engine) == ("fast", "processes")
    assert_same(fast, processes)


def joined_case(case):
    """The same schedule with every step that waits for two or more steps waiting for one join of them instead."""
    topo, transfers, computes, buffers, cut_through, start_s = case
    n, joins = len(transfers), []

    def through_join(step, device):
        if len(step.deps) < 2:
            return step.deps
        joins.append(Compute(device=device, seconds=0.0, deps=tuple(step.deps), join=True, name="join"))
        return (n + len(computes) + len(joins) - 1,)

    moved = [SimpleNamespace(**{**vars(t), "deps": through_join(t, t.src)}) for t in transfers]
    computed = [Compute(**{**{f: getattr(c, f) for f in c.__dataclass_fields__}, "deps": through_join(c, c.device)}) for c in computes]
    return (topo, moved, computed + joins, buffers, cut_through, start_s), len(joins)


@pytest.mark.parametrize("engine", ["fast", "processes"])
def test_a_join_plays_exactly_as_the_dependencies_it_joins(engine):
    """Joins change no event: the same times, hops, link queues and compute steps, on 200 random schedules."""
    with_joins = 0
    for seed in range(200):
        case = random_case(seed)
        joined, count = joined_case(case)
        with_joins += count > 0
        direct, through = played(engine, *case), played(engine, *joined)
        m = len(case[2])
        assert (direct.time, direct.actions, direct.sent_at, direct.nbytes) == (through.time, through.actions, through.sent_at, through.nbytes)
        np.testing.assert_array_equal(direct.arrived_at, through.arrived_at)
        assert [(h.transfer, h.link, h.start, h.end) for h in direct.hops] == [(h.transfer, h.link, h.start, h.end) for h in through.hops]
        assert {k: (s.busy_s, s.max_queue) for k, s in direct.links.items()} == {k: (s.busy_s, s.max_queue) for k, s in through.links.items()}
        np.testing.assert_array_equal(direct.computes.started_at, through.computes.started_at[:m])
        np.testing.assert_array_equal(direct.computes.ended_at, through.computes.ended_at[:m])
        assert direct.compute_units == through.compute_units
        joins = joined[2][m:]
        for j, step in enumerate(joins):  # done the instant its last dependency is
            last = max(through.arrived_at[d] if d < len(joined[1]) else through.computes.ended_at[d - len(joined[1])] for d in step.deps)
            assert through.computes.started_at[m + j] == through.computes.ended_at[m + j] == last
    assert with_joins > 100


def test_the_random_schedules_are_tie_heavy_and_mix_compute_with_transfers():
    cases = [random_case(seed) for seed in range(200)]
    runs = [played("fast", *case) for case in cases]
    assert sum(1 for run in runs if any(s.max_queue > 1 for s in run.links.values())) > 50  # contention
    assert sum(1 for run in runs if any(u.max_queue > 1 for u in run.compute_units.values())) > 20  # queued compute
    transfer_waits_compute = sum(1 for _, t, c, *_ in cases if any(d >= len(t) for x in t for d in x.deps))
    compute_waits_transfer = sum(1 for _, t, c, *_ in cases if any(d < len(t) for x in c for d in x.deps))
    assert transfer_waits_compute > 20 and compute_waits_transfer > 20
    instants = [np.concatenate([run.arrived_at, run.computes.ended_at]) for run in runs]
    assert sum(1 for t in instants if len(np.unique(t)) < len(t)) > 100  # steps done at the same instant


def test_a_transfer_waits_for_compute_and_compute_waits_for_transfers():
    """By hand: 45 GB/s links of 1 us latency, 4.5 MB moves (100 us each), a chip of 1 PFLOP/s and 1 TB/s of HBM."""
    topo = ring(4, 45e9, 1e-6)
    for d in topo.graph.nodes:
        topo.graph.nodes[d].update(peak_flops=1e15, hbm_bandwidth_Bps=1e12)
    size = 4_500_000
    buffers = [{"w": np.zeros(size, np.uint8)} for _ in range(4)]
    move = lambda src, dst, deps=(): SimpleNamespace(src=src, dst=dst, key="w", reduce=False, direction=1, deps=deps)  # noqa: E731
    transfers = [
        move(0, 1),  # 0: one hop: 1 us + 100 us, arrives at 101 us
        SimpleNamespace(src=3, dst=1, key="w", reduce=False, direction=-1, deps=()),  # 1: 3 -> 2 -> 1, cut-through: 2 us + 100 us
        move(1, 2, deps=(3,)),  # 2: after compute step 0 (step 3) on device 1
    ]
    computes = [
        Compute(device=1, flops=50e9, deps=(0, 1)),  # 50 GFLOP at 1 PFLOP/s: 50 us, once both arrived (102 us)
        Compute(device=2, bytes=20e6, deps=(2,)),  # 20 MB at 1 TB/s: 20 us, once transfer 2 arrived
    ]
    for engine in ("fast", "processes"):
        run = play(topo, transfers, buffers, computes=computes, engine=engine)
        assert run.arrived_at[:2] == pytest.approx([101e-6, 102e-6], rel=1e-12)
        assert run.computes.started_at.tolist() == pytest.approx([102e-6, 253e-6], rel=1e-12)
        assert run.computes.ended_at[0] == pytest.approx(152e-6, rel=1e-12)
        assert run.sent_at[2] == pytest.approx(152e-6, rel=1e-12)  # leaves when the compute step is done
        assert run.arrived_at[2] == pytest.approx(253e-6, rel=1e-12)  # 1 hop: 1 us + 100 us
        assert run.time == pytest.approx(273e-6, rel=1e-12)  # then 20 us of HBM-bound compute
        assert run.compute_units[1].busy_s == pytest.approx(50e-6, rel=1e-12)


def test_compute_steps_share_their_unit_in_order():
    topo = ring(2, 1e9, 0.0)
    computes = [Compute(device=0, seconds=3e-6), Compute(device=0, seconds=1e-6), Compute(device=1, seconds=2e-6, deps=())]
    for engine in ("fast", "processes"):
        run = play(topo, [], [{}, {}], computes=computes, engine=engine)
        assert run.computes.started_at.tolist() == [0.0, 3e-6, 0.0]
        assert run.computes.ended_at.tolist() == [3e-6, 4e-6, 2e-6]
        assert run.compute_units[0].max_queue == 2 and run.compute_units[0].steps == 2
        assert run.time == 4e-6


def test_compute_steps_compute_values():
    topo = ring(2, 1e9, 1e-6)
    a, b = np.arange(4.0).reshape(2, 2), np.eye(2)
    computes = [Compute(device=0, seconds=1e-6, inputs=("a", "b"), output="c", fn=np.matmul)]
    move = SimpleNamespace(src=0, dst=1, key="c", reduce=False, direction=1, deps=(1,))
    for engine in ("fast", "processes"):
        run = play(topo, [move], [{"a": a, "b": b}, {}], computes=computes, engine=engine)
        np.testing.assert_array_equal(run.buffers[1]["c"], a @ b)


class OverheadLink(Link):
    """A link that adds a fixed cost to every message it carries."""

    overhead_s = 0.5e-6

    def transmission_s(self, message):
        return super().transmission_s(message) + self.overhead_s


class SlowStart(ComputeUnit):
    def duration_s(self, step, index):
        return super().duration_s(step, index) + 1e-6


def test_your_own_link_and_compute_unit():
    topo = ring(4, 1e9, 1e-6)
    move = SimpleNamespace(src=0, dst=2, key="x", reduce=False, direction=1, deps=(1,))
    buffers = [{"x": np.zeros(1000, np.uint8)}, {}, {}, {}]
    computes = [Compute(device=0, seconds=2e-6)]
    plain = play(topo, [move], buffers, computes=computes)
    assert plain.time == pytest.approx(2e-6 + 2e-6 + 1e-6, rel=1e-12)
    # Cut-through: the second link starts 1 us after the first and ends 1 us after it, so of the two
    # links' 0.5 us overheads only one adds to the time.
    assert play(topo, [move], buffers, computes=computes, link_class=OverheadLink).time == pytest.approx(plain.time + 0.5e-6, rel=1e-12)
    mine = play(topo, [move], buffers, computes=computes, link_class=OverheadLink, compute_class=SlowStart)
    assert mine.engine == "processes" and mine.time == pytest.approx(plain.time + 0.5e-6 + 1e-6, rel=1e-12)
    with pytest.raises(ValueError, match=r"^the fast player and its compiled loop play only the built-in links and compute units: .*; use engine='processes'"):
        play(topo, [move], buffers, computes=computes, engine="fast", link_class=OverheadLink)


@pytest.mark.parametrize(
    ("transfers", "computes", "message"),
    [
        (
            [SimpleNamespace(src=0, dst=1, key="x", reduce=False, direction=1, deps=())],
            [Compute(device=1, seconds=1.0, deps=(0,)), Compute(device=0, seconds=1.0, deps=(0,))],
            r"^compute step #1 waits for transfer #0, which arrives at device 1, not at its device 0$",
        ),
        (
            [SimpleNamespace(src=1, dst=0, key="x", reduce=False, direction=1, deps=(1,))],
            [Compute(device=0, seconds=1.0)],
            r"^transfer #0 waits for compute step #0, which runs on device 0, not at its source 1$",
        ),
        ([], [Compute(device=2, seconds=1.0)], r"^compute step #0 names device 2, but the topology has 2$"),
        ([], [Compute(device=0, seconds=1.0, deps=(0,))], r"^compute step #0 waits for \(0,\), which are not other steps$"),
        (
            [],
            [Compute(device=0, flops=1e9)],
            r"^compute step #0 counts flops but device 0 has no peak_flops: give the topology's device: \{peak_flops: \.\.\.\}$",
        ),
        ([], [Compute(device=0, seconds=float("inf"))], r"^compute step #0 on device 0 would take inf s: give a finite time >= 0$"),
    ],
)
@pytest.mark.parametrize("engine", ["fast", "processes"])
@pytest.mark.parametrize("compiled_check", [False, True])
def test_bad_compute_steps(transfers, computes, message, engine, compiled_check, monkeypatch):
    if compiled_check:  # (the one compiled pass big schedules are checked by)
        monkeypatch.setattr("netsim.engine.routes._COMPILED_CHECK_MIN", 0)
    with pytest.raises(ValueError, match=message):
        play(ring(2), transfers, [{"x": np.zeros(1)}, {"x": np.zeros(1)}], computes=computes, engine=engine)


@pytest.fixture
def compiled_always(monkeypatch):
    """The fast player's compiled loop plays every schedule it can, however small."""
    import netsim.engine.compiled as compiled

    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 0)
    return compiled


@pytest.mark.parametrize("seed", sample_then_slow(range(200), 40))
def test_random_schedules_play_the_same_on_the_compiled_loop(seed, compiled_always, monkeypatch):
    case = random_case(seed, values=False)  # (compute steps too, timing only: the loop cannot call their functions)
    played_by = []
    real = compiled_always.compiled_player
    monkeypatch.setattr("netsim.engine.playing.compiled_player", lambda *a: played_by.append(real(*a)) or played_by[-1])
    compiled, processes = played("fast", *case), played("processes", *case)
    assert played_by and played_by[0] is not None  # the compiled loop played it
    assert_same(compiled, processes)
    monkeypatch.setattr(compiled_always, "MIN_TRANSFERS", 10**9)
    python = played("fast", *case)
    assert compiled.events == python.events  # SimPy's events of the Python player: an instant each, and its start and end
    assert [list(b) for b in compiled.buffers] == [list(b) for b in python.buffers]  # keys in the order they came


def test_the_compiled_loop_hands_back_what_it_cannot_play(compiled_always):
    topo = ring(4, 1e9, 1e-6)
    move = lambda key, reduce=False: SimpleNamespace(src=0, dst=1, key=key, reduce=reduce, direction=1, deps=())  # noqa: E731
    buffers = [{"a": np.zeros(10)}, {"a": np.zeros(10, np.int8)}, {}, {}]
    # A reduction that widens the chunk (int8 + float64 is 80 bytes, not 10): the Python player plays it.
    columns = transfer_columns([move("a", reduce=True), SimpleNamespace(src=1, dst=2, key="a", reduce=False, direction=1, deps=(0,))])
    assert compiled_always.compiled_player(topo, columns, buffers, True, [0.0] * 4, ()) is None
    run = play(topo, [move("a", reduce=True), SimpleNamespace(src=1, dst=2, key="a", reduce=False, direction=1, deps=(0,))], buffers)
    assert run.nbytes == [80, 80]
    # A missing chunk: the Python player raises the error.
    with pytest.raises(EngineError, match=r"^device 0 must send chunk 'b' \(transfer #0\) but does not hold it$"):
        play(topo, [move("b")], buffers)


def random_bundled_case(seed):
    """A random gather-like schedule that sends bundles (nested ones too), full of ties: every transfer
    sends a chunk or bundle its source holds, or can make from what it holds, by the arrivals it waits for."""
    rng = random.Random(seed)
    topo, *_ = random_case(seed, with_computes=False)
    n = topo.n_devices
    size = rng.choice([8, 16])
    values = rng.random() < 0.5
    chunk = lambda d, p: np.full(size // 8, 10 * d + p, np.int64) if values else SizeOnly(size * (1 + p % 2))  # noqa: E731
    buffers = [{(d, p): chunk(d, p) for p in range(2)} for d in range(n)]
    table = {}
    for b in range(rng.randint(1, 6)):  # bundle (n + b, 0) of some chunks and earlier bundles
        known = [(d, p) for d in range(n) for p in range(2)]
        inner = [rng.choice(list(table))] if table and rng.random() < 0.7 else []
        table[(n + b, 0)] = tuple(inner + rng.sample(known, rng.randint(1, min(3, len(known)))))

    def makeable(key, holds):
        return key in holds or (key in table and all(makeable(part, holds) for part in table[key]))

    moves, deps = [], []  # (src, dst, key, direction), deps
    for _ in range(rng.randint(1, 40)):
        src = rng.randrange(n)
        here = [i for i, (_, dst, _, _) in enumerate(moves) if dst == src]
        waits = sorted(rng.sample(here, min(len(here), rng.choice([0, 1, 2, 3, len(here)]))))
        holds = set(buffers[src]) | {moves[i][2] for i in waits}
        sendable = sorted(k for k in set(holds) | set(table) if makeable(k, holds))
        bundles = [k for k in sendable if k in table]
        key = rng.choice(bundles if bundles and rng.random() < 0.6 else sendable)
        moves.append((src, rng.randrange(n), key, rng.choice([1, -1])))
        deps.append(waits)
    column = lambda values, dtype=np.int64: np.array(values, dtype)  # noqa: E731
    ptr = np.cumsum([0] + [len(d) for d in deps])
    transfers = TransferTable(
        column(range(len(moves))),
        column([m[0] for m in moves]),
        column([m[1] for m in moves]),
        column([m[2][0] for m in moves]),
        column([m[2][1] for m in moves]),
        column([False] * len(moves), bool),
        column([m[3] for m in moves]),
        column([0] * len(moves)),
        ptr,
        column([i for d in deps for i in d]),
        BundleTable.from_dict(table) if rng.random() < 0.5 else table,  # (the compiled loop numbers keys on arrays, or one by one)
    )
    start_s = [rng.choice([0.0, 0.0, 1e-6, 2.5e-6]) for _ in range(n)] if rng.random() < 0.3 else None
    return topo, transfers, [], buffers, rng.random() < 0.7, start_s


def assert_same_payloads(ours, theirs, same_objects):
    """The same keys in the same order; bundles made of the same parts (the very same objects if asked)."""
    for mine, reference in zip(ours.buffers, theirs.buffers, strict=True):
        assert list(mine) == list(reference)
        stack = [(mine[key], reference[key]) for key in mine]
        while stack:
            a, b = stack.pop()
            assert type(a) is type(b) and a.nbytes == b.nbytes
            if isinstance(a, Bundle):
                stack.extend(zip(a.parts, b.parts, strict=True))
            elif same_objects:
                assert a is b
            elif isinstance(a, np.ndarray):
                np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("seed", sample_then_slow(range(150), 30))
def test_random_bundled_schedules_play_the_same_on_every_engine(seed, compiled_always, monkeypatch):
    case = random_bundled_case(seed)
    played_by = []
    real = compiled_always.compiled_player
    monkeypatch.setattr("netsim.engine.playing.compiled_player", lambda *a: played_by.append(real(*a)) or played_by[-1])
    compiled, processes = played("fast", *case), played("processes", *case)
    assert played_by[0] is not None  # the compiled loop played it
    assert_same(compiled, processes, payloads=False)
    assert_same_payloads(compiled, processes, same_objects=False)
    monkeypatch.setattr(compiled_always, "MIN_TRANSFERS", 10**9)
    python = played("fast", *case)
    assert compiled.events == python.events
    assert_same_payloads(compiled, python, same_objects=True)  # bundles of the very chunks the Python player put in them


def test_the_random_bundled_schedules_make_nested_bundles_and_contend():
    runs = [played("processes", *random_bundled_case(seed)) for seed in range(150)]
    assert sum(1 for run in runs if any(s.max_queue > 1 for s in run.links.values())) > 30
    nested = 0
    for run in runs:
        nested += any(isinstance(part, Bundle) for held in run.buffers for chunk in held.values() if isinstance(chunk, Bundle) for part in chunk.parts)
    assert nested > 20
    assert sum(1 for run in runs if len(np.unique(run.arrived_at)) < len(run.arrived_at)) > 50


@pytest.mark.parametrize(("dims", "data"), [((2, 3, 4), "values"), ((4, 4, 4), "none"), ((3, 3), "values"), ((4, 2), "none")])
def test_multiaxis_bundled_plays_the_same_on_the_compiled_loop(dims, data, compiled_always):
    topo = torus(dims, True, 45e9, 1e-6)
    n = math.prod(dims)
    schedule = build_schedule("gather", [list(range(n))], "multiaxis_bundled", group_shape=dims)
    k = 2 * len(dims)
    pieces = [np.arange(5 * k + 1, dtype=np.float32)[p::k] for p in range(k)]  # pieces of unequal size
    buffers = [{(d, p): pieces[p] + d if data == "values" else SizeOnly(pieces[p].nbytes) for p in range(k)} for d in range(n)]
    compiled = play(topo, schedule.transfers, buffers)
    assert isinstance(compiled.buffers, BundledBuffers)  # the compiled loop played it
    processes = play(topo, schedule.transfers, buffers, engine="processes")
    assert_same(compiled, processes, payloads=False)
    assert_same_payloads(compiled, processes, same_objects=True)
    check_playback(topo, schedule.transfers, buffers, compiled, groups=schedule.groups, pattern="gather", wanted=lambda d: range(n))


@pytest.mark.parametrize("dims", [(2, 2, 2), (4, 2, 2)])
def test_a_timing_only_program_of_bundled_gathers_and_a_psum_plays_the_same_on_the_compiled_loop(dims, compiled_always, monkeypatch):
    """Reductions of size-only stand-ins beside bundles play on the compiled loop (a sum is numbered after every
    bundle the run could make): the events, times and buffers of the process model and the Python player."""
    from netsim.network.device_mesh import Mesh
    from netsim.network.presets import tpu_slice
    from netsim.programs.lowering import lower
    from netsim.programs.model import Op, Program, Sharded
    from netsim.programs.values import start_buffers

    axes = ("X", "Y", "Z")
    mesh = dict(zip(axes, dims, strict=True))
    n = math.prod(dims)
    arrays = {"W": Sharded((n * 48, 64), "float32", (axes, ())), "x": Sharded((n * 8, 48 * n), "float32", (axes, ()))}
    ops = (
        Op.of("g", "all_gather", ("W",), "W_full", axes=axes, axis=0, tiled=True, algorithm="multiaxis_bundled"),
        Op.of("mm", "matmul", ("x", "W_full"), "h"),
        Op.of("s", "psum", ("Wp",), "Ws", axes=("X",)),
    )
    arrays["Wp"] = Sharded((n * 16,), "float32", (("Y", "Z"),), partial=("X",))
    topology = tpu_slice(f"tpu-v4:{'x'.join(map(str, dims))}")
    lowered = lower(Program("p", mesh, arrays, ops), Mesh(mesh, topology))
    schedule = lowered.schedule
    assert schedule.transfers.bundles and schedule.transfers.reduce.any()
    buffers, _ = start_buffers(lowered, False)
    played_by = []
    real = compiled_always.compiled_player
    monkeypatch.setattr("netsim.engine.playing.compiled_player", lambda *a: played_by.append(real(*a)) or played_by[-1])
    compiled = play(topology, schedule.transfers, buffers, computes=schedule.computes, engine="fast")
    assert isinstance(played_by[0].buffers, BundledBuffers)  # the compiled loop played it
    processes = play(topology, schedule.transfers, buffers, computes=schedule.computes, engine="processes")
    assert_same(compiled, processes, payloads=False)
    assert_same_payloads(compiled, processes, same_objects=False)
    monkeypatch.setattr(compiled_always, "MIN_TRANSFERS", 10**9)
    python = play(topology, schedule.transfers, buffers, computes=schedule.computes, engine="fast")
    assert compiled.events == python.events
    assert_same_payloads(compiled, python, same_objects=True)


@pytest.mark.parametrize("seed", sample_then_slow(range(30), 10))
def test_the_compiled_dependency_check_names_what_the_array_check_names(seed, monkeypatch):
    """Big schedules' dependencies are checked in one compiled pass: the same first bad step, and the same
    message, as the array check (a step naming no other step is found first, even after one done elsewhere)."""
    import netsim.engine.routes as routes
    from netsim.engine.columns import compute_columns

    rng = random.Random(seed)
    n = rng.randrange(2, 12)
    moves = []
    for i in range(n):
        deps = tuple(rng.randrange(-1, n + 2) for _ in range(rng.randrange(0, 3)))
        moves.append(SimpleNamespace(src=rng.randrange(3), dst=rng.randrange(3), key=i, reduce=False, direction=1, deps=deps))
    said = []
    for minimum in (10**9, 0):
        monkeypatch.setattr(routes, "_COMPILED_CHECK_MIN", minimum)
        try:
            routes.check_schedule(transfer_columns(moves), compute_columns([]), 3)
            said.append(None)
        except ValueError as error:
            said.append(str(error))
    assert said[0] == said[1]
