"""Calibration: what a real chip adds to the ideal link model, per TPU generation, and whether a run uses it.

netsim's ideal model (``calibration: nominal``, the default) moves bytes at the links'
nominal bandwidth and charges nothing but per-hop latency. Measured TPU collectives
show two more things, each a term of its own:

- a **fixed cost per collective** (launch and synchronisation), ``collective_overhead_s``:
  paid once by every collective, on every device, before its first byte leaves;
- a **link efficiency**, ``link_efficiency``: the fraction of the nominal bandwidth a
  long transfer reaches (the link model's effective rate,
  :func:`netsim.engine.link_model.effective_bandwidth`).

A third, the **compute efficiency** (``compute_efficiency``), is the fraction of the
peak FLOP/s a large matmul reaches (the matmul efficiency): it scales the roofline of
compute steps, and the MXU time of an HLO module's dots and convolutions
(:mod:`netsim.programs.hlo.mxu`). :data:`CALIBRATIONS` is the one place it is set, per
generation, each value with its source and the measurements it was derived from.

``calibration: calibrated`` applies a topology's values; ``nominal`` ignores them, so
the scaling book's arithmetic and every closed form of the ideal model stay reachable
bit for bit. The values of each TPU generation (:data:`CALIBRATIONS`) are derived from
public measurements, each with its source and the rows it was derived from;
docs/validation.md (made by scripts/validation.py) sets every public measurement found
beside netsim's nominal and calibrated times.

Examples
--------
>>> from netsim.network.presets import tpu_slice
>>> t = calibrate(tpu_slice("tpu-v5e:8x16"), "calibrated")
>>> in_force(t).link_efficiency, round(in_force(t).collective_overhead_s * 1e6, 2)
(0.95, 3.47)
>>> in_force(tpu_slice("tpu-v5e:8x16")) == NOMINAL  # nominal unless asked
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from netsim.network.topology import Topology

__all__ = [
    "BORROWED",
    "CALIBRATIONS",
    "CALIBRATION_MODES",
    "NOMINAL",
    "Calibration",
    "calibrate",
    "calibration_record",
    "check_calibration",
    "efficiency_of",
    "in_force",
    "mode_of",
    "offered",
]

CALIBRATION_MODES = ("nominal", "calibrated")
"""``calibration:``: the ideal model (the default), or a topology's measured terms applied."""


@dataclass(frozen=True)
class Calibration:
    """The measured terms of one chip generation.

    Attributes
    ----------
    link_efficiency : float
        Fraction of the nominal link bandwidth a long transfer reaches, in (0, 1].
    collective_overhead_s : float
        Fixed cost of every collective (launch and synchronisation), seconds.
    compute_efficiency : float
        Fraction of the peak FLOP/s a large matmul reaches, in (0, 1].
    source : str
        Where the values come from.
    derived_from : tuple of str
        The measurements they were derived from (rows of docs/validation.md).
    borrowed_from : str
        Empty when the values were measured on these chips; else the generation whose
        measured terms they are, taken for chips without a public measurement.
    """

    link_efficiency: float = 1.0
    collective_overhead_s: float = 0.0
    compute_efficiency: float = 1.0
    source: str = "none: the ideal model"
    derived_from: tuple[str, ...] = ()
    borrowed_from: str = ""

    def __post_init__(self) -> None:
        for name in ("link_efficiency", "compute_efficiency"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value <= 1):
                raise ValueError(f"{name} must be a fraction in (0, 1], got {value!r}")
        if not (isinstance(self.collective_overhead_s, (int, float)) and 0 <= self.collective_overhead_s < math.inf):
            raise ValueError(f"collective_overhead_s must be a finite time >= 0, got {self.collective_overhead_s!r}")

    @property
    def is_nominal(self) -> bool:
        """Whether it changes nothing."""
        return self.link_efficiency == 1 and self.collective_overhead_s == 0 and self.compute_efficiency == 1

    @property
    def label(self) -> str:
        """Whose terms these are: ``measured``, ``borrowed from GENERATION`` or ``none`` (the ideal model).

        Examples
        --------
        >>> CALIBRATIONS["tpu-v6e"].label, CALIBRATIONS["tpu-v5e"].label, NOMINAL.label
        ('borrowed from tpu-v5e', 'measured', 'none')
        """
        if self.borrowed_from:
            return f"borrowed from {self.borrowed_from}"
        return "none" if self.is_nominal else "measured"


