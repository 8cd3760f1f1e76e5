"""A sweep's row for a program: the point's program run, in the numbers of :func:`netsim.analysis.program_stats.program_stats`.

A study whose base is a program file (it has ``ops``) sweeps program fields, e.g.
``params.B`` for the batch; each point's row holds its time, the busiest device's
compute, the communication in flight and the part of it that was exposed, the
chip's peak FLOP/s and the links' bandwidth (for the scaling book's
``peak_flops / W_ici`` crossover), whether values were verified, and the error
that stopped the point, if any.
"""

from __future__ import annotations

from typing import Any

from netsim.analysis.program_stats import program_stats
from netsim.analysis.why import nominal_link
from netsim.engine import EngineError
from netsim.programs.run import run_program
from netsim.scenario import ScenarioError

__all__ = ["PROGRAM_COLUMNS", "program_row"]

PROGRAM_COLUMNS = (
    "topology",
    "n_devices",
    "time_s",
    "compute_s",
    "communication_s",
    "exposed_communication_s",
    "peak_flops",
    "link_bandwidth_Bps",
    "verified",
    "error",
    "row_sha256",
)
"""The measured columns of a program study's results table, after ``point`` and the swept fields."""


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return " ".join(str(value).split())


def program_row(point: Any, internal: str = "internal error: ") -> dict[str, str]:
    """Run one program point and return its row as CSV cells (never raises for a bad point).

    Examples
    --------
    >>> from netsim.studies.files import load_study
    >>> study = load_study("scenarios/studies/batch_crossover.yaml")
    >>> row = program_row(study.points[0])
    >>> row["params.B"], row["error"], float(row["exposed_communication_s"]) > 0
    ('256', '', True)
    """
    row = {"point": str(point.index), **dict(point.labels)}
    try:
        result = run_program(point.program_file())
        stats = program_stats(result)
    except ScenarioError as error:
        return {**row, "error": _cell(f"{error.field}: {error.problem}" if error.field else error.problem)}
    except EngineError as error:
        return {**row, "error": _cell(internal + str(error))}
    except (ValueError, MemoryError) as error:
        return {**row, "error": _cell(str(error) or type(error).__name__)}
    except Exception as error:  # a bug: record it and go on with the other points
        return {**row, "error": _cell(f"{internal}{type(error).__name__}: {error}")}
    measured = {
        "topology": result.topology,
        "n_devices": result.n_devices,
        "time_s": stats.time_s,
        "compute_s": stats.compute_s,
        "communication_s": stats.communication_s,
        "exposed_communication_s": stats.exposed_communication_s,
        "peak_flops": stats.devices_compute["peak_flops"],
        "link_bandwidth_Bps": nominal_link(result.topology_obj)[1],
        "verified": result.verified,
        "error": "",
    }
    for name, value in measured.items():
        row.setdefault(name, _cell(value))
    return row
