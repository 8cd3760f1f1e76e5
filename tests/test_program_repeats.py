"""Program files with ``repeat: N`` blocks: unrolled as a scan would run, extended from a few trips, equal to every trip played.

Loops whose trips are constant (FSDP layers: a gather then a matmul on the carry),
periodic (a ppermute round a ring of 4: every 4th trip adds 2 us more) and two blocks one
after another (a forward then a backward pass) are run extended and with ``unroll: true``;
the times agree to 1e-12. Drifting trips are played whole (tests/test_loop_periods.py
holds the pure cases).
"""

from __future__ import annotations

import json
import time

import jsonschema
import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.cli.schema import PROGRAM
from netsim.programs import periods
from netsim.programs.files import program_from_data
from netsim.programs.model import Op
from netsim.programs.periods import MAX_PERIOD
from netsim.programs.repeats import Block, unrolled
from netsim.programs.run import run_program
from netsim.scenario import ScenarioError

runner = CliRunner()

SHIFT = [[0, 1], [1, 2], [2, 3], [3, 0]]
_BAD_MATMUL = {"name": "m", "op": "matmul", "in": ["x", "Q"], "out": "z"}


def _fsdp(layers: int, **more) -> dict:
    return {
        "name": "fsdp_repeat",
        "topology": "tpu-v5e:2x2",
        "mesh": {"X": 2, "Y": 2},
        "data": "none",
        "arrays": {
            "x": {"shape": [1024, 256], "dtype": "bfloat16", "sharding": [["X", "Y"], None]},
            "W": {"shape": [256, 256], "dtype": "bfloat16", "sharding": [["X", "Y"], None]},
        },
        "ops": [
            {
                "repeat": layers,
                "ops": [
                    {"name": "gather", "op": "all_gather", "in": "W", "axes": ["X", "Y"], "axis": 0, "tiled": True, "out": "W_full"},
                    {"name": "layer", "op": "matmul", "in": ["x", "W_full"], "out": "x"},
                ],
            },
            {"name": "head", "op": "matmul", "in": ["x", "W_full"], "out": "y"},
        ],
        **more,
    }


def _ring(trips: int) -> dict:
    return {
        "name": "ring_repeat",
        "topology": "tpu-v5e:2x4",
        "mesh": {"X": 2, "Y": 4},
        "data": "none",
        "arrays": {"b": {"shape": [256, 256], "dtype": "float32", "sharding": ["X", "Y"]}},
        "ops": [
            {
                "repeat": trips,
                "ops": [
                    {"name": "shift", "op": "ppermute", "in": "b", "axes": "Y", "perm": SHIFT, "out": "b"},
                    {"name": "scale", "op": "compute", "in": ["b"], "flops": 1e6, "bytes": 1e5},
                ],
            }
        ],
    }


def _both(data: dict):
    extended = run_program(data)
    every = run_program({**data, "unroll": True})
    return extended, every


def test_a_block_unrolls_as_a_scan_runs_its_carry():
    gather = Op.of("g", "all_gather", ("W",), "Wf", axes=("X",), axis=0, tiled=True, after=("mm",))
    mm = Op.of("mm", "matmul", ("x", "Wf"), "x")
    ops = unrolled([Block(3, (gather, mm)), Op.of("out", "matmul", ("x", "Wf"), "y", after=("g",))])
    assert [(op.name, op.inputs, op.output, op.after) for op in ops] == [
        ("g@1", ("W",), "Wf@1", ()),  # no earlier trip: its after names nothing yet
        ("mm@1", ("x", "Wf@1"), "x@1", ()),
        ("g@2", ("W",), "Wf@2", ("mm@1",)),  # after the previous trip's matmul
        ("mm@2", ("x@1", "Wf@2"), "x@2", ()),
        ("g@3", ("W",), "Wf@3", ("mm@2",)),
        ("mm@3", ("x@2", "Wf@3"), "x@3", ()),
        ("out", ("x@3", "Wf@3"), "y", ("g@3",)),  # after the block: its last trip's arrays and ops
    ]
    assert len(unrolled([Block(3, (gather, mm))], [1])) == 2


