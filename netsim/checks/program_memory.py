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

__all__ = ["SHOWN_ITEMS", "device_memory", "fit_note", "memory_fit", "module_fit", "peak_line"]

SHOWN_ITEMS = 5
"""How many of the arrays (or buffers) that make the peak a report's line names; ``--json`` lists them all."""


def fit_note(peak_bytes: int, capacity_bytes: int | None) -> str:
    """One line on whether ``peak_bytes`` fit in ``capacity_bytes``, in GiB (2**30 bytes), as HBM comes and as the TPU compiler counts it.

    Examples
    --------
    >>> fit_note(34_400_000_000, 16 * 2**30)
    'does not fit: 32 GiB on a 16 GiB chip'
    >>> fit_note(2**30, 16 * 2**30), fit_note(2**30, None)
    ('fits: 1 GiB on a 16 GiB chip', 'unknown: 1 GiB, the chip gives no HBM capacity')
    """
    peak = f"{peak_bytes / 2**30:.3g} GiB"
    if capacity_bytes is None:
        return f"unknown: {peak}, the chip gives no HBM capacity"
    verdict = "fits" if peak_bytes <= capacity_bytes else "does not fit"
    return f"{verdict}: {peak} on a {capacity_bytes / 2**30:.3g} GiB chip"


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
        ``capacity_bytes``, ``fits`` (None when the capacity is unknown), ``note``
        (:func:`fit_note`) and ``items``: the arrays held at the peak, the largest first
        (each ``name``, ``bytes`` and ``kind``: ``input`` of the program, or ``array``).

    Examples
    --------
    >>> from netsim.programs.model import Op, Program, Sharded
    >>> a = Sharded((4096, 4096), "float32", (("X",), ()))
    >>> p = Program("p", {"X": 4}, {"A": a}, (Op.of("g", "all_gather", ("A",), "B", axes=("X",), tiled=True),))
    >>> m = device_memory(p, p.arrays_after(), {"X": 4}, 16 * 10**9)
    >>> m["peak_bytes"] == 4096 * 1024 * 4 + 4096 * 4096 * 4, m["peak_at"], m["fits"]
    (True, 'g', True)
    >>> [(i["name"], i["bytes"], i["kind"]) for i in m["items"]]
    [('B', 67108864, 'array'), ('A', 16777216, 'input')]
    """
    size = {name: math.prod(array.local_shape(mesh)) * itemsize(array.dtype) for name, array in arrays.items()}
    last_read = {name: i for i, op in enumerate(program.ops) for name in op.inputs}
    alive = dict.fromkeys(program.arrays)
    held = sum(size[name] for name in program.arrays)
    peak, peak_at, at_peak = held, "start", list(alive)
    for i, op in enumerate(program.ops):
        if op.output is not None and op.output not in program.arrays:
            held += size[op.output]
            alive[op.output] = None
        if held > peak:
            peak, peak_at, at_peak = held, op.name, list(alive)
        for name in dict.fromkeys(op.inputs):  # freed after their last reader (inputs of the program are kept)
            if last_read.get(name) == i and name not in program.arrays:
                held -= size[name]
                alive.pop(name, None)
    items = sorted(({"name": n, "bytes": int(size[n]), "kind": "input" if n in program.arrays else "array"} for n in at_peak), key=lambda i: -i["bytes"])
    return memory_fit(int(peak), peak_at, capacity_bytes, items)


def memory_fit(peak_bytes: int, peak_at: str, capacity_bytes: int | None, items: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    """The memory entry of a program's numbers: the peak, where, against the capacity, and what makes it (``more``: other keys).

    Examples
    --------
    >>> m = memory_fit(20 * 2**30, "p", 16 * 2**30, [{"name": "p", "bytes": 20 * 2**30, "kind": "parameter"}])
    >>> m["fits"], m["note"]
    (False, 'does not fit: 20 GiB on a 16 GiB chip')
    """
    fits = None if capacity_bytes is None else peak_bytes <= capacity_bytes
    return {
        "peak_bytes": int(peak_bytes),
        "peak_at": peak_at,
        "capacity_bytes": capacity_bytes,
        "fits": fits,
        "note": fit_note(int(peak_bytes), capacity_bytes),
        **more,
        "items": items,
    }


def module_fit(memory: Any, capacity_bytes: int | None) -> dict[str, Any]:
    """The memory entry of an HLO module's run, from its liveness pass (:class:`netsim.programs.hlo.memory.ModuleMemory`).

    Besides :func:`memory_fit`'s keys: ``parameter_bytes``, ``output_bytes`` (all the outputs),
    ``temporary_bytes`` (live at the peak), ``live_bytes`` (the most bytes live at once;
    ``peak_bytes`` adds the gaps of the compiler's heap) and ``order`` (``scheduled``: the
    compiler's schedule; ``written``: the order of the text).
    """
    items = [{"name": n, "bytes": b, "kind": k} for n, b, k in memory.items]
    parts = {
        "parameter_bytes": memory.parameter_bytes,
        "output_bytes": memory.output_bytes,
        "temporary_bytes": memory.temporary_bytes,
        "live_bytes": memory.live_bytes,
        "order": memory.order,
    }
    return memory_fit(memory.peak_bytes, memory.peak_at, capacity_bytes, items, **parts)


def peak_line(memory: Mapping[str, Any], shown: int = SHOWN_ITEMS) -> str:
    """The memory entry in one line: the verdict, where the peak is, and the largest arrays that make it.

    Examples
    --------
    >>> m = memory_fit(3 * 2**20, "f", 16 * 2**30, [{"name": n, "bytes": 2**20, "kind": "temporary"} for n in "abc"])
    >>> peak_line(m, shown=2)
    'fits: 0.00293 GiB on a 16 GiB chip (peak at f): a 1 MiB temporary, b 1 MiB temporary, and 1 more'
    """
    items = memory.get("items", [])
    named = ", ".join(f"{i['name']} {_size(i['bytes'])} {i['kind']}" for i in items[:shown])
    more = f", and {len(items) - shown} more" if len(items) > shown else ""
    return f"{memory['note']} (peak at {memory['peak_at']})" + (f": {named}{more}" if named else "")


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"
