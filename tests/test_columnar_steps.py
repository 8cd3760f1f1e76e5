"""Compute steps and starting chunks held as columns: the same steps, times and chunks as one object at a time."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import netsim.algorithms.compute as compute_module
from netsim.algorithms.compute import Compute
from netsim.algorithms.compute_table import ComputeTable
from netsim.engine.columns import compute_columns
from netsim.engine.processes import compute_time_s, compute_times_s
from netsim.engine.size_buffers import SizeBuffers
from netsim.programs.files import load_program
from netsim.programs.lowering import lower
from netsim.programs.starts import start_chunks, start_sizes
from netsim.semantics.chunks import SizeOnly

PROGRAMS = ["megatron_mlp.yaml", "fsdp_two_layers.yaml", "collective_matmul.yaml", "allgather_matmul.yaml"]


def _lowered(name: str):
    loaded = load_program(f"scenarios/programs/{name}")
    return lower(loaded.program, loaded.mesh_obj)


def test_compute_times_are_compute_time_s_to_the_bit_step_by_step():
    rng = np.random.default_rng(7)
    n = 400
    steps = [
        Compute(
            device=int(rng.integers(3)),
            seconds=None if rng.random() < 0.7 else float(rng.random() * 1e-5),
            flops=float(rng.choice([0.0, rng.random() * 1e12])),
            bytes=float(rng.choice([0.0, rng.random() * 1e9])),
            efficiency=float(rng.choice([1.0, 0.37, 0.947])),
        )
        for _ in range(n)
    ]
    rates = [(1.97e14, 8.1e11), (4.59e14, 2.8e12), (9.2e14, 1.6e12)]
    columns = compute_columns(steps)
    assert columns["efficiency"].tolist() == [s.efficiency for s in steps]
    expected = [compute_time_s(s, *rates[s.device], s.device, j) for j, s in enumerate(steps)]
    assert compute_times_s(columns, rates).tolist() == expected  # (==: bit for bit)


def test_compute_times_raise_what_compute_time_s_raises_for_the_first_step_that_has_no_rate():
    steps = [Compute(device=0, flops=0.0, bytes=8.0), Compute(device=1, flops=0.0, bytes=8.0), Compute(device=1, flops=4.0)]
    rates = [(1e12, 1e9), (None, 1e9)]
    columns = compute_columns(steps)
    with pytest.raises(ValueError) as one:
        [compute_time_s(s, *rates[s.device], s.device, j) for j, s in enumerate(steps)]
    with pytest.raises(ValueError) as other:
        compute_times_s(columns, rates)
    assert str(other.value) == str(one.value) == "compute step #2 counts flops but device 1 has no peak_flops: give the topology's device: {peak_flops: ...}"


@pytest.mark.parametrize("name", PROGRAMS)
def test_a_lowered_program_holds_its_compute_steps_as_a_table_that_reads_as_the_steps(name):
    low = _lowered(name)
    table = low.schedule.computes
    columns = compute_columns(table)
    assert isinstance(table, ComputeTable) and all(columns[k] is getattr(table, k) for k in ("device", "seconds", "dep_idx"))  # (its arrays, not copies)
    steps = list(table)
    again = compute_columns([dataclasses.replace(s, deps=tuple(int(d) for d in s.deps)) for s in steps])  # one object at a time
    for key in ("device", "seconds", "flops", "bytes", "join", "unit", "dep_ptr", "dep_idx"):
        assert np.array_equal(columns[key], again[key], equal_nan=key == "seconds"), key
    assert all(low.schedule.computes[j].name == steps[j].name for j in range(len(steps)))


def test_lowering_an_op_makes_no_compute_step_object(monkeypatch):
    """Counted: lowering a program makes its compute steps as columns, not one ``Compute`` each."""
    made = []
    original = compute_module.Compute.__init__

    def counting(self, *args, **kwargs):
        made.append(1)
        original(self, *args, **kwargs)

    monkeypatch.setattr(compute_module.Compute, "__init__", counting)
    low = _lowered("fsdp_two_layers.yaml")
    assert len(low.schedule.computes) > 0 and made == []


@pytest.mark.parametrize("name", PROGRAMS)
def test_size_buffers_hold_the_starting_chunks_each_device_holds_in_its_order(name):
    low = _lowered(name)
    widths = [2] * len(low.ops)
    sized, held = start_sizes(low, widths), start_chunks(low)
    assert isinstance(sized, SizeBuffers) and len(sized) == len(held)
    for d in range(len(held)):
        assert list(sized[d]) == list(held[d])  # the same keys, in the same order
        assert [c.nbytes for c in sized[d].values()] == [elements * 2 for _, _, elements in held[d].values()]
    assert sized.counts().tolist() == [len(h) for h in held]
    first: dict = {}
    for h in held:
        for key, (_, _, elements) in h.items():
            first.setdefault(key, elements * 2)
    keys = [*first, (10**6, 0)]
    assert sized.key_sizes(keys).tolist() == [*first.values(), -1]


def test_size_buffers_share_one_stand_in_per_size_and_refuse_unsorted_holders():
    b = SizeBuffers(3, np.array([0, 2, 2]), np.array([[0, 0], [0, 0], [1, 0]]), np.array([8, 8, 4]))
    assert b[0][(0, 0)] is b[2][(0, 0)] and b[1] == {} and b.chunk_list()[2].nbytes == 4 and type(b.chunk_list()[2]) is SizeOnly
    with pytest.raises(ValueError, match="holder must be sorted device numbers below 3"):
        SizeBuffers(3, np.array([2, 0]), np.array([[0, 0], [1, 0]]), np.array([8, 8]))


def test_a_bundled_timing_run_from_size_buffers_ends_with_the_chunks_the_python_player_leaves(monkeypatch):
    """Gathers over both axes sent as bundles (multiaxis_bundled), timing only: the compiled loop starts from
    SizeBuffers and lists their chunks only when its final buffers are read; those hold, on every device, the keys
    and sizes the Python player's leave, and the times are the same to the bit."""
    import netsim.engine.compiled as compiled
    import netsim.programs.plans as plans
    from netsim.engine import play
    from netsim.engine.compiled_bundles import BundledBuffers
    from netsim.programs.values import start_buffers

    monkeypatch.setattr(plans, "AUTO_BUNDLED_ABOVE", 0)
    low = _lowered("fsdp_two_layers.yaml")
    assert low.schedule.transfers.bundles and any(op.algorithm == "multiaxis_bundled" for op in low.ops)
    topology = low.mesh.topology
    runs = {}
    for minimum in (1, 10**9):  # the compiled loop, then the Python player
        monkeypatch.setattr(compiled, "MIN_TRANSFERS", minimum)
        buffers, _ = start_buffers(low, values=False)
        assert isinstance(buffers, SizeBuffers)
        runs[minimum] = play(topology, low.schedule.transfers, buffers, computes=low.schedule.computes, engine="fast")
    loop, python = runs[1], runs[10**9]
    assert isinstance(loop.buffers, BundledBuffers) and isinstance(python.buffers, list)  # (the compiled loop's, and the Python player's)
    assert loop.time == python.time and loop.arrived_at == python.arrived_at
    for mine, theirs in zip(loop.buffers, python.buffers, strict=True):
        assert list(mine) == list(theirs) and [c.nbytes for c in mine.values()] == [c.nbytes for c in theirs.values()]
