"""A loop's time from a few of its trips: played until each trip's time is steady or periodic, then extended exactly.

A loop (an HLO ``while``, a program file's ``repeat:`` block) runs the same ops on the
same links every trip, but the time each trip adds need not settle on one value: a ring
of 4 devices can make every 4th trip of a collective matmul slower than the three before
it, for ever. :func:`extend_trips` plays the loop for ``t = 1, 2, ...`` trips (each a run
of its own: ``time_at(t)``) and looks at the time each trip adds, ``d(t) = T(t) - T(t-1)``.
Once the last :data:`MAX_PERIOD` ``+ p`` of them repeat with a period ``p`` (at most
:data:`MAX_PERIOD`; ``p = 1`` is a steady state), the trips left are whole periods: the
run played is chosen with as many trips as the loop modulo ``p`` (so it ends in the same
phase of the period), and each further period adds what the last one added. Asking
:data:`MAX_PERIOD` ``+ p`` trips (not two periods) is what makes the period found the
loop's own: a sequence of that length with periods ``p`` and ``q <= MAX_PERIOD`` has
period ``gcd(p, q)`` (Fine and Wilf's theorem), so three equal trips followed by a
slower one are not taken for a steady state.

A loop whose per-trip times neither settle nor repeat within :data:`MAX_PLAYED` trips
(a drift) is not extended: every trip is played when the run is small enough
(``can_play``), else :class:`DriftError` says so.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["MAX_PERIOD", "MAX_PLAYED", "STEADY_RTOL", "DriftError", "Repetition", "extend_trips", "fewest_played", "period_of"]

MAX_PERIOD = 8
"""The longest period (in trips) looked for; the last ``MAX_PERIOD + p`` per-trip times must repeat with period ``p``."""

MAX_PLAYED = 32
"""The most trips played while looking for a steady or periodic state; past it the loop is played whole or refused."""

STEADY_RTOL = 1e-9
"""Two per-trip times are the same when they differ by at most this fraction of the longest run's time."""


class DriftError(ValueError):
    """A loop whose per-trip times neither settle nor repeat, too long to play every trip."""


@dataclass(frozen=True)
class Repetition:
    """How a loop's time was found from the trips played.

    Attributes
    ----------
    trips : int
        The loop's trips.
    played : int
        The trips of the run reported (its statistics are that run's).
    period : int
        The period of the per-trip times (1: steady); 0 when every trip was played.
    period_s : float
        The time each further period adds (0 when every trip was played).
    played_time_s : float
        The time of the run reported.
    time_s : float
        The time with every trip.
    runs : int
        How many runs were played.
    pattern : str
        ``steady``, ``periodic`` or ``played`` (every trip played: the loop was short, or its
        per-trip times drifted).
    """

    trips: int
    played: int
    period: int
    period_s: float
    played_time_s: float
    time_s: float
    runs: int
    pattern: str

    @property
    def per_trip_s(self) -> float:
        """The mean time a further trip adds (over a period)."""
        return self.period_s / self.period if self.period else 0.0

    def describe(self) -> str:
        """What was played and how the rest was extended, in words.

        Examples
        --------
        >>> Repetition(80, 12, 2, 5e-6, 3e-5, 2.27e-4, 12, "periodic").describe()
        '80 trips; 12 played, every further 2 trips add 5 us (periodic: the last 10 trips played repeat every 2)'
        >>> Repetition(6, 6, 0, 0.0, 1e-5, 1e-5, 1, "played").describe()
        '6 trips; every trip played'
        """
        if self.pattern == "played":
            return f"{self.trips} trips; every trip played"
        if self.period == 1:
            return (
                f"{self.trips} trips; {self.played} played, each further one adds {self.period_s * 1e6:.4g} us "
                f"(steady: the same for the last {MAX_PERIOD + 1} trips played)"
            )
        return (
            f"{self.trips} trips; {self.played} played, every further {self.period} trips add {self.period_s * 1e6:.4g} us "
            f"(periodic: the last {MAX_PERIOD + self.period} trips played repeat every {self.period})"
        )

    def to_dict(self) -> dict:
        """The repetition as JSON-ready data."""
        return {
            "trips": self.trips,
            "played": self.played,
            "pattern": self.pattern,
            "period": self.period,
            "period_s": self.period_s,
            "per_trip_s": self.per_trip_s,
            "played_time_s": self.played_time_s,
            "time_s": self.time_s,
            "runs": self.runs,
        }