NOMINAL = Calibration()
"""The ideal model: links at their nominal bandwidth, no fixed cost, compute at peak."""

IRONWOOD_GUIDE = (
    "AI-Hypercomputer/accelerator-microbenchmarks, Ironwood/guides/collectives/all_gather.md "
    "(commit 78b74306e75e1e7fbf6b18dcfb5474cc0c275d0e), 'Expected Results', 2x2x1 rows"
)
IRONWOOD_GEMM = (
    "AI-Hypercomputer/accelerator-microbenchmarks, Ironwood/Ironwood_Microbenchmarks_readme.md "
    "(commit 0ddd4b8ca6636caff17b3ce4cc5e2a1196297145), 'GEMM Results': 956.38 TFLOP/s per device at m=n=k=32768, bf16"
)
SCALING_BOOK_SHARDING = "the scaling book, jax-ml.github.io/scaling-book/sharding ('A note on ICI latency'; Pop Quiz 2)"
MAXTEXT_V5E = "AI-Hypercomputer/maxtext README.md at 9bc243c95, 'TPU v5e': the 16B, 32B, 64B and 128B rows on 1x v5e-256 (docs/validation.md, 'Whole steps')"

# Derived by scripts/validation.py (tests/test_validation.py checks these against its derivation).
CALIBRATIONS: dict[str, Calibration] = {
    # TPU7x: the two unknowns (fixed cost, link efficiency) solved from two rows of the guide, the
    # all_gather over 4 chips at 1 MiB and at 64 MiB per device; compute: the guide's GEMM table,
    # 956.38 of a device's 1153.5 TFLOP/s peak.
    "tpu7x": Calibration(0.9993, 10.72e-6, 0.829, f"{IRONWOOD_GUIDE}; {IRONWOOD_GEMM}", ("tpu7x 2x2x1 1 MiB", "tpu7x 2x2x1 64 MiB")),
    # v5e: link efficiency, the book's "about 95% of the peak claimed bandwidth" on an 8x16 slice;
    # fixed cost, what the book's ~8 us for 32 kB shards on a line of 4 leaves over the model at 95 %;
    # matmul efficiency (compute_efficiency): the median of the four efficiencies at which MaxText's
    # 16B, 32B, 64B and 128B steps take their published times (scripts/validation_steps.py; three of
    # them are slower than published at the ideal MXU already, so the median is 1.0).
    "tpu-v5e": Calibration(
        0.95,
        3.47e-6,
        1.0,
        f"{SCALING_BOOK_SHARDING}; {MAXTEXT_V5E}",
        ("tpu-v5e 8x16 10 MB", "tpu-v5e 8x4 32 kB", *(f"MaxText {model} v5e-256" for model in ("16b", "32b", "64b", "128b"))),
    ),
}

BORROWED = {"tpu-v4": "tpu-v5e", "tpu-v5p": "tpu-v5e", "tpu-v6e": "tpu-v5e"}
"""Generations without a public collective measurement netsim knows of -> the measured generation whose terms they take.

v5e: one device per chip and a launch on the same software stack as v4, v5p and v6e; TPU7x's
fixed cost is measured over two devices per chip (docs/validation.md, "Borrowed terms")."""
for _chips, _lender in BORROWED.items():
    _terms = CALIBRATIONS[_lender]
    CALIBRATIONS[_chips] = replace(
        _terms,
        source=f"borrowed from {_lender} (no public {_chips} collective measurement found): {_terms.source}",
        borrowed_from=_lender,
    )
"""Each TPU generation's terms: measured (TPU7x, v5e) or borrowed from a measured generation (:data:`BORROWED`).
A generation not listed (v2, v3) has none: calibrated runs on it are nominal (said so in docs/validation.md)."""


