"""NumPy helpers for big columns give what NumPy's own functions give."""

from __future__ import annotations

import numpy as np
import pytest

from netsim.columnar import factorize, searchsorted_many, stable_order


@pytest.mark.parametrize("high", [10, 10**5, 10**9, 2**50])  # a table over the range, the packed sort, np.unique
@pytest.mark.parametrize("n", [1, 1000, 200_000])
def test_factorize_is_unique_with_its_inverse(n, high):
    codes = np.random.default_rng(n + high).integers(0, high, n)
    unique, inverse = factorize(codes)
    expected_unique, expected_inverse = np.unique(codes, return_inverse=True)
    assert np.array_equal(unique, expected_unique) and np.array_equal(inverse, expected_inverse.reshape(-1))


@pytest.mark.parametrize("n", [10, 100_000])
def test_searchsorted_many_and_stable_order_are_numpys(n):
    rng = np.random.default_rng(n)
    values = np.sort(rng.integers(0, 10 * n, n))
    queries = rng.integers(0, 11 * n, n)
    assert np.array_equal(searchsorted_many(values, queries), np.searchsorted(values, queries))
    assert np.array_equal(stable_order(queries), np.argsort(queries, kind="stable"))
