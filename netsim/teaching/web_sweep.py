"""The size sweep of the teaching page: time against bytes per device, simulated and in closed form.

The closed form is evaluated at each size (a line through its values) and the
simulated points are real runs (timing only) at sizes a factor 4 apart from 1 KiB to
1 GiB, fewer of them for bigger runs. Where the two terms are equal (the crossover) the
run turns from latency-bound to bandwidth-bound.

Examples
--------
>>> out = sweep({"topology": "ring", "n": 4, "op": "all_gather"})
>>> len(out["points"]), out["kind"], round(out["crossover_bytes"])
(11, 'exact', 90000)
>>> all(abs(p["time_s"] / p["estimate_s"] - 1) < 1e-9 for p in out["points"])
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from netsim.scenario.loading import scenario_from_data
from netsim.teaching.events import summary_of
from netsim.teaching.web_form import MAX_BYTES, MIN_BYTES, SOURCE, check_limits, scenario_data

__all__ = ["SIZES", "sweep"]

SIZES = tuple(MIN_BYTES * 4**k for k in range(11))
"""1 KiB, 4 KiB, ... 1 GiB."""

_POINTS_WORK = 40_000
"""Most transfers all the simulated points of a sweep may have together."""


def _crossover(points: list[dict[str, Any]]) -> float | None:
    """Where the closed form's bandwidth term overtakes its latency term, between two sizes of the sweep (log-linear).

    Examples
    --------
    >>> _crossover([{"bytes": 1e3, "estimate_s": 2.5, "latency_s": 2.0}, {"bytes": 1e5, "estimate_s": 52.0, "latency_s": 2.0}])
    4000.0
    """
    import itertools
    import math

    known = [p for p in points if p["estimate_s"] is not None and p.get("latency_s") is not None]
    for a, b in itertools.pairwise(known):
        ra, rb = ((p["estimate_s"] - p["latency_s"]) / p["latency_s"] if p["latency_s"] > 0 else math.inf for p in (a, b))  # bandwidth / latency
        if 0 < ra <= 1 <= rb < math.inf:
            f = -math.log(ra) / (math.log(rb) - math.log(ra)) if rb != ra else 0.0
            return round(math.exp(math.log(a["bytes"]) + f * (math.log(b["bytes"]) - math.log(a["bytes"]))), 6)
    return None


def sweep(params: Mapping[str, Any]) -> dict[str, Any]:
    """Simulated points and the closed-form line of time against bytes per device, for the request's setup.

    Raises
    ------
    ScenarioError
        As :func:`netsim.teaching.web_form.scenario_of` and :func:`~netsim.teaching.web_form.check_limits`.
    """
    from netsim.collectives import simulate

    base = dict(scenario_data(params))
    base["data"] = "none"  # timing only: the sizes go to 1 GiB a device
    work = check_limits(scenario_from_data(base, SOURCE, build_topology=False))
    every = 1 if work["transfers"] * len(SIZES) <= _POINTS_WORK else 2 if work["transfers"] * 6 <= _POINTS_WORK else 5
    sizes = SIZES[::every] if SIZES[::every][-1] == MAX_BYTES else (*SIZES[::every], MAX_BYTES)
    points = []
    summary: dict[str, Any] = {}
    for size in sizes:
        data = scenario_data({**params, "bytes": size})
        data["data"] = "none"
        summary = summary_of(simulate(scenario_from_data(data, SOURCE)))
        points.append(
            {"bytes": summary["bytes_per_device"], "time_s": summary["time_s"], "estimate_s": summary["estimate_s"], "latency_s": summary.get("latency_term_s")}
        )
    out: dict[str, Any] = {"points": points, "kind": summary.get("kind", "none"), "crossover_bytes": _crossover(points)}
    out["line"] = [[p["bytes"], p["estimate_s"]] for p in points if p["estimate_s"] is not None]  # the closed form at each size
    return out