def period_of(times: list[float], rtol: float = STEADY_RTOL) -> int | None:
    """The shortest period ``p <= MAX_PERIOD`` with which the last ``MAX_PERIOD + p`` per-trip times of ``times`` repeat, or None.

    ``times[i]`` is the time of the run of ``i + 1`` trips.

    Examples
    --------
    >>> period_of([10.0 + 3 * t for t in range(12)])  # steady: 3 per trip
    1
    >>> d = [3, 3, 3, 5] * 6  # three trips of 3, then one of 5
    >>> times = [sum(d[:t]) for t in range(1, 25)]
    >>> period_of(times[:6]), period_of(times)  # three 3s are not a steady state
    (None, 4)
    >>> period_of([float(t * t) for t in range(1, 30)]) is None  # drifting
    True
    """
    steps = [b - a for a, b in itertools.pairwise(times)]
    tolerance = rtol * max((abs(t) for t in times), default=0.0)
    for p in range(1, MAX_PERIOD + 1):
        window = MAX_PERIOD + p
        if len(steps) < window:
            return None
        last = steps[-window:]
        if all(abs(last[i] - last[i - p]) <= tolerance for i in range(p, window)):
            return p
    return None


def fewest_played(trips: int) -> int:
    """The fewest trips the run :func:`extend_trips` reports for a loop of ``trips`` can have.

    Every trip, when they are too few to see a period in; else at least ``MAX_PERIOD + 2``: a period
    ``p`` is seen after ``MAX_PERIOD + p + 1`` trips, and the run reported drops fewer than ``p`` of them.

    Examples
    --------
    >>> fewest_played(6), fewest_played(80)
    (6, 10)
    """
    return min(trips, MAX_PERIOD + 2)


def extend_trips(trips: int, time_at: Callable[[int], float], can_play: Callable[[int], bool] = lambda t: True) -> Repetition:
    """The time of a loop of ``trips`` trips, from runs of fewer trips (``time_at(t)``: the run of ``t`` trips).

    Raises
    ------
    DriftError
        If the per-trip times neither settle nor repeat within :data:`MAX_PLAYED` trips and
        ``can_play(trips)`` is False.

    Examples
    --------
    Made-up runs: 5 us of set-up, then trips of 3, 3, 3 and 4 us, repeating.

    >>> d = [3e-6, 3e-6, 3e-6, 4e-6]
    >>> r = extend_trips(1000, lambda t: 5e-6 + sum(d[i % 4] for i in range(t)))
    >>> r.pattern, r.period, r.played, round(r.time_s * 1e6, 6)
    ('periodic', 4, 12, 3255.0)
    """
    if trips < 1:
        raise ValueError(f"trips must be >= 1, got {trips}")
    cache: dict[int, float] = {}

    def run(t: int) -> float:
        if t not in cache:
            cache[t] = time_at(t)
        return cache[t]

    if trips <= MAX_PERIOD + 2:  # too few trips to see a period of any length: play them all (fewest_played is every trip)
        return Repetition(trips, trips, 0, 0.0, run(trips), run(trips), len(cache), "played")
    played = 0
    while played < min(trips, MAX_PLAYED) and can_play(played + 1):
        played += 1
        run(played)
        p = period_of([cache[t] for t in range(1, played + 1)])
        if p is not None:
            reported = played - (played - trips) % p  # the same phase as the whole loop: whole periods are left
            period_s = cache[played] - cache[played - p]
            time = cache[reported] + (trips - reported) // p * period_s
            return Repetition(trips, reported, p, period_s, cache[reported], time, len(cache), "steady" if p == 1 else "periodic")
    if played == trips:
        return Repetition(trips, trips, 0, 0.0, cache[trips], cache[trips], len(cache), "played")
    if not can_play(trips):
        raise DriftError(
            f"the time each trip adds neither settles nor repeats (with a period of up to {MAX_PERIOD} trips) "
            f"within the {played} trips played, and all {trips} are too many to play"
        )
    time = run(trips)
    return Repetition(trips, trips, 0, 0.0, time, time, len(cache), "played")
