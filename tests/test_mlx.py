"""netsim.mlx: MLX's all_gather (concatenate on the first axis) and all_sum, with the same timings."""

from __future__ import annotations

import numpy as np
import pytest

import netsim


@pytest.mark.parametrize("shape", [(3,), (2, 3), (1, 2, 2)])
@pytest.mark.parametrize("n", [2, 5, 8])
def test_all_gather_concatenates_on_the_first_axis(n, shape):
    x = np.random.default_rng(n).integers(-50, 50, size=(n, *shape), dtype=np.int32)
    result = netsim.mlx.all_gather(x)
    everyone = np.concatenate(list(x), axis=0)  # what every process gets in MLX
    assert result.output.shape == (n, n * shape[0], *shape[1:])
    for row in result.output:
        np.testing.assert_array_equal(row, everyone)
    assert result.time == netsim.all_gather(x, axis=0, tiled=True).time


def test_all_gather_of_scalars_gives_a_vector():
    x = np.array([1.5, 2.5, 3.5, 4.5], np.float32)
    result = netsim.mlx.all_gather(x)
    assert result.output.shape == (4, 4)
    np.testing.assert_array_equal(result.output, np.tile(x, (4, 1)))


@pytest.mark.parametrize("shape", [(), (5,), (2, 3)])
def test_all_sum_is_a_psum(shape):
    x = np.random.default_rng(1).integers(-50, 50, size=(6, *shape), dtype=np.int32)
    result = netsim.mlx.all_sum(x, algorithm="ring")
    np.testing.assert_array_equal(result.output, np.broadcast_to(x.sum(axis=0), x.shape))
    assert result.collective == "all_sum" and result.busbw == pytest.approx(result.algbw * 2 * 5 / 6)
    assert result.time == netsim.psum(x, algorithm="ring").time


def test_reachable_from_the_package_and_checks_arguments():
    assert netsim.mlx.all_gather is not None and "all_sum" in netsim.mlx.__all__
    with pytest.raises(ValueError, match=r"^input has 4 devices on its leading axis but topology ring8 has 8$"):
        netsim.mlx.all_sum(np.zeros(4), topology="ring8")
