"""A sequence of devices' buffers, each made when it is first read and then kept."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

__all__ = ["MadeWhenRead"]


class MadeWhenRead(Sequence):
    """Devices' buffers made one at a time by :meth:`_make`, when first read, then kept.

    A subclass calls ``super().__init__(n_devices)`` and defines ``_make(device)``;
    reading ``buffers[d]`` twice gives the same object.

    Examples
    --------
    >>> class Squares(MadeWhenRead):
    ...     def _make(self, device):
    ...         return {"x": device * device}
    >>> buffers = Squares(3)
    >>> len(buffers), buffers[2], buffers[-1] is buffers[2], [b["x"] for b in buffers[:2]]
    (3, {'x': 4}, True, [0, 1])
    """

    def __init__(self, n_devices: int) -> None:
        self._made: list[Any] = [None] * n_devices

    def _make(self, device: int) -> Any:
        raise NotImplementedError

    def _buffer(self, device: int) -> Any:
        made = self._made[device]
        if made is None:
            made = self._made[device] = self._make(device)
        return made

    def __len__(self) -> int:
        return len(self._made)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self._buffer(d) for d in range(len(self))[index]]
        return self._buffer(range(len(self))[index])

    def __iter__(self) -> Iterator[Any]:
        return map(self._buffer, range(len(self)))
