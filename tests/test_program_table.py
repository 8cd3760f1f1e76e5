"""`netsim program`'s ops, as a collective's run reads: algorithm, bytes, closed form and its kind, why, times on one chip, units."""

from __future__ import annotations

import json

import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.analysis.program_stats import program_stats
from netsim.analysis.why import analyse
from netsim.cli.main import app

runner = CliRunner()

MLP2 = {
    "name": "mlp2",
    "topology": "tpu-v5e:4x4",
    "mesh": {"data": 4, "model": 4},
    "params": {"B": 256, "D": 512, "F": 1024},
    "arrays": {
        "x": {"shape": ["B", "D"], "dtype": "bfloat16", "sharding": ["data", None]},
        "W1": {"shape": ["D", "F"], "dtype": "bfloat16", "sharding": [None, "model"]},
        "W2": {"shape": ["F", "D"], "dtype": "bfloat16", "sharding": ["model", None]},
        "W3": {"shape": ["D", "F"], "dtype": "bfloat16", "sharding": [None, "model"]},
    },
    "ops": [
        {"name": "up1", "op": "matmul", "in": ["x", "W1"], "out": "h1"},
        {"name": "down1", "op": "matmul", "in": ["h1", "W2"], "out": "p1"},
        {"name": "ar1", "op": "psum", "in": "p1", "axes": "model", "out": "y1"},
        {"name": "up2", "op": "matmul", "in": ["y1", "W3"], "out": "h2"},
    ],
    "data": "none",
}

PSUM = {
    "name": "psum_model",
    "topology": "tpu-v5e:4x4",
    "mesh": {"data": 4, "model": 4},
    "collective": {"op": "psum", "axes": ["model"]},
    "input": {"shape": [64, 512], "dtype": "bfloat16"},
    "data": "none",
}


@pytest.fixture(scope="module")
def mlp2(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlp2")
    (folder / "mlp2.yaml").write_text(yaml.safe_dump(MLP2))
    (folder / "psum.yaml").write_text(yaml.safe_dump(PSUM))
    return folder


def test_a_programs_psum_says_what_the_same_psum_run_as_a_scenario_says(mlp2):
    out = runner.invoke(app, ["program", str(mlp2 / "mlp2.yaml"), "--json"])
    assert out.exit_code == 0, out.output
    ar1 = next(op for op in json.loads(out.output)["ops"] if op["name"] == "ar1")
    alone = netsim.simulate(netsim.load_scenario(mlp2 / "psum.yaml"))
    a = analyse(alone)
    # the model axis of a v5e 4x4 has no wraparound: a lower bound, the registry's, as `netsim run` says
    assert a.estimate.kind == "lower_bound" and ar1["estimate_kind"] == "lower_bound"
    assert ar1["estimate_s"] == pytest.approx(a.estimate.time_s, rel=1e-12)
    assert ar1["algorithm"] == alone.algorithm == "multiaxis"
    assert ar1["bytes_per_device"] == 64 * 512 * 2
    assert ar1["time_s"] == pytest.approx(alone.time, rel=1e-9)  # nothing else runs beside it
    assert ar1["why"].startswith(f"{alone.time / a.estimate.time_s:.3f}x the lower bound: ")
    up1 = next(op for op in json.loads(out.output)["ops"] if op["name"] == "up1")
    assert up1["estimate_kind"] == "exact" and up1["algorithm"] is None and up1["why"].startswith("as the estimate: ")


def test_the_program_table_shows_kind_algorithm_bytes_and_why(mlp2):
    out = runner.invoke(app, ["program", str(mlp2 / "mlp2.yaml")], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("ar1 "))
    assert row.split()[1] == "psum" and row.split()[-1] == "lower"
    assert "  ar1 (psum, multiaxis, 64 KiB per device, ICI-bound): " in out.output
    assert "x the lower bound: " in out.output


def test_the_hlo_table_shows_kind_and_why_and_never_splits_a_shape():
    out = runner.invoke(app, ["program", str(ROOT / "scenarios/programs/hlo/fsdp_matmul.yaml")], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    row = next(line for line in out.output.splitlines() if line.startswith("all-gather "))
    assert "f32[128,4096]" in row and row.split()[-1] == "lower"
    assert "  all-gather (multiaxis, 2 MiB per device): " in out.output
    data = json.loads(runner.invoke(app, ["program", str(ROOT / "scenarios/programs/hlo/fsdp_matmul.yaml"), "--json"]).output)
    (gather,) = data["collectives"]
    assert gather["estimate_kind"] == "lower_bound" and gather["why"].startswith(f"{gather['time_s'] / gather['estimate_s']:.3f}x the lower bound")


@pytest.mark.parametrize("name", ["allgather_matmul", "megatron_mlp", "fsdp_two_layers"])
def test_an_op_never_starts_before_the_op_it_reads_ends(name):
    """Start and end are on one chip (the critical one): an op reading another's output starts there after it ends."""
    result = netsim.run_program(ROOT / f"scenarios/programs/{name}.yaml")
    stats = program_stats(result)
    by_name = {op.name: op for op in stats.ops}
    ops = result.program.lowered.ops
    writer = {record.op.output: record.op.name for record in ops}
    pairs = [(writer[i], record.op.name) for record in ops for i in record.op.inputs if i in writer]
    assert pairs
    for before, after in pairs:
        assert by_name[after].device == by_name[before].device == stats.critical_device
        assert by_name[after].start_s >= by_name[before].end_s - 1e-15, (before, after)
        assert by_name[after].first_start_s <= by_name[after].start_s <= by_name[after].end_s <= by_name[after].last_end_s


def test_large_times_print_in_ms_as_netsim_run_does(tmp_path):
    program = {
        "name": "long",
        "topology": "tpu-v5e:2x2",
        "mesh": {"X": 4},
        "arrays": {"a": {"shape": [4, 8], "dtype": "float32", "sharding": ["X", None]}},
        "ops": [{"name": "work", "op": "compute", "in": "a", "flops": 7.36e13}],
        "data": "none",
    }
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(program))
    out = runner.invoke(app, ["program", str(path)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    assert "e+0" not in out.output
    assert "│ time                     │ 373.604 ms" in out.output  # 7.36e13 FLOP / 197 TFLOP/s
    assert next(line for line in out.output.splitlines() if line.startswith("work ")).split()[-3:-1] == ["373.6", "ms"]
