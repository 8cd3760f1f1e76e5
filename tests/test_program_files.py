"""Program files: the bundled programs and their expected times, `netsim program`, and bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import netsim
from netsim.analysis.program_stats import program_stats
from netsim.cli.main import app
from netsim.programs.files import load_program, program_from_data
from netsim.scenario import ScenarioError

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted((ROOT / "scenarios" / "programs").glob("*.yaml"))
runner = CliRunner()


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_every_bundled_program_runs_verified_in_its_expected_time(path):
    loaded = load_program(path)
    result = netsim.run_program(path)
    assert result.verified and loaded.data == "values"
    assert all(difference <= allowed for difference, allowed in result.program.checks.values())
    assert result.time == pytest.approx(loaded.expected.time_s, rel=1e-12)


def _op(stats, name):
    return next(op for op in stats.ops if op.name == name)


def test_fsdp_hides_the_second_gather_behind_the_first_layer():
    stats = program_stats(netsim.run_program(ROOT / "scenarios/programs/fsdp_two_layers.yaml"))
    gather1, gather2, layer1, layer2 = (_op(stats, n) for n in ("gather_W1", "gather_W2", "layer1", "layer2"))
    # layer i: x [3072, 256] @ W [256, 256] in bf16 per chip, HBM-bound on a v5e: (3072*256 + 256*256 + 3072*256) * 2 bytes / 810 GB/s
    layer = (3072 * 256 * 2 + 256 * 256) * 2 / 810e9
    assert layer1.time_s == pytest.approx(layer, rel=1e-12) and layer2.time_s == pytest.approx(layer, rel=1e-12)
    assert gather2.end_s < layer1.end_s  # the second gather travels while the first layer multiplies
    # each chip's links carry, per gather, three blocks of 64 x 256 bf16 (its own to two neighbours, one forwarded)
    assert all(d["link_busy_s"] == pytest.approx(2 * 3 * 64 * 256 * 2 / 45e9, rel=1e-12) for d in stats.devices)
    assert all(d["compute_busy_s"] == pytest.approx(2 * layer, rel=1e-12) for d in stats.devices)
    assert stats.time_s == pytest.approx(gather1.time_s + 2 * layer, rel=1e-12)


def test_the_collective_matmul_is_faster_and_says_why():
    plain = program_stats(netsim.run_program(ROOT / "scenarios/programs/allgather_matmul.yaml"))
    overlapped = program_stats(netsim.run_program(ROOT / "scenarios/programs/collective_matmul.yaml"))
    assert overlapped.time_s < plain.time_s
    assert plain.exposed_communication_s == plain.communication_s  # the matmul waits for the whole gather
    assert overlapped.exposed_communication_s < overlapped.communication_s
    assert "collective matmul multiplies each block as it arrives" in overlapped.why


def test_json_reports_the_fields_and_a_trace_has_compute_tracks(tmp_path):
    trace = tmp_path / "run.json"
    result = runner.invoke(app, ["program", str(ROOT / "scenarios/programs/megatron_mlp.yaml"), "--json", "--trace", str(trace)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for key in ("time_s", "compute_s", "communication_s", "exposed_communication_s", "verified", "devices_compute", "ops"):
        assert key in data
    assert data["devices_compute"] == {"peak_flops": 1.97e14, "hbm_bandwidth_Bps": 8.1e11, "compute_efficiency": 1.0}
    assert [op["name"] for op in data["ops"]] == ["gather_x", "up", "down", "reduce_scatter"]
    assert [op["bound"] for op in data["ops"]] == ["ICI", "HBM", "HBM", "ICI"]
    events = json.loads(trace.read_text())["traceEvents"]
    compute = [e for e in events if e.get("cat") == "compute"]
    assert len(compute) == 2 * 16 and {e["name"] for e in compute} == {"up", "down"}


def test_timing_only_gives_the_same_time():
    path = ROOT / "scenarios/programs/megatron_mlp.yaml"
    timed = netsim.run_program(path, data="none")
    assert timed.output is None and not timed.verified
    assert timed.time == netsim.run_program(path).time


BASE = {
    "name": "p",
    "topology": "tpu-v5e:4x4",
    "mesh": {"X": 4, "Y": 4},
    "arrays": {"A": {"shape": [64, 256], "dtype": "bfloat16", "sharding": [None, "X"]}, "B": {"shape": [256, 32], "dtype": "bfloat16"}},
    "ops": [
        {"name": "gather", "op": "all_gather", "in": "A", "axes": "X", "axis": 1, "tiled": True, "out": "A_full"},
        {"name": "mm", "op": "matmul", "in": ["A_full", "B"], "out": "C"},
    ],
}


def _with(path: str, value):
    data = yaml.safe_load(yaml.safe_dump(BASE))
    *parents, last = path.split(".")
    node = data
    for part in parents:
        node = node[int(part)] if part.isdigit() else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("ops.1.colour", "red", "bad.yaml: ops.1.colour: unknown field; matmul takes: name, op, in, out, after, algorithm, efficiency, overlap"),
        ("ops.1.in", ["A_full", "Q"], "bad.yaml: ops.1.in: op 'mm': no array 'Q'; known so far: A, B, A_full"),
        ("arrays.A.shape", [64, 250], "bad.yaml: arrays.A.shape: dimension 1 of 250 does not split into 4 shards over X"),
        (
            "arrays.B.shape",
            [128, 32],
            "bad.yaml: ops.1.in: op 'mm': the contracting dimension is 256 in one operand and 128 in the other: the shapes do not match",
        ),
        ("ops.0.axis", 0, "bad.yaml: ops.0.axis: op 'gather': dimension 0 is split over no axis, not over X (last): nothing to gather there"),
        ("ops.0.axes", "Z", "bad.yaml: ops.0.axes: op 'gather': no mesh axis 'Z'; the mesh has X, Y"),
        ("ops.1.flops", 5, "bad.yaml: ops.1: matmul takes no flops; its fields are: name, op, in, out, after, algorithm, efficiency, overlap"),
        ("ops.1.op", "conv", "bad.yaml: ops.1.op: "),
    ],
)
def test_a_bad_program_file_gets_one_line_naming_the_op_and_field_and_exit_2(tmp_path, path, value, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_with(path, value)))
    trace = tmp_path / "trace.json"
    result = runner.invoke(app, ["program", str(bad), "--trace", str(trace)])
    assert result.exit_code == 2
    line = result.output.strip().replace(str(tmp_path) + "/", "")
    assert line.startswith("error: " + message), line
    assert "\n" not in line and not trace.exists()


def test_program_errors_name_the_source_from_python():
    with pytest.raises(ScenarioError, match=r"^inline: ops\.1\.in: op 'mm': "):
        program_from_data(_with("ops.1.in", ["A", "B"]), "inline")


def test_timeline_draws_a_compute_row_per_device(tmp_path):
    out = tmp_path / "fsdp.png"
    result = runner.invoke(app, ["timeline", str(ROOT / "scenarios/programs/fsdp_two_layers.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 10_000
    from netsim.teaching.timeline import compute_rows

    rows = compute_rows(netsim.run_program(ROOT / "scenarios/programs/fsdp_two_layers.yaml", data="none"))
    assert [device for device, _ in rows] == [0, 1, 2, 3]
    assert all([name for _, _, name in steps] == ["layer1", "layer2"] for _, steps in rows)


def test_a_program_too_big_for_values_is_refused_before_it_runs():
    data = {**BASE, "arrays": {"A": {"shape": [16384, 16384], "dtype": "bfloat16", "sharding": [None, "X"]}, "B": {"shape": [16384, 32], "dtype": "bfloat16"}}}
    with pytest.raises(ScenarioError, match=r"^<program>: data: real values would hold about \d+(\.\d+)? GiB of arrays \(more than 2 GiB\); run it"):
        netsim.run_program(data)
    assert netsim.run_program(data, data="none").time > 0


def test_running_a_program_file_as_a_scenario_says_what_it_is_and_back():
    result = runner.invoke(app, ["run", str(ROOT / "scenarios/programs/megatron_mlp.yaml")])
    assert result.exit_code == 2
    assert result.output.strip().endswith("megatron_mlp.yaml: this is a program file (it has ops): run it with `netsim program` or netsim.run_program")
    result = runner.invoke(app, ["program", str(ROOT / "scenarios/allgather_ring8.yaml")])
    assert result.exit_code == 2
    assert result.output.strip().endswith("allgather_ring8.yaml: this is a scenario file (it has a collective): run it with `netsim run` or netsim.simulate")


def test_a_gradient_reduce_scatter_takes_what_the_bundled_scenario_takes():
    """psum_scatter of per-device addends over both mesh axes: the scenario psum_scatter_torus4x4_mesh_axes.yaml, as a program."""
    scenario = netsim.simulate(netsim.load_scenario(ROOT / "scenarios/psum_scatter_torus4x4_mesh_axes.yaml"))
    program = {
        "name": "gradients",
        "topology": "torus4x4",
        "mesh": {"shape": {"data": 4, "model": 4}, "axis_dims": {"data": 1, "model": 0}},
        "arrays": {"g": {"shape": [262144], "dtype": "int32", "partial": ["data", "model"]}},
        "ops": [{"name": "rs", "op": "psum_scatter", "in": "g", "axes": ["data", "model"], "scatter_dimension": 0, "tiled": True, "out": "g_sum"}],
    }
    result = netsim.run_program(program)
    assert result.time == scenario.time
    assert result.verified and result.program.checks["g_sum"] == (0.0, 0.0)  # integers: exact
    assert load_program(ROOT / "scenarios/programs/megatron_mlp.yaml").program.arrays["x"].partial == ()


def test_cli_runs_timing_only_on_either_engine():
    path = str(ROOT / "scenarios/programs/collective_matmul.yaml")
    outputs = [json.loads(runner.invoke(app, ["program", path, "--json", "--data", "none", "--engine", engine]).output) for engine in ("fast", "processes")]
    assert outputs[0]["time_s"] == outputs[1]["time_s"] == load_program(path).expected.time_s
    assert not outputs[0]["verified"] and outputs[0]["checks"] == {}
    bad = runner.invoke(app, ["program", path, "--data", "some"])
    assert bad.exit_code == 2 and "data must be 'values' or 'none'" in bad.output


def test_program_json_follows_its_schema():
    import jsonschema

    from netsim.cli.schema import schema

    for name in ("collective_matmul", "fsdp_two_layers"):
        result = runner.invoke(app, ["program", str(ROOT / f"scenarios/programs/{name}.yaml"), "--json"])
        jsonschema.validate(json.loads(result.output), schema("program"))
    printed = runner.invoke(app, ["schema", "program"])
    assert printed.exit_code == 0 and json.loads(printed.output)["title"] == "netsim program --json"
