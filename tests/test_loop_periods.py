"""Loops extended from a steady or periodic state equal the loops played trip by trip.

:func:`netsim.programs.periods.extend_trips` on made-up runs (steady, periodic in every
phase, drifting) against their sums written out; then HLO modules whose trips repeat with
a period (every 4th trip of a collective matmul on a ring of 4 is slower; a fori_loop of
ppermutes and the TPU v5e collective matmul alternate): extended, they equal every trip
played (these were 1.9 %, 9.2 % and 6.2 % low when a steady state was assumed).
"""

from __future__ import annotations

import pytest
from conftest import ROOT

from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.devices import load_device_map
from netsim.programs.hlo.run import run_hlo
from netsim.programs.periods import MAX_PERIOD, DriftError, extend_trips, period_of

HLO = ROOT / "scenarios" / "programs" / "hlo"
_LIMIT = "constant.51.clone.2 = s32[]{:T(128)}"  # the loop's trip limit, in its condition


def _runs(warm_up: list[float], pattern: list[float]):
    """time_at(t) of a loop whose first trips take ``warm_up`` and the rest repeat ``pattern``, counting the runs asked."""
    asked: list[int] = []

    def trip(i: int) -> float:
        return warm_up[i] if i < len(warm_up) else pattern[(i - len(warm_up)) % len(pattern)]

    def time_at(t: int) -> float:
        asked.append(t)
        return 7e-6 + sum(trip(i) for i in range(t))

    return time_at, asked, trip


@pytest.mark.parametrize("pattern", [[3e-6], [3e-6, 5e-6], [3e-6, 3e-6, 3e-6, 5e-6], [1e-6, 2e-6, 3e-6, 4e-6, 5e-6, 6e-6, 7e-6, 9e-6]])
@pytest.mark.parametrize("trips", [997, 998, 999, 1000])
def test_a_steady_or_periodic_loop_is_extended_to_its_sum_written_out(pattern, trips):
    time_at, asked, trip = _runs([11e-6, 2e-6, 4e-6], pattern)
    found = extend_trips(trips, time_at)
    assert found.period == len(pattern) and found.pattern == ("steady" if len(pattern) == 1 else "periodic")
    assert found.time_s == pytest.approx(7e-6 + sum(trip(i) for i in range(trips)), rel=1e-12)
    # whole periods are left: the run reported ends in the loop's own phase
    assert (trips - found.played) % len(pattern) == 0 and max(asked) <= 3 + 1 + MAX_PERIOD + 2 * len(pattern)


def test_three_equal_trips_before_a_slower_one_are_not_a_steady_state():
    d = [3.0, 3.0, 3.0, 5.0] * 8
    times = [sum(d[:t]) for t in range(1, len(d) + 1)]
    assert period_of(times[:5]) is None and period_of(times[:8]) is None and period_of(times) == 4


def test_a_drifting_loop_is_played_whole_or_refused():
    time_at, asked, _ = _runs([], [0.0])
    drifting = lambda t: float(t * t)  # noqa: E731
    whole = extend_trips(500, drifting)
    assert whole.pattern == "played" and whole.time_s == 500.0**2 and whole.played == 500
    with pytest.raises(DriftError, match=r"^the time each trip adds neither settles nor repeats \(with a period of up to 8 trips\) within the 32 trips"):
        extend_trips(500, drifting, lambda t: t <= 100)
    # a short loop is played whole, in one run
    short = extend_trips(MAX_PERIOD + 2, time_at)
    assert short.pattern == "played" and asked == [MAX_PERIOD + 2]


def _with(path, old: str, new: str):
    text = path.read_text()
    assert old in text
    return hlo_from_text(text.replace(old, new))


