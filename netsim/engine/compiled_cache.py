"""numba's on-disk cache of compiled functions, made safe: a bad cache is rebuilt, an unwritable one bypassed.

netsim's compiled loops (:mod:`netsim.engine.kernel`, :mod:`netsim.engine.sums`,
:mod:`netsim.checks.chunks_compiled`, ...) are cached by numba in ``*.nbi`` (index) and
``*.nbc`` (data) files, under the package's ``__pycache__`` or ``NUMBA_CACHE_DIR``.
numba itself lets any fault there end the run: a truncated or corrupted file raises
``UnpicklingError`` (or ``EOFError``, ...) on every call, and a cache folder that cannot
be written raises when a function is first compiled or even defined. Here, instead:

* a cache file that cannot be read back is removed, with one warning
  (:class:`CompiledCacheWarning`) naming it, and the function is compiled again and
  cached anew (the next run loads it silently);
* a cache that cannot be written (a read-only folder, a full disk) is bypassed, with
  one warning: the function is compiled in each run, as with no cache at all.

Modules use :func:`njit` from here exactly as numba's (``@njit(cache=True)``).
"""

from __future__ import annotations

import contextlib
import glob
import importlib
import os
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["CompiledCacheWarning", "njit"]


class CompiledCacheWarning(RuntimeWarning):
    """numba's cache of netsim's compiled functions was corrupt (rebuilt) or could not be written (bypassed)."""


_warned: set[str] = set()


def _warn(kind: str, message: str) -> None:
    """Warn once per process and kind (one line for a sweep's thousand calls)."""
    if kind not in _warned:
        _warned.add(kind)
        warnings.warn(message, CompiledCacheWarning, stacklevel=3)


def _safe_cache_class() -> type:
    """numba's ``FunctionCache``, with loading and saving that never end a run (built on first use: numba loads lazily)."""
    importlib.import_module("netsim.engine.jit")  # numba loaded without the SciPy it would import for nothing
    from numba.core.caching import FunctionCache

    class SafeFunctionCache(FunctionCache):  # type: ignore[misc, valid-type]
        """A ``FunctionCache`` whose unreadable files are removed (and rebuilt), and whose failed writes are skipped."""

        def _files(self) -> list[str]:
            base = os.path.join(self.cache_path, self._impl.filename_base)
            return [f"{base}.nbi", *glob.glob(glob.escape(base) + ".*.nbc")]

        def _drop(self, error: BaseException) -> None:
            for path in self._files():
                with contextlib.suppress(OSError):
                    os.unlink(path)
            shown = os.path.join(self.cache_path, self._impl.filename_base + ".nbi/.nbc")
            _warn(
                "corrupt",
                f"numba's cache of netsim's compiled code was unreadable ({type(error).__name__} reading {shown}); removed it and compiled again",
            )

        def load_overload(self, sig: Any, target_context: Any) -> Any:
            try:
                return super().load_overload(sig, target_context)
            except Exception as error:  # a corrupt, truncated or foreign cache file: any error of unpickling or rebuilding
                self._drop(error)
                return None

        def save_overload(self, sig: Any, data: Any) -> None:
            try:
                super().save_overload(sig, data)
            except OSError as error:
                _warn("unwritable", f"numba cannot write its cache of netsim's compiled code in {self.cache_path} ({error.strerror}); compiling in each run")
            except Exception as error:  # the index read before writing is corrupt: drop it, try once more
                self._drop(error)
                with contextlib.suppress(Exception):
                    super().save_overload(sig, data)

    return SafeFunctionCache


def njit(*args: Any, cache: bool = False, **options: Any) -> Any:
    """numba's ``njit``; with ``cache=True``, a cache that is rebuilt when corrupt and bypassed when unwritable.

    Used as numba's: ``@njit(cache=True)`` or ``njit(cache=True)(function)``.

    Examples
    --------
    >>> @njit(cache=False)
    ... def twice(x):
    ...     return 2 * x
    >>> twice(21)
    42
    """
    from netsim.engine.jit import njit as numba_njit  # numba without the SciPy it would import for nothing

    def decorate(function: Callable[..., Any]) -> Any:
        dispatcher = numba_njit(**options)(function)
        if cache:
            try:
                dispatcher._cache = _safe_cache_class()(dispatcher.py_func)  # what numba's enable_caching() sets
            except (OSError, RuntimeError) as error:  # no cache folder can be written: numba's "no locator available"
                _warn("unwritable", f"numba cannot cache netsim's compiled code ({error}); compiling in each run")
        return dispatcher

    if args:
        return decorate(*args)
    return decorate
