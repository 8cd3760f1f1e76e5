"""Every command's terminal output fits the width it is given: 80 columns, no trailing spaces, numbers and shapes whole; never lost when narrow."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import ROOT
from rich.cells import cell_len
from typer.testing import CliRunner

from netsim.cli.main import app

runner = CliRunner()

TWO_FIELDS = {
    "name": "two_fields",
    "base": {
        "name": "mlp",
        "topology": "tpu-v5e:2x2",
        "mesh": {"data": 2, "model": 2},
        "params": {"B": 64, "D": 128, "F": 256},
        "arrays": {
            "x": {"shape": ["B", "D"], "dtype": "bfloat16", "sharding": ["data", None]},
            "W1": {"shape": ["D", "F"], "dtype": "bfloat16", "sharding": [None, "model"]},
            "W2": {"shape": ["F", "D"], "dtype": "bfloat16", "sharding": ["model", None]},
        },
        "ops": [
            {"name": "up", "op": "matmul", "in": ["x", "W1"], "out": "h"},
            {"name": "down", "op": "matmul", "in": ["h", "W2"], "out": "p"},
            {"name": "ar", "op": "psum", "in": "p", "axes": "model", "out": "y"},
        ],
        "data": "none",
    },
    "grid": {"params.B": [64], "topology": ["tpu-v5e:2x2", "tpu-v6e:2x2"]},
}

COMMANDS = {
    "run": ["run", "scenarios/allgather_ring8.yaml"],
    "run torus": ["run", "scenarios/psum_torus4x4_link_down.yaml"],
    "estimate": ["estimate", "scenarios/allgather_ring8.yaml"],
    "estimate ppermute": ["estimate", "scenarios/ppermute_multipath_corner.yaml"],
    "explain": ["explain", "scenarios/allgather_ring8.yaml"],
    "explain step": ["explain", "scenarios/allgather_ring8.yaml", "--step", "2"],
    "explain device": ["explain", "scenarios/allgather_torus4x4_multiaxis.yaml", "--device", "1"],
    "program": ["program", "scenarios/programs/megatron_mlp.yaml"],
    "program hlo": ["program", "scenarios/programs/hlo/fsdp_matmul.yaml"],
    "program --hlo": ["program", "--hlo", "scenarios/programs/hlo/psum.txt", "--topology", "tpu-v5e:2x4"],
}


def _check_width(text: str, width: int) -> None:
    for line in text.splitlines():
        assert cell_len(line) <= width, f"{cell_len(line)} columns: {line!r}"
        assert line == line.rstrip(), f"trailing spaces: {line!r}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_fits_80_columns_without_trailing_spaces(name, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = runner.invoke(app, COMMANDS[name], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    _check_width(out.output, 80)


def test_a_shape_is_never_split_across_lines():
    out = runner.invoke(app, ["program", str(ROOT / "scenarios/programs/hlo/fsdp_matmul.yaml")], env={"COLUMNS": "80"})
    assert re.search(r"^all-gather\s+all-gather \(8\)\s+f32\[128,4096\]\s", out.output, re.MULTILINE), out.output


def test_a_sweep_over_two_fields_fits_80_columns_and_shows_both(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # (a path is never split: keep it short)
    (tmp_path / "two.yaml").write_text(yaml.safe_dump(TWO_FIELDS))
    out = runner.invoke(app, ["sweep", "two.yaml", "-o", "out", "-j", "1"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    _check_width(out.output, 80)
    lines = out.output.splitlines()
    assert lines[1].split() == ["#", "B", "topology", "time", "compute", "in", "flight", "exposed"]
    rows = [line.split()[:3] for line in lines[3:5]]
    assert rows == [["0", "64", "tpu-v5e:2x2"], ["1", "64", "tpu-v6e:2x2"]]
    assert "\n2 points: 2 ok, 0 failed" in out.output and lines[-1].endswith("time_vs_field.png")


@pytest.mark.parametrize("columns", ["0", "20"])
@pytest.mark.parametrize(
    "command",
    [["run", "scenarios/allgather_ring8.yaml"], ["program", "scenarios/programs/allgather_matmul.yaml"], ["estimate", "scenarios/allgather_ring8.yaml"]],
)
def test_a_narrow_or_zero_width_terminal_still_gets_the_whole_result(columns, command, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = runner.invoke(app, command, env={"COLUMNS": columns})
    assert out.exit_code == 0, out.output
    _check_width(out.output, 60)  # drawn 60 columns wide, the narrowest that reads
    for needle in ("27.389 us", "allgather_ring8") if command[0] != "program" else ("gather", "12 us", "2.265 us"):
        assert needle in out.output
    assert "time │ us" not in out.output


def test_link_names_of_a_sliced_run_are_whole_or_cut_with_an_ellipsis_never_wrapped(tmp_path):
    text = (ROOT / "scenarios" / "psum_v5e_2slices_hierarchical.yaml").read_text()
    path = tmp_path / "ring.yaml"
    path.write_text(text.replace("algorithm: hierarchical", "algorithm: ring").split("expected:")[0])
    out = runner.invoke(app, ["run", str(path)], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output
    _check_width(out.output, 80)
    table = out.output.split("busiest links\n")[1].split("\ndevices")[0].splitlines()
    rows = [line.split("│") for line in table if line.startswith("│")]
    assert [r[1].strip() for r in rows] == ["nic0->(0,0,0)", "nic4->(1,0,0)", "switch->nic0", "switch->nic4", "nic0->switch"]  # one line each
    assert [c.strip() for c in rows[-1][2:-1]] == ["1.938 MiB", "62", "162.529 us", "77.3 %", "4", "68.8128 us"]  # numbers whole
    assert "queue" in table[2] and "max" in table[1]  # the header over two lines left the names their room
