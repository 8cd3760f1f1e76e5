"""Whether a program's arrays fit in a chip's HBM: the peak bytes one device holds at once.

A device holds its shard of every array the program starts with for the whole run (its
caller keeps them), and of every array an op writes from that op until the last op
that reads it (as XLA frees a buffer after its last use); an array no op reads is an
output, kept to the end. The peak is the largest sum over the ops, each op's inputs
and output alive together. Every device holds shards of the same shapes, so the peak
is the same on every device.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from netsim.semantics.program_values import itemsize

__all__ = ["device_memory", "fit_note"]


def fit_note(peak_bytes: int, capacity_bytes: int | None) -> str:
    """One line on whether ``peak_bytes`` fit in ``capacity_bytes``, in GB (10**9 bytes) as chips are sold.

    Examples
    --------
    >>> fit_note(34_400_000_000, 16 * 10**9)
    'does not fit: 34.4 GB on a 16 GB chip'
    >>> fit_note(2**30, 16 * 10**9), fit_note(2**30, None)
    ('fits: 1.07 GB on a 16 GB chip', 'unknown: 1.07 GB, the chip gives no HBM capacity')
    """
    peak = f"{peak_bytes / 1e9:.3g} GB"
    if capacity_bytes is None:
        return f"unknown: {peak}, the chip gives no HBM capacity"
    verdict = "fits" if peak_bytes <= capacity_bytes else "does not fit"
    return f"{verdict}: {peak} on a {capacity_bytes / 1e9:.3g} GB chip"


def device_memory(program: Any, arrays: Mapping[str, Any], mesh: Mapping[str, int], capacity_bytes: int | None) -> dict[str, Any]:
    """The peak HBM bytes of one device over a program, against its chip's capacity.

    Parameters
    ----------
    program : Program
        Its ``arrays`` (the inputs) and ``ops`` (each with ``inputs`` and ``output``).
    arrays : mapping
        Every array of the program by name (``Program.arrays_after()``), each with
        ``local_shape(mesh)`` and ``dtype``.
    mesh : mapping of str to int
        The mesh's axis sizes.
    capacity_bytes : int or None
        One device's HBM capacity (None: unknown).

    Returns
    -------
    dict
        ``peak_bytes``, ``peak_at`` (the op at the peak, or ``"start"``),
        ``capacity_bytes``, ``fits`` (None when the capacity is unknown) and ``note``
        (:func:`fit_note`).

    Examples
    --------
    >>> from netsim.programs.model import Op, Program, Sharded
    >>> a = Sharded((4096, 4096), "float32", (("X",), ()))
    >>> p = Program("p", {"X": 4}, {"A": a}, (Op.of("g", "all_gather", ("A",), "B", axes=("X",), tiled=True),))
    >>> m = device_memory(p, p.arrays_after(), {"X": 4}, 16 * 10**9)
    >>> m["peak_bytes"] == 4096 * 1024 * 4 + 4096 * 4096 * 4, m["peak_at"], m["fits"]
    (True, 'g', True)
    """
    size = {name: math.prod(array.local_shape(mesh)) * itemsize(array.dtype) for name, array in arrays.items()}
    last_read = {name: i for i, op in enumerate(program.ops) for name in op.inputs}
    held = sum(size[name] for name in program.arrays)
    peak, peak_at = held, "start"
    for i, op in enumerate(program.ops):
        if op.output is not None and op.output not in program.arrays:
            held += size[op.output]
        if held > peak:
            peak, peak_at = held, op.name
        for name in dict.fromkeys(op.inputs):  # freed after their last reader (inputs of the program are kept)
            if last_read.get(name) == i and name not in program.arrays:
                held -= size[name]
    fits = None if capacity_bytes is None else peak <= capacity_bytes
    return {"peak_bytes": int(peak), "peak_at": peak_at, "capacity_bytes": capacity_bytes, "fits": fits, "note": fit_note(int(peak), capacity_bytes)}
