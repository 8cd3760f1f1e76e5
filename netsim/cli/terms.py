"""Text about a run's terms: the closed form's split into its terms, and the calibration a run used."""

from __future__ import annotations

from typing import Any

from netsim.network.calibration import in_force, mode_of
from netsim.network.units import format_seconds

__all__ = ["calibration_record", "calibration_rows", "estimate_terms", "launch_rows", "shape_calibration_record", "shape_calibration_rows"]


def estimate_terms(e: Any) -> str:
    """An estimate's time and its terms: the fixed cost per collective first, when a calibrated run has one.

    Examples
    --------
    >>> from netsim.analysis.closed_forms import Estimate
    >>> estimate_terms(Estimate("f", "-", 3e-6, 4e-6, 17e-6, 1.0, 1.0, fixed_s=10e-6))
    '17 us = fixed cost 10 us + latency 3 us + bandwidth 4 us'
    """
    fixed = f"fixed cost {format_seconds(e.fixed_s)} + " if e.fixed_s else ""
    return f"{format_seconds(e.time_s)} = {fixed}latency {format_seconds(e.latency_s)} + bandwidth {format_seconds(e.bandwidth_s)}"


def calibration_rows(topology: Any) -> list[tuple[str, str]]:
    """A row saying which measured terms a calibrated run used (none for a nominal run: the ideal model).

    Examples
    --------
    >>> from netsim.network.calibration import calibrate
    >>> from netsim.network.presets import tpu_slice
    >>> calibration_rows(tpu_slice("tpu-v5e:8x4")), calibration_rows(calibrate(tpu_slice("tpu-v5e:8x4")))[0][1][:70]
    ([], 'calibrated (measured): links at 0.95 of their bandwidth, a fixed cost ')
    >>> calibration_rows(calibrate(tpu_slice("tpu-v6e:4x4")))[0][1][:52]
    'calibrated (borrowed from tpu-v5e): links at 0.95 of'
    """
    terms = in_force(topology) if topology is not None else None
    if terms is None or (terms.is_nominal and mode_of(topology) == "nominal"):
        return []
    if terms.is_nominal:  # asked for, but nothing measured is known for these chips
        return [("calibration", f"calibrated, but {topology.name} offers no measured terms: the ideal model (docs/validation.md)")]
    parts = [f"links at {terms.link_efficiency:.4g} of their bandwidth", f"a fixed cost of {format_seconds(terms.collective_overhead_s)} per collective"]
    if terms.compute_efficiency != 1:
        parts.append(f"compute at {terms.compute_efficiency:.3g} of peak")
    return [("calibration", f"calibrated ({terms.label}): {', '.join(parts)} (docs/validation.md; {terms.source})")]


def shape_calibration_rows(shape: Any) -> list[tuple[str, str]]:
    """``netsim estimate``'s calibration row, from the scenario's topology shape (none when its terms change nothing)."""
    if (shape.link_efficiency, shape.collective_overhead_s) == (1.0, 0.0):
        return []
    terms = f"links at {shape.link_efficiency:.4g} of their bandwidth, a fixed cost of {format_seconds(shape.collective_overhead_s)}"
    return [("calibration", f"calibrated ({shape.calibration_terms}): {terms}")]


def shape_calibration_record(shape: Any, mode: str) -> dict[str, Any]:
    """``netsim estimate --json``'s ``calibration``: the mode, whose terms (measured, borrowed from ..., none) and the terms."""
    return {
        "mode": mode,
        "terms": shape.calibration_terms,
        "link_efficiency": shape.link_efficiency,
        "collective_overhead_s": shape.collective_overhead_s,
        "compute_efficiency": shape.compute_efficiency,
    }


def calibration_record(topology: Any) -> dict[str, Any]:
    """``{"calibration": {...}}`` for a run's ``--json``: its mode, whose terms and the terms (:func:`netsim.network.calibration.calibration_record`).

    Examples
    --------
    >>> from netsim.network.calibration import calibrate
    >>> from netsim.network.presets import tpu_slice
    >>> calibration_record(tpu_slice("tpu-v5e:8x4"))["calibration"]["mode"]
    'nominal'
    >>> calibration_record(calibrate(tpu_slice("tpu-v5e:8x4")))["calibration"]["collective_overhead_s"]
    3.47e-06
    >>> calibration_record(None)
    {}
    """
    from netsim.network.calibration import calibration_record as record

    return {} if topology is None else {"calibration": record(topology)}


def launch_rows(launches_s: float) -> list[tuple[str, str]]:
    """A program's row for the time a device spent launching collectives (a calibrated run's fixed cost; none when 0).

    Examples
    --------
    >>> launch_rows(6.94e-6)
    [('collective overhead', '6.94 us on the busiest device: the fixed cost per collective (calibrated), not compute')]
    """
    if not launches_s:
        return []
    return [("collective overhead", f"{format_seconds(launches_s)} on the busiest device: the fixed cost per collective (calibrated), not compute")]
