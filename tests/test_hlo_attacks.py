"""HLO text under attack: long loops extended from their steady state, files that are not text, bad numbers, bad names.

The modules are the small files of ``tests/hlo/``. Every mistake must be one line naming
the file, the line and the fix (exit 2), never a traceback, a hang or a wrong time.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim.programs.hlo.loops as loops
from netsim.cli.main import app
from netsim.programs.hlo import hlo_from_text, load_hlo
from netsim.programs.hlo.devices import default_device_map
from netsim.programs.hlo.loops import Loop, extend
from netsim.programs.hlo.run import run_hlo
from netsim.programs.periods import MAX_PERIOD, MAX_PLAYED, DriftError
from netsim.scenario import ScenarioError

HLO = ROOT / "tests" / "hlo"
SLICE = "tpu-v5e:2x4"
runner = CliRunner()


def _with_trips(trips: int) -> str:
    return (HLO / "loop_1e12_trips.txt").read_text().replace('"n":"1000000000000"', f'"n":"{trips}"')


def _nested(outer: int, inner: int) -> str:
    return (HLO / "nested_loops.txt").read_text().replace("OUTER", str(outer)).replace("INNER", str(inner))


# ---- long loops -------------------------------------------------------------------


def test_a_loop_of_10_to_the_12_trips_is_played_a_few_times_and_extended():
    started = time.perf_counter()
    result = run_hlo(HLO / "loop_1e12_trips.txt", SLICE)
    assert time.perf_counter() - started < 20  # before: one trip after another, memory growing, for ever
    extension = result.program.extension
    (loop,) = extension.loops
    assert (loop.name, loop.line, loop.trips) == ("w", 27, 10**12)
    assert extension.steady and extension.played[0] <= MAX_PLAYED and extension.repetition.period == 1
    # the time is the trips played plus every other trip at the per-trip time
    assert result.time == pytest.approx(extension.played_time_s + (10**12 - extension.played[0]) * extension.per_trip_s[0], rel=1e-12)
    assert len(result.program.module.steps) == 2 * extension.played[0]  # an all-reduce and an exponential per trip played


def test_the_extended_time_equals_playing_every_trip():
    module = hlo_from_text(_with_trips(24))
    extended, every = run_hlo(module, SLICE), run_hlo(module, SLICE, unroll=True)
    assert every.program.extension is None and len(every.program.module.steps) == 48
    assert extended.program.extension.played[0] < 24
    assert extended.time == pytest.approx(every.time, rel=1e-9)


def test_thirty_trips_played_equal_some_played_and_the_rest_extended(monkeypatch):
    """This loop's per-trip time alternates over its first trips (30.25, 30.53, 30.25 us) and is 30.43 us from the 5th on:
    the extension plays until MAX_PERIOD + 1 trips running add the same time, then extends."""
    monkeypatch.setattr(loops, "FULL_TRIPS", 2)
    module = hlo_from_text(_with_trips(30))
    extended, every = run_hlo(module, SLICE), run_hlo(module, SLICE, unroll=True)
    assert extended.program.extension.played[0] < 30 and extended.program.extension.repetition.pattern == "steady"
    assert extended.time == pytest.approx(every.time, rel=1e-9)
    # a loop shorter than the steady state is played whole: the "extension" is the last run itself
    short = run_hlo(hlo_from_text(_with_trips(4)), SLICE)
    assert short.program.extension.played == (4,) and short.time == run_hlo(hlo_from_text(_with_trips(4)), SLICE, unroll=True).time


def test_a_loop_whose_trips_are_alike_from_the_first_is_played_for_max_period_plus_two_trips(monkeypatch):
    """A loop of compute only: every trip takes the same time from the first, so MAX_PERIOD + 2 trips show it (one run each)."""
    monkeypatch.setattr(loops, "FULL_TRIPS", 2)
    text = re.sub(r"all-reduce\(%x\)[^\n]*", "negate(%x)", _with_trips(25))
    module = hlo_from_text(text)
    extended, every = run_hlo(module, SLICE), run_hlo(module, SLICE, unroll=True)
    assert extended.program.extension.played == (MAX_PERIOD + 2,) and extended.program.extension.runs == MAX_PERIOD + 2
    assert extended.time == pytest.approx(every.time, rel=1e-12)


def test_a_loop_run_the_memory_check_refuses_is_left_out_and_the_rest_extended(monkeypatch):
    """The memory check refuses the runs of more than 5 trips of each loop (as when other processes take the memory
    meanwhile): the loops are extended from the runs that fit, to the time every trip gives, not stopped by the refusal."""
    import netsim.programs.hlo.run as hlo_run
    from netsim.checks.memory import MemoryLimitError

    rows = default_device_map(8)
    module = hlo_from_text(_nested(17, 18))
    every = run_hlo(module, SLICE, unroll=True, device_map=rows)
    lines = [loop.line for loop in module.long_loops]
    five = hlo_run.lower_hlo(hlo_run._flattened(module.parsed, dict.fromkeys(lines, 5), "m"), hlo_run.resolve_topology(SLICE, None), rows)
    limit, refused = hlo_run.memory_needed(five.lowered).schedule, []

    def check(estimate, *args, **kwargs):
        if estimate.schedule > limit:
            refused.append(estimate.schedule)
            raise MemoryLimitError("refused")

    monkeypatch.setattr(hlo_run, "check_memory", check)
    tight = run_hlo(module, SLICE, device_map=rows)
    assert refused and max(tight.program.extension.played) <= 5
    assert tight.time == pytest.approx(every.time, rel=1e-9)


def test_nested_long_loops_are_extended_with_their_cross_term():
    # ids row-major over the slice: there each trip adds the same time from the third on (on the
    # TPU's own id order the trips of this module are still changing after 8, and the report says so)
    rows = default_device_map(8)
    module = hlo_from_text(_nested(17, 18))
    extended, every = run_hlo(module, SLICE, device_map=rows), run_hlo(module, SLICE, unroll=True, device_map=rows)
    assert [loop.trips for loop in extended.program.extension.loops] == [18, 17]
    assert extended.time == pytest.approx(every.time, rel=1e-9)
    huge = run_hlo(hlo_from_text(_nested(10**9, 10**6)), SLICE, device_map=rows)
    inner, outer = huge.program.extension.per_trip_s
    # one more trip of the inner loop runs once per outer trip: 10^9 times what one inner trip adds
    assert inner == pytest.approx(10**9 * extended.program.extension.per_trip_s[0] / 17, rel=1e-6)
    assert huge.time == pytest.approx(10**9 * outer, rel=1e-3)


def test_extend_fits_a_made_up_run_exactly():
    # 5 us of set-up; the first trip 4 us, then 3 us each: steady from the second trip
    extension, trips = extend((Loop("w", 4, 1000),), lambda t: 5e-6 + 4e-6 + 3e-6 * (t[4] - 1), lambda t: True)
    assert extension.steady and trips == {4: MAX_PERIOD + 2}
    assert extension.time_s == pytest.approx(5e-6 + 4e-6 + 3e-6 * 999, rel=1e-12)
    # a per-trip time that keeps changing is not extended: every trip is played when they fit, else refused
    played = []
    drifting, _ = extend((Loop("w", 4, 1000),), lambda t: played.append(t[4]) or float(t[4] ** 2), lambda t: True)
    assert drifting.time_s == 1000.0**2 and drifting.played == (1000,) and played[-1] == 1000 and "every trip played" in drifting.describe()[0]
    with pytest.raises(DriftError, match=r"^the time each trip adds neither settles nor repeats .* within the 32 trips played, and all 1000 are too many"):
        extend((Loop("w", 4, 1000),), lambda t: float(t[4] ** 2), lambda t: t[4] <= 40)


def test_the_report_says_what_was_extended():
    result = runner.invoke(app, ["program", "--hlo", str(HLO / "loop_1e12_trips.txt"), "--topology", SLICE, "--json"])
    assert result.exit_code == 0, result.output
    import json

    import jsonschema

    from netsim.cli.schema import PROGRAM

    data = json.loads(result.output)
    jsonschema.validate(data, PROGRAM)
    extended = data["hlo"]["loops_extended"]
    assert extended["loops"][0]["trips"] == 10**12 and extended["time_s"] == data["time_s"]
    assert data["time_s"] > 3e7  # 10^12 trips of about 30 us
    table = runner.invoke(app, ["program", "--hlo", str(HLO / "loop_1e12_trips.txt"), "--topology", SLICE])
    assert "loop extended" in table.output and "1000000000000 trips" in table.output.replace("\n", "")


def test_a_module_unrolling_into_too_many_steps_is_refused_with_the_number():
    body = "\n".join(f"  %e{i} = f32[8]{{0}} exponential(%p)" for i in range(800))
    loop = '  ROOT %w = f32[8]{0} while(%p), condition=%cond, body=BODY, backend_config={"known_trip_count":{"n":"16"}}'
    text = (
        "HloModule m\n"
        f"%many (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n{body}\n  ROOT %r = f32[8]{{0}} negate(%p)\n}}\n"
        f"%mid (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n{loop.replace('BODY', '%many')}\n}}\n"
        "%cond (p: f32[8]) -> pred[] {\n  ROOT %t = pred[] constant(true)\n}\n"
        f"ENTRY %main (p: f32[8]) -> f32[8] {{\n  %p = f32[8]{{0}} parameter(0)\n{loop.replace('BODY', '%mid')}\n}}\n"
    )
    # 16 trips of 16 trips of 801 compute steps: 205056 steps, counted before any is made
    with pytest.raises(
        ScenarioError, match=r"^m.txt: line 813: the module unrolls into 205056 steps, more than the 200000 netsim plays; simulate fewer loop trips"
    ):
        hlo_from_text(text, "m.txt")


# ---- files that are not HLO text ------------------------------------------------------


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_a_device_or_a_fifo_is_not_read(tmp_path):
    fifo = tmp_path / "module.txt"
    os.mkfifo(fifo)
    for path in ("/dev/zero", str(fifo), str(tmp_path)):
        started = time.perf_counter()
        result = runner.invoke(app, ["program", "--hlo", path, "--topology", SLICE])
        assert result.exit_code == 2 and time.perf_counter() - started < 10
        assert result.output == f"error: {path}: not a regular file (a device, a FIFO or a folder); give the text file of a compiled module\n"


def test_a_file_too_big_is_refused_naming_its_size_and_the_limit(tmp_path):
    big = tmp_path / "big.txt"
    with big.open("wb") as file:
        file.truncate(200 * 2**20)  # sparse: nothing written
    with pytest.raises(ScenarioError, match=r"big.txt: 200.0 MiB, more than the 64 MiB of HLO text netsim reads; simulate a smaller program"):
        load_hlo(big)


# ---- bad numbers and names --------------------------------------------------------------

BAD = [
    ("loop_minus_5_trips.txt", "line 27: while w: known_trip_count -5 is not a whole number from 0 to 10^18"),
    ("loop_5000_digit_trips.txt", "line 27: while w: known_trip_count 99999999999999999999... (5000 characters) is not a whole number from 0 to 10^18"),
    ("nested_5000_parentheses.txt", "line 4: a tuple shape nested more than 64 deep"),
    ("name_defined_twice.txt", "line 6: e is defined twice in main (first at line 5); rename one"),
    ("to_apply_names_nothing.txt", "line 5: all-reduce ar: to_apply=%nowhere names no computation of the module"),
    ("num_partitions_huge.txt", "line 1: num_partitions=99999999999: expected a whole number of devices from 1 to 65536"),
    ("num_partitions_zero.txt", "line 1: num_partitions=0: expected a whole number of devices from 1 to 65536"),
    ("shape_100_dims.txt", "line 4: parameter p: a shape of 100 dimensions; at most 32"),
    (
        "shape_huge_dims.txt",
        "line 4: parameter p: the shape f32[1099511627776,1099511627776,0] is too large: its dims (zeros left out) multiply to more than 2^50 bytes"
        " (1 PiB); give the real shape",
    ),
]


@pytest.mark.parametrize(("name", "message"), BAD)
def test_bad_modules_are_one_line_naming_the_file_and_line(name, message):
    path = HLO / name
    result = runner.invoke(app, ["program", "--hlo", str(path), "--topology", SLICE])
    assert result.exit_code == 2
    assert result.output == f"error: {path}: {message}\n"


def test_a_huge_name_is_not_echoed_whole():
    text = "HloModule m, num_partitions=8\nENTRY %main () -> f32[] {\n  %" + "n" * 2_000_000 + " = f32[] add(%a, %b)\n}\n"
    with pytest.raises(ScenarioError) as caught:
        hlo_from_text(text, "m.txt")
    assert len(str(caught.value)) < 300 and "(2000001 characters)" in str(caught.value)


def test_a_computation_calling_itself_is_refused():
    call = "(p: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n  ROOT %c = f32[] call(%p), to_apply=%f\n}\n"
    text = f"HloModule m\n%f {call}ENTRY %main {call}"
    with pytest.raises(ScenarioError, match=r"^m.txt: line 4: computation f calls itself \(through f -> f\)$"):
        hlo_from_text(text, "m.txt")


def test_a_huge_name_in_an_error_is_cut_once_to_one_short_line(tmp_path):
    from netsim.programs.hlo.text import HloSyntaxError

    name = "p" + "Q" * 1_999_999
    path = tmp_path / "m.txt"
    path.write_text((HLO / "shape_huge_dims.txt").read_text().replace("%p = ", f"%{name} = "))
    result = runner.invoke(app, ["program", "--hlo", str(path), "--topology", SLICE])
    assert result.exit_code == 2
    message = (
        f"line 4: parameter {name[:60]}... (2000000 characters): the shape f32[1099511627776,1099511627776,0] is too large:"
        " its dims (zeros left out) multiply to more than 2^50 bytes (1 PiB); give the real shape"
    )
    assert result.output == f"error: {path}: {message}\n"
    assert len(message) < 300
    assert str(HloSyntaxError(3, f"negate x: unknown operand {name!r}")) == f"line 3: negate x: unknown operand '{name[:59]}... (2000002 characters)"


def test_a_huge_collective_name_keeps_the_colon_after_its_cut(tmp_path):
    name = "n" * 2_000_000
    path = tmp_path / "m.txt"
    path.write_text(
        f"HloModule m, num_partitions=8\nENTRY %main (p: f32[8]) -> f32[8] {{\n  %p = f32[8] parameter(0)\n"
        f"  ROOT %{name} = f32[8] collective-permute(%p), source_target_pairs={{{{0,1}},{{0,2}}}}\n}}\n"
    )
    result = runner.invoke(app, ["program", "--hlo", str(path), "--topology", SLICE])
    assert result.exit_code == 2
    message = f"line 4: collective-permute {'n' * 60}... (2000001 characters): source_target_pairs repeat the source 0: {{0,1}} and {{0,2}} both send from it"
    assert result.output == f"error: {path}: {message}\n" and len(message) < 300
