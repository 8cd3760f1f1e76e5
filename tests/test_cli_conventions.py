"""The command line follows the conventions users know: one test per behaviour."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app

runner = CliRunner()
COMMANDS = ["run", "estimate", "explain", "animate", "timeline", "sweep", "schema", "program"]


@pytest.mark.parametrize("command", COMMANDS)
def test_dash_h_is_help_and_metavars_are_readable(command):
    result = runner.invoke(app, [command, "-h"])
    assert result.exit_code == 0
    assert result.output.startswith("Usage: ")
    assert "<bool>" not in result.output and "<str>" not in result.output and "<int>" not in result.output


def test_top_level_help_names_the_five_collectives_and_the_exit_codes():
    result = runner.invoke(app, ["--help"])
    for name in ("all_gather", "psum_scatter", "psum", "all_to_all", "ppermute"):
        assert name in result.output
    assert "0 success; 1 a check failed" in " ".join(result.output.split())


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.output == f"netsim {netsim.__version__}\n"


@pytest.mark.parametrize("command", ["run", "animate", "timeline", "sweep"])
def test_every_command_that_writes_takes_dash_o(command):
    assert "-o, --output" in runner.invoke(app, [command, "-h"]).output


def test_run_output_creates_missing_parent_folders(tmp_path):
    result = runner.invoke(app, ["run", "scenarios/allgather_ring4_neighbours.yaml", "-o", str(tmp_path / "results" / "ring4")])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "results" / "ring4").iterdir()) == [".netsim-files", "devices.csv", "links.csv", "result.json", "scenario.yaml"]


def _scenario_with_expected(tmp_path, time_s):
    data = yaml.safe_load((ROOT / "scenarios" / "allgather_ring8.yaml").read_text())
    data["topology"] = str(ROOT / "topologies" / "ring8.yaml")
    if time_s is None:
        del data["expected"]
    else:
        data["expected"] = {"time_s": time_s}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_run_check_passes_on_the_expected_time_and_fails_with_exit_1_otherwise(tmp_path):
    passed = runner.invoke(app, ["run", "scenarios/allgather_ring8.yaml", "--json", "--check"])
    assert passed.exit_code == 0, passed.output
    failed = runner.invoke(app, ["run", _scenario_with_expected(tmp_path, 2.7e-05), "--check"])
    assert failed.exit_code == 1
    assert "check failed: " in failed.output and "simulated 2.738897777777778e-05 s, expected.time_s is 2.7e-05 s" in failed.output


def test_run_check_without_expected_is_a_user_error(tmp_path):
    result = runner.invoke(app, ["run", _scenario_with_expected(tmp_path, None), "--check"])
    assert result.exit_code == 2
    assert "has no expected: section (e.g. expected: {time_s: 2.738897777777778e-05})" in result.output


def test_run_on_a_study_and_sweep_on_a_scenario_name_the_right_command(tmp_path):
    study = runner.invoke(app, ["run", "scenarios/studies/ring_algorithms.yaml"])
    assert study.exit_code == 2
    assert "this is a study (it has a grid), not a scenario: run it with `netsim sweep scenarios/studies/ring_algorithms.yaml -o DIR`" in study.output
    scenario = runner.invoke(app, ["sweep", "scenarios/allgather_ring8.yaml", "-o", str(tmp_path / "out")])
    assert scenario.exit_code == 2
    assert "this is a scenario, not a study (it has no base and grid): run it with `netsim run scenarios/allgather_ring8.yaml`" in scenario.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_a_reader_that_closes_the_pipe_early_ends_the_command_quietly(flag):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = f"{sys.executable} -m netsim run scenarios/psum_torus4x4_row.yaml {' '.join(flag)} | head -c 1 >/dev/null; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")


def test_read_results_is_reachable_as_netsim_sweep_read_results(tmp_path):
    (tmp_path / "results.csv").write_text("point,algorithm,time_s,error\n0,ring,1.5e-06,\n")
    assert netsim.sweep.read_results(tmp_path / "results.csv")["time_s"].tolist() == [1.5e-06]
