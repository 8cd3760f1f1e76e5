"""What an HLO module's run did, collective by collective: the ``collectives`` list, bytes per mesh axis.

Reads a :func:`~netsim.programs.hlo.run.run_hlo` result and the program numbers
(:func:`~netsim.analysis.program_stats.program_stats`); never simulates.

Per collective instruction (all the executions of one ``hlo_name``, loops unrolled):
its HLO op, one device's operand ``shape`` and ``dtype`` (a list of them for a tuple
or combined form), ``bytes`` per device, ``group_size``, the first ``groups`` (module
device ids; source-target pairs for a permute), ``count``, the simulated ``time_s`` of
all executions together (each from its first send to its last arrival on any device:
what the collective takes as a scenario when nothing else runs) and their closed form
``estimate_s`` (None where there is none) with its ``estimate_kind`` (``exact``,
``lower_bound``, ``upper_bound``, ``none``) and the first execution's one-line ``why``
(:mod:`netsim.analysis.op_estimates`), netsim's ``algorithm`` and the TPU compiler's
(``compiler_algorithm``, None when the module does not say).

Bytes per mesh axis: for each collective whose groups are the devices along some mesh
axes, the bytes the busiest device receives over the links, summed over executions;
``jax.experimental.roofline``'s per-axis ICI bytes count the same thing for one-axis
all_gather, psum_scatter, psum and ppermute (each device receives ``(n - 1)`` blocks).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from netsim.analysis.program_stats import ProgramStats, program_stats
from netsim.semantics.program_values import itemsize

__all__ = ["COMPUTE_UNKNOWN", "FIRST_GROUPS", "axis_bytes", "collectives", "hlo_summary", "received_bytes"]

FIRST_GROUPS = 4
"""How many groups (or pairs) each collective lists."""

COMPUTE_UNKNOWN = "compute unknown"
"""How a compute step's record starts when the roofline cannot time it (the chip has no figures and no clock
is given): it takes no time and the communication is simulated all the same."""


def _run(result: Any) -> Any:
    run = result.program
    if run is None or getattr(run, "hlo", None) is None:
        raise ValueError("not an HLO module's result: run one with netsim.programs.hlo.run.run_hlo or netsim.from_jax")
    return run


def received_bytes(lowered: Any, index: int) -> np.ndarray:
    """Per device, the bytes the transfers of op ``index`` of ``lowered`` deliver to it.

    Examples
    --------
    >>> from netsim.programs.hlo.run import run_hlo
    >>> run = run_hlo("scenarios/programs/hlo/psum.txt", "tpu-v5e:2x4").program
    >>> received_bytes(run.lowered, 0).tolist() == [512 * 256 * 4] * 8
    True
    """
    op = lowered.ops[index]
    n = lowered.mesh.topology.n_devices
    out = np.zeros(n, np.int64)
    if not len(op.transfers):
        return out
    size = itemsize(lowered.arrays[op.op.inputs[0]].dtype)
    pieces: dict[tuple[int, int], int] = {}
    for blocks in op.layout.block_sizes(n):
        for block, elements in blocks.items():
            small, big = divmod(elements, op.pieces)
            for p in range(op.pieces):
                pieces[(block + op.block_offset, p)] = small + (p < big)
    table = lowered.schedule.transfers
    bundles = table.bundles or {}

    def elements_of(key: tuple[int, int]) -> int:
        """A piece's elements, or a bundle's (one message per ring step): its parts' (bundles in bundles included)."""
        found = pieces.get(key)
        if found is None:
            found = pieces[key] = sum(elements_of(part) for part in bundles[key])
        return found

    span = slice(op.transfers.start, op.transfers.stop)
    block, piece = (np.asarray(column[span], np.int64) for column in (table.block, table.piece))
    width = max(op.pieces, int(piece.max()) + 1)
    keys, which = np.unique(block * width + piece, return_inverse=True)  # (a few keys, each sent many times)
    elements = np.array([elements_of((int(k) // width, int(k) % width)) for k in keys], np.int64)
    nbytes = elements[which.reshape(-1)] * size
    np.add.at(out, table.dst[span].astype(np.int64), nbytes)
    return out


def axis_bytes(result: Any) -> dict[str, int]:
    """Per set of mesh axes (``"y"``, ``"x,y"``), the bytes the busiest device receives over the links for collectives over them.

    Examples
    --------
    >>> from netsim.programs.hlo.run import run_hlo
    >>> axis_bytes(run_hlo("scenarios/programs/hlo/all_gather.txt", "tpu-v5e:2x4"))
    {'y': 1572864}
    """
    run = _run(result)
    lowered = run.hlo.lowered
    totals: dict[str, int] = {}
    for record in run.hlo.records:
        if record.axes and len(lowered.ops[record.index].transfers):
            key = ",".join(record.axes)
            totals[key] = totals.get(key, 0) + int(received_bytes(lowered, record.index).max())
    return totals


def _shape(operands: tuple) -> tuple[Any, Any]:
    if len(operands) == 1:
        return list(operands[0].dims), operands[0].dtype
    return [list(a.dims) for a in operands], [a.dtype for a in operands]


def collectives(result: Any, stats: ProgramStats | None = None) -> list[dict[str, Any]]:
    """The module's collective instructions, each with all its executions, the slowest first.

    Examples
    --------
    >>> from netsim.programs.hlo.run import run_hlo
    >>> (c,) = collectives(run_hlo("scenarios/programs/hlo/psum.txt", "tpu-v5e:2x4"))
    >>> c["hlo_name"], c["op"], c["shape"], c["dtype"], c["bytes"], c["group_size"], c["groups"][:2], c["count"]
    ('psum.7', 'all-reduce', [512, 256], 'f32', 524288, 2, [[0, 4], [1, 5]], 1)
    """
    run = _run(result)
    stats = stats or program_stats(result)
    by_name: dict[str, dict[str, Any]] = {}
    lowered = run.hlo.lowered
    for record in run.hlo.records:
        collective = record.step.op
        if not hasattr(collective, "groups"):
            continue
        op_stats = stats.ops[record.index]
        entry = by_name.get(collective.name)
        if entry is None:
            shape, dtype = _shape(collective.operands)
            groups = [list(p) for p in collective.pairs] if collective.op == "collective-permute" else collective.groups
            entry = by_name[collective.name] = {
                "hlo_name": collective.name,
                "op": collective.op,
                "shape": shape,
                "dtype": dtype,
                "bytes": collective.nbytes,
                "group_size": collective.group_size,
                "groups": groups[:FIRST_GROUPS],
                "count": 0,
                "time_s": 0.0,
                "estimate_s": 0.0,
                "algorithm": lowered.ops[record.index].algorithm,
                "compiler_algorithm": collective.compiler_algorithm,
                "played_with": _played_with(getattr(run, "algorithm", "netsim"), collective.compiler_algorithm, record.note),
                "other_time_s": (getattr(run, "other_times", None) or {}).get(collective.name),
                "axes": list(record.axes),
                "asynchronous": collective.asynchronous,
                "line": collective.line,
                "note": record.note,
                "estimate_kind": op_stats.estimate_kind,
                "why": op_stats.why,
            }
        entry["count"] += 1
        entry["time_s"] += op_stats.last_end_s - op_stats.first_start_s
        entry["estimate_s"] = None if entry["estimate_s"] is None or op_stats.estimate_s is None else entry["estimate_s"] + op_stats.estimate_s
    return sorted(by_name.values(), key=lambda e: (-e["time_s"], e["line"]))


def hlo_summary(result: Any, stats: ProgramStats | None = None) -> dict[str, Any]:
    """The program totals, the module's ``collectives``, and under ``hlo`` its file, placement, what is not modelled and bytes per axis.

    This is what ``netsim program --hlo MODULE --json`` prints.

    Examples
    --------
    >>> from netsim.programs.hlo.run import run_hlo
    >>> summary = hlo_summary(run_hlo("scenarios/programs/hlo/psum.txt", "tpu-v5e:2x4"))
    >>> summary["hlo"]["devices"], summary["hlo"]["axis_bytes"], [c["hlo_name"] for c in summary["collectives"]]
    (8, {'x': 524288}, ['psum.7'])
    """
    run = _run(result)
    stats = stats or program_stats(result)
    device_map = run.device_map
    placement = (
        "row-major over the slice: device id i runs on chip i (no device map with coordinates beside the module)"
        if device_map.row_major
        else f"from {device_map.source}"
    )
    return {
        **stats.to_dict(),
        "collectives": collectives(result, stats),
        "hlo": {
            "file": run.source,
            "module": run.module.module,
            "devices": run.module.devices,
            "placement": placement,
            "compiler": getattr(run, "compiler", ""),
            "dtypes": getattr(run, "dtypes", "as compiled"),
            "sync_collectives": getattr(run, "sync_collectives", "in_order"),
            "groups_matched_against": run.hlo.mesh_source,
            "clock_hz": run.clock_hz,
            "algorithms": getattr(run, "algorithm", "netsim"),
            "compute_unknown": sum(record.note.startswith(COMPUTE_UNKNOWN) for record in run.hlo.records),
            "unmodelled": [{"hlo_name": u.name, "op": u.opcode, "line": u.line, "reason": u.reason} for u in run.module.unmodelled],
            "axis_bytes": axis_bytes(result),
            "roofline_ici_bytes": getattr(run, "roofline_ici_bytes", None),
            "loops_extended": run.extension.to_dict() if getattr(run, "extension", None) is not None else None,
        },
    }


def _played_with(mode: str, compiler_algorithm: str | None, note: str | None) -> str:
    """Whose algorithm played a collective: ``compiler`` only where the run asked for the compiler's and it was understood, else ``netsim``.

    Examples
    --------
    >>> _played_with("compiler", '{"strategy":"X"}', "X: not understood; netsim plays its own algorithm"), _played_with("compiler", None, "")
    ('netsim', 'netsim')
    """
    if mode != "compiler" or not compiler_algorithm or any(said in (note or "") for said in ("netsim plays its own", "netsim's own algorithm")):
        return "netsim"
    return "compiler"