def calibration_record(topology: Topology) -> dict[str, object]:
    """The calibration a run used, as ``--json`` gives it: its mode, whose terms (measured, borrowed, none) and the terms.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> record = calibration_record(calibrate(tpu_slice("tpu-v6e:4x4")))
    >>> record["mode"], record["terms"], record["collective_overhead_s"]
    ('calibrated', 'borrowed from tpu-v5e', 3.47e-06)
    >>> calibration_record(tpu_slice("tpu-v6e:4x4"))["terms"]
    'none'
    """
    terms = in_force(topology)
    return {
        "mode": mode_of(topology),
        "terms": terms.label,
        "link_efficiency": terms.link_efficiency,
        "collective_overhead_s": terms.collective_overhead_s,
        "compute_efficiency": terms.compute_efficiency,
        "source": terms.source,
    }


def offered(topology: Topology) -> Calibration:
    """The measured terms a topology carries (a TPU preset's, or its file's ``calibration:``), applied or not.

    Examples
    --------
    >>> from netsim.network.topology import ring
    >>> offered(ring(4)) == NOMINAL
    True
    """
    return topology.graph.graph.get("calibration_offered", NOMINAL)


def in_force(topology: Topology) -> Calibration:
    """The terms a run on ``topology`` uses: :func:`offered` after :func:`calibrate` with ``"calibrated"``, else :data:`NOMINAL`."""
    return topology.graph.graph.get("calibration_in_force", NOMINAL)


def efficiency_of(topology: Topology, link: Any) -> float:
    """The link efficiency in force on ``link`` (a link id): the measured ICI term, on every link but the DCN's (axis 0 of several slices), never measured.

    Examples
    --------
    >>> from netsim.network.presets import tpu_slice
    >>> t = calibrate(tpu_slice("tpu-v5e:2x2x2slices"))
    >>> efficiency_of(t, (0, 1, (2, 1))), efficiency_of(t, (0, 8, (0, 1)))
    (0.95, 1.0)
    """
    if "dcn" in topology.graph.graph and link[2][0] == 0:
        return 1.0
    return in_force(topology).link_efficiency


def mode_of(topology: Topology) -> str:
    """The ``calibration:`` a topology was made to run with (``"nominal"`` unless :func:`calibrate` said otherwise).

    Examples
    --------
    >>> from netsim.network.topology import ring
    >>> mode_of(ring(4)), mode_of(calibrate(ring(4))), in_force(calibrate(ring(4))) == NOMINAL
    ('nominal', 'calibrated', True)
    """
    return topology.graph.graph.get("calibration_mode", "nominal")


def check_calibration(mode: str) -> str:
    """``mode`` if it is one of :data:`CALIBRATION_MODES`; a ValueError naming them otherwise.

    Examples
    --------
    >>> check_calibration("exact")
    Traceback (most recent call last):
    ...
    ValueError: calibration must be 'nominal' or 'calibrated', got 'exact'
    """
    if mode not in CALIBRATION_MODES:
        raise ValueError(f"calibration must be 'nominal' or 'calibrated', got {mode!r}")
    return mode


def calibrate(topology: Topology, mode: str = "calibrated", values: Calibration | None = None) -> Topology:
    """A copy of ``topology`` that runs ``mode``: its offered terms applied (``"calibrated"``) or none (``"nominal"``).

    ``values`` replaces the terms it offers first. The links keep their nominal bandwidth
    on the graph: the link model applies the efficiency (its effective rate), the run
    adds the fixed cost per collective as a step of its own.

    Examples
    --------
    >>> from netsim.network.topology import ring
    >>> t = calibrate(ring(4), values=Calibration(0.5, 2e-6))
    >>> in_force(t).link_efficiency, t.link((0, 1, (0, 1)))["bandwidth_Bps"]
    (0.5, 45000000000.0)
    >>> in_force(calibrate(t, "nominal")) == NOMINAL
    True
    """
    check_calibration(mode)
    graph = topology.graph.copy()
    if values is not None:
        graph.graph["calibration_offered"] = values
    chosen = graph.graph.get("calibration_offered", NOMINAL) if mode == "calibrated" else NOMINAL
    graph.graph["calibration_in_force"] = chosen
    graph.graph["calibration_mode"] = mode
    return replace(topology, graph=graph)  # (a subclass, such as several slices, stays what it is)