@pytest.mark.parametrize(
    ("module", "slice_", "old", "new", "period"),
    [
        # CPU-compiled collective matmul of 4 steps around a ring of 4, run 40 and 41 times: every 4th trip adds 25.65 us, not 23.65
        (HLO / "collective_matmul.txt", "tpu-v5e:2x4", '"known_trip_count":{"n":"4"}', '"known_trip_count":{"n":"40"}', 4),
        (HLO / "collective_matmul.txt", "tpu-v5e:2x4", '"known_trip_count":{"n":"4"}', '"known_trip_count":{"n":"41"}', 4),
        # a fori_loop of 40 ppermutes (jax.lax.fori_loop, CPU-compiled): 1.81 and 2.81 us in turn
        (ROOT / "tests" / "hlo" / "fori_ppermute_40.txt", "tpu-v5e:2x4", "", "", 2),
        # the TPU compiler's collective matmul on v5e 4x4, its trip count (read from the condition) made 41: 7.47 and 8.47 us in turn
        (HLO / "tpu" / "v5e_4x4" / "collective_matmul.txt", "tpu-v5e:4x4", f"{_LIMIT} constant(4)", f"{_LIMIT} constant(41)", 2),
    ],
    ids=["collective-matmul-40", "collective-matmul-41", "fori-ppermute-40", "tpu-v5e-collective-matmul-41"],
)
def test_a_periodic_hlo_loop_extended_equals_every_trip_played(module, slice_, old, new, period):
    program = _with(module, old, new)
    device_map = load_device_map(module, program.devices, slice_)
    extended = run_hlo(program, slice_, device_map=device_map)
    every = run_hlo(program, slice_, device_map=device_map, unroll=True)
    extension = extended.program.extension
    (loop,) = extension.loops
    assert extension.repetition.pattern == "periodic" and extension.repetition.period == period
    assert extension.played[0] < loop.trips and every.program.extension is None
    assert extended.time == pytest.approx(every.time, rel=1e-12)
    assert f"every further {period} trips add" in extension.describe()[0]
    assert extension.to_dict()["period"] == period


