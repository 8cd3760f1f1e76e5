"""Timing-only runs (data="none"), lazy outputs, and memory: chunks move without copies."""

from __future__ import annotations

import math
import tracemalloc

import numpy as np
import pytest
from conftest import ROOT, expected_all_gather, expected_psum, expected_psum_scatter

import netsim.outputs as outputs
import netsim.pipeline as pipeline
import netsim.run as lifecycle
from netsim.collectives import all_gather, psum, psum_scatter, simulate
from netsim.engine import EngineError
from netsim.engine.table_buffers import TableBuffers
from netsim.network.topology import torus
from netsim.scenario import load_scenario
from netsim.semantics.chunks import SLICE_ELEMENTS, LazyOutput, SizeOnly, bounded_slices, shape_only
from netsim.semantics.gather import AllGatherLayout
from netsim.semantics.reduce import AllReduceLayout, ReduceScatterLayout

PAIRS = [[0, 5], [1, 4], [2, 7], [3, 6]]
CASES = [
    (all_gather, {"axis": 1, "tiled": True}, lambda x: expected_all_gather(x, 1, True, None)),
    (
        all_gather,
        {"axis": 0, "axis_index_groups": [[0, 5], [1, 4], [2, 7], [3, 6]]},
        lambda x: expected_all_gather(x, 0, False, [[0, 5], [1, 4], [2, 7], [3, 6]]),
    ),
    (psum_scatter, {"scatter_dimension": 1, "tiled": True}, lambda x: expected_psum_scatter(x, 1, True, None)),
    (psum, {"axis_index_groups": [[0, 1, 2, 3], [4, 5, 6, 7]]}, lambda x: expected_psum(x, [[0, 1, 2, 3], [4, 5, 6, 7]])),
]


@pytest.mark.parametrize(("collective", "kwargs", "expected"), CASES)
@pytest.mark.parametrize("algorithm", ["ring", "bidirectional_ring", "bidirectional_halfway"])
def test_timing_only_runs_take_the_same_time_bit_for_bit(collective, kwargs, expected, algorithm):
    x = np.random.default_rng(3).integers(-50, 50, (8, 5, 16)).astype(np.int32)
    topo = torus((2, 4), True, 45e9, 1e-6)
    real = collective(x, topology=topo, algorithm=algorithm, **kwargs)
    for stand_in in (x, shape_only(x.shape, x.dtype)):
        sizes = collective(stand_in, topology=topo, algorithm=algorithm, data="none", **kwargs)
        assert sizes.time == real.time
        a, b = sizes.leaves[0].playback, real.leaves[0].playback
        assert (a.sent_at, a.arrived_at, a.nbytes) == (b.sent_at, b.arrived_at, b.nbytes)
        assert sizes.output is None and sizes.verified is False
        assert sizes.verification.startswith("not materialised: data none")
    np.testing.assert_array_equal(real.output, expected(x))


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.yaml")), ids=lambda p: p.stem)
def test_scenarios_with_data_none_give_the_same_time(path, bundled_runs):
    timing_only = load_scenario(path).model_copy(update={"data": "none"})
    result = simulate(timing_only)
    assert result.time == bundled_runs[path.stem].time  # the run with values (once per session, see conftest)
    assert result.output is None and "not materialised" in result.verification


def test_data_none_scenario_field_is_validated(tmp_path):
    text = (ROOT / "scenarios" / "allgather_ring8.yaml").read_text() + "data: nothing\n"
    (tmp_path / "s.yaml").write_text(text)
    with pytest.raises(ValueError, match=r"data: .*'values' or 'none'"):
        load_scenario(tmp_path / "s.yaml")


@pytest.mark.parametrize(("collective", "kwargs", "expected"), CASES)
def test_lazy_outputs_equal_the_materialised_ones(collective, kwargs, expected):
    x = np.random.default_rng(4).standard_normal((8, 4, 8)).astype(np.float32)
    full = collective(x, output="full", **kwargs)
    lazy = collective(x, output="lazy", **kwargs)
    assert isinstance(lazy.output, LazyOutput) and lazy.verified
    assert lazy.output.shape == full.output.shape and lazy.output.dtype == full.output.dtype
    assert lazy.verification.startswith("lazy output (") and "values equal the NumPy reference on devices [0," in lazy.verification
    for d in range(8):
        np.testing.assert_array_equal(lazy.output[d], full.output[d])
    np.testing.assert_array_equal(np.asarray(lazy.output), full.output)
    np.testing.assert_array_equal(lazy.output[2:5, 1], full.output[2:5, 1])
    assert lazy.time == full.time


def test_outputs_above_the_limit_stay_lazy(monkeypatch):
    x = np.arange(4 * 6, dtype=np.int64).reshape(4, 6)
    monkeypatch.setattr(pipeline, "MATERIALISE_LIMIT_BYTES", 4 * 4 * 6 * 8 - 1)
    assert isinstance(all_gather(x).output, LazyOutput)
    monkeypatch.setattr(pipeline, "MATERIALISE_LIMIT_BYTES", 4 * 4 * 6 * 8)
    assert isinstance(all_gather(x).output, np.ndarray)