def test_steady_layers_extended_equal_every_layer_played():
    extended, every = _both(_fsdp(30))
    (block,) = extended.program.repeats.blocks
    assert block.pattern == "steady" and block.played < 30 and every.program.repeats is None
    assert extended.time == pytest.approx(every.time, rel=1e-12)
    assert len(extended.program.lowered.program.ops) == 2 * block.played + 1


def test_periodic_trips_extended_equal_every_trip_played():
    extended, every = _both(_ring(43))
    (block,) = extended.program.repeats.blocks
    assert (block.pattern, block.period) == ("periodic", 4) and (43 - block.played) % 4 == 0
    assert extended.time == pytest.approx(every.time, rel=1e-12)
    # the 4th trip adds 2 us more than the three before it: a steady state would miss a quarter of that
    assert block.period_s == pytest.approx(4 * block.per_trip_s) and every.time > 43 * 1.7e-6


def test_a_forward_and_a_backward_block_extended_equal_every_trip_played():
    data = _fsdp(25)
    backward = {
        "repeat": 25,
        "ops": [
            {"name": "regather", "op": "all_gather", "in": "W", "axes": ["X", "Y"], "axis": 0, "tiled": True, "out": "V_full"},
            {"name": "grad", "op": "matmul", "in": ["y", "V_full"], "out": "y"},
        ],
    }
    data["ops"] = [*data["ops"], backward]
    extended, every = _both(data)
    assert [b.pattern for b in extended.program.repeats.blocks] == ["steady", "steady"]
    assert extended.time == pytest.approx(every.time, rel=1e-12)


def test_a_short_block_and_a_run_with_values_play_every_trip():
    short = run_program(_fsdp(MAX_PERIOD + 2))
    assert short.program.repeats.blocks[0].pattern == "played"
    assert short.time == run_program(_fsdp(MAX_PERIOD + 2, unroll=True)).time
    valued = run_program({**_fsdp(4), "data": "values"})
    assert valued.verified and valued.program.repeats is None and "x@4" in valued.output


def test_the_report_and_json_say_what_was_extended(tmp_path):
    import yaml

    path = tmp_path / "ring.yaml"
    path.write_text(yaml.safe_dump(_ring(43)))
    result = runner.invoke(app, ["program", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    jsonschema.validate(data, PROGRAM)
    (block,) = data["repeats"]["blocks"]
    assert (block["trips"], block["pattern"], block["period"]) == (43, "periodic", 4) and data["repeats"]["time_s"] == data["time_s"]
    table = runner.invoke(app, ["program", str(path)])
    words = " ".join(table.output.replace("│", " ").split())
    assert "repeat extended block 1: 43 trips;" in words and "every further 4 trips add" in words


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"repeat": 0, "ops": [{"name": "c", "op": "compute", "seconds": 1e-6}]}, "ops.0.repeat: Input should be greater than or equal to 1"),
        ({"repeat": 2, "ops": []}, "ops.0.ops: List should have at least 1 item after validation, not 0"),
        ({"repeat": 2, "ops": [{"name": "c", "op": "compute", "seconds": 1e-6}, _BAD_MATMUL]}, "ops.0.ops.1.in: op 'm@1': no array 'Q'"),
    ],
)
def test_a_bad_block_names_its_field(block, message):
    data = {**_fsdp(2), "ops": [block]}
    with pytest.raises(ScenarioError) as error:
        program_from_data(data, "p.yaml")
    assert str(error.value).startswith(f"p.yaml: {message}")


LLAMA = ROOT / "scenarios" / "programs" / "steps" / "llama70b_train_step.yaml"