def test_two_loops_whose_time_is_not_linear_in_their_trips_are_played_whole():
    """Made-up runs of two loops: linear in both, plus 1 us every 4th trip of the first: the corners {2, 3} see no jump,
    the check 8 trips further on does, and every trip is played (when it may be) instead of a wrong extension."""
    from netsim.programs.hlo.loops import Loop, extend

    loops_ = (Loop("a", 3, 30), Loop("b", 9, 20))

    def time_at(trips):
        a, b = trips[3], trips[9]
        return 5e-6 + 3e-6 * a + 2e-6 * b + 1e-6 * (a // 4)

    linear, _ = extend(loops_, lambda t: 5e-6 + 3e-6 * t[3] + 2e-6 * t[9], lambda t: True)
    assert linear.steady and linear.time_s == pytest.approx(5e-6 + 3e-6 * 30 + 2e-6 * 20, rel=1e-12)
    whole, trips = extend(loops_, time_at, lambda t: True)
    assert not whole.steady and trips == {3: 30, 9: 20} and whole.time_s == time_at(trips)
    assert "every trip played" in whole.describe()[0]
    flagged, _ = extend(loops_, time_at, lambda t: max(t.values()) <= 12)  # too many to play whole: extended, and said
    assert not flagged.steady and "still changing" in flagged.describe()[0]


def test_two_loops_whose_trips_differ_by_nanoseconds_are_extended_with_the_bound_that_puts_on_the_time():
    """Made-up runs as a 256-chip training step gives them: trips of 79 ms and 225 ms whose times stray by a few
    nanoseconds (chips drifting apart), never repeating: steady within those nanoseconds, and the time within the bound."""
    from netsim.programs.hlo.loops import JITTER_RTOL, Loop, extend

    loops_ = (Loop("forward", 3, 32), Loop("backward", 9, 32))
    stray = [((7919 * k) % 13 - 6) * 1e-9 for k in range(64)]  # -6..6 ns, no period of 8 trips or fewer

    def time_at(trips):
        a, b = trips[3], trips[9]
        return 0.415 + 0.079 * (a - 1) + 0.225 * (b - 1) + sum(stray[:a]) + sum(stray[32 : 32 + b])

    extension, played = extend(loops_, time_at, lambda t: max(t.values()) <= 16)  # (every trip is too many to play)
    assert extension.steady and 0 < extension.within_s <= JITTER_RTOL * 0.079 and played == {3: 3, 9: 3}
    truth = time_at({3: 32, 9: 32})
    assert abs(extension.time_s - truth) <= extension.bound_s  # (an exact fit would have played every trip)
    assert extension.bound_s == pytest.approx(extension.within_s * (29 + 29), rel=1e-12)
    assert "ns a trip: the time to +-" in extension.describe()[0]
    assert extension.to_dict()["bound_s"] == extension.bound_s


@pytest.mark.parametrize(("stray_s", "steady"), [(0.1e-6, True), (2e-6, False)])
def test_trips_that_stray_by_a_tenth_of_a_microsecond_in_63_ms_are_steady_within_it_and_by_two_they_are_not(stray_s, steady):
    """Trips of 63.5 and 175 ms (a calibrated 128B step's) that stray by 0.1 us each, never settling: the corners
    miss the linear form by a few tenths of a microsecond, above a millionth of a trip (63.5 ns) and under
    JITTER_RTOL (1e-5: 635 ns), so steady within that at the third trips; strays of 2 us are not steady."""
    from netsim.programs.hlo.loops import JITTER_RTOL, Loop, extend

    loops_ = (Loop("forward", 3, 64), Loop("backward", 9, 64))
    stray = [stray_s * ((k % 3) - 1) for k in range(80)]  # -s, 0, +s: no steady state

    def time_at(trips):
        a, b = trips[3], trips[9]
        return 0.35 + 0.0635 * (a - 1) + 0.175 * (b - 1) + sum(stray[:a]) + sum(stray[40 : 40 + b])

    extension, played = extend(loops_, time_at, lambda t: max(t.values()) <= 16)  # (every trip is too many to play)
    if steady:
        assert extension.steady and 1e-6 * 0.0635 < extension.within_s <= JITTER_RTOL * 0.0635 and played == {3: 3, 9: 3}
        assert abs(extension.time_s - time_at({3: 64, 9: 64})) <= extension.bound_s
    else:
        assert not extension.steady and "still changing" in extension.describe()[0]
    whole, played = extend(loops_, time_at, lambda t: True)  # where every trip fits in a run, they are played: exact
    assert played == {3: 64, 9: 64} and whole.time_s == time_at({3: 64, 9: 64}) and whole.bound_s == 0
    said = "every trip played (the time a trip adds strays by up to" if steady else "every trip played (the time a trip adds is not linear"
    assert said in whole.describe()[0]


def test_a_change_the_first_check_further_on_sees_is_played_past_and_checked_again():
    """Made-up runs of two loops, linear but for 1 us more while the trips played together number 20 to 24 (a transient
    well after the first trips): the check 8 trips further on sees it, later corners and checks pass it, and the loops
    are extended from there, exactly, instead of being played whole."""
    from netsim.programs.hlo.loops import Loop, extend

    loops_ = (Loop("a", 3, 30), Loop("b", 9, 20))

    def time_at(trips):
        a, b = trips[3], trips[9]
        return 5e-6 + 3e-6 * a + 2e-6 * b + 1e-6 * (20 <= a + b <= 24)

    extension, played = extend(loops_, time_at, lambda t: True)
    assert extension.steady and played != {3: 30, 9: 20}
    assert extension.time_s == pytest.approx(time_at({3: 30, 9: 20}), rel=1e-12)
    refused, _ = extend(loops_, time_at, lambda t: max(t.values()) <= 12)  # the later checks too big to play: not steady
    assert not refused.steady and "still changing" in refused.describe()[0]
