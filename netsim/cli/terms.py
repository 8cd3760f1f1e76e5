"""Text about a run's terms: the closed form's split into its terms, and the calibration a run used."""

from __future__ import annotations

from typing import Any

from netsim.network.calibration import in_force, mode_of
from netsim.network.units import format_seconds

__all__ = ["calibration_record", "calibration_rows", "estimate_terms", "launch_rows"]


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
    ([], 'calibrated: links at 0.95 of their bandwidth, a fixed cost of 3.47 us ')
    """
    terms = in_force(topology) if topology is not None else None
    if terms is None or (terms.is_nominal and mode_of(topology) == "nominal"):
        return []
    if terms.is_nominal:  # asked for, but nothing measured is known for these chips
        return [("calibration", f"calibrated, but {topology.name} offers no measured terms: the ideal model (docs/validation.md)")]
    parts = [f"links at {terms.link_efficiency:.4g} of their bandwidth", f"a fixed cost of {format_seconds(terms.collective_overhead_s)} per collective"]
    if terms.compute_efficiency != 1:
        parts.append(f"compute at {terms.compute_efficiency:.3g} of peak")
    return [("calibration", f"calibrated: {', '.join(parts)} (docs/validation.md; {terms.source})")]


def calibration_record(topology: Any) -> dict[str, Any]:
    """``{"calibration": {...}}`` for a calibrated run's ``--json`` (the terms it used), ``{}`` for a nominal one.

    Examples
    --------
    >>> from netsim.network.calibration import calibrate
    >>> from netsim.network.presets import tpu_slice
    >>> calibration_record(tpu_slice("tpu-v5e:8x4")), calibration_record(calibrate(tpu_slice("tpu-v5e:8x4")))["calibration"]["collective_overhead_s"]
    ({}, 3.47e-06)
    """
    if topology is None or mode_of(topology) == "nominal":
        return {}
    terms = in_force(topology)
    return {
        "calibration": {
            "mode": "calibrated",
            "link_efficiency": terms.link_efficiency,
            "collective_overhead_s": terms.collective_overhead_s,
            "compute_efficiency": terms.compute_efficiency,
            "source": terms.source or None,
        }
    }


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
