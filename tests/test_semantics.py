"""The reference a part at a time (``reference_parts``): the same answer as whole rows, each element once."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import expected_all_gather, expected_all_to_all, expected_ppermute, expected_psum, expected_psum_scatter

from netsim.semantics.all_to_all import AllToAllLayout
from netsim.semantics.gather import AllGatherLayout
from netsim.semantics.permute import PermuteLayout
from netsim.semantics.reduce import AllReduceLayout, ReduceScatterLayout

GROUPS = [[0, 2], [1, 3], [5, 4]]
CASES = {
    "gather axis 0": ((6, 3, 5), lambda x: AllGatherLayout.check(x, 0, False, GROUPS), lambda x: expected_all_gather(x, 0, False, GROUPS)),
    "gather axis 2": ((6, 3, 5), lambda x: AllGatherLayout.check(x, 2, False, GROUPS), lambda x: expected_all_gather(x, 2, False, GROUPS)),
    "gather tiled axis 1": ((6, 3, 5), lambda x: AllGatherLayout.check(x, 1, True, None), lambda x: expected_all_gather(x, 1, True, None)),
    "gather scalars": ((4,), lambda x: AllGatherLayout.check(x, 0, False, None), lambda x: expected_all_gather(x, 0, False, None)),
    "reduce_scatter tiled": ((6, 3, 12), lambda x: ReduceScatterLayout.check(x, 1, True, GROUPS), lambda x: expected_psum_scatter(x, 1, True, GROUPS)),
    "reduce_scatter untiled": ((4, 5, 4), lambda x: ReduceScatterLayout.check(x, 1, False, None), lambda x: expected_psum_scatter(x, 1, False, None)),
    "all_reduce": ((6, 7, 5), lambda x: AllReduceLayout.check(x, GROUPS), lambda x: expected_psum(x, GROUPS)),
    "all_reduce scalars": ((4,), lambda x: AllReduceLayout.check(x, [[0, 1], [3, 2]]), lambda x: expected_psum(x, [[0, 1], [3, 2]])),
    "all_to_all": ((4, 4, 6), lambda x: AllToAllLayout.check(x, 0, 1, False, None), lambda x: expected_all_to_all(x, 0, 1, False, None)),
    "permute": ((4, 3), lambda x: PermuteLayout.check(x, [(0, 1), (2, 3)]), lambda x: expected_ppermute(x, [(0, 1), (2, 3)])),
}


def make(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    if dtype == "int32":
        return rng.integers(-1000, 1000, shape, dtype=np.int32)
    return rng.standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("max_elements", [1, 4, 7, 10**6])
@pytest.mark.parametrize("dtype", ["int32", "float32"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_parts_cover_each_row_once_and_give_the_reference(case, dtype, max_elements):
    shape, layout_of, expected_of = CASES[case]
    x = make(shape, dtype)
    layout = layout_of(x)
    n = x.shape[0]
    out = np.zeros((n, *layout.output_shape), x.dtype)
    seen = np.zeros(out.shape, np.int64)
    order = []
    for device, index, part in layout.reference_parts(x, max_elements=max_elements):
        assert part.dtype == x.dtype
        out[device, ...][index] = part
        seen[device, ...][index] += 1
        if device not in order:
            order.append(device)
        if isinstance(layout, AllGatherLayout):
            assert np.shares_memory(part, x)  # the input itself, never a copy
        if isinstance(layout, (ReduceScatterLayout, AllReduceLayout)):
            assert np.size(part) <= max_elements
    assert (seen == 1).all()
    assert order == [device for device, _ in layout.reference_rows(x)]
    np.testing.assert_array_equal(out, layout.reference(x))  # bit for bit: sums added in the same order
    if dtype == "int32":
        np.testing.assert_array_equal(out, expected_of(x))
    else:
        np.testing.assert_allclose(out, expected_of(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", sorted(CASES))
def test_parts_for_some_devices_are_theirs_among_all(case):
    shape, layout_of, _ = CASES[case]
    x = make(shape, "int32")
    layout = layout_of(x)
    chosen = {1, 2}
    every = [(d, index, part) for d, index, part in layout.reference_parts(x, max_elements=4) if d in chosen]
    some = list(layout.reference_parts(x, devices=chosen, max_elements=4))
    assert [(d, index) for d, index, _ in some] == [(d, index) for d, index, _ in every]
    assert all(np.array_equal(a, b) for (_, _, a), (_, _, b) in zip(some, every, strict=True))
