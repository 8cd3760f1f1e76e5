"""`netsim schema COMMAND` prints a JSON Schema, and what every command prints with --json follows it."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.analysis.why import estimate_scenario
from netsim.cli.main import app
from netsim.cli.report import estimate_to_dict, to_dict

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
runner = CliRunner()


def printed_schema(command: str) -> dict:
    result = runner.invoke(app, ["schema", command])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_run_and_estimate_json_of_every_bundled_scenario_follow_their_schemas(path, bundled_runs):
    run = json.loads(json.dumps(to_dict(bundled_runs[path.stem])))  # run once per session (see conftest)
    jsonschema.validate(run, printed_schema("run"))
    shape = netsim.load_scenario(path, build_topology=False)
    jsonschema.validate(json.loads(json.dumps(estimate_to_dict(shape, *estimate_scenario(shape)))), printed_schema("estimate"))


def test_run_json_from_the_command_line_follows_the_schema_and_names_mean_the_same_in_both_commands():
    run = json.loads(runner.invoke(app, ["run", "scenarios/allgather_ring8_degraded_link.yaml", "--json"]).output)
    estimate = json.loads(runner.invoke(app, ["estimate", "scenarios/allgather_ring8_degraded_link.yaml", "--json"]).output)
    jsonschema.validate(run, printed_schema("run"))
    jsonschema.validate(estimate, printed_schema("estimate"))
    assert run["n_devices"] == estimate["n_devices"] == len(run["devices"]) == 8
    assert run["formula_source"] == estimate["formula_source"]
    assert run["critical_links"] == [{"link": "3->4", "crossings": 7, "queued": 6}]
    assert run["memory"] == {"input_bytes": 262144, "output_bytes": 2097152, "peak_bytes": 2097152, "peak_in_flight_bytes": 1835008}


def test_a_schema_rejects_what_it_does_not_document():
    run = json.loads(json.dumps(to_dict(netsim.simulate(netsim.load_scenario("scenarios/allgather_ring8.yaml")))))
    with pytest.raises(jsonschema.ValidationError, match="devices"):
        jsonschema.validate({**run, "devices": 8}, printed_schema("run"))
    with pytest.raises(jsonschema.ValidationError, match="source"):
        jsonschema.validate({**run, "source": "x"}, printed_schema("run"))


def test_sweep_json_follows_its_schema_and_matches_results_csv(tmp_path):
    result = runner.invoke(app, ["sweep", "scenarios/studies/group_layouts.yaml", "-o", str(tmp_path / "out"), "--json", "-q", "-j", "1"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    jsonschema.validate(rows, printed_schema("sweep"))
    table = netsim.sweep.read_results(tmp_path / "out" / "results.csv")
    assert [r["time_s"] for r in rows] == table["time_s"].tolist()
    assert {r["collective.axis_index_groups"] for r in rows} == set(table["collective.axis_index_groups"])


def test_schema_of_an_unknown_command_is_a_user_error():
    result = runner.invoke(app, ["schema", "explain"])
    assert result.exit_code == 2
    assert "no JSON schema for 'explain': use one of run, estimate, sweep, program" in result.output


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios" / "programs").glob("*.yaml")), ids=lambda p: p.stem)
def test_program_json_of_every_bundled_program_follows_its_schema(path):
    result = runner.invoke(app, ["program", str(path), "--json"])
    assert result.exit_code == 0, result.output
    jsonschema.validate(json.loads(result.output), printed_schema("program"))
