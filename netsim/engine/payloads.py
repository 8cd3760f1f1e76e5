"""What devices hold and send: chunks kept by reference, bundles made from parts, shared ints.

Both engines use these, so a device holds and sends exactly the same objects
whichever engine plays the run.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from netsim.algorithms.bundles import Bundle
from netsim.columnar import factorize
from netsim.engine.columns import ArrayList
from netsim.engine.playback import EngineError

__all__ = ["ABSENT", "add_into", "made", "shared", "shared_ints", "sizes", "take"]


ABSENT = object()


def made(buffer: dict, key: Hashable, bundles: Any, device: int, transfer: int, kept: dict) -> Any:
    """The bundle ``key``, made from the parts ``buffer`` holds (or makes in turn).

    What a device makes is kept in ``kept`` (by device and key), not in its buffer:
    it holds nothing new, and a bundle made again inside a bigger one is the same object.
    """
    bundle = kept.get((device, key))
    if bundle is not None:
        return bundle
    parts = bundles.get(key)
    if parts is None:
        raise EngineError(f"device {device} must send chunk {key!r} (transfer #{transfer}) but does not hold it")
    held = []
    for part in parts:
        chunk = buffer.get(part, ABSENT)
        held.append(made(buffer, part, bundles, device, transfer, kept) if chunk is ABSENT else chunk)
    bundle = kept[(device, key)] = Bundle(held)
    return bundle


def shared(values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """The values as a NumPy object array of Python objects, to index into lists that share them."""
    values = values.tolist() if isinstance(values, np.ndarray) else values
    out = np.empty(len(values), object)
    for k, value in enumerate(values):
        out[k] = value
    return out


def sizes(nbytes: array) -> ArrayList:
    """The sizes of the transfers as a list that keeps them as an array too."""
    values = np.frombuffer(nbytes, np.int64)
    values.flags.writeable = False
    return ArrayList(shared_ints(values), values)


def shared_ints(values: np.ndarray) -> list[int]:
    """``values.tolist()``, with one int object per distinct value (few sizes, millions of transfers)."""
    if not len(values):
        return []
    unique, inverse = factorize(values)
    return shared(unique)[inverse].tolist()


def take(buffer: dict, key: Hashable, chunk: Any, reduce: bool, device: int, bundles: Any = None) -> None:
    """Store an arriving chunk in a device's buffer, or add it into the chunk held under ``key`` (a bundle: into its parts, :func:`add_into`)."""
    if reduce:
        held = buffer.get(key, ABSENT)
        if held is ABSENT:
            add_into(buffer, key, chunk, bundles, device)
        else:
            buffer[key] = held + chunk
    else:
        buffer[key] = chunk


def add_into(buffer: dict, key: Hashable, chunk: Any, bundles: Any, device: int) -> None:
    """Add an arriving bundle into the parts the device holds, part by part (parts that are bundles: into theirs).

    The device keeps no copy of the bundle: the next one it sends under ``key`` is made
    again from the parts (:func:`made`), sums included.

    Examples
    --------
    >>> buffer = {"a": np.ones(2), "b": np.zeros(1)}
    >>> add_into(buffer, "ab", Bundle((np.ones(2), np.ones(1))), {"ab": ("a", "b")}, 0)
    >>> buffer["a"].tolist(), buffer["b"].tolist(), "ab" in buffer
    ([2.0, 2.0], [1.0], False)
    """
    parts = bundles.get(key) if bundles else None
    if parts is None or not isinstance(chunk, Bundle) or len(chunk.parts) != len(parts):
        raise EngineError(f"device {device} was sent chunk {key!r} to add into, but holds no such chunk")
    for part, value in zip(parts, chunk.parts, strict=True):
        held = buffer.get(part, ABSENT)
        if held is ABSENT:
            add_into(buffer, part, value, bundles, device)
        else:
            buffer[part] = held + value


def computed(buffer: dict, step: Any, device: int, index: int) -> None:
    """Store what compute step ``index`` (``step``) made from the chunks ``buffer`` holds, if it makes anything."""
    if step.fn is None or step.output is None:
        return
    try:
        inputs = [buffer[key] for key in step.inputs]
    except KeyError as missing:
        raise EngineError(f"device {device} must compute step #{index} from chunk {missing.args[0]!r}, but does not hold it") from None
    buffer[step.output] = step.fn(*inputs)