def test_the_llama_step_of_8_layers_extended_equals_its_8_layers_played(monkeypatch):
    """The Llama-2-70B-shaped step's file (forward block, loss, backward block, update) at small shapes on 8 chips, 8 layers:
    a window of MAX_PERIOD 2 makes 8 layers enough to extend (with the default 8, so few layers are played whole)."""
    import yaml

    data = yaml.safe_load(LLAMA.read_text())
    assert [item["repeat"] for item in data["ops"] if "repeat" in item] == [80, 80]
    # fsdp over two physical axes (as the file's 256 over 16x16); with {fsdp: 2, tp: 4} the blocks do not add, by 1e-15 of a
    # run's time (the model's nanoseconds), and every trip is played
    data.update(topology="tpu-v5p:2x2x2", mesh={"fsdp": 4, "tp": 2}, params={"T": 512, "D": 256, "F": 512, "KV": 64, "V": 1024})
    data["ops"] = [{**item, "repeat": 8} if "repeat" in item else item for item in data["ops"]]
    monkeypatch.setattr(periods, "MAX_PERIOD", 2)
    extended, every = _both(data)
    assert all(block.played < 8 and block.pattern == "steady" for block in extended.program.repeats.blocks)
    assert extended.time == pytest.approx(every.time, rel=1e-9)


def test_a_million_trips_load_and_extend_in_seconds_and_unrolling_them_is_refused():
    started = time.perf_counter()
    million = run_program(_ring(10**6))
    (block,) = million.program.repeats.blocks
    assert time.perf_counter() - started < 30 and block.period == 4
    # 44 trips (the same phase of the period), plus whole periods at what a period adds
    forty_four = run_program({**_ring(44), "unroll": True})
    assert million.time == pytest.approx(forty_four.time + (10**6 - 44) // 4 * block.period_s, rel=1e-12)
    refused = r"^p.yaml: ops: the repeat: blocks unroll into 2000000 ops, more than the 1048576 netsim plays; run it timing-only"
    with pytest.raises(ScenarioError, match=refused):
        run_program(program_from_data({**_ring(10**6), "unroll": True}, "p.yaml"))


def test_a_repeat_whose_steady_run_cannot_fit_is_refused_before_any_run(monkeypatch):
    """The run reported has at least MAX_PERIOD + 2 trips of each block: when its estimate does not fit, the file is
    refused at once (naming that run), not after the runs of fewer trips."""
    import netsim.checks.memory as memory
    import netsim.programs.run as program_run

    def no_run(*args, **kwargs):
        raise AssertionError("a run was played")

    monkeypatch.setattr(memory, "available_memory", lambda: 2**17)  # 128 KiB
    monkeypatch.setattr(program_run, "_run_model", no_run)
    least = MAX_PERIOD + 2
    refused = (
        rf"^p.yaml: ops: repeat: extending its blocks plays a run of {least} trips at the least, and that run needs about .* "
        r"but only 128 KiB is available; use fewer devices or ops, or an algorithm with fewer steps$"
    )
    with pytest.raises(ScenarioError, match=refused):
        run_program(program_from_data(_fsdp(40), "p.yaml"))
    with pytest.raises(ScenarioError, match=r"^p.yaml: ops: repeat: extending its blocks plays a run of 4 trips at the least, "):
        run_program(program_from_data(_fsdp(4), "p.yaml"))  # (a block of 4 trips is played whole)


def test_a_change_within_eight_trips_of_those_played_plays_every_trip():
    """Trips of 1 us, then 1.5 us from the 15th: the runs up to 10 trips look steady, the check 8 trips further on
    does not add up, and every trip is played (extended, it would be 13 us short at 40 trips)."""
    from netsim.programs.repeats import extend_blocks

    def time_at(trips: tuple[int, ...]) -> float:
        (k,) = trips
        return 1e-6 * k + (0.5e-6 * (k - 14) if k > 14 else 0.0)

    extension = extend_blocks((40,), time_at)
    assert extension.blocks[0].pattern == "played" and extension.time_s == time_at((40,))
    steady = extend_blocks((40,), lambda trips: 1e-6 * trips[0])  # (the same check passes where trips stay steady)
    assert steady.blocks[0].pattern == "steady" and steady.played == (10,) and steady.time_s == pytest.approx(40e-6, rel=1e-12)
