"""The compiled player's reductions, added in waves of rows, are bit for bit the sums added one at a time."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import netsim
import netsim.engine.compiled as compiled
from netsim.engine.final_buffers import FinalBuffers
from netsim.engine.row_buffers import RowBuffers
from netsim.engine.sums import reduced, summed
from netsim.network.topology import ring

DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.uint8, np.int32, np.int64, np.complex64]


def stacked(dtype, shape, seed=0):
    """Values that exercise the additions: integers over their whole range (sums wrap round), floats with NaN."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    values = rng.standard_normal(shape) * 100
    if np.dtype(dtype).kind == "c":
        values = values + 1j * rng.standard_normal(shape)
    x = values.astype(dtype)
    x.reshape(-1)[::97] = np.nan
    return x


def same_bits(a, b):
    return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def buffers_of(result):
    return result.leaves[0].playback.buffers


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("collective", ["psum_scatter", "psum"])
def test_reductions_in_waves_are_the_sums_added_one_at_a_time(monkeypatch, dtype, collective):
    x = stacked(dtype, (8, 96))
    run = lambda: getattr(netsim, collective)(x, topology=ring(8), engine="fast", **({"tiled": True} if collective == "psum_scatter" else {}))  # noqa: E731
    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 0)
    played_by = []
    real = compiled.compiled_player
    monkeypatch.setattr("netsim.engine.playing.compiled_player", lambda *a: played_by.append(real(*a)) or played_by[-1])
    waves = run()
    assert played_by[-1] is not None  # the compiled loop played it
    monkeypatch.setattr(compiled, "MIN_TRANSFERS", 10**9)
    one_by_one = run()
    assert played_by[-1] is None
    for mine, theirs in zip(buffers_of(waves), buffers_of(one_by_one), strict=True):
        assert list(mine) == list(theirs)
        assert all(same_bits(mine[key], theirs[key]) for key in mine)
    assert same_bits(waves.output, one_by_one.output)
    bases = {id(chunk.base) for buffer in buffers_of(waves) for chunk in buffer.values()}
    # the sums are rows of one array added in waves (the last of each chain), and of another (the others, added again when read)
    assert len(bases - {id(x)}) == (2 if collective == "psum_scatter" else 1)
    assert isinstance(buffers_of(waves), FinalBuffers)


def random_sums(seed, n_start=40, n_sums=300):
    """A random chain of reductions over ``n_start`` chunks, as the loop notes them: operands made before."""
    rng = np.random.default_rng(seed)
    sum_of, sum_with = np.zeros(n_sums, np.int64), np.zeros(n_sums, np.int64)
    for r in range(n_sums):
        sum_of[r], sum_with[r] = rng.integers(0, n_start + r, 2)
    return sum_of, sum_with, rng.random(n_sums) < 0.3


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("given", ["chunks", "rows"])
def test_reduced_keeps_the_order_and_operands_of_each_sum(dtype, given):
    x = stacked(dtype, (40, 6), seed=1)
    chunks = list(x)
    sum_of, sum_with, kept = random_sums(2)
    made = list(chunks)
    for a, b in zip(sum_of.tolist(), sum_with.tolist(), strict=True):
        made.append(made[a] + made[b])
    rows = (x, np.arange(40)) if given == "rows" else (None, None)
    sums, nbytes = reduced(chunks, sum_of, sum_with, kept, *rows)
    assert nbytes.tolist() == [6 * x.itemsize] * len(sum_of)
    for r, (got, keep) in enumerate(zip(sums, kept.tolist(), strict=True)):
        assert (got is None) == (not keep)
        assert got is None or same_bits(got, made[40 + r])
    assert len({id(s.base) for s in sums if s is not None}) == 1  # views of one array, of just the sums kept
    assert next(s for s in sums if s is not None).base.shape == (int(kept.sum()), 6)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("given", ["chunks", "rows"])
def test_summed_keeps_the_last_of_each_chain_and_adds_the_others_again_bit_for_bit(dtype, given):
    x = stacked(dtype, (40, 6), seed=3)
    chunks = list(x)
    sum_of, sum_with, _ = random_sums(4)
    made = list(chunks)
    for a, b in zip(sum_of.tolist(), sum_with.tolist(), strict=True):
        made.append(made[a] + made[b])
    sums = summed(chunks, sum_of, sum_with, *((x, np.arange(40)) if given == "rows" else (None, None)))
    assert len(sums) == len(sum_of) and sums.nbytes == 6 * x.itemsize
    added = np.zeros(len(sum_of), np.bool_)
    added[sum_of[sum_of >= 40] - 40] = added[sum_with[sum_with >= 40] - 40] = True
    last = np.flatnonzero(~added).tolist()
    assert sums._rest is None and all(same_bits(sums[r], made[40 + r]) for r in last)
    assert sums._rest is None  # the last sums of the chains are read without adding the others again
    assert len({id(sums[r].base) for r in last}) == 1
    assert all(same_bits(sums[r], made[40 + r]) for r in range(len(sum_of)))
    assert all(sums[r] is sums[r] for r in range(len(sum_of)))


def test_summed_leaves_chunks_of_several_shapes_to_reduced():
    chunks = [np.arange(3.0), np.arange(4.0), np.arange(3.0) * 2, np.arange(4.0) * 2]
    assert summed(chunks, np.array([0, 1]), np.array([2, 3])) is None


def test_chunks_of_several_shapes_are_added_one_at_a_time():
    chunks = [np.arange(3.0), np.arange(4.0), np.arange(3.0) * 2, np.arange(4.0) * 2]
    sums, nbytes = reduced(chunks, np.array([0, 1, 4]), np.array([2, 3, 0]), np.array([True, True, True]))
    assert [s.tolist() for s in sums] == [[0.0, 3.0, 6.0], [0.0, 3.0, 6.0, 9.0], [0.0, 4.0, 8.0]]
    assert nbytes.tolist() == [24, 32, 24]


def test_row_buffers_must_hold_a_row_per_key_on_every_device():
    with pytest.raises(ValueError, match=r"^rows has 5 rows, not a row per key \(2 keys\) for every device$"):
        RowBuffers(["a", "b"], np.zeros((5, 2)))


def test_row_buffers_make_each_dict_once_with_views_of_the_rows():
    x = np.arange(12.0).reshape(6, 2)
    buffers = RowBuffers(["a", "b"], x)
    assert [list(b) for b in buffers] == [["a", "b"]] * 3
    assert buffers[2] is buffers[-1] and buffers[1]["b"] is buffers.chunk(3) and np.shares_memory(buffers[1]["b"], x[3])
    assert [b["a"].tolist() for b in buffers[::2]] == [[0.0, 1.0], [8.0, 9.0]]
