"""The two terms of a closed form, and a closed form applied to one run's numbers.

:class:`AlphaBeta` is what every closed form returns: its latency term and its bandwidth
term. :class:`Estimate` is one evaluated for a run's payload, with its formula, source and
crossover. :func:`canonical_collective` gives a collective's name in the registry.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from netsim.semantics.ops import lookup

__all__ = ["KINDS", "AlphaBeta", "Estimate", "canonical_collective", "with_fixed_cost"]

KINDS = ("exact", "lower_bound", "upper_bound", "none")
"""What an estimate promises about the simulated time T of its algorithm on its layout
(contention-free links of the nominal bandwidth and latency): ``exact``, T equals it to
1e-9 relative; ``lower_bound``, T is never less; ``upper_bound``, T is never more;
``none``, no closed form."""


@dataclass(frozen=True)
class AlphaBeta:
    """A closed form evaluated: the latency term and the bandwidth term, in seconds.

    ``combine`` says how they make a time: ``"sum"`` for the α–β form (latency +
    bandwidth), ``"max"`` for the scaling book's ``max(T_min·X/2, V/W_ici)``.

    Examples
    --------
    >>> AlphaBeta(2.0, 3.0).time_s, AlphaBeta(2.0, 3.0, "max").time_s
    (5.0, 3.0)
    >>> AlphaBeta(2.0, 3.0).regime
    'bandwidth-bound'
    """

    latency_s: float
    bandwidth_s: float
    combine: str = "sum"

    @property
    def time_s(self) -> float:
        """The estimated time, seconds."""
        if self.combine == "max":
            return max(self.latency_s, self.bandwidth_s)
        return self.latency_s + self.bandwidth_s

    @property
    def regime(self) -> str:
        """``"latency-bound"`` if the latency term is the larger, else ``"bandwidth-bound"``."""
        return "latency-bound" if self.latency_s > self.bandwidth_s else "bandwidth-bound"


def canonical_collective(name: str) -> str:
    """The name a collective's closed forms are listed under (``all_reduce`` and ``all_sum`` are ``psum``).

    It is the op registry's ``closed_form`` key (:data:`netsim.semantics.ops.COLLECTIVES`);
    a name the registry does not know is its own.

    Examples
    --------
    >>> canonical_collective("all_sum"), canonical_collective("all_gather")
    ('psum', 'all_gather')
    """
    known = lookup(name)
    return known.closed_form if known is not None else name


@dataclass(frozen=True)
class Estimate:
    """A closed form applied to one run's numbers.

    Attributes
    ----------
    latency_s, bandwidth_s, time_s : float
        The two terms and the time they make (their sum, or for the book their max).
    formula : str
        The closed form in symbols.
    source : str
        Where the formula comes from.
    crossover_bytes : float
        Per-device payload at which the two terms are equal (inf when nothing scales
        with the payload).
    bytes_per_device : float
        The payload the terms were evaluated for.
    kind : str
        One of :data:`KINDS`: whether the simulated time equals this (``exact``) or
        never falls below (``lower_bound``) or above it (``upper_bound``).
    fixed_s : float
        The fixed cost per collective (launch and synchronisation) in ``time_s``, a
        term of its own beside the latency and bandwidth terms; 0 under
        ``calibration: nominal`` (see :func:`with_fixed_cost`).
    """

    formula: str
    source: str
    latency_s: float
    bandwidth_s: float
    time_s: float
    crossover_bytes: float
    bytes_per_device: float = 0.0
    kind: str = "exact"
    fixed_s: float = 0.0

    @property
    def bounds(self) -> str | None:
        """What a bound bounds, in words (None for an exact estimate).

        Examples
        --------
        >>> Estimate("f", "-", 1.0, 1.0, 2.0, 1.0, kind="lower_bound").bounds
        'the simulated time is at least this'
        """
        return {"lower_bound": "the simulated time is at least this", "upper_bound": "the simulated time is at most this"}.get(self.kind)

    @property
    def regime(self) -> str:
        """``"latency-bound"`` or ``"bandwidth-bound"``: which term is the larger (``"nothing moves"`` if neither)."""
        if self.latency_s == self.bandwidth_s == 0:
            return "nothing moves"
        return "latency-bound" if self.latency_s + self.fixed_s > self.bandwidth_s else "bandwidth-bound"

    def __add__(self, other: Estimate) -> Estimate:
        """Two collectives run one after the other (the leaves of a pytree).

        The crossover is then for all leaves' payloads growing in proportion.

        Examples
        --------
        >>> a = Estimate("f", "-", 1e-6, 2e-6, 3e-6, 500.0, 1000.0)
        >>> (a + a).time_s, round((a + a).crossover_bytes, 6)
        (6e-06, 1000.0)
        """
        latency, bandwidth, payload = self.latency_s + other.latency_s, self.bandwidth_s + other.bandwidth_s, self.bytes_per_device + other.bytes_per_device
        crossover = payload * latency / bandwidth if bandwidth > 0 else (math.inf if latency > 0 else 0.0)
        kinds = {self.kind, other.kind}
        kind = kinds.pop() if len(kinds) == 1 else next((k for k in ("lower_bound", "upper_bound") if kinds <= {"exact", k}), "none")
        fixed = self.fixed_s + other.fixed_s
        if fixed and bandwidth > 0:
            crossover = payload * (latency + fixed) / bandwidth
        return Estimate(self.formula, self.source, latency, bandwidth, self.time_s + other.time_s, crossover, payload, kind, fixed)


def with_fixed_cost(estimate: Estimate | None, fixed_s: float) -> Estimate | None:
    """``estimate`` with a fixed cost per collective added as its own term (itself when the cost is 0).

    The crossover becomes the payload at which the latency term and the fixed cost
    together equal the bandwidth term.

    Examples
    --------
    >>> e = with_fixed_cost(Estimate("f", "-", 1e-6, 2e-6, 3e-6, 500.0, 1000.0), 1e-6)
    >>> e.fixed_s, e.time_s, round(e.crossover_bytes, 9), e.regime
    (1e-06, 4e-06, 1000.0, 'bandwidth-bound')
    """
    if estimate is None or not fixed_s or estimate.latency_s == estimate.bandwidth_s == 0:  # nothing moves: no collective to pay for
        return estimate
    crossover = estimate.crossover_bytes
    if estimate.bytes_per_device > 0 and estimate.bandwidth_s > 0:
        crossover = estimate.bytes_per_device * (estimate.latency_s + fixed_s) / estimate.bandwidth_s
    return replace(estimate, fixed_s=estimate.fixed_s + fixed_s, time_s=estimate.time_s + fixed_s, crossover_bytes=crossover)


def _evaluate(cost: Callable[[float], AlphaBeta], bytes_per_device: float, formula: str, source: str, kind: str = "exact") -> Estimate:
    ab = cost(float(bytes_per_device))
    if bytes_per_device > 0 and ab.bandwidth_s > 0:
        # the bandwidth term is linear in the payload, the latency term does not depend on it
        crossover = bytes_per_device * ab.latency_s / ab.bandwidth_s
    else:
        unit = cost(1.0)
        crossover = unit.latency_s / unit.bandwidth_s if unit.bandwidth_s > 0 else (math.inf if unit.latency_s > 0 else 0.0)
    return Estimate(formula, source, ab.latency_s, ab.bandwidth_s, ab.time_s, crossover, float(bytes_per_device), kind)
