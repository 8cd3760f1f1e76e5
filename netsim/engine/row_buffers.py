"""Devices' starting buffers whose chunks are the rows of one array, so a big run can read them all at once."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["RowBuffers"]


class RowBuffers(list):
    """Each device's starting chunks (a list of dicts, as :func:`netsim.engine.play` takes), which are,
    buffer after buffer and in each dict's order, the rows of the array ``rows``: the k-th chunk is
    ``rows[k]`` (a view of it, the same values, shape and dtype).

    Engines may read ``rows`` in place of the chunks one by one (the compiled player adds
    reductions in whole waves of rows). Whoever changes the dicts must drop ``rows``.

    Examples
    --------
    >>> x = np.arange(8).reshape(4, 2)
    >>> chunks = list(x)
    >>> buffers = RowBuffers([{"a": chunks[0], "b": chunks[1]}, {"a": chunks[2], "b": chunks[3]}], x)
    >>> len(buffers), buffers.rows.shape
    (2, (4, 2))
    """

    def __init__(self, buffers: Iterable[dict], rows: np.ndarray) -> None:
        super().__init__(buffers)
        if sum(map(len, self)) != len(rows):
            raise ValueError(f"the buffers hold {sum(map(len, self))} chunks but rows has {len(rows)}")
        self.rows = rows