def test_lazy_check_catches_a_copied_chunk(monkeypatch):
    real_play = lifecycle.play

    def play_then_copy(*args, **kwargs):
        run = real_play(*args, **kwargs)
        run.buffers[2][(1, 0)] = run.buffers[2][(1, 0)].copy()  # same values, but not the owner's array
        return run

    monkeypatch.setattr(lifecycle, "play", play_then_copy)
    with pytest.raises(EngineError, match=r"all_gather: device 2 holds a chunk that is not its owner's array"):
        all_gather(np.arange(12).reshape(4, 3), output="lazy")


@pytest.fixture
def compiled_always(monkeypatch):
    """The compiled loop plays every schedule it can, however small."""
    import netsim.engine.compiled as compiled

    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 0)
    monkeypatch.setattr(lifecycle, "AUTO_PROCESSES_MAX_TRANSFERS", 0)


def test_compiled_gathers_end_in_the_loops_table_and_are_checked_there(compiled_always, monkeypatch):
    x = np.arange(8 * 6, dtype=np.int64).reshape(8, 6)
    right = all_gather(x, output="lazy", algorithm="bidirectional_ring")
    buffers = right.leaves[0].playback.buffers
    assert isinstance(buffers, TableBuffers) and right.verified
    processes = all_gather(x, output="lazy", algorithm="bidirectional_ring", engine="processes").leaves[0].playback
    assert [list(b) for b in buffers] == [list(b) for b in processes.buffers]
    np.testing.assert_array_equal(np.asarray(right.output), expected_all_gather(x, 0, False, None))
    real_play = lifecycle.play

    def play_then_swap(*args, **kwargs):  # device 2 ends with blocks 1 and 3 (first pieces) swapped: the same keys, the wrong chunks
        run = real_play(*args, **kwargs)
        table, n_keys = run.buffers.held, len(run.buffers.keys)
        a, b = (2 * n_keys + run.buffers.number[(block, 0)] for block in (1, 3))
        table[a], table[b] = table[b], table[a]
        return run

    monkeypatch.setattr(lifecycle, "play", play_then_swap)
    with pytest.raises(EngineError, match=r"^all_gather: device 2 holds a chunk that is not its owner's array; this is a netsim bug"):
        all_gather(x, output="lazy", algorithm="bidirectional_ring")


def test_lazy_check_catches_blocks_put_in_the_wrong_place(monkeypatch):
    right = AllGatherLayout.slot
    monkeypatch.setattr(AllGatherLayout, "slot", lambda self, row, block: right(self, row, (block + 1) % 4))
    with pytest.raises(EngineError, match=r"all_gather: device 0's simulated output differs from the NumPy reference in block 0"):
        all_gather(np.arange(24).reshape(4, 6), output="lazy")


@pytest.mark.parametrize("pieces_per_block", [1, 2])
def test_lazy_check_catches_a_wrong_sum(monkeypatch, pieces_per_block):
    # A sampled device's block is compared with the reference part that goes in its place, with no row written out.
    real_play = lifecycle.play

    def play_then_change(*args, **kwargs):
        run = real_play(*args, **kwargs)
        run.buffers[0][(0, pieces_per_block - 1)][-1] += 1
        return run

    monkeypatch.setattr(lifecycle, "play", play_then_change)
    x = np.arange(4 * 8, dtype=np.int64).reshape(4, 8)
    algorithm = "bidirectional_ring" if pieces_per_block == 2 else "ring"
    with pytest.raises(EngineError, match=r"psum_scatter: device 0's simulated output differs from the NumPy reference in block 0"):
        psum_scatter(x, tiled=True, algorithm=algorithm, output="lazy")


def test_bad_modes_are_value_errors():
    with pytest.raises(ValueError, match=r"^data must be one of 'values', 'none', got 'sizes'$"):
        all_gather(np.arange(4), data="sizes")
    with pytest.raises(ValueError, match=r"^output must be one of 'auto', 'full', 'lazy', got 'later'$"):
        psum(np.arange(4), output="later")
    with pytest.raises(ValueError, match=r"^cannot add chunks of 8 and 4 bytes$"):
        SizeOnly(8) + SizeOnly(4)


@pytest.mark.parametrize(
    ("shape", "make"),
    [
        ((6, 3, 5), lambda x: AllGatherLayout.check(x, 1, True, [[0, 2], [1, 3], [5, 4]])),
        ((6, 3, 12), lambda x: ReduceScatterLayout.check(x, 1, True, None)),
        ((3, 3, 5), lambda x: ReduceScatterLayout.check(x, 0, False, None)),
        ((6, 7, 5), lambda x: AllReduceLayout.check(x, None)),
        ((4, 3), lambda x: AllReduceLayout.check(x, [[0, 1, 2, 3]])),
    ],
)
def test_block_sizes_are_the_sizes_of_the_blocks(shape, make):
    x = np.zeros(shape)
    layout = make(x)
    assert layout.block_sizes(shape[0]) == [{b: a.size for b, a in held.items()} for held in layout.blocks(x)]


