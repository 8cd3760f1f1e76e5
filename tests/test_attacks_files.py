"""Attacks through the scenario file and the terminal: YAML aliases, recursive documents, huge numbers,
long names, escape sequences, relative paths, and standard output on a full disk."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.scenario.yaml_files import MAX_NODES

runner = CliRunner()
BASE = "name: s\ntopology: ring4\ncollective: {op: all_gather}\ninput: {shape: [4]}\n"


def _run(tmp_path, text: str, *args: str):
    path = tmp_path / "s.yaml"
    path.write_text(text, encoding="utf-8")
    started = time.perf_counter()
    out = runner.invoke(app, [*(args or ("run",)), str(path)])
    return out, time.perf_counter() - started, path


def _one_clear_line(out, path, fragment: str, limit: int = 1000) -> None:
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output and "bug in netsim" not in out.output
    lines = out.output.splitlines()
    assert len(lines) == 1 and len(lines[0]) <= limit, out.output[:300]
    assert lines[0].startswith(f"error: {path}: ") and fragment in lines[0], lines[0][:300]


def _laughs(levels: int, anchor_in: str) -> str:
    out = ["l0: &l0 [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"]
    out += [f"l{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 10) + "]" for k in range(1, levels)]
    return "\n".join(out) + "\n" + anchor_in.replace("ALIAS", f"*l{levels - 1}")


def test_aliases_are_counted_after_expansion(tmp_path):
    out, took, path = _run(tmp_path, _laughs(9, BASE + "description: ALIAS\n"))
    _one_clear_line(out, path, f"the document expands to more than {MAX_NODES} values")
    assert took < 10


def test_aliases_inside_axis_index_groups_are_bounded(tmp_path):
    text = _laughs(7, BASE.replace("{op: all_gather}", "{op: all_gather, axis_index_groups: ALIAS}"))
    out, took, path = _run(tmp_path, text)
    _one_clear_line(out, path, "expands to more than")
    assert took < 10


def test_a_modest_alias_expansion_is_still_read(tmp_path):
    out, _, _ = _run(tmp_path, _laughs(3, BASE + "description: x\n"))
    # read (1,000 values), then refused for its fields, not its size: a line per unknown field
    assert out.exit_code == 2 and [line.split(": ")[2:4] for line in out.output.splitlines()] == [[f"l{k}", "unknown field; allowed here"] for k in range(3)]


def test_a_recursive_alias_is_refused(tmp_path):
    out, _, path = _run(tmp_path, "a: &a [1, *a]\n" + BASE)
    _one_clear_line(out, path, "an alias refers to a node that holds it")


@pytest.mark.parametrize("where", ["input: {shape: [NUMBER]}", "seed: NUMBER"])
def test_a_5000_digit_integer_is_named_with_its_place(tmp_path, where):
    text = BASE.replace("input: {shape: [4]}", "") + where.replace("NUMBER", "9" * 5000) + "\n"
    if "shape" not in where:
        text += "input: {shape: [4]}\n"
    out, _, path = _run(tmp_path, text)
    _one_clear_line(out, path, f"invalid YAML at line 5, column {17 if 'shape' in where else 7}: ")
    assert "a number of 5000 digits is too long" in out.output


def test_a_reader_error_gives_its_position(tmp_path):
    out, _, path = _run(tmp_path, BASE + "extra: [1, 2\n")
    _one_clear_line(out, path, "invalid YAML at line 6, column 1")


@pytest.mark.parametrize("command", ["run", "estimate"])
def test_a_topology_name_longer_than_a_file_name_is_one_bounded_line(tmp_path, command):
    out, _, path = _run(tmp_path, BASE.replace("ring4", "t" * 5000), command)
    _one_clear_line(out, path, "topology: no topology file", limit=700)


def test_values_echoed_into_errors_are_bounded(tmp_path):
    text = BASE.replace("name: s", "name: [" + ", ".join(["12345678"] * 20_000) + "]")
    out, _, path = _run(tmp_path, text)
    _one_clear_line(out, path, "name", limit=700)


@pytest.mark.parametrize("shape", ["[2147483648, 2147483648, 4]", "[1000000000000, 1000000000000]"])
def test_shapes_no_array_can_index_are_named_in_our_words(tmp_path, shape):
    out, _, path = _run(tmp_path, BASE.replace("{shape: [4]}", f"{{shape: {shape}, dtype: int8}}\ndata: none"))
    _one_clear_line(out, path, "input.shape: 4 devices of ")
    assert "is more than an array can index (2**62 bytes in all)" in out.output and "iterator" not in out.output


def test_escape_sequences_in_a_name_are_printed_escaped(tmp_path):
    out, _, _ = _run(tmp_path, BASE.replace("name: s", 'name: "a\\e[31mred\\e]0;title\\a"'))
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output and "\x07" not in out.output
    assert "a\\x1b[31mred" in out.output


def test_relative_topology_paths_mean_the_scenario_folder_from_anywhere(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "topo.yaml").write_text("kind: ring\ndims: [4]\n", encoding="utf-8")
    (tmp_path / "topo.yaml").write_text("kind: ring\ndims: [8]\n", encoding="utf-8")  # a decoy in the current folder
    (tmp_path / "here" / "s.yaml").write_text(BASE.replace("ring4", "topo.yaml"), encoding="utf-8")
    times = []
    for cwd in (tmp_path, tmp_path / "here"):
        monkeypatch.chdir(cwd)
        out = runner.invoke(app, ["run", str(tmp_path / "here" / "s.yaml"), "--json"])
        assert out.exit_code == 0, out.output
        assert '"device": 3,' in out.output and '"device": 4,' not in out.output  # the ring of 4 beside the scenario
        times.append(out.output)
    assert times[0] == times[1]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["run", "--json"], ["run"], ["estimate"]])
def test_standard_output_on_a_full_disk_is_one_line_and_exit_2(args):
    scenario = str(ROOT / "scenarios" / "allgather_ring8.yaml")
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "netsim", *args[:1], scenario, *args[1:]], stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr == "error: cannot write the output: No space left on device\n"
