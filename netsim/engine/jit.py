"""numba, as netsim's compiled loops import it: without the SciPy numba would import for nothing they use.

numba imports SciPy twice on its way in: ``import scipy`` to check its version when
numba is imported, and ``scipy.linalg.cython_blas`` when its array functions are first
registered (:mod:`numba.np.arraymath`), only to decide whether ``np.correlate`` and
``np.convolve`` in numba code may call BLAS. netsim's loops call neither, and the two
imports cost a fresh process about 0.25 s of its first compiled run. So, unless SciPy is
already imported, it is hidden while numba and its array functions load (``import scipy``
raises ImportError, which numba takes as "SciPy not installed"), then shown again:
a later ``import scipy`` works as ever, and ``np.dot`` in numba code still finds BLAS
when it is compiled (numba imports SciPy then); only ``np.correlate`` and ``np.convolve``
in numba code compiled later in the same process use numba's own loop instead of BLAS.

Every compiled loop imports numba's names from here, so that this module runs first.

Examples
--------
>>> import numpy as np
>>> from netsim.engine.jit import njit
>>> njit(lambda a: a.sum())(np.arange(4))
6
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

__all__ = ["Dict", "leading_zeros", "njit", "types"]


def _import_without_scipy() -> Any:
    """``numba``, imported (with its array functions) while SciPy looks absent, unless SciPy is already imported."""
    hidden = "scipy" not in sys.modules
    if hidden:
        sys.modules["scipy"] = None  # type: ignore[assignment]  # import scipy raises ImportError
    try:
        numba = importlib.import_module("numba")
        importlib.import_module("numba.np.arraymath")  # its BLAS check, done once, here
    finally:
        if hidden and "scipy" in sys.modules and sys.modules["scipy"] is None:
            del sys.modules["scipy"]
    return numba


_numba = _import_without_scipy()
njit = _numba.njit
types = _numba.types
Dict = importlib.import_module("numba.typed").Dict
leading_zeros = importlib.import_module("numba.cpython.unsafe.numbers").leading_zeros
"""The count of leading zero bits of an integer, as one machine instruction (for compiled code only)."""