@pytest.mark.parametrize("n", [2, 4, 8])
def test_moving_chunks_never_copies_them(n):
    # Peak memory within 1.3 x (input + output): the chunks are views of the input, the
    # output is written once, and checking it takes the reference a block at a time (views
    # of the input), never a row (with 2 devices a row is as big as the whole input).
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        x = np.random.default_rng(0).integers(0, 255, (n, 16 * 2**20 // n), dtype=np.uint8)
        result = all_gather(x, output="full")
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert result.verified
    assert peak <= 1.3 * (x.nbytes + result.output.nbytes), peak / (x.nbytes + result.output.nbytes)
    assert all(result.leaves[0].playback.buffers[d][(0, 0)].base is x for d in range(n))  # views of the input, never copies


@pytest.mark.parametrize(("shape", "limit"), [((5,), 2), ((2, 6), 4), ((3, 2), 6), ((3, 4, 5), 7), ((3, 4, 5), 20), ((2, 3), 1), ((0, 4), 3), ((), 1)])
def test_bounded_slices_cut_an_array_into_views_in_order(shape, limit):
    a = np.arange(math.prod(shape)).reshape(shape)
    pieces = [a[index] for index in bounded_slices(shape, limit)]
    np.testing.assert_array_equal(np.concatenate([np.reshape(p, -1) for p in pieces]), a.reshape(-1))
    assert all(np.size(p) <= limit for p in pieces)
    assert all(np.shares_memory(p, a) for p in pieces if a.ndim and a.size)
    with pytest.raises(ValueError, match=r"^max_elements must be at least 1, got 0$"):
        next(bounded_slices(shape, 0))


@pytest.mark.parametrize("output", ["full", "lazy"])
def test_checking_an_output_never_builds_a_whole_reference_row(monkeypatch, output):
    # The check takes the reference a part at a time: views of the input for gathers, sums
    # of at most SLICE_ELEMENTS elements for reductions; never reference_rows.
    parts = []

    def no_rows(self, x):
        raise AssertionError(f"{type(self).__name__}.reference_rows built a whole row")

    for cls in (AllGatherLayout, ReduceScatterLayout, AllReduceLayout):
        monkeypatch.setattr(cls, "reference_rows", no_rows)

        def recording(self, x, devices=None, max_elements=SLICE_ELEMENTS, real=cls.reference_parts):
            for device, index, part in real(self, x, devices, max_elements):
                parts.append((type(self), part))
                yield device, index, part

        monkeypatch.setattr(cls, "reference_parts", recording)
    x = np.random.default_rng(5).integers(-100, 100, (4, 6 * SLICE_ELEMENTS), dtype=np.int8)  # rows of several slices
    for result in (all_gather(x, output=output), psum(x, output=output), psum_scatter(x, tiled=True, output=output)):
        assert result.verified
    gathered = [p for cls, p in parts if cls is AllGatherLayout]
    summed = [p for cls, p in parts if cls is not AllGatherLayout]
    assert gathered and all(np.shares_memory(p, x) for p in gathered)
    assert len(summed) > 2 * 6 and all(p.size <= SLICE_ELEMENTS for p in summed)


@pytest.mark.parametrize("output", ["full", "lazy"])
def test_strided_blocks_are_written_and_checked_a_slice_at_a_time(output):
    # Untiled along axis 1, each block is a strided view of the output row, longer than a
    # slice, and the two pieces of the bidirectional ring meet inside a slice.
    x = np.random.default_rng(6).integers(0, 100, (2, 3, SLICE_ELEMENTS + 5), dtype=np.int8)
    result = all_gather(x, axis=1, output=output)
    assert result.verified and result.leaves[0].schedule.pieces == 2
    np.testing.assert_array_equal(np.asarray(result.output), expected_all_gather(x, 1, False, None))


def test_the_tolerance_of_a_float_sum_is_set_by_its_whole_row():
    # The largest value comes in the row's last slice. An error in the first slice within
    # the tolerance it sets passes, as np.allclose over the whole row does; 20 times it does not.
    x = np.zeros((2, SLICE_ELEMENTS + 1), np.float32)
    x[:, -1] = 500.0
    layout = AllReduceLayout.check(x, None)
    expected = layout.reference(x)
    tolerance = 4 * np.finfo(np.float32).eps * 2
    for error, whole_row_matches in ((500 * tolerance, True), (20 * 1000 * tolerance, False)):
        output = expected.copy()
        output[1, 0] += error
        assert np.allclose(output[1], expected[1], rtol=tolerance, atol=tolerance * 1000.0) is whole_row_matches
        assert outputs.first_difference(layout, x, output, False, 2) == (None if whole_row_matches else 1)
