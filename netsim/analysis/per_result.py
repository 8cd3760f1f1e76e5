"""A reader of a :class:`~netsim.result.Result` computed once per result, as long as the result lives.

A result is frozen data: the statistics and the analysis of one result never
change, so a report that asks for them several times gets the first answer again
instead of computing it anew. Nothing is stored on the result itself.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["once_per_result"]

T = TypeVar("T")


def once_per_result(reader: Callable[..., T]) -> Callable[..., T]:
    """``reader(result)`` computed once for each result object and kept until that object is freed.

    Only a call with the result alone is kept: a call with more arguments (another
    topology, say) is computed each time. A result that cannot be referenced weakly
    is never kept.

    Examples
    --------
    >>> import numpy as np, netsim
    >>> calls = []
    >>> @once_per_result
    ... def duration(result):
    ...     calls.append(result.collective)
    ...     return result.time
    >>> r = netsim.psum(np.arange(8))
    >>> duration(r) == duration(r) == r.time, len(calls)
    (True, 1)
    """
    kept: dict[int, Any] = {}

    @functools.wraps(reader)
    def read(result: Any, *args: Any, **kwargs: Any) -> T:
        if args or any(value is not None for value in kwargs.values()):
            return reader(result, *args, **kwargs)
        key = id(result)
        if key in kept:
            return kept[key]
        value = reader(result)
        try:
            weakref.finalize(result, kept.pop, key, None)
        except TypeError:  # not weakly referenceable: nothing to tie the kept value to
            return value
        kept[key] = value
        return value

    return read
